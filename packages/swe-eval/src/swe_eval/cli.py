"""`swe-eval`: score retrievers, convert peers' outputs, run the BM25/dense baselines, plot.

Thin: every command parses flags, calls the library and prints. Progress and notes go to
stderr, tables to stdout (or `-o`). The toolkit's flag convention: `-i/--instances`, `-o` (checked
writable before any work), `-j/--jobs`, `--limit` (>= 0), `--seed`, `--dry-run`, `--timeout`
(seconds), `--version`; exit 0 done, 1 the work ran and some of it failed, 2 bad input, said in
one `error:` line on stderr. Text from files and exceptions is never read as rich markup.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from codegrep_cli import (
    base_url_option,
    dry_run_option,
    fail,
    grep_engine_option,
    instances_option,
    jobs_option,
    limit_option,
    model_option,
    output_option,
    policy_option,
    seed_option,
    timeout_option,
    version_option,
)
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
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from swe_eval._cli_io import (
    IMAGE_SUFFIXES,
    check_output,
    clear_errors,
    emit,
    err,
    say,
)
from swe_eval._corpus import FileSource
from swe_eval._prediction_writer import prediction_json, write_predictions
from swe_eval.cuts import Cut, apply_cut, sweep_cuts
from swe_eval.downstream.cli import downstream_app
from swe_eval.errors import SweEvalError
from swe_eval.metrics import (
    DEFAULT_KS,
    Estimate,
    SystemEval,
    SystemSummary,
    evaluate,
    paired_difference,
    summarize,
)
from swe_eval.peers import PeerFormat, convert_peer
from swe_eval.report import TableFormat, render_table

if TYPE_CHECKING:
    from codegrep_model import PolicySpec

app = typer.Typer(
    help="Retrieval evaluation for file-localization agents (CodeGrep Table 2 and peers' metrics)."
    "\n\nExit codes: 0 done; 1 the work ran and some of it failed (counted and reported); "
    "2 bad input.",
    no_args_is_help=True,
    add_completion=False,
)

InstancesOpt = Annotated[Path, instances_option("SWE-bench-style JSON/JSONL(.gz)/parquet.")]
RepoOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--repo",
        help="A filter: keep only the instances of this repository (owner/name); repeat for "
        "more. A name no instance has is an error.",
    ),
]
ExcludeRepoOpt = Annotated[
    list[str] | None, typer.Option("--exclude-repo", help="Leave these repositories out; repeat.")
]
LimitOpt = Annotated[
    int | None, limit_option("At most this many instances (the first, after --repo).")
]
SeedOpt = Annotated[int, seed_option("Seed of the bootstrap resampling.")]


@app.callback()
def _root(version: Annotated[bool, version_option("swe-eval", "swe_eval")] = False) -> None:
    """Options of swe-eval itself (the help text is the app's)."""


def _report_problems(
    loaded: Loaded[object],  # type: ignore[type-var]
    what: str,
    skipped: list[RowProblem] | None = None,
    path: Path | None = None,
) -> None:
    """Say how many rows of a file were skipped; collect them in `skipped` for a JSON report.

    With `path`, a file that gives no row at all (empty, or every row bad) is an error: it is
    not the file the command wants.
    """
    if skipped is not None:
        skipped.extend(loaded.problems)
    if path is not None and not loaded.records:
        if loaded.problems:
            raise fail(
                f"{path}: no valid {what} row ({len(loaded.problems)} bad, "
                f"e.g. {loaded.problems[0]})"
            )
        raise fail(f"{path}: no {what} rows")
    if loaded.problems:
        say(f"{len(loaded.problems)} {what} row(s) skipped, e.g. {loaded.problems[0]}", "yellow")


def _select(
    instances: Sequence[Instance],
    repos: list[str] | None,
    exclude: list[str] | None,
    limit: int | None,
    source: Path | None = None,
) -> list[Instance]:
    """The instances the filters keep; with `source`, a `--repo` no instance has exits 2."""
    if source is not None:
        known = {i.repo for i in instances}
        for name in repos or []:
            if name not in known:
                raise fail(f"--repo {name}: no instance of this repository in {source}")
    chosen = [
        i
        for i in instances
        if (not repos or i.repo in repos) and (not exclude or i.repo not in exclude)
    ]
    if limit is not None and limit < 0:
        # the option refuses it too; a negative slice would drop instances from the end
        raise fail(f"--limit must be >= 0, got {limit}")
    return chosen[:limit] if limit is not None else chosen


def _load_chosen(
    instances: Path,
    repos: list[str] | None,
    exclude: list[str] | None,
    limit: int | None,
    skipped: list[RowProblem] | None = None,
    *,
    need_some: bool = True,
) -> list[Instance]:
    """Read the instances file and apply the filters; exit 2 when nothing is left to score."""
    with clear_errors():
        loaded = load_instances(instances)
    _report_problems(loaded, "instance", skipped, path=instances)  # type: ignore[arg-type]
    chosen = _select(loaded.records, repos, exclude, limit, source=instances)
    if need_some and not chosen:
        raise fail(
            f"no instance of {instances} left ({len(loaded.records)} read); "
            "--exclude-repo or --limit leave none"
        )
    return chosen


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
    _report_problems(loaded, "label", skipped, path=labels)  # type: ignore[arg-type]
    by_id = {lab.instance_id: lab for lab in loaded.records}
    missing = [iid for iid in gold if iid not in by_id]
    if missing:
        say(
            f"{len(missing)} instance(s) have no label in {labels}; "
            "they are scored with an empty gold set (counted as no_gold)",
            "yellow",
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


def _load_systems(
    predictions: list[Path], names: list[str] | None, skipped: list[RowProblem] | None = None
) -> list[tuple[str, list[Prediction]]]:
    if names and len(names) != len(predictions):
        raise typer.BadParameter("give one --name per --predictions, or none")
    systems = []
    for j, path in enumerate(predictions):
        loaded = load_predictions(path)
        what = f"prediction ({path.name})"
        _report_problems(loaded, what, skipped, path=path)  # type: ignore[arg-type]
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
    output: Annotated[
        Path | None,
        output_option("Write the table here (gzipped if named .gz)."),
    ] = None,
    by_repo: Annotated[bool, typer.Option("--by-repo", help="Add one row per repository.")] = False,
    paired: Annotated[
        bool, typer.Option("--paired", help="Paired bootstrap of each system minus the first.")
    ] = False,
    beta: Annotated[float, typer.Option(help="β of F-beta (the paper uses 0.5).")] = 0.5,
    k: Annotated[str, typer.Option("--k", help="acc@k cut-offs.")] = ",".join(map(str, DEFAULT_KS)),
    resamples: Annotated[
        int, typer.Option(min=0, help="Bootstrap resamples (0: no intervals).")
    ] = 2000,
    seed: SeedOpt = 0,
    include_added: Annotated[
        bool, typer.Option(help="Count files the patch adds as gold.")
    ] = False,
    include_tests: Annotated[bool, typer.Option(help="Count test files as gold.")] = False,
    exclude_changelogs: Annotated[
        bool,
        typer.Option(
            help="Leave changelog entries (CHANGES.rst, changelog.d/*, whatsnew/*) out of the "
            "gold (counted by default, as in every published table)."
        ),
    ] = False,
    repo: RepoOpt = None,
    exclude_repo: ExcludeRepoOpt = None,
    limit: LimitOpt = None,
    title: Annotated[str | None, typer.Option(help="Table title.")] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Also write one self-contained HTML report here: per instance the issue, the "
            "answer with scores, the gold and F-beta, worst first (opens from disk).",
        ),
    ] = None,
) -> None:
    """Score prediction files side by side (the CodeGrep paper's Table 2, plus F1 and acc@k).

    Example: swe-eval retrieval -i lite.jsonl -p bm25.jsonl -p locagent.jsonl --paired -f markdown
    """
    check_output("-o", output)
    check_output("--html", html)
    skipped: list[RowProblem] = []
    chosen = _load_chosen(instances, repo, exclude_repo, limit, skipped)
    try:
        rule = GoldRule(
            include_added=include_added,
            exclude_tests=not include_tests,
            exclude_changelogs=exclude_changelogs,
        )
        gold = _gold(chosen, labels, rule, skipped)
        repos = {i.instance_id: i.repo for i in chosen}
        ks = _parse_ks(k)
        evals: list[SystemEval] = []
        systems = _load_systems(predictions, name, skipped)
        for sys_name, preds in systems:
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
        raise fail(str(exc)) from exc
    for s in summaries:
        if s.no_gold or s.unknown:
            say(
                f"{s.name}: {s.no_gold} instance(s) without gold left out; "
                f"{s.unknown} prediction(s) for unknown ids ignored"
            )
    # which gold the table scores against, said beside every table (labels replace the rule)
    say(f"gold: {f'the labels of {labels}' if labels is not None else rule.describe()}")
    table = render_table(summaries, fmt, diffs=diffs, by_repo=by_repo, title=title, skipped=skipped)
    emit(table, output)
    if html is not None:
        _write_retrieval_html(html, chosen, gold, systems, evals, summaries, title=title)


def _write_retrieval_html(
    path: Path,
    chosen: Sequence[Instance],
    gold: dict[str, GoldLabel],
    systems: Sequence[tuple[str, list[Prediction]]],
    evals: Sequence[SystemEval],
    summaries: Sequence[SystemSummary],
    *,
    title: str | None,
) -> None:
    """The per-instance HTML report (codegrep-report draws it), with each system's summary
    row as the table printed it."""
    from codegrep_report import (
        CodegrepReportError,
        RetrievalCase,
        RetrievalSummary,
        write_retrieval_report,
    )

    def est(e: Estimate) -> tuple[float, float, float]:
        return (e.value, e.low, e.high)

    rows = [
        RetrievalSummary(
            system=s.name,
            n=s.n,
            missing=s.missing,
            empty=s.empty,
            fbeta=est(s.metrics["fbeta"]),
            precision=est(s.metrics["precision"]),
            recall=est(s.metrics["recall"]),
        )
        for s in summaries
    ]

    issues = {i.instance_id: i.problem_statement for i in chosen}
    cases = []
    for (_, preds), ev in zip(systems, evals, strict=True):
        by_id = {p.instance_id: p for p in preds}
        for score in ev.scores:
            pred = by_id.get(score.instance_id)
            cases.append(
                RetrievalCase(
                    system=ev.name,
                    instance_id=score.instance_id,
                    repo=score.repo,
                    issue=issues.get(score.instance_id, ""),
                    files=pred.files if pred else (),
                    scores=pred.scores if pred else None,
                    gold=tuple(sorted(gold[score.instance_id].files)),
                    fbeta=score.fbeta,
                    precision=score.precision,
                    recall=score.recall,
                    status=str(score.status),
                    turns=score.turns,
                    tool_calls=pred.tool_calls if pred else None,
                )
            )
    try:
        write_retrieval_report(
            path, cases, title=title or "retrieval", beta=evals[0].beta, summary=rows
        )
    except CodegrepReportError as exc:
        raise fail(f"cannot write --html {path}: {exc}") from exc
    say(f"wrote {path}")


@app.command()
def convert(
    fmt: Annotated[PeerFormat, typer.Argument(help="The peer's published format.")],
    source: Annotated[Path, typer.Argument(help="The peer's file.")],
    output: Annotated[
        Path,
        output_option("Prediction JSONL to write (gzipped if named .gz)."),
    ],
    ranking: Annotated[str, typer.Option(help="ChronoRepo: 'bm25' or 'hybrid'.")] = "hybrid",
    top_k: Annotated[
        int | None, typer.Option("--top-k", min=1, help="Keep the first k files.")
    ] = None,
    min_score: Annotated[
        float | None, typer.Option("--min-score", help="ChronoRepo: keep scores >= this.")
    ] = None,
    name: Annotated[str | None, typer.Option(help="The `retriever` name to record.")] = None,
) -> None:
    """Turn a peer's published output into a prediction file.

    A file in another format (nothing in it converts) exits 2 and writes nothing; rows that do
    not convert are counted and reported.

    Example: swe-eval convert chronorepo f1_scores_lite.jsonl --ranking bm25 --top-k 1 -o b.jsonl
    """
    check_output("-o", output)
    with clear_errors():
        conv = convert_peer(
            fmt, source, name=name, ranking=ranking, top_k=top_k, min_score=min_score
        )
    if conv.wrong_format:
        example = f"; e.g. {conv.problems[0]}" if conv.problems else ""
        raise fail(
            f"nothing converted from {source}: {fmt.value} wants {conv.expected}; "
            f"found {conv.found()}{example}"
        )
    if not conv.predictions:  # the format's own fields, but not one row that converts
        raise fail(
            f"nothing converted from {source}: all {conv.rows} rows skipped, "
            f"e.g. {conv.problems[0]}"
        )
    try:
        n = write_predictions(output, conv.predictions)
    except OSError as exc:
        raise fail(f"cannot write -o {output}: {exc.strerror or exc}") from exc
    empty = sum(1 for p in conv.predictions if not p.files)
    say(f"wrote {n} predictions ({empty} empty) to {output}")
    if conv.problems:
        say(f"skipped {len(conv.problems)} of {conv.rows} rows (not converted):", "yellow")
        for problem in conv.problems[:5]:
            say(f"  {problem}")


class RetrieverKind(StrEnum):
    BM25 = "bm25"
    DENSE = "dense"
    LEXICAL = "lexical"  # codegrep_model.policies.lexical.LexicalPolicy through the rollout engine
    LEXICAL_HEURISTIC = "lexical-heuristic"  # the same without its learned ranker
    AGENT = "agent"  # any policy (--policy SPEC, or --base-url/--model) through the same engine


@app.command()
def predict(
    instances: InstancesOpt,
    output: Annotated[Path, output_option("Prediction JSONL (appended).")],
    cache: Annotated[
        Path, typer.Option("--cache", help="Clone cache (a worktree_sandbox.BareRepoCache folder).")
    ],
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
    jobs: Annotated[int, jobs_option("Agents: rollouts at a time.")] = 4,
    retriever: Annotated[
        RetrieverKind | None,
        typer.Option(
            "--retriever", "-r", help="The retriever (default: agent when --policy is given)."
        ),
    ] = None,
    policy: Annotated[
        str | None,
        policy_option(
            "Agent: the policy, as every command names one: openai:MODEL@URL, lexical, any "
            "other registered kind, or module:Class."
        ),
    ] = None,
    base_url: Annotated[
        str | None,
        base_url_option(
            "Agent: OpenAI-compatible endpoint of the served model (the old spelling of "
            "--policy openai:MODEL@URL)."
        ),
    ] = None,
    model: Annotated[str | None, model_option("Agent: model name at --base-url.")] = None,
    grep_engine: Annotated[str | None, grep_engine_option("Agent: the grep engine.")] = None,
    timeout: Annotated[
        float | None,
        timeout_option("Agent: seconds per model request (default 120).", show_default=False),
    ] = None,
    dry_run: Annotated[bool, dry_run_option("Say what would run, run nothing.")] = False,
) -> None:
    """Rank files for every instance with a baseline or run an agent; resumes (skips ids in -o).

    bm25/dense rank every file of the tree; lexical/agent run the retrieval agent's rollout
    engine (codegrep-model) and also write the full rollouts beside -o (lexical-heuristic:
    LexicalPolicy without its learned ranker, the policy of codegrep-model 0.1).

    Example: swe-eval predict -r bm25 -i lite.jsonl --cache sb-cache --repo psf/requests -o b.jsonl
    """
    from swe_eval.predict import Retriever
    from swe_eval.predict import predict as run_predict

    check_output("-o", output, appends=True)
    spec = _agent_spec(retriever, policy, base_url, model)
    chosen = _load_chosen(instances, repo, exclude_repo, limit, need_some=False)
    if spec is not None:
        if not chosen:
            # an empty --repo list would mean "every repository" to the batch runner
            say(f"0 to do: --exclude-repo or --limit leave no instance of {instances}")
            return
        from codegrep_model.batch import run_batch_file
        from codegrep_model.cli import BatchConsole

        shown = BatchConsole()
        # The engine's batch runner selects by repository and limit itself; give it exactly
        # the repositories chosen here so --exclude-repo means the same for every retriever.
        with shown.exits():
            summary = run_batch_file(
                instances,
                predictions=output,
                cache=cache,
                spec=spec,
                source=source,
                jobs=jobs,
                limit=limit,
                repos=sorted({i.repo for i in chosen}),
                api_key=os.environ.get("OPENAI_API_KEY"),
                timeout_s=timeout,
                dry_run=dry_run,
                on_event=shown,
                grep_engine=grep_engine,
            )
        if summary is not None:
            shown.report(summary)
        return
    with clear_errors():
        done = (
            {p.instance_id for p in load_predictions(output).records} if output.exists() else set()
        )
    todo = [i for i in chosen if i.instance_id not in done and i.base_commit]
    skipped = sum(1 for i in chosen if not i.base_commit)
    say(f"{len(done)} already done, {len(todo)} to do, {skipped} without base_commit -> {output}")
    if dry_run or not todo:
        return
    rank: Retriever
    if retriever is RetrieverKind.BM25:
        from swe_eval.bm25 import BM25Config, BM25Retriever

        rank = BM25Retriever(BM25Config(depth=depth))
    else:
        from swe_eval.dense import DenseConfig, DenseRetriever

        dense = DenseRetriever(
            DenseConfig(
                depth=depth, device=device, max_chunks_per_file=max_chunks, chunk_lines=chunk_lines
            )
        )
        try:  # before any tree: a missing extra or model is said once, not once per instance
            dense.load()
        except SweEvalError as exc:
            raise fail(str(exc)) from exc
        except (OSError, ValueError, RuntimeError) as exc:  # a bad --device, a broken model
            raise fail(f"cannot load the dense model: {type(exc).__name__}: {exc}") from exc
        rank = dense
    failures = 0
    from worktree_sandbox import BareRepoCache, SandboxError, SyncSandbox

    try:
        repo_cache = BareRepoCache(cache, source=source)
    except (SandboxError, OSError) as exc:  # a --source naming no repository, an unusable --cache
        raise fail(str(exc)) from exc
    with SyncSandbox(repo_cache) as sb:
        for r, commits in _commits_by_repo(todo).items():
            try:  # one clone and one fetch per repository, rather than one per instance
                repo_cache.ensure(r, commits=commits)
            except SandboxError as exc:
                # not fatal: each instance it concerns fails below on its own and is counted
                say(f"{r}: {exc}", "yellow")

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
            task = progress.add_task(rank.name, total=len(todo))
            for outcome in run_predict(todo, rank, open_tree):
                progress.advance(task)
                if outcome.prediction is None:
                    failures += 1
                    err.print(
                        Text.assemble((outcome.instance_id, "red"), f": {outcome.error}"),
                        soft_wrap=True,
                    )
                    continue
                fh.write(prediction_json(outcome.prediction) + "\n")
                fh.flush()
    say(f"{len(todo) - failures} predicted, {failures} failed")
    if failures:
        raise typer.Exit(1)


def _agent_spec(
    retriever: RetrieverKind | None, policy: str | None, base_url: str | None, model: str | None
) -> PolicySpec | None:
    """The policy an agent retriever runs (None for bm25/dense), read as every command reads a
    policy (`codegrep_model.spec_from_options`): `-r lexical` and `-r lexical-heuristic` name
    theirs, `-r agent` (the default with `--policy`) takes `--policy` or `--base-url`."""
    from codegrep_model.policies.options import spec_or_exit

    given = policy is not None or base_url is not None or model is not None
    if retriever is None:
        if not given:
            raise fail("give -r/--retriever (bm25, dense, lexical, lexical-heuristic, agent)")
        retriever = RetrieverKind.AGENT
    if retriever in (RetrieverKind.BM25, RetrieverKind.DENSE):
        if given:
            raise fail(
                f"-r {retriever.value} ranks files itself: --policy and --base-url are an agent's"
            )
        return None
    if retriever is not RetrieverKind.AGENT:
        if given:
            raise fail(
                f"-r {retriever.value} is a policy already; give --policy alone, or -r agent"
            )
        policy = retriever.value
    elif policy is None and base_url is None:
        raise fail("-r agent needs --policy SPEC (or --base-url and --model of a served model)")
    return spec_or_exit(policy, base_url=base_url, model=model)


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
    output: Annotated[Path | None, output_option("Write the cut file.")] = None,
    top_k: Annotated[int | None, typer.Option("--top-k", min=1)] = None,
    min_score: Annotated[float | None, typer.Option("--min-score")] = None,
    relative: Annotated[
        float | None,
        typer.Option("--relative", min=0.0, max=1.0, help="Keep scores >= this × the top score."),
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
    check_output("-o", output)
    chosen = _load_chosen(instances, repo, exclude_repo, None)
    with clear_errors():
        loaded_preds = load_predictions(predictions)
    what = f"prediction ({predictions.name})"
    _report_problems(loaded_preds, what, path=predictions)  # type: ignore[arg-type]
    gold = gold_from_instances(chosen)
    preds = list(loaded_preds.records)
    results = sweep_cuts(gold, preds, relatives=(0.5, 0.6, 0.7, 0.8, 0.9, 0.95))
    say("cut            Fβ      P      R   files")
    for r in results:
        say(
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
        try:
            write_predictions(output, cut_preds)
        except OSError as exc:
            raise fail(f"cannot write -o {output}: {exc.strerror or exc}") from exc
        say(f"wrote {len(cut_preds)} predictions cut at {chosen_cut.label()} to {output}")


@app.command()
def plot(
    instances: InstancesOpt,
    predictions: Annotated[
        list[Path], typer.Option("--predictions", "-p", help="Prediction JSONL; repeat.")
    ],
    output: Annotated[Path, output_option("The figure to write: .png, .svg, .pdf, ...")],
    rankings: Annotated[
        list[Path] | None,
        typer.Option("--rankings", help="Full rankings for the files-returned curve; repeat."),
    ] = None,
    name: Annotated[list[str] | None, typer.Option("--name")] = None,
    repo: RepoOpt = None,
    exclude_repo: ExcludeRepoOpt = None,
    resamples: Annotated[int, typer.Option(min=0, help="Bootstrap resamples.")] = 2000,
    seed: SeedOpt = 0,
    title: Annotated[str | None, typer.Option()] = None,
) -> None:
    """Plot precision against the paper's 0.45/0.68 marks, and precision vs. files returned.

    Example: swe-eval plot -i lite.jsonl -p bm25.jsonl -p locagent.jsonl -o precision.png
    """
    from swe_eval.plots import plot_precision, precision_curve, require_plot_extra

    check_output("-o", output, suffixes=IMAGE_SUFFIXES)
    chosen = _load_chosen(instances, repo, exclude_repo, None)
    with clear_errors():
        require_plot_extra()  # before the bootstrap, not after it
    with clear_errors():
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
        try:
            plot_precision(summaries, curves, output, title=title)
        except OSError as exc:
            raise fail(f"cannot write -o {output}: {exc.strerror or exc}") from exc
    say(f"wrote {output}")


# `swe-eval downstream ...`: its commands live in `swe_eval.downstream`, attached here; they
# import nothing from this module.
app.add_typer(downstream_app, name="downstream")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
