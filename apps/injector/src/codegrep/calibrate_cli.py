"""`codegrep calibrate`: measure a retriever's precision for the gate, from its predictions.

Attached to `codegrep.cli.app` by `codegrep.cli`; imports nothing from it. The measurement is
`codegrep_gate.calibrate` (precision as swe-eval scores it, by rank and by score, bootstrap
intervals over instances); this module reads the files, names the retriever and its version,
optionally checks the result on held-out data, writes the record and prints what it measured.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from codegrep_cli import fail, instances_option, output_option, seed_option

if TYPE_CHECKING:
    from codegrep_gate import Calibration, CalibrationData, Check, Curve, Retriever

__all__ = ["calibrate", "retriever_of"]


def retriever_of(name: str, predictions_file: Path | None = None) -> Retriever:
    """The `Retriever` a calibration names: its name, the version of the package that
    implements it (codegrep-model for the policies), and the rollout config that the batch
    runners write beside their predictions (`PREDICTIONS.meta.json`), when there is one, with
    the definitions mode the rollouts ran in (`definitions`, which the gate checks a run
    against).

    A meta file that is there but cannot be read (not JSON, nested too deeply, `1e999`, not
    UTF-8, a list) raises `RecordFileError` naming it: the calibration would otherwise record
    a retriever without the config it ran with.
    """
    from codegrep_gate import Retriever
    from codegrep_records.io import read_json_object

    from codegrep.gating import retriever_version

    package, version = retriever_version(name)
    config: dict[str, object] = {}
    definitions: str | None = None  # the mode the predictions ran in, when the meta says
    if predictions_file is not None:
        meta = predictions_file.with_name(predictions_file.name + ".meta.json")
        if os.path.lexists(meta):
            data = read_json_object(meta)
            if isinstance(data.get("config"), dict):
                config = {"rollout": data["config"]}
            if data.get("definitions") in ("tree-sitter", "regex"):
                definitions = str(data["definitions"])
    return Retriever(
        name=name, version=version, package=package, config=config, definitions=definitions
    )


def _load(
    instances: Path | list[Path],
    predictions: Path,
    labels: Path | None,
    name: str | None,
    repo: list[str] | None,
    exclude_repo: list[str] | None,
    include_added: bool,
    include_tests: bool,
    predicted_only: bool = False,
) -> CalibrationData:
    from codegrep_gate import GateError, load_calibration_data
    from codegrep_records import GoldRule, RecordError

    rule = GoldRule(include_added=include_added, exclude_tests=not include_tests)
    try:
        loaded = load_calibration_data(
            instances,
            predictions,
            labels_file=labels,
            rule=rule,
            name=name,
            repos=repo or (),
            exclude_repos=exclude_repo or (),
            predicted_only=predicted_only,
        )
    except (RecordError, GateError) as exc:
        raise fail(str(exc)) from exc
    for problem in loaded.problems[:5]:
        typer.echo(f"warning: skipped row: {problem}", err=True)
    if len(loaded.problems) > 5:
        typer.echo(f"warning: {len(loaded.problems) - 5} more rows skipped", err=True)
    return loaded


def _curve_lines(curve: Curve | None, basis: Literal["rank", "score"]) -> list[str]:
    if curve is None:
        return [f"  by {basis}: none (the predictions carry no scores)"]
    out = [f"  by {basis} ({curve.method}):"]
    for b in curve.bins:
        note = f"  ({b.note})" if b.note else ""
        out.append(
            f"    {b.describe(basis):<22} {b.hits:>4} of {b.files:<4} files  "
            f"{b.precision.fmt(3)}{note}"
        )
    return out


def _context_lines(cal: Calibration) -> list[str]:
    model = cal.context
    if model is None:
        return []
    coefficients = ", ".join(
        f"{n} {c:+.3f}"
        for n, c in zip(("intercept", *model.features), model.coefficients, strict=True)
    )
    out = [f"  context model ({model.describe()}): {coefficients}"]
    for rank, size in ((1, 1), (1, 2), (2, 2)):
        cells = "  ".join(
            f"{s:.2f}: {model.precision(s, rank, size).fmt(2)}"
            for s in (0.15, 0.35, 0.55, 0.75, 0.9)
        )
        out.append(f"    rank {rank} of {size}  {cells}")
    return out


def _summary(cal: Calibration) -> str:
    lines = [
        f"retriever {cal.retriever.name} ({cal.retriever.package or '?'} "
        f"{cal.retriever.version or '?'}) on {cal.data.describe()}",
        f"  instances scored {cal.data.scored}, no gold {cal.data.no_gold}, missing "
        f"{cal.data.missing}, empty {cal.data.empty}, unknown ids {cal.data.unknown}",
        f"  precision {cal.precision.fmt(3)}; answered only {cal.precision_answered.fmt(3)}; "
        f"recall {cal.recall.fmt(3)}; F0.5 {cal.fbeta.fmt(3)}; "
        f"{cal.files_per_answer:.2f} files per answer",
        *_curve_lines(cal.by_rank, "rank"),
        *_curve_lines(cal.by_score, "score"),
        *_context_lines(cal),
    ]
    for chk in cal.checks:
        verdict = "consistent" if chk.consistent else "NOT consistent"
        lines += [
            f"  check on {chk.data.describe()}: precision {chk.precision.fmt(3)}, "
            f"answered {chk.precision_answered.fmt(3)}; {verdict}: {chk.note}"
        ]
    return "\n".join(lines)


def _check(cal: Calibration, data: CalibrationData, resamples: int, seed: int) -> Check:
    from codegrep_gate import GateError, check

    try:
        return check(
            cal, data.predictions, data.gold, data=data.data, resamples=resamples, seed=seed
        )
    except GateError as exc:
        raise fail(f"--check-predictions: {exc}") from exc


def calibrate(
    instances: Annotated[
        list[Path],
        instances_option(
            "Instances (SWE-bench style) with gold; repeat for several files (the first "
            "holding an id gives it)."
        ),
    ],
    predictions: Annotated[
        Path, typer.Option("-p", "--predictions", help="The retriever's predictions (JSONL).")
    ],
    output: Annotated[Path, output_option("The calibration (JSON).")],
    labels: Annotated[
        Path | None, typer.Option("--labels", "-l", help="Gold from labels (e.g. CATM).")
    ] = None,
    name: Annotated[
        str | None, typer.Option(help="What the data is called (default: the file name).")
    ] = None,
    retriever: Annotated[
        str | None,
        typer.Option(
            help="The retriever's name (default: the predictions' `retriever` field); "
            "rows naming another are an error."
        ),
    ] = None,
    repo: Annotated[
        list[str] | None,
        typer.Option("--repo", help="A filter: only this repository's instances; repeat."),
    ] = None,
    exclude_repo: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude-repo", help="Leave these repositories' instances out (e.g. not run)."
        ),
    ] = None,
    predicted_only: Annotated[
        bool,
        typer.Option(
            help="Measure only the instances that have a prediction (predictions made for a "
            "chosen part of the files, e.g. a cross-validation's pool); the others are not "
            "counted as missing."
        ),
    ] = False,
    check_instances: Annotated[
        Path | None,
        typer.Option(help="Held-out instances to check the calibration on (never fitted)."),
    ] = None,
    check_predictions: Annotated[
        Path | None, typer.Option(help="The same retriever's predictions on them.")
    ] = None,
    check_name: Annotated[
        str | None, typer.Option(help="What the held-out data is called.")
    ] = None,
    check_labels: Annotated[
        Path | None, typer.Option(help="Gold labels for the held-out data (as --labels).")
    ] = None,
    check_repo: Annotated[
        list[str] | None,
        typer.Option(
            help="Only this repository's held-out instances (e.g. never trained on); repeat."
        ),
    ] = None,
    check_exclude_repo: Annotated[
        list[str] | None, typer.Option(help="Leave these out of the held-out data; repeat.")
    ] = None,
    resamples: Annotated[int, typer.Option(min=1, help="Bootstrap resamples.")] = 1000,
    seed: Annotated[int, seed_option("Bootstrap seed.")] = 0,
    max_rank: Annotated[int, typer.Option(min=1, help="Ranks measured one by one.")] = 5,
    score_bins: Annotated[int, typer.Option(min=1, help="At most this many score bins.")] = 8,
    include_added: Annotated[bool, typer.Option(help="Count added files as gold.")] = False,
    include_tests: Annotated[bool, typer.Option(help="Count test files as gold.")] = False,
    context: Annotated[
        bool,
        typer.Option(
            "--context",
            help="Also fit the context model (precision on score, rank and answer size, with "
            "a bootstrap interval), which the gate then prefers.",
        ),
    ] = False,
    context_resamples: Annotated[
        int, typer.Option(min=1, help="Refits of the context model for its interval.")
    ] = 200,
    context_unit: Annotated[
        str,
        typer.Option(
            help="What the context model's refits resample: instance (the shipped choice, "
            "judged by leaving each repository out) or repository (wider intervals)."
        ),
    ] = "instance",
) -> None:
    """Measure a retriever's precision (by rank and by score, with intervals) for the gate.

    Example:
      codegrep calibrate -i lite.jsonl -p lexical-lite.jsonl -o lexical.json \\
        --exclude-repo django/django --check-instances verified_dev.jsonl \\
        --check-predictions lexical-verified_dev.jsonl
    """
    from codegrep_gate import GateError, write_calibration
    from codegrep_gate import calibrate as measure
    from codegrep_gate.errors import CalibrationMismatchError
    from codegrep_records import RecordError
    from codegrep_records.io import why_unwritable

    problem = why_unwritable(output)
    if problem is not None:
        raise fail(f"cannot write -o {output}: {problem}")
    if (check_instances is None) != (check_predictions is None):
        raise fail("--check-instances and --check-predictions go together")
    if check_instances is None and (check_name or check_repo or check_exclude_repo or check_labels):
        raise fail(
            "--check-name, --check-labels, --check-repo and --check-exclude-repo need "
            "--check-instances"
        )
    if check_instances is not None and (labels is None) != (check_labels is None):
        raise fail(
            "--labels and --check-labels go together: a calibration and its check are scored "
            "with the same kind of gold"
        )
    if context_unit not in ("instance", "repository"):
        raise fail(f"--context-unit must be instance or repository, not {context_unit!r}")
    data = _load(
        instances,
        predictions,
        labels,
        name,
        repo,
        exclude_repo,
        include_added,
        include_tests,
        predicted_only,
    )
    names = sorted({p.retriever for p in data.predictions if p.retriever})
    chosen = retriever or (names[0] if len(names) == 1 else None)
    if chosen is None:
        raise fail(
            f"{predictions}: " + (f"rows name several retrievers ({', '.join(names)})"
            if names else "no row names its retriever")
            + "; say which with --retriever"
        )  # fmt: skip
    try:
        cal = measure(
            data.predictions,
            data.gold,
            retriever=retriever_of(chosen, predictions),
            data=data.data,
            resamples=resamples,
            seed=seed,
            max_rank=max_rank,
            score_bins=score_bins,
            context=context,
            groups=data.repositories if context_unit == "repository" else None,
            context_resamples=context_resamples,
        )
        if check_instances is not None and check_predictions is not None:
            held = _load(
                check_instances,
                check_predictions,
                check_labels,
                check_name,
                check_repo,
                check_exclude_repo,
                include_added,
                include_tests,
            )
            cal = cal.with_check(_check(cal, held, resamples, seed))
    except CalibrationMismatchError as exc:
        raise fail(str(exc)) from exc
    except (GateError, RecordError) as exc:  # RecordError: an unreadable PREDICTIONS.meta.json
        raise fail(str(exc)) from None
    try:
        write_calibration(output, cal)
    except (OSError, GateError) as exc:
        raise fail(f"cannot write -o {output}: {exc}") from exc
    typer.echo(_summary(cal))
    typer.echo(f"wrote {output}", err=True)
