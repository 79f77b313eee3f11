"""`swe-eval downstream plan`: write run plans for a frozen agent and the SWE-bench harness.

Thin: parse the configurations, check the output folder, build each configuration with
`plan`, write, print the commands on stdout and one line per configuration on stderr. Runs
nothing (no agent, no Docker). Exit 2 for bad input, in one `error:` line, before any file is
written.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal

import typer
from codegrep_cli import fail, instances_option, jobs_option, limit_option, output_option

from swe_eval._cli_io import say
from swe_eval.downstream.plan import (
    AgentSettings,
    PlanError,
    baseline_spec,
    build_config,
    check_output,
    load_selection,
    make_plan,
    parse_config_option,
    render_commands,
    run_names,
    target_files,
    where_it_runs,
    write_plan,
)

__all__ = ["plan"]


class Prompt(StrEnum):
    STOCK = "stock"
    GATE = "gate"


class Backend(StrEnum):
    LOCAL = "local"
    MODAL = "modal"


class Workspace(StrEnum):
    DOCKER = "docker"
    REMOTE = "remote"
    APPTAINER = "apptainer"


def plan(
    instances: Annotated[Path, instances_option("SWE-bench-style JSON/JSONL(.gz)/parquet.")],
    output: Annotated[Path, output_option("The plan's folder (new or empty; see --force).")],
    model: Annotated[
        str, typer.Option("--model", help="The frozen agent's model (a LiteLLM model name).")
    ],
    config: Annotated[
        list[str] | None,
        typer.Option(
            "--config",
            help="NAME=PREDICTIONS[,gate[=THRESHOLD]][,calibration=FILE][,bound=lower|point]"
            "[,max_files=N]; repeat for more. A bare `gate` is 0.45; without calibration= the "
            "one codegrep-gate ships for the predictions' retriever.",
            show_default=False,
        ),
    ] = None,
    baseline: Annotated[
        str,
        typer.Option("--baseline", help="Name of the no-injection configuration (always added)."),
    ] = "baseline",
    max_iterations: Annotated[
        int,
        typer.Option(
            "--max-iterations", min=1, help="The agent's round cap (the paper's Table 3: 100)."
        ),
    ] = 100,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint of the model.")
    ] = None,
    jobs: Annotated[int, jobs_option("Runner and harness workers.")] = 4,
    workspace: Annotated[
        Workspace, typer.Option("--workspace", help="Where the runner starts the agent.")
    ] = Workspace.DOCKER,
    condenser: Annotated[
        bool,
        typer.Option("--condenser/--no-condenser", help="Let the runner condense long histories."),
    ] = False,
    harness_dataset: Annotated[
        str | None,
        typer.Option(
            "--harness-dataset",
            help="What the harness grades against (default: the plan's own rows when they carry "
            "version and the test fields, else princeton-nlp/SWE-bench_Verified).",
            show_default=False,
        ),
    ] = None,
    harness_split: Annotated[
        str,
        typer.Option(
            "--harness-split",
            help="The hub dataset's split (the runner only writes it into its folder's name).",
        ),
    ] = "test",
    benchmarks: Annotated[
        str | None,
        typer.Option(
            "--benchmarks",
            help="The OpenHands/benchmarks checkout (default: $BENCHMARKS when the commands run).",
            show_default=False,
        ),
    ] = None,
    max_unknown: Annotated[
        int,
        typer.Option(
            "--max-unknown", min=0, help="Prediction ids the instance file lacks, tolerated."
        ),
    ] = 0,
    repo: Annotated[
        list[str] | None,
        typer.Option("--repo", help="Keep only this repository's instances; repeat for more."),
    ] = None,
    exclude_repo: Annotated[
        list[str] | None, typer.Option("--exclude-repo", help="Leave these repositories out.")
    ] = None,
    limit: Annotated[int | None, limit_option("At most this many instances.")] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed",
            help="Shuffle the instances with this seed before --limit (default: file order).",
            show_default=False,
        ),
    ] = None,
    llm_seed: Annotated[
        int, typer.Option("--llm-seed", min=0, help="The LLM's seed (repeat r: seed + r - 1).")
    ] = 0,
    top_p: Annotated[float, typer.Option("--top-p", min=0.0, max=1.0)] = 1.0,
    top_k: Annotated[
        int | None, typer.Option("--top-k", min=1, help="Not sent when not given.")
    ] = None,
    max_output_tokens: Annotated[int, typer.Option("--max-output-tokens", min=1)] = 8192,
    model_revision: Annotated[
        str | None, typer.Option("--model-revision", help="The served weights' revision.")
    ] = None,
    server: Annotated[
        str | None, typer.Option("--server", help="The serving stack, e.g. 'vllm 0.10.1'.")
    ] = None,
    tool_parser: Annotated[
        str | None, typer.Option("--tool-parser", help="The server's tool-call parser.")
    ] = None,
    skills: Annotated[
        str | None,
        typer.Option(
            "--skills", help="The commit of the runner's public skills (its EXTENSIONS_REF)."
        ),
    ] = None,
    max_retries: Annotated[
        int, typer.Option("--max-retries", min=0, help="Runner re-runs of a crashed instance.")
    ] = 0,
    total_rounds: Annotated[
        int | None,
        typer.Option(
            "--total-rounds",
            min=1,
            help="LLM calls per run, continuations included (default: --max-iterations).",
        ),
    ] = None,
    repeats: Annotated[
        int, typer.Option("--repeats", "-k", min=1, help="Runs per configuration, seeds apart.")
    ] = 1,
    prompt: Annotated[
        Prompt,
        typer.Option(
            "--prompt",
            help="stock: the runner's own template (the baseline unchanged, the section added "
            "for injected runs); gate: codegrep-gate's short template for every run.",
        ),
    ] = Prompt.STOCK,
    backend: Annotated[
        Backend,
        typer.Option("--backend", help="Where the harness grades: local Docker or Modal."),
    ] = Backend.LOCAL,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Write into a folder that is not empty, overwriting only files an earlier plan "
            "wrote there; nothing is deleted.",
        ),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="The default and only mode: write the plan and print the commands; run nothing "
            "(run OUT/commands.sh where the plan says: a Docker host, or Modal and a remote "
            "workspace).",
        ),
    ] = True,
) -> None:
    """Write run plans: per configuration the instances with their injected files, the gate's
    decisions, the prompt template, one LLM config, and the exact runner, harness and report
    commands (OUT/commands.sh, OUT/plan.json). Runs nothing.

    Example: swe-eval downstream plan -i verified.jsonl --model openai/qwen3-30b-a3b
    --config lexical=lexical.jsonl --config lexical-gated=lexical.jsonl,gate
    --max-iterations 100 -o plans/verified
    """

    del dry_run  # nothing ever runs here; the flag states it
    ws: Literal["docker", "remote", "apptainer"] = workspace.value
    try:
        specs = [baseline_spec(baseline), *(parse_config_option(t) for t in config or [])]
        names = [s.name for s in specs]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise PlanError(f"configuration name(s) given twice: {', '.join(twice)}")
        runs = [r for s in specs for r in run_names(s.name, repeats)]
        clash = sorted({r for r in runs if runs.count(r) > 1 or (r in names and repeats > 1)})
        if clash:
            raise PlanError(
                f"--repeats {repeats}: run name(s) {', '.join(clash)} would name two runs; "
                "rename the configuration"
            )
        settings = AgentSettings(
            model=model,
            base_url=base_url,
            max_iterations=max_iterations,
            jobs=jobs,
            workspace=ws,
            condenser=condenser,
            harness_dataset=harness_dataset,
            harness_split=harness_split,
            seed=llm_seed,
            top_p=top_p,
            top_k=top_k,
            max_output_tokens=max_output_tokens,
            model_revision=model_revision,
            server=server,
            tool_parser=tool_parser,
            skills=skills,
            max_retries=max_retries,
            total_rounds=total_rounds,
            repeats=repeats,
            backend=backend.value,
            prompt=prompt.value,
            # absolute: the harness runs from the plan's folders, not from here
            **({"benchmarks": str(Path(benchmarks).expanduser().absolute())} if benchmarks else {}),
        )
        notes = check_output(output, target_files(specs, repeats, prompt.value), force=force)
        selection = load_selection(
            instances, repos=repo or (), exclude_repos=exclude_repo or (), seed=seed, limit=limit
        )
        built = [build_config(s, selection, max_unknown=max_unknown) for s in specs]
        the_plan = make_plan(output, selection, built, settings, baseline=baseline)
    except (PlanError, ValueError) as exc:  # a pydantic ValidationError is a ValueError
        raise fail(str(exc)) from exc
    try:
        write_plan(the_plan, built)
    except OSError as exc:
        raise fail(f"cannot write -o {output}: {exc.strerror or exc}") from exc
    for note in [*the_plan.notes, *notes]:
        say(note, "yellow")
    for c in the_plan.configs:
        gated = ""
        if c.gate is not None:
            gated = f"; gate {c.gate.threshold:g} ({c.gate.bound}) on {c.gate.calibration}"
        say(
            f"{c.name} ({c.kind}): {c.stats.injected_instances} of {c.stats.instances} "
            f"instance(s) injected, {c.stats.injected_files} file(s){gated}"
        )
    say(
        f"wrote {len(the_plan.files)} files under {the_plan.out}; run "
        f"{Path(the_plan.out) / 'commands.sh'}. " + where_it_runs(the_plan.agent)
    )
    typer.echo(render_commands(the_plan), nl=False)
