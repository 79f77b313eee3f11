"""`swe-eval`: score retrievers, convert peers' outputs, run the BM25/dense baselines, plot.

Thin: every command parses flags, calls the library and prints. Progress and notes go to
stderr, tables to stdout (or `-o`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from codegrep_records import (
    GoldLabel,
    GoldRule,
    Instance,
    Loaded,
    Prediction,
    RecordError,
    RowProblem,
    gold_from_instances,
    load_instances,
    load_labels,
    load_predictions,
)
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from swe_eval._corpus import FileSource
from swe_eval._prediction_writer import prediction_json, write_predictions
from swe_eval.cuts import Cut, apply_cut, sweep_cuts
from swe_eval.errors import SweEvalError
from swe_eval.metrics import DEFAULT_KS, SystemEval, evaluate, paired_difference, summarize
from swe_eval.peers import PeerFormat, convert_peer
from swe_eval.report import TableFormat, render

app = typer.Typer(
    help="Retrieval evaluation for file-localization agents (CodeGrep Table 2 and peers' metrics).",
    no_args_is_help=True,
    add_completion=False,
)
err = Console(stderr=True)

InstancesOpt = Annotated[
    Path, typer.Option("--instances", "-i", help="SWE-bench-style JSON/JSONL(.gz)/parquet.")
]
RepoOpt = Annotated[
    list[str] | None, typer.Option("--repo", help="Only these repositories (owner/name); repeat.")
]
ExcludeRepoOpt = Annotated[
    list[str] | None, typer.Option("--exclude-repo", help="Leave these repositories out; repeat.")
]
LimitOpt = Annotated[int | None, typer.Option("--limit", help="At most this many instances.")]


@contextmanager
def _clear_errors() -> Iterator[None]:
    """A file that cannot be read (or a bad value) ends the command with its message, exit 2."""
    try:
        yield
    except (SweEvalError, RecordError, ValueError) as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc


def _report_problems(
    loaded: Loaded[object],  # type: ignore[type-var]
    what: str,
    skipped: list[RowProblem] | None = None,
) -> None:
    """Say how many rows of a file were skipped; collect them in `skipped` for a JSON report."""
    if skipped is not None:
        skipped.extend(loaded.problems)
    if loaded.problems:
        err.print(
            f"[yellow]{len(loaded.problems)} {what} row(s) skipped[/], e.g. {loaded.problems[0]}"
        )


def _select(
    instances: Sequence[Instance],
    repos: list[str] | None,
    exclude: list[str] | None,
    limit: int | None,
) -> list[Instance]:
    chosen = [
        i
        for i in instances
        if (not repos or i.repo in repos) and (not exclude or i.repo not in exclude)
    ]
    return chosen[:limit] if limit is not None else chosen


def _gold(
    instances: Sequence[Instance],
    labels: Path | None,
    rule: GoldRule,
    skipped: list[RowProblem] | None = None,
) -> dict[str, GoldLabel]:
    gold = gold_from_instances(instances, rule)
    if labels is None:
        return gold
    loaded = load_labels(labels)
    _report_problems(loaded, "label", skipped)  # type: ignore[arg-type]
    by_id = {lab.instance_id: lab for lab in loaded.records}
    missing = [iid for iid in gold if iid not in by_id]
    if missing:
        err.print(
            f"[yellow]{len(missing)} instance(s) have no label in {labels}; "
            "they are scored with an empty gold set (counted as no_gold)[/]"
        )
    return {
        iid: by_id.get(iid, GoldLabel(instance_id=iid, files=frozenset(), source=str(labels)))
        for iid in gold
    }


def _parse_ks(ks: str) -> tuple[int, ...]:
    try:
        out = tuple(int(k) for k in ks.split(",") if k.strip())
    except ValueError as exc:
        raise typer.BadParameter(f"--k wants integers like 1,3,5,10, not {ks!r}") from exc
    if not out or min(out) < 1:
        raise typer.BadParameter("--k wants positive integers")
    return out


def _emit(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
        err.print(f"wrote {output}")


def _load_systems(
    predictions: list[Path], names: list[str] | None, skipped: list[RowProblem] | None = None
) -> list[tuple[str, list[Prediction]]]:
    if names and len(names) != len(predictions):
        raise typer.BadParameter("give one --name per --predictions, or none")
    systems = []
    for j, path in enumerate(predictions):
        loaded = load_predictions(path)
        _report_problems(loaded, f"prediction ({path.name})", skipped)  # type: ignore[arg-type]
        recs = list(loaded.records)
        default = next((p.retriever for p in recs if p.retriever), None) or path.name.split(".")[0]
        systems.append((names[j] if names else default, recs))
    return systems


@app.command()
def retrieval(
    instances: InstancesOpt,
    predictions: Annotated[
        list[Path], typer.Option("--predictions", "-p", help="Prediction JSONL; repeat for more.")
    ],
    labels: Annotated[
        Path | None, typer.Option("--labels", "-l", help="Alternative gold (e.g. CATM labels).")
    ] = None,
    name: Annotated[
        list[str] | None, typer.Option("--name", help="Display name per --predictions.")
    ] = None,
    fmt: Annotated[TableFormat, typer.Option("--format", "-f")] = TableFormat.TABLE,
    output: Annotated[Path | None, typer.Option("-o", "--output")] = None,
    by_repo: Annotated[bool, typer.Option("--by-repo", help="Add one row per repository.")] = False,
    paired: Annotated[
        bool, typer.Option("--paired", help="Paired bootstrap of each system minus the first.")
    ] = False,
    beta: Annotated[float, typer.Option(help="β of F-beta (the paper uses 0.5).")] = 0.5,
    k: Annotated[str, typer.Option("--k", help="acc@k cut-offs.")] = ",".join(map(str, DEFAULT_KS)),
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples (0: no intervals).")] = 2000,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    include_added: Annotated[
        bool, typer.Option(help="Count files the patch adds as gold.")
    ] = False,
    include_tests: Annotated[bool, typer.Option(help="Count test files as gold.")] = False,
    repo: RepoOpt = None,
    exclude_repo: ExcludeRepoOpt = None,
    limit: LimitOpt = None,
    title: Annotated[str | None, typer.Option(help="Table title.")] = None,
) -> None:
    """Score prediction files side by side (the CodeGrep paper's Table 2, plus F1 and acc@k).

    Example: swe-eval retrieval -i lite.jsonl -p bm25.jsonl -p locagent.jsonl --paired -f markdown
    """
    skipped: list[RowProblem] = []
    try:
        loaded = load_instances(instances)
        _report_problems(loaded, "instance", skipped)  # type: ignore[arg-type]
        chosen = _select(loaded.records, repo, exclude_repo, limit)
        rule = GoldRule(include_added=include_added, exclude_tests=not include_tests)
        gold = _gold(chosen, labels, rule, skipped)
        repos = {i.instance_id: i.repo for i in chosen}
        ks = _parse_ks(k)
        evals: list[SystemEval] = []
        for sys_name, preds in _load_systems(predictions, name, skipped):
            evals.append(evaluate(gold, preds, repos=repos, name=sys_name, beta=beta, ks=ks))
        summaries = [
            summarize(ev, n_resamples=resamples, seed=seed, by_repo=by_repo) for ev in evals
        ]
        diffs = []
        if paired:
            for ev in evals[1:]:
                for metric in ("fbeta", "precision"):
                    diffs.append(
                        paired_difference(
                            ev, evals[0], metric=metric, n_resamples=max(resamples, 1000), seed=seed
                        )
                    )
    except (SweEvalError, RecordError, ValueError) as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    for s in summaries:
        if s.no_gold or s.unknown:
            err.print(
                f"{s.name}: {s.no_gold} instance(s) without gold left out; "
                f"{s.unknown} prediction(s) for unknown ids ignored"
            )
    _emit(
        render(summaries, fmt, diffs=diffs, by_repo=by_repo, title=title, skipped=skipped), output
    )


@app.command()
def convert(
    fmt: Annotated[PeerFormat, typer.Argument(help="The peer's published format.")],
    source: Annotated[Path, typer.Argument(help="The peer's file.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Prediction JSONL to write.")],
    ranking: Annotated[str, typer.Option(help="ChronoRepo: 'bm25' or 'hybrid'.")] = "hybrid",
    top_k: Annotated[int | None, typer.Option("--top-k", help="Keep the first k files.")] = None,
    min_score: Annotated[
        float | None, typer.Option("--min-score", help="ChronoRepo: keep scores >= this.")
    ] = None,
    name: Annotated[str | None, typer.Option(help="The `retriever` name to record.")] = None,
) -> None:
    """Turn a peer's published output into a prediction file.

    Example: swe-eval convert chronorepo f1_scores_lite.jsonl --ranking bm25 --top-k 1 -o b.jsonl
    """
    try:
        conv = convert_peer(
            fmt, source, name=name, ranking=ranking, top_k=top_k, min_score=min_score
        )
    except (SweEvalError, RecordError, ValueError) as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    n = write_predictions(output, conv.predictions)
    empty = sum(1 for p in conv.predictions if not p.files)
    err.print(
        f"wrote {n} predictions ({empty} empty) to {output}; {len(conv.problems)} rows skipped"
    )
    for problem in conv.problems[:5]:
        err.print(f"  {problem}")


class RetrieverKind(StrEnum):
    BM25 = "bm25"
    DENSE = "dense"
    LEXICAL = "lexical"  # codegrep_model.LexicalPolicy through the rollout engine
    AGENT = "agent"  # a served retrieval model (--base-url/--model) through the same engine


@app.command()
def predict(
    retriever: Annotated[RetrieverKind, typer.Option("--retriever", "-r")],
    instances: InstancesOpt,
    output: Annotated[Path, typer.Option("-o", "--output", help="Prediction JSONL (appended).")],
    cache: Annotated[Path, typer.Option("--cache", help="worktree-sandbox bare clone cache.")],
    source: Annotated[
        str,
        typer.Option("--source", help="Clone source template, e.g. https://github.com/{repo}.git"),
    ] = "https://github.com/{repo}.git",
    depth: Annotated[int, typer.Option(help="Files kept per ranking (cut later).")] = 50,
    device: Annotated[str, typer.Option(help="Dense: torch device.")] = "cpu",
    max_chunks: Annotated[int, typer.Option(help="Dense: chunks embedded per file.")] = 4,
    chunk_lines: Annotated[int, typer.Option(help="Dense: lines per chunk.")] = 40,
    repo: RepoOpt = None,
    exclude_repo: ExcludeRepoOpt = None,
    limit: LimitOpt = None,
    jobs: Annotated[int, typer.Option("-j", "--jobs", help="Agents: rollouts at a time.")] = 4,
    base_url: Annotated[
        str | None, typer.Option(help="Agent: OpenAI-compatible endpoint of the served model.")
    ] = None,
    model: Annotated[str, typer.Option(help="Agent: model name at --base-url.")] = "codegrep",
) -> None:
    """Rank files for every instance with a baseline or run an agent; resumes (skips ids in -o).

    bm25/dense rank every file of the tree; lexical/agent run the retrieval agent's rollout
    engine (codegrep-model) and also write the full rollouts beside -o.

    Example: swe-eval predict -r bm25 -i lite.jsonl --cache sb-cache --repo psf/requests -o b.jsonl
    """
    from swe_eval.predict import Retriever
    from swe_eval.predict import predict as run_predict

    with _clear_errors():
        loaded = load_instances(instances)
    _report_problems(loaded, "instance")  # type: ignore[arg-type]
    chosen = _select(loaded.records, repo, exclude_repo, limit)
    if retriever in (RetrieverKind.LEXICAL, RetrieverKind.AGENT):
        if retriever is RetrieverKind.AGENT and base_url is None:
            err.print("[red]-r agent needs --base-url (and --model) of a served model[/red]")
            raise typer.Exit(2)
        from codegrep_model.cli import batch

        # The engine's batch runner selects by repository and limit itself; give it exactly
        # the repositories chosen here so --exclude-repo means the same for every retriever.
        batch(
            instances=instances,
            output=output,
            cache=cache,
            source=source,
            jobs=jobs,
            limit=limit,
            repo=sorted({i.repo for i in chosen}),
            base_url=base_url if retriever is RetrieverKind.AGENT else None,
            model=model,
            api_key=os.environ.get("OPENAI_API_KEY"),
        )
        return
    with _clear_errors():
        done = (
            {p.instance_id for p in load_predictions(output).records} if output.exists() else set()
        )
    todo = [i for i in chosen if i.instance_id not in done and i.base_commit]
    skipped = sum(1 for i in chosen if not i.base_commit)
    err.print(f"{len(done)} already done, {len(todo)} to do, {skipped} without base_commit")
    rank: Retriever
    if retriever is RetrieverKind.BM25:
        from swe_eval.bm25 import BM25Config, BM25Retriever

        rank = BM25Retriever(BM25Config(depth=depth))
    else:
        from swe_eval.dense import DenseConfig, DenseRetriever

        rank = DenseRetriever(
            DenseConfig(
                depth=depth, device=device, max_chunks_per_file=max_chunks, chunk_lines=chunk_lines
            )
        )
    failures = 0
    from worktree_sandbox import BareRepoCache, SandboxError, SyncSandbox

    try:
        repo_cache = BareRepoCache(cache, source=source)
    except (SandboxError, OSError) as exc:  # a --source naming no repository, an unusable --cache
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    with SyncSandbox(repo_cache) as sb:
        for r, commits in _commits_by_repo(todo).items():
            try:  # one clone and one fetch per repository, rather than one per instance
                repo_cache.ensure(r, commits=commits)
            except SandboxError as exc:
                # not fatal: each instance it concerns fails below on its own and is counted
                err.print(f"[yellow]{r}[/]: {exc}")

        @contextmanager
        def open_tree(inst: Instance) -> Iterator[FileSource]:
            # A row names a repository, never a folder that happens to be here.
            with sb.open(inst.repo, inst.base_commit, folders=False) as tree:
                yield tree

        output.parent.mkdir(parents=True, exist_ok=True)
        progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
        )
        with progress, output.open("a", encoding="utf-8") as fh:
            task = progress.add_task(str(retriever.value), total=len(todo))
            for outcome in run_predict(todo, rank, open_tree):
                progress.advance(task)
                if outcome.prediction is None:
                    failures += 1
                    err.print(f"[red]{outcome.instance_id}[/]: {outcome.error}")
                    continue
                fh.write(prediction_json(outcome.prediction) + "\n")
                fh.flush()
    err.print(f"{len(todo) - failures} predicted, {failures} failed")
    if failures:
        raise typer.Exit(1)


def _commits_by_repo(instances: Sequence[Instance]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for i in instances:
        if i.base_commit:
            out.setdefault(i.repo, []).append(i.base_commit)
    return out


@app.command()
def cut(
    instances: InstancesOpt,
    predictions: Annotated[Path, typer.Option("--predictions", "-p", help="Rankings to cut.")],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write the cut file.")
    ] = None,
    top_k: Annotated[int | None, typer.Option("--top-k")] = None,
    min_score: Annotated[float | None, typer.Option("--min-score")] = None,
    relative: Annotated[
        float | None, typer.Option("--relative", help="Keep scores >= this × the top score.")
    ] = None,
    best: Annotated[
        bool, typer.Option("--best", help="Apply the best cut of the sweep on these instances.")
    ] = False,
    name: Annotated[str | None, typer.Option(help="The `retriever` name of the cut file.")] = None,
    repo: RepoOpt = None,
    exclude_repo: ExcludeRepoOpt = None,
) -> None:
    """Sweep top-k and relative-score cuts of a ranking on a gold set; optionally write a cut.

    Example: swe-eval cut -i lite.jsonl -p bm25-rankings.jsonl --best -o bm25.jsonl
    """
    with _clear_errors():
        loaded = load_instances(instances)
        loaded_preds = load_predictions(predictions)
    _report_problems(loaded, "instance")  # type: ignore[arg-type]
    _report_problems(loaded_preds, f"prediction ({predictions.name})")  # type: ignore[arg-type]
    chosen = _select(loaded.records, repo, exclude_repo, None)
    gold = gold_from_instances(chosen)
    preds = list(loaded_preds.records)
    results = sweep_cuts(gold, preds, relatives=(0.5, 0.6, 0.7, 0.8, 0.9, 0.95))
    err.print("cut            Fβ      P      R   files")
    for r in results:
        err.print(
            f"{r.cut.label():<13} {r.fbeta:.3f}  {r.precision:.3f}  {r.recall:.3f}  "
            f"{r.mean_files:.2f}"
        )
    chosen_cut = Cut(top_k=top_k, min_score=min_score, relative=relative)
    if best:
        chosen_cut = results[0].cut
    if output is not None:
        label = name or f"{preds[0].retriever if preds else 'system'}[{chosen_cut.label()}]"
        cut_preds = [
            apply_cut(p, chosen_cut).model_copy(update={"retriever": label}) for p in preds
        ]
        write_predictions(output, cut_preds)
        err.print(f"wrote {len(cut_preds)} predictions cut at {chosen_cut.label()} to {output}")


@app.command()
def plot(
    instances: InstancesOpt,
    predictions: Annotated[
        list[Path], typer.Option("--predictions", "-p", help="Prediction JSONL; repeat.")
    ],
    output: Annotated[Path, typer.Option("-o", "--output", help="PNG to write.")],
    rankings: Annotated[
        list[Path] | None,
        typer.Option("--rankings", help="Full rankings for the files-returned curve; repeat."),
    ] = None,
    name: Annotated[list[str] | None, typer.Option("--name")] = None,
    repo: RepoOpt = None,
    exclude_repo: ExcludeRepoOpt = None,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples.")] = 2000,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    title: Annotated[str | None, typer.Option()] = None,
) -> None:
    """Plot precision against the paper's 0.45/0.68 marks, and precision vs. files returned.

    Example: swe-eval plot -i lite.jsonl -p bm25.jsonl -p locagent.jsonl -o precision.png
    """
    from swe_eval.plots import plot_precision, precision_curve

    with _clear_errors():
        loaded = load_instances(instances)
        _report_problems(loaded, "instance")  # type: ignore[arg-type]
        chosen = _select(loaded.records, repo, exclude_repo, None)
        gold = gold_from_instances(chosen)
        repos = {i.instance_id: i.repo for i in chosen}
        systems = _load_systems(predictions, name)
        summaries = [
            summarize(
                evaluate(gold, preds, repos=repos, name=n),
                n_resamples=resamples,
                seed=seed,
                by_repo=False,
            )
            for n, preds in systems
        ]
        curves = {n: precision_curve(gold, preds) for n, preds in systems}
        for path in rankings or []:
            for n, preds in _load_systems([path], None):
                curves[f"{n} (ranking)"] = precision_curve(gold, preds)
        plot_precision(summaries, curves, output, title=title)
    err.print(f"wrote {output}")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
