"""`swe-eval downstream report`: the CodeGrep paper's Table 3, with significance, from files.

Thin: parse the run list, read outputs and reports, call `analysis`, render. Notes and skipped
rows go to stderr, the report to stdout (or `-o`). Exit 2 for bad input, in one `error:` line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from codegrep_cli import fail, instances_option, output_option, seed_option
from codegrep_records import (
    GoldLabel,
    RecordError,
    RowProblem,
    gold_from_instances,
    load_instances,
    load_predictions,
)

from swe_eval._cli_io import IMAGE_SUFFIXES, check_output, clear_errors, emit, say
from swe_eval.downstream._plan_commands import PIN_KEYS
from swe_eval.downstream.analysis import (
    ConfigRun,
    PairedComparison,
    PooledComparison,
    build_config,
    case_rows,
    compare,
    compare_pooled,
    failure_ids,
    precision_benefit,
    retrieval_precision,
    summarize_config,
)
from swe_eval.downstream.readers import (
    parse_run_option,
    read_agent_outputs,
    read_harness_report,
    read_instance_ids,
    read_manifest,
    read_run_manifest,
    read_run_read,
)
from swe_eval.downstream.records import AgentOutputs, HarnessReport, RunSpec
from swe_eval.downstream.render import (
    DownstreamFormat,
    DownstreamReport,
    render_report,
    report_notes,
)
from swe_eval.errors import SweEvalError

__all__ = ["report"]


def _problems(what: str, path: str, problems: tuple[RowProblem, ...] | list[RowProblem]) -> None:

    if problems:
        say(f"{len(problems)} {what} row(s) of {path} skipped, e.g. {problems[0]}", "yellow")


def _claims(report: HarnessReport) -> str | None:
    """A report whose own resolved total disagrees with the ids it lists."""
    resolved = sum(1 for v in report.verdicts.values() if v.resolved)
    for key in ("resolved_instances", "resolved"):
        claimed = report.claimed.get(key)
        if claimed is not None and int(claimed) != resolved:
            return (
                f"{report.path}: says {key} = {claimed} but lists {resolved} resolved ids; "
                "the listed ids are used"
            )
    return None


def _read_run(
    spec: RunSpec, skipped: list[RowProblem]
) -> tuple[AgentOutputs | None, HarnessReport | None]:

    outputs = report = None
    if spec.output is not None:
        outputs = read_agent_outputs(spec.output)
        skipped.extend(outputs.problems)
        _problems("output", str(spec.output), outputs.problems)
        if not outputs.runs:
            raise fail(f"{spec.output}: no valid agent output row ({len(outputs.problems)} bad)")
    if spec.report is not None:
        report = read_harness_report(spec.report, system=spec.system)
        skipped.extend(report.problems)
        _problems("report", str(spec.report), report.problems)
        if not report.verdicts and report.covers_all:
            raise fail(f"{spec.report}: the report holds no verdict")
    elif spec.system is not None:
        raise fail(f"--run {spec.name}: system= is for a resolved-by report; give report=PATH")
    parts = []
    if outputs is not None:
        kinds = sorted({r.format.value for r in outputs.runs.values()})
        parts.append(f"{len(outputs.runs)} outputs ({', '.join(kinds)})")
    if report is not None:
        resolved = sum(1 for v in report.verdicts.values() if v.resolved)
        parts.append(f"{report.kind.value} report, {resolved} resolved ids")
    say(f"{spec.name}: " + "; ".join(parts))
    return outputs, report


def _manifest_differences(specs: list[RunSpec]) -> tuple[list[str], list[str]]:
    """(differences, notes): the `frozen` keys whose values differ between runs' manifests,
    and what could not be checked."""
    manifests = {s.name: read_run_manifest(s.manifest) for s in specs if s.manifest is not None}
    notes: list[str] = []
    differences = []
    without = [s.name for s in specs if s.manifest is None]
    if manifests and without:
        # a run without a manifest has no known setting: not equal to the others' pins
        differences.append(f"manifest (none for {', '.join(without)}: its settings are unknown)")
    if len(manifests) < 2:
        return differences, notes
    keys = sorted({k for m in manifests.values() for k in m.frozen})
    for key in keys:
        values = {json.dumps(m.frozen.get(key), sort_keys=True) for m in manifests.values()}
        unpinned = [
            name for name, m in manifests.items() if key in PIN_KEYS and not m.frozen.get(key)
        ]
        if unpinned:
            # a setting no manifest pins (NOT GIVEN: a model revision, skills read from a
            # moving main) cannot be shown to be the same in two runs: null is not equal to null
            differences.append(f"{key} (not pinned in {', '.join(unpinned)})")
        elif len(values) > 1:
            shown = "; ".join(
                f"{name}: {json.dumps(m.frozen.get(key), sort_keys=True)}"
                for name, m in manifests.items()
            )
            differences.append(f"{key} ({shown})")
    return differences, notes


def _unchecked_repeats(arms: dict[str, list[RunSpec]]) -> list[str]:
    return [
        f"{arm}: {sum(s.manifest is None for s in runs)} of its {len(runs)} repeats have no "
        "manifest, so that they are repeats of one setting (seeds apart) is not checked"
        for arm, runs in arms.items()
        if len(runs) > 1 and any(s.manifest is None for s in runs)
    ]


def _read_differences(specs: list[RunSpec]) -> list[str]:
    """What the runs really read (each run's read.json, stamped as it started) against what
    their manifests pinned, and against each other: the runner and SDK commits, the runner's
    template and the instance list. A run without a record is not shown to match."""
    problems: list[str] = []
    reads: dict[str, Mapping[str, Any]] = {}
    for s in specs:
        if s.manifest is None:
            continue
        record = read_run_read(s.manifest)
        if record is None:
            problems.append(f"read.json ({s.name} was not stamped: what it read is not known)")
            continue
        reads[s.name] = record
        frozen = read_run_manifest(s.manifest).frozen
        runner = str(frozen.get("runner", ""))
        pinned = runner.rpartition("@")[2]
        for key, want in (("runner_head", pinned), ("sdk_head", frozen.get("sdk"))):
            got = record.get(key)
            if not want or got != want:
                problems.append(
                    f"{key} ({s.name} read {str(got)[:12]}, its manifest pins {str(want)[:12]})"
                )
    compared: dict[
        str, Callable[[Mapping[str, Any]], object]
    ] = {  # equal in every run: the runner's template, the instance list
        "template_sha256": lambda r: r.get("template_sha256"),
        "instances.txt": lambda r: (r.get("inputs_sha256") or {}).get("../instances.txt"),
    }
    for what, get in compared.items():
        values = {name: get(record) for name, record in reads.items()}
        if len({json.dumps(v) for v in values.values()}) > 1:
            shown = "; ".join(f"{n}: {str(v)[:12]}" for n, v in values.items())
            problems.append(f"{what} read ({shown})")
    return problems


def _repeat_problems(arms: dict[str, list[RunSpec]]) -> list[str]:
    """Runs pooled as repeats of one arm must be repeats: distinct run outputs, each run's own
    manifest naming that arm, the same predictions and gate, distinct seeds."""
    problems: list[str] = []
    for arm, runs in arms.items():
        seen: set[tuple[str, str | None]] = set()
        for s in runs:  # one file (one system of it) is one run, not two repeats
            for f in (s.output, s.report):
                if f is None:
                    continue
                key = (str(Path(f).resolve()), s.system)
                if key in seen:
                    problems.append(f"{arm}: {f} is given twice")
                seen.add(key)
        manifests = {}
        for k, s in enumerate(runs, start=1):
            if s.manifest is None:
                continue
            m = read_run_manifest(s.manifest)
            if m.arm.get("name") != arm:
                problems.append(
                    f"{arm}: run {k}'s manifest {s.manifest} is of arm {m.arm.get('name')!r}"
                )
            manifests[k] = m
        if len(runs) < 2:
            continue
        if len(manifests) < len(runs):  # peers' runs have none: that is said in the notes
            continue
        for field in ("predictions", "gate"):
            values = {json.dumps(m.arm.get(field), sort_keys=True) for m in manifests.values()}
            if len(values) > 1:
                problems.append(f"{arm}: its repeats differ in {field}")
        seeds = [m.arm.get("seed") for m in manifests.values()]
        if len(set(map(str, seeds))) < len(seeds):
            problems.append(f"{arm}: two repeats share a seed ({seeds})")
        paths = {str(Path(m.path).resolve()) for m in manifests.values()}
        if len(paths) < len(manifests):
            problems.append(f"{arm}: two repeats point at the same manifest")
    return problems


def _over_cap(specs: list[RunSpec], configs: list[ConfigRun]) -> tuple[list[str], dict[str, int]]:
    """Runs with more LLM calls than their manifest's total round cap: the notes naming them,
    and per configuration how many (those with a cap), for Table 3's column."""
    notes = []
    counts: dict[str, int] = {}
    by_name = {c.name: c for c in configs}
    for s in specs:
        if s.manifest is None:
            continue
        cap = read_run_manifest(s.manifest).frozen.get("round_cap")
        if not isinstance(cap, int) or isinstance(cap, bool):
            continue
        over = [
            o.instance_id
            for o in by_name[s.name].outcomes
            if o.rounds is not None and o.rounds > cap
        ]
        counts[s.name] = len(over)
        if over:
            notes.append(
                f"{s.name}: {len(over)} run(s) above the total round cap {cap} (continuations): "
                + ", ".join(over)
            )
    return notes, counts


def _gold(instances: Path | None) -> dict[str, GoldLabel] | None:
    """Gold files from the instance file's patches, when it holds instances with patches."""
    if instances is None or instances.suffix.lower() == ".txt":
        return None
    try:
        loaded = load_instances(instances)
    except RecordError:
        return None
    gold = gold_from_instances(loaded.records)
    return gold if any(g.files for g in gold.values()) else None


def report(
    run: Annotated[
        list[str] | None,
        typer.Option(
            "--run",
            help="NAME=OUTPUT[,report=PATH][,system=S][,predictions=PATH][,precision=P]; "
            "NAME=report=PATH for a report-only run. Repeat for more; a NAME given again is "
            "a repeated run of the same arm (pooled per instance). A path holding ',' "
            "or '=' needs --manifest.",
            show_default=False,
        ),
    ] = None,
    manifest: Annotated[
        Path | None,
        typer.Option(
            "--manifest", help="A JSON or TOML run list (runs, baseline, instances, title)."
        ),
    ] = None,
    baseline: Annotated[
        str | None, typer.Option("--baseline", help="The run the others are compared with.")
    ] = None,
    instances: Annotated[
        Path | None,
        instances_option("The fixed denominator: instances JSON/JSONL(.gz)/parquet, or .txt ids."),
    ] = None,
    fmt: Annotated[DownstreamFormat, typer.Option("--format", "-f")] = DownstreamFormat.TABLE,
    output: Annotated[Path | None, output_option("Write the report here.")] = None,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Also draw the figure: .png, .svg, .pdf, ...")
    ] = None,
    cases: Annotated[bool, typer.Option("--cases", help="Add the per-instance case view.")] = False,
    html: Annotated[
        Path | None,
        typer.Option("--html", help="Also write a self-contained HTML report (opens from disk)."),
    ] = None,
    all_pairs: Annotated[
        bool, typer.Option("--all-pairs", help="Compare every pair, not only each vs baseline.")
    ] = False,
    resamples: Annotated[
        int, typer.Option(min=0, help="Bootstrap resamples (0: no intervals).")
    ] = 2000,
    seed: Annotated[int, seed_option("Seed of the bootstrap resampling.")] = 0,
    allow_manifest_diff: Annotated[
        bool,
        typer.Option(
            "--allow-manifest-diff",
            help="Compare runs whose manifests differ in more than the arm (said in the report).",
        ),
    ] = False,
    title: Annotated[str | None, typer.Option(help="Report title.")] = None,
) -> None:
    """Resolve rates on a fixed denominator, rounds/tokens per resolved instance, and paired
    tests (McNemar, bootstrap intervals) between configurations of a frozen coding agent.

    Example: swe-eval downstream report --run base=base/output.jsonl,report=base/report.json
    --run codegrep=cg/output.jsonl,report=cg/report.json,predictions=cg.jsonl
    -i verified.jsonl --baseline base -f markdown --plot table3.png
    """
    from swe_eval.plots import require_plot_extra

    check_output("-o", output)
    check_output("--html", html)
    check_output("--plot", plot, suffixes=IMAGE_SUFFIXES)
    if plot is not None:
        with clear_errors():
            require_plot_extra()
    skipped: list[RowProblem] = []
    with clear_errors():
        loaded = read_manifest(manifest) if manifest is not None else None
        specs = [*(loaded.runs if loaded else ()), *(parse_run_option(r) for r in run or [])]
    if not specs:
        raise fail("give at least one --run NAME=PATH (or a --manifest)")
    arms: dict[str, list[RunSpec]] = {}
    for s in specs:
        arms.setdefault(s.name, []).append(s)
    names = list(arms)
    repeated = any(len(v) > 1 for v in arms.values())
    runs_of: dict[str, list[str]] = {arm: [] for arm in arms}
    renamed: list[RunSpec] = []
    for s in specs:  # each run of a repeated arm under its own name: NAME#1, NAME#2, ...
        name = f"{s.name}#{len(runs_of[s.name]) + 1}" if len(arms[s.name]) > 1 else s.name
        if name in arms and name != s.name:
            raise fail(f"run name {name} is both an arm and a repeat of {s.name}")
        runs_of[s.name].append(name)
        renamed.append(s.model_copy(update={"name": name}))
    specs = renamed
    baseline = baseline or (loaded.baseline if loaded else None) or names[0]
    if baseline not in names:
        raise fail(f"--baseline {baseline}: no run of that name ({', '.join(names)})")
    instances = instances or (loaded.instances if loaded else None)
    title = title or (loaded.title if loaded else None)

    try:
        repeats = _repeat_problems(arms)
        if repeats:
            raise fail("these runs are not repeats of their arm: " + " | ".join(repeats))
        differences, notes = _manifest_differences(specs)
        differences += _read_differences(specs)
        notes += _unchecked_repeats(arms)
        if differences and not allow_manifest_diff:
            raise fail(
                "the runs' manifests differ in more than the arm: "
                + " | ".join(differences)
                + " (--allow-manifest-diff to compare them anyway)"
            )
        if differences:
            notes.append(
                "--allow-manifest-diff: these runs differ in more than the arm, so a difference "
                "between them is not the injection's alone: " + " | ".join(differences)
            )
        read = {s.name: _read_run(s, skipped) for s in specs}
        if instances is not None:
            ids, problems = read_instance_ids(instances)
            skipped.extend(problems)
            _problems("instance", str(instances), problems)
            if not ids:
                raise fail(f"{instances}: no instance id")
            source = str(instances)
        else:
            seen: set[str] = set()
            for outputs, rep in read.values():
                seen |= set(outputs.runs) if outputs else set()
                seen |= set(rep.verdicts) if rep else set()
            ids = sorted(seen)
            source = "no -i: the ids seen in the outputs and reports"
            say(
                f"no -i: the denominator is the {len(ids)} instance ids seen in the outputs and "
                "reports; give -i for a fixed one",
                "yellow",
            )
        for _, rep in read.values():
            claim = _claims(rep) if rep else None
            if claim:
                notes.append(claim)
            if rep is not None and rep.conflicts:
                notes.append(
                    f"{rep.path}: {len(rep.conflicts)} id(s) listed both resolved and in a "
                    "failure list; counted resolved, as swebench's resolved total counts "
                    f"them: {', '.join(rep.conflicts)}"
                )
        gold = _gold(instances)
        configs: list[ConfigRun] = []
        precisions: dict[str, tuple[float, str]] = {}
        for spec in specs:
            outputs, rep = read[spec.name]
            injected = None
            if spec.predictions is not None:
                preds = load_predictions(spec.predictions)
                skipped.extend(preds.problems)
                _problems("prediction", str(spec.predictions), preds.problems)
                injected = {p.instance_id: p.files for p in preds.records}
                if gold is not None:
                    est = retrieval_precision(gold, preds.records)
                    precisions[spec.name] = (est.value, "predictions")
                elif spec.precision is None:
                    notes.append(
                        f"{spec.name}: precision not measured (the -i file holds no gold "
                        "patches); give precision=P"
                    )
            if spec.precision is not None:
                precisions[spec.name] = (spec.precision, "given")
            built = build_config(spec.name, ids, outputs, rep, injected=injected)
            if not built.matched:
                raise fail(
                    f"run {spec.name}: its outputs and report share no instance id with the "
                    f"denominator ({source}); a different dataset?"
                )
            configs.append(built)
        cap_notes, over = _over_cap(specs, configs)
        notes += cap_notes
        by_name = {c.name: c for c in configs}
        summaries = [
            summarize_config(c, n_resamples=resamples, seed=seed).model_copy(
                update={"over_round_cap": over.get(c.name)}
            )
            for c in configs
        ]
        arm_pairs: list[tuple[str, str]]
        if all_pairs:
            arm_pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
        else:
            arm_pairs = [(baseline, n) for n in names if n != baseline]
        paired: list[PairedComparison] = []
        pooled: list[PooledComparison] = []
        if repeated:
            pooled = [
                compare_pooled(
                    [by_name[r] for r in runs_of[a]],
                    [by_name[r] for r in runs_of[b]],
                    names=(a, b),
                    n_resamples=resamples,
                    seed=seed,
                )
                for a, b in arm_pairs
            ]
        else:
            paired = [
                compare(by_name[a], by_name[b], n_resamples=resamples, seed=seed)
                for a, b in arm_pairs
            ]
        benefit = []
        if any(name in precisions for name in names if name != baseline) and repeated:
            notes.append("precision vs benefit is left out when an arm has repeated runs")
        elif any(name in precisions for name in names if name != baseline):
            done = {(p.a, p.b): p for p in paired}
            vs_baseline = [
                done.get((baseline, c.name))
                or compare(by_name[baseline], c, n_resamples=resamples, seed=seed)
                for c in configs
                if c.name != baseline
            ]
            benefit = precision_benefit(vs_baseline, precisions)
    except (SweEvalError, RecordError, ValueError) as exc:
        raise fail(str(exc)) from exc
    result = DownstreamReport(
        title=title,
        denominator=len(ids),
        denominator_source=source,
        baseline=baseline,
        configs=summaries,
        paired=paired,
        precision_benefit=benefit,
        cases=case_rows(configs) if cases else [],
        notes=report_notes(summaries, paired) + notes,
        pooled=pooled,
        failure_ids={c.name: failure_ids(c) for c in configs},
        resamples=resamples,
        seed=seed,
        confidence=0.95,
    )
    emit(render_report(result, fmt, skipped=skipped), output)
    if html is not None:
        from codegrep_report import CodegrepReportError, write_downstream_report

        try:
            write_downstream_report(html, result.model_dump(mode="json"))
        except CodegrepReportError as exc:
            raise fail(f"cannot write --html {html}: {exc}") from exc
        say(f"wrote {html}")
    if plot is not None:
        from swe_eval.downstream.plot import plot_report

        try:
            plot_report(result, plot)
        except OSError as exc:
            raise fail(f"cannot write --plot {plot}: {exc.strerror or exc}") from exc
        say(f"wrote {plot}")
