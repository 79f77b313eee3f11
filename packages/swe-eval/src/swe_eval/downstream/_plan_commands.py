"""The plan itself: the agent's settings, one run per configuration and repeat, the exact
commands (runner, converter, harness, report) and the manifests that tie a run to its plan.
Not for: writing files (`_plan_writing`).
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Literal

from codegrep_gate import (
    openhands_template_path,
)
from pydantic import BaseModel, ConfigDict, Field

from swe_eval.downstream._plan_gating import BuiltConfig, ConfigStats, DatasetRow, GateRef, _listed
from swe_eval.downstream._plan_pins import (
    _HARNESS_FIELDS,
    BENCHMARKS_COMMIT,
    BENCHMARKS_PLACEHOLDER,
    BENCHMARKS_REPO,
    DEFAULT_HARNESS_DATASET,
    HARNESS_MODEL_NAME,
    HARNESS_TIMEOUT_S,
    PLAN_SCHEMA_VERSION,
    SDK_COMMIT,
    STOCK_TEMPLATE,
    SWEBENCH_VERSION,
    TEMPLATE_NAME,
    WHY,
    agent_images,
    harness_images,
)
from swe_eval.downstream._plan_selection import _TOP_LEVEL, ConfigSpec, Selection

__all__ = [
    "MANIFEST_KIND",
    "AgentSettings",
    "Command",
    "InstancesRef",
    "Pin",
    "Plan",
    "PlannedConfig",
    "make_plan",
    "render_commands",
    "report_manifest",
    "run_manifest",
    "run_names",
    "target_files",
    "where_it_runs",
]

# -- the plan -----------------------------------------------------------------------------------


class AgentSettings(BaseModel):
    """What every configuration shares: the frozen agent, its round cap, the harness."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(min_length=1, description="The downstream agent's model (LiteLLM name).")
    base_url: str | None = None
    temperature: float = 0.0
    max_iterations: int = Field(default=100, ge=1)
    jobs: int = Field(default=4, ge=1, description="Runner and harness workers.")
    workspace: Literal["docker", "remote", "apptainer"] = "docker"
    condenser: bool = False
    harness_dataset: str | None = Field(
        default=None,
        description="None: the plan's own rows when they carry the harness's "
        "fields, else princeton-nlp/SWE-bench_Verified.",
    )
    harness_split: str = "test"
    benchmarks: str = Field(
        default=BENCHMARKS_PLACEHOLDER, description="The OpenHands/benchmarks checkout."
    )
    # sampling: every knob the server reads, written out (openhands-sdk `LLM` field names)
    seed: int = Field(default=0, ge=0, description="LLM seed of repeat 1; repeat r: seed + r - 1.")
    top_p: float = Field(default=1.0, ge=0, le=1)
    top_k: int | None = Field(default=None, ge=1, description="None: not sent.")
    max_output_tokens: int = Field(default=8192, ge=1)
    # the serving stack, recorded (the plan cannot check it; `report` compares it across runs)
    model_revision: str | None = None
    server: str | None = None
    tool_parser: str | None = None
    skills: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$",
        description="The ref (a commit) of the public skills the runner loads: its "
        "EXTENSIONS_REF, `main` when unset.",
    )
    max_retries: int = Field(default=0, ge=0, description="Runner re-runs of a crashed instance.")
    total_rounds: int | None = Field(
        default=None,
        ge=1,
        description="LLM calls allowed over a whole run, continuations included (default: "
        "max_iterations); `report` flags a run above it.",
    )
    repeats: int = Field(default=1, ge=1, description="Runs per configuration, seeds apart.")
    prompt: Literal["stock", "gate"] = Field(
        default="stock",
        description="stock: the runner's own template (+ the section for injected runs); "
        "gate: codegrep-gate's short template for every run.",
    )
    backend: Literal["local", "modal"] = Field(
        default="local",
        description="Where the harness grades: this host's Docker, or swebench's Modal sandboxes.",
    )

    @property
    def round_cap(self) -> int:
        return self.total_rounds or self.max_iterations

    def llm_config(self, repeat: int = 1) -> str:
        """The runner's LLM config (openhands-sdk `LLM` JSON), the same for every config but
        for the seed of the repeat."""
        body: dict[str, object] = {
            "model": self.model,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_output_tokens": self.max_output_tokens,
            "seed": self.seed + repeat - 1,
            # an unsupported parameter is an error, not silently dropped (LiteLLM's default
            # would drop a seed the provider does not take, and the run would not be pinned)
            "drop_params": False,
        }
        if self.top_k is not None:
            body["top_k"] = self.top_k
        if self.base_url:
            body["base_url"] = self.base_url
        return json.dumps(body, indent=2) + "\n"

    def frozen(self) -> dict[str, object]:
        """What every run of a plan shares: the settings less the seed, the repeats and where
        things run on this host (workers, the checkout's path)."""
        return self.model_dump(mode="json", exclude={"jobs", "benchmarks", "seed", "repeats"})


#: The settings a plan records as NOT GIVEN when they are not pinned; two runs with one of them
#: unpinned cannot be shown to share it, so a report never counts them equal.
PIN_KEYS = ("model_revision", "server", "tool_parser", "skills")


class Command(BaseModel):
    """One command as it runs: its argument vector, its working folder, and its shell line."""

    model_config = ConfigDict(frozen=True)

    step: Literal["template", "stamp", "infer", "link", "convert", "harness", "report"]
    argv: list[str]
    cwd: str | None = None
    shell: str


class Pin(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    value: str
    why: str


class PlannedConfig(BaseModel):
    """One run: a configuration (its arm) at one repeat, with its own seed and folder."""

    model_config = ConfigDict(frozen=True)

    name: str
    arm: str
    repeat: int
    seed: int
    kind: Literal["baseline", "ungated", "gated"]
    predictions: str | None
    gate: GateRef | None
    stats: ConfigStats
    run_id: str
    files: dict[str, str] = Field(description="Role -> path relative to the plan's folder.")
    commands: list[Command]
    notes: list[str]


class InstancesRef(BaseModel):
    model_config = ConfigDict(frozen=True)

    file: str
    sha256: str
    chosen: int
    order: str
    skipped_rows: int
    without_base_commit: list[str]


class Plan(BaseModel):
    """plan.json: everything a run needs, and why each choice was made."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["swe-eval-downstream-plan"] = "swe-eval-downstream-plan"
    schema_version: int = PLAN_SCHEMA_VERSION
    written_by: dict[str, str]
    out: str
    instances: InstancesRef
    agent: AgentSettings
    baseline: str
    pins: list[Pin]
    setup: list[str]
    configs: list[PlannedConfig]
    report: Command
    files: list[str] = Field(description="Every file the plan wrote, relative to `out`.")
    notes: list[str]


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "0+unknown"


def _word(arg: str) -> str:
    """One shell word; the checkout placeholder stays a variable the shell expands."""
    if arg == BENCHMARKS_PLACEHOLDER:
        return f'"{arg}"'
    if arg.startswith(BENCHMARKS_PLACEHOLDER + "/"):
        return f'"{BENCHMARKS_PLACEHOLDER}"' + shlex.quote(arg[len(BENCHMARKS_PLACEHOLDER) :])
    return shlex.quote(arg)


def _command(
    step: Literal["template", "stamp", "infer", "link", "convert", "harness", "report"],
    argv: list[str],
    cwd: Path | None = None,
) -> Command:
    line = " ".join(_word(a) for a in argv)
    if cwd is not None:
        folder = shlex.quote(str(cwd))
        line = f"(mkdir -p {folder} && cd {folder} && {line})"
    return Command(step=step, argv=argv, cwd=str(cwd) if cwd else None, shell=line)


# Links the runner's output.jsonl (its folder is named after the model and the SDK commit, not
# known before the run) to a fixed path; more than one output.jsonl is an error, not a guess.
_LINK = (
    'found=$(find "$1" -name output.jsonl -type f); '
    'n=$(printf "%s" "$found" | grep -c . || true); '
    'if [ "$n" != 1 ]; then echo "error: expected one output.jsonl under $1, found $n" >&2; '
    'exit 1; fi; ln -sfn "$found" "$2"'
)


def run_names(name: str, repeats: int) -> list[str]:
    """The runs of a configuration: its name, or NAME-r1 ... NAME-rK for K repeats."""
    return [name] if repeats == 1 else [f"{name}-r{r}" for r in range(1, repeats + 1)]


def target_files(specs: Sequence[ConfigSpec], repeats: int = 1, prompt: str = "stock") -> list[str]:
    """The files a plan for `specs` writes, relative to its folder (with the stock prompt,
    each run's prompt.j2 is written when the run starts, from the runner's checkout)."""
    files = [f for f in _TOP_LEVEL if f != "table3.md"]  # the report writes table3.md
    for s in specs:
        for run in run_names(s.name, repeats):
            files += [
                f"{run}/dataset.jsonl",
                f"{run}/gate.jsonl",
                *([f"{run}/{TEMPLATE_NAME}"] if prompt == "gate" else []),
                f"{run}/llm_config.json",
                f"{run}/manifest.json",
            ]
            if s.kind != "baseline":
                files.append(f"{run}/injected.jsonl")
    return files


def _local_harness(selection: Selection) -> bool:
    for inst in selection.chosen:
        have = inst.model_fields_set
        if any(f not in have for f in _HARNESS_FIELDS) or not inst.version:
            return False
        if not inst.environment_setup_commit or not inst.test_patch or not inst.FAIL_TO_PASS:
            return False
    return True


def _run_id(name: str, rows: Sequence[DatasetRow], settings: AgentSettings, seed: int) -> str:
    digest = hashlib.sha256()
    for row in rows:
        digest.update(row.json_line().encode())
    digest.update(json.dumps(settings.frozen(), sort_keys=True).encode())
    digest.update(str(seed).encode())
    return f"{name}-{digest.hexdigest()[:8]}"


def _infer_args(folder: Path, select: Path, settings: AgentSettings) -> list[str]:
    """benchmarks/swebench/run_infer.py's arguments (plan.json's pins say why each is there)."""
    return [
        str(folder / "llm_config.json"),
        "--dataset", str(folder / "dataset.jsonl"),
        "--split", settings.harness_split,
        "--workspace", settings.workspace,
        "--max-iterations", str(settings.max_iterations),
        "--num-workers", str(settings.jobs),
        "--select", str(select),
        "--prompt-path", str(folder / TEMPLATE_NAME),
        "--output-dir", str(folder / "infer"),
        "--note", folder.name,
        "--n-critic-runs", "1",
        "--max-retries", str(settings.max_retries),
        "--enable-condenser" if settings.condenser else "--disable-condenser",
    ]  # fmt: skip


def _harness_args(dataset: str, preds: Path, run_id: str, settings: AgentSettings) -> list[str]:
    """swebench 4.1.0 `run_evaluation`'s arguments; its report lands in the working folder."""
    return [
        "--dataset_name", dataset,
        "--split", settings.harness_split,
        "--predictions_path", str(preds),
        "--max_workers", str(settings.jobs),
        "--timeout", str(HARNESS_TIMEOUT_S),
        "--run_id", run_id,
        *(["--modal", "true"] if settings.backend == "modal" else []),
    ]  # fmt: skip


def _planned_run(
    b: BuiltConfig,
    name: str,
    repeat: int,
    out: Path,
    select: Path,
    settings: AgentSettings,
    uv: list[str],
    local: bool,
    hub_dataset: str,
) -> PlannedConfig:
    """One run of one configuration: its folder, run id (the seed in it) and commands."""
    folder = out / name
    seed = settings.seed + repeat - 1
    run_id = _run_id(name, b.rows, settings, seed)
    output = folder / "output.jsonl"
    preds = folder / "predictions.swebench.jsonl"
    report_file = folder / "harness" / f"{HARNESS_MODEL_NAME}.{run_id}.json"
    dataset = str(folder / "dataset.jsonl") if local else hub_dataset
    # the runner loads public skills at the ref EXTENSIONS_REF names (its default: main)
    pin = ["env", f"EXTENSIONS_REF={settings.skills}"] if settings.skills else []
    infer = [*pin, *uv, "swebench-infer", *_infer_args(folder, select, settings)]
    link = ["bash", "-c", _LINK, "link", str(folder / "infer"), str(output)]
    convert = [*uv, "swebench-eval", str(output), "--skip-evaluation",
               "--run-id", run_id, "--output-file", str(preds)]  # fmt: skip
    harness = [*uv, "python", "-m", "swebench.harness.run_evaluation",
               *_harness_args(dataset, preds, run_id, settings)]  # fmt: skip
    commands = []
    if settings.prompt == "stock":
        stock = f"{settings.benchmarks}/{STOCK_TEMPLATE}"
        inject = "--inject" if b.spec.kind != "baseline" else "--unchanged"
        template = ["swe-eval", "downstream", "template", stock, inject,
                    "-o", str(folder / TEMPLATE_NAME)]  # fmt: skip
        commands.append(_command("template", template))
    # what the run reads, recorded as it starts; a checkout off the pinned commits stops here
    stamp = ["swe-eval", "downstream", "stamp", str(folder), "--benchmarks", settings.benchmarks]
    commands += [
        _command("stamp", stamp),
        _command("infer", infer),
        _command("link", link),
        _command("convert", convert),
        _command("harness", harness, cwd=folder / "harness"),
    ]
    files = {
        "dataset": f"{name}/dataset.jsonl",
        "gate": f"{name}/gate.jsonl",
        "prompt": f"{name}/{TEMPLATE_NAME}",
        "llm_config": f"{name}/llm_config.json",
        "manifest": f"{name}/manifest.json",
        "read": f"{name}/read.json",
        "agent_output": f"{name}/output.jsonl",
        "predictions": f"{name}/predictions.swebench.jsonl",
        "harness_report": f"{name}/harness/{report_file.name}",
    }
    if b.spec.kind != "baseline":
        files["injected"] = f"{name}/injected.jsonl"
    return PlannedConfig(
        name=name,
        arm=b.spec.name,
        repeat=repeat,
        seed=seed,
        kind=b.spec.kind,
        predictions=str(b.spec.predictions) if b.spec.predictions else None,
        gate=b.gate,
        stats=b.stats,
        run_id=run_id,
        files=files,
        commands=commands,
        notes=list(b.notes),
    )


def make_plan(
    out: Path,
    selection: Selection,
    built: Sequence[BuiltConfig],
    settings: AgentSettings,
    *,
    baseline: str,
) -> Plan:
    """The plan for `built` configurations under `out` (made absolute: the runner's commands run
    from the benchmarks checkout). Pure: writes nothing."""
    out = out.expanduser().absolute()
    bench = settings.benchmarks
    uv = ["uv", "run", "--project", bench]
    local = settings.harness_dataset is None and _local_harness(selection)
    hub_dataset = settings.harness_dataset or DEFAULT_HARNESS_DATASET
    select = out / "instances.txt"
    configs: list[PlannedConfig] = []
    for b in built:
        for repeat, name in enumerate(run_names(b.spec.name, settings.repeats), start=1):
            configs.append(
                _planned_run(b, name, repeat, out, select, settings, uv, local, hub_dataset)
            )
    report = ["swe-eval", "downstream", "report", "--manifest", str(out / "report-runs.json"),
              "-f", "markdown", "-o", str(out / "table3.md")]  # fmt: skip
    pins = [
        Pin(
            name="runner",
            value=f"{BENCHMARKS_REPO}@{BENCHMARKS_COMMIT} "
            f"(benchmarks/swebench/run_infer.py, software-agent-sdk@{SDK_COMMIT[:7]})",
            why=WHY["runner"],
        ),
        Pin(name="swebench", value=SWEBENCH_VERSION, why=WHY["swebench"]),
        Pin(
            name="harness_dataset",
            value="<config>/dataset.jsonl, per configuration"
            if local
            else f"{hub_dataset} (split {settings.harness_split})",
            why=WHY["harness_dataset_local" if local else "harness_dataset_hub"]
            if settings.harness_dataset is None
            else "given with --harness-dataset",
        ),
        Pin(name="max_iterations", value=str(settings.max_iterations), why=WHY["iterations"]),
        Pin(
            name="llm",
            value=f"{settings.model} at temperature {settings.temperature:g}",
            why=WHY["llm"],
        ),
        Pin(
            name="prompt",
            value=f"the runner's {STOCK_TEMPLATE}: unchanged for the baseline, with the "
            "injected section after the issue otherwise (swe-eval downstream template)"
            if settings.prompt == "stock"
            else f"codegrep_gate.openhands_template_path() -> {TEMPLATE_NAME}",
            why=WHY["prompt_stock" if settings.prompt == "stock" else "prompt"],
        ),
        Pin(name="instances", value="--select instances.txt", why=WHY["select"]),
        Pin(name="attempts", value="--n-critic-runs 1", why=WHY["critic"]),
        Pin(name="condenser", value="on" if settings.condenser else "off", why=WHY["condenser"]),
        Pin(
            name="sampling",
            value=f"temperature {settings.temperature:g}, top_p {settings.top_p:g}, top_k "
            f"{settings.top_k if settings.top_k is not None else 'not sent'}, "
            f"max_output_tokens {settings.max_output_tokens}, seed {settings.seed}"
            + (f" + repeat - 1 ({settings.repeats} repeats)" if settings.repeats > 1 else "")
            + ", drop_params false",
            why=WHY["sampling"],
        ),
        Pin(
            name="serving",
            value=f"model revision {settings.model_revision or 'NOT GIVEN'}; server "
            f"{settings.server or 'NOT GIVEN'}; tool parser {settings.tool_parser or 'NOT GIVEN'}",
            why=WHY["serving"],
        ),
        Pin(
            name="skills",
            value=f"EXTENSIONS_REF={settings.skills}"
            if settings.skills
            else "NOT GIVEN (the runner reads main)",
            why=WHY["skills"],
        ),
        Pin(name="retries", value=f"--max-retries {settings.max_retries}", why=WHY["retries"]),
        Pin(
            name="round_cap",
            value=f"{settings.round_cap} LLM calls per run, continuations included",
            why=WHY["round_cap"],
        ),
        Pin(
            name="backend",
            value="swebench --modal true (Modal sandboxes)"
            if settings.backend == "modal"
            else "this host's Docker",
            why=WHY["backend"],
        ),
        Pin(name="harness_images", value=harness_images(settings.backend), why=WHY["images"]),
        Pin(name="agent_images", value=agent_images(settings.workspace), why=WHY["images"]),
        Pin(name="run_id", value="<config>-<8 hex>", why=WHY["run_id"]),
        Pin(name="columns", value=", ".join(DatasetRow.model_fields), why=WHY["columns"]),
    ]
    setup = [
        f'git clone {BENCHMARKS_REPO} "{BENCHMARKS_PLACEHOLDER}"',
        f'git -C "{BENCHMARKS_PLACEHOLDER}" checkout {BENCHMARKS_COMMIT}',
        f'git -C "{BENCHMARKS_PLACEHOLDER}" submodule update --init --recursive',
        f'cd "{BENCHMARKS_PLACEHOLDER}" && uv sync   # Python >= 3.12; swebench {SWEBENCH_VERSION}',
    ]
    notes = [n for b in built for n in b.notes]
    unpinned = ["--" + k.replace("_", "-") for k in PIN_KEYS if not getattr(settings, k)]
    if unpinned:
        notes.append(
            f"not pinned, recorded as NOT GIVEN in every manifest: {', '.join(unpinned)}; "
            "no run can be shown to share them with another, so `downstream report` refuses "
            "to compare these runs unless told --allow-manifest-diff"
        )
    if selection.without_commit:
        notes.append(
            f"{len(selection.without_commit)} instance(s) without base_commit left out: "
            f"{_listed(selection.without_commit)}"
        )
    if selection.problems:
        notes.append(
            f"{len(selection.problems)} instance row(s) skipped, e.g. {selection.problems[0]}"
        )
    return Plan(
        written_by={"swe-eval": _version("swe-eval"), "codegrep-gate": _version("codegrep-gate")},
        out=str(out),
        instances=InstancesRef(
            file=str(selection.path),
            sha256=selection.sha256,
            chosen=len(selection.chosen),
            order=selection.order,
            skipped_rows=len(selection.problems),
            without_base_commit=list(selection.without_commit),
        ),
        agent=settings,
        baseline=baseline,
        pins=pins,
        setup=setup,
        configs=configs,
        report=_command("report", report),
        files=target_files([b.spec for b in built], settings.repeats, settings.prompt),
        notes=notes,
    )


def report_manifest(plan: Plan) -> str:
    """report-runs.json: the run list `swe-eval downstream report --manifest` reads; paths are
    relative to the plan's folder, so it reads the same wherever the folder is mounted."""
    runs: list[dict[str, object]] = []
    for c in plan.configs:
        run: dict[str, object] = {
            "name": c.arm,  # repeats of an arm share its name: the report pools them
            "output": c.files["agent_output"],
            "report": c.files["harness_report"],
            "manifest": c.files["manifest"],
        }
        if c.kind != "baseline" and c.stats.injected_instances:
            run["predictions"] = c.files["injected"]
        if c.stats.injected_precision is not None:
            # The report would score an instance without injection as precision 0; what governs
            # whether injection pays is the precision of the files the agent was shown.
            run["precision"] = round(c.stats.injected_precision, 6)
        runs.append(run)
    body = {
        "instances": plan.configs[0].files["dataset"] if plan.configs else "instances.txt",
        "baseline": plan.baseline,
        "title": f"{plan.agent.model}, {plan.instances.chosen} instances, "
        f"max {plan.agent.max_iterations} iterations",
        "runs": runs,
    }
    return json.dumps(body, indent=2) + "\n"


MANIFEST_KIND = "swe-eval-downstream-run"


def run_manifest(plan: Plan, run: PlannedConfig) -> dict[str, object]:
    """<run>/manifest.json: everything that can move between runs, in two parts. `frozen` must
    be equal across every run a report compares (`report` checks it); `arm` is what may differ
    (the configuration, its injection and gate, the repeat and its seed)."""
    frozen: dict[str, object] = {
        **plan.agent.frozen(),
        "round_cap": plan.agent.round_cap,
        "runner": f"{BENCHMARKS_REPO}@{BENCHMARKS_COMMIT}",
        "sdk": SDK_COMMIT,
        "swebench": SWEBENCH_VERSION,
        "harness_timeout_s": HARNESS_TIMEOUT_S,
        "harness_images": harness_images(plan.agent.backend),
        "agent_images": agent_images(plan.agent.workspace),
        "harness_model_name": HARNESS_MODEL_NAME,
        "template": f"{BENCHMARKS_COMMIT}:{STOCK_TEMPLATE} (+ section when injected)"
        if plan.agent.prompt == "stock"
        else "codegrep-gate sha256 "
        + hashlib.sha256(openhands_template_path().read_bytes()).hexdigest(),
        "instances_sha256": plan.instances.sha256,
        "instances": plan.instances.chosen,
        "order": plan.instances.order,
        "written_by": plan.written_by,
    }
    arm: dict[str, object] = {
        "name": run.arm,
        "run": run.name,
        "kind": run.kind,
        "repeat": run.repeat,
        "seed": run.seed,
        "predictions": run.predictions,
        "gate": run.gate.model_dump(mode="json") if run.gate else None,
        "injected_instances": run.stats.injected_instances,
    }
    return {"kind": MANIFEST_KIND, "schema_version": 1, "frozen": frozen, "arm": arm}


def where_it_runs(agent: AgentSettings) -> str:
    """What the host running commands.sh needs, from where the agent and the harness run."""
    agent_needs = (
        "the agent in the runner's remote workspace (RUNTIME_API_KEY, RUNTIME_API_URL)"
        if agent.workspace == "remote"
        else f"the agent in {agent.workspace}"
    )
    harness_needs = (
        "the harness in Modal sandboxes (a Modal token)"
        if agent.backend == "modal"
        else "the harness in this host's Docker"
    )
    return f"Runs {agent_needs}, {harness_needs}."


def render_commands(plan: Plan) -> str:
    """commands.sh: the setup (as comments), then per configuration the runner, the link to its
    output, the converter and the harness, then the report; a progress line before each."""
    bench = plan.agent.benchmarks
    lines = [
        "#!/usr/bin/env bash",
        f"# Written by `swe-eval downstream plan` (swe-eval {plan.written_by['swe-eval']}); "
        "plan.json says why each flag is there.",
        f"# {len(plan.configs)} configuration(s) x {plan.instances.chosen} instance(s), "
        f"model {plan.agent.model}, max {plan.agent.max_iterations} iterations. "
        + where_it_runs(plan.agent),
        "#",
        "# One-time setup (not run here): a checkout of the runner at its pinned commit.",
        *(f"#   {s}" for s in plan.setup),
        "# The model's API key comes from the environment (LiteLLM), never from these files.",
        "set -euo pipefail",
    ]
    if bench == BENCHMARKS_PLACEHOLDER:
        lines.append(
            ': "${BENCHMARKS:?set BENCHMARKS to the OpenHands/benchmarks checkout '
            f'at {BENCHMARKS_COMMIT[:7]} (see the setup above)}}"'
        )
    total = len(plan.configs)
    for k, c in enumerate(plan.configs, start=1):
        lines += [
            "",
            f"# == {c.name} ({c.kind}): {c.stats.injected_instances} of "
            f"{c.stats.instances} instance(s) with injected files",
        ]
        for cmd in c.commands:
            lines.append(f"echo {shlex.quote(f'[{k}/{total} {c.name}] {cmd.step}')} >&2")
            lines.append(cmd.shell)
    lines += [
        "",
        "# == report (the paper's Table 3, with significance)",
        f"echo {shlex.quote('[report] ' + str(Path(plan.out) / 'table3.md'))} >&2",
        plan.report.shell,
        "",
    ]
    return "\n".join(lines)
