"""The CATM pipeline: stream trajectories (stage 1), judge (stage 2), weight (stage 3), label.

Combination rules, in one place:

- within a trajectory, l(f) sums the distinct turns that followed reads of f (see `_mining`);
- across the trajectories of one instance, l(f) is the *maximum* over trajectories (the most
  engaged agent), `n_reads` is the total, every trajectory that read f is listed, and the judge
  sees the post-reasoning of the trajectory with the largest l(f). A maximum, not a sum, so that
  an instance with 300 trajectories does not out-weigh one with 3;
- β and mean(w̃) are taken over every (instance, file) pair the judge kept.

Patch files are the shared gold rule's files of the patch (`MiningConfig.gold_rule`, default the
toolkit's `GoldRule()`: a rename under its old path, no added files, no test files), from the
`--instances` row or, without one, from the patch the trajectory record carries itself.

`prepare_mining` and `mine_to_file` are what `catm mine` runs (inputs read and the judge opened,
then stages 1-3 and the labels written); they report through `MiningProgress` and never print.

Memory: one trajectory is in memory at a time; what grows is the per-instance aggregate (files,
contributing trajectory ids, and the judge evidence only when a judge is used), i.e. the size of
the labels themselves.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from codegrep_records import GoldRule, Instance, files_from_patch

from catm._instances import load_mining_instances
from catm._judge import Judge, JudgeRequest, JudgeResult, NoJudge, OpenAIJudge
from catm._mining import TrajectoryMining, mine_trajectory
from catm._output import write_labels
from catm._readers import read_trajectories
from catm._records import LabelRecord, MinedFile, MiningStats, Skip, Trajectory, Verdict
from catm._tokens import TOKENIZER_NAME
from catm._weights import GOLD_THRESHOLD, median_beta, normalized_weights, saturation_weight
from catm.errors import JudgeError

_KEPT_SKIPS = 1000  # skip details kept for the report; all of them are counted


@dataclass(frozen=True, slots=True)
class MiningConfig:
    threshold: float = GOLD_THRESHOLD
    evidence_chars: int = 6000  # post-reasoning shown to the judge, per file
    limit: int | None = None  # stop after this many trajectory records (`--limit`)
    keep_reasoning: bool = False  # write the post-reasoning text into the labels (audits)
    # Which files of a patch are its patch files; the defaults are the toolkit's one rule.
    gold_rule: GoldRule = field(default_factory=GoldRule)


@dataclass(slots=True)
class _FileAggregate:
    reasoning_tokens: int = 0
    n_reads: int = 0
    trajectories: list[str] = field(default_factory=list)
    evidence: str = ""


@dataclass(slots=True)
class _InstanceAggregate:
    instance_id: str
    repo: str
    patch_files: tuple[str, ...]
    issue: str
    trajectories: list[str] = field(default_factory=list)
    files: dict[str, _FileAggregate] = field(default_factory=dict)


class MiningResult:
    """Run statistics, the first skipped records in detail, and the labels on demand.

    Labels are built one instance at a time by `iter_labels()` (what `catm mine` writes), so a
    corpus of 60K instances never holds 60K label objects; `labels` builds them all as a list.
    """

    def __init__(
        self,
        stats: MiningStats,
        skips: list[Skip],
        build: Callable[[], Iterator[LabelRecord]],
    ) -> None:
        self.stats = stats
        self.skips = skips
        self._build = build

    def iter_labels(self) -> Iterator[LabelRecord]:
        """Labels sorted by instance_id, built lazily."""
        return self._build()

    @property
    def labels(self) -> list[LabelRecord]:
        return list(self._build())


@dataclass(slots=True)
class _Counts:
    records_read: int = 0
    skip_reasons: Counter[str] = field(default_factory=Counter)
    skips: list[Skip] = field(default_factory=list)
    trajectories: int = 0
    reads_total: int = 0
    reads_kept: int = 0
    reads_dropped: Counter[str] = field(default_factory=Counter)

    def skip(self, skip: Skip) -> None:
        self.skip_reasons[skip.message.split(":", 1)[0]] += 1
        if len(self.skips) < _KEPT_SKIPS:
            self.skips.append(skip)


def iter_records(paths: Iterable[Path]) -> Iterator[Trajectory | Skip]:
    """Every trajectory record of every file, in order."""
    for path in paths:
        yield from read_trajectories(path)


def mine_labels(
    records: Iterable[Trajectory | Skip],
    instances: dict[str, Instance],
    judge: Judge,
    *,
    config: MiningConfig | None = None,
    on_trajectory: Callable[[], None] | None = None,
    on_judge_start: Callable[[int], None] | None = None,
    on_judged: Callable[[JudgeResult], None] | None = None,
) -> MiningResult:
    """Run stages 1-3 over `records` and build one `LabelRecord` per instance with trajectories."""
    config = config or MiningConfig()
    counts = _Counts()
    aggregates: dict[str, _InstanceAggregate] = {}
    seen_trajectories: set[str] = set()
    missing: set[str] = set()  # instances with trajectories but no patch files under the rule
    keep_evidence = judge.name != "none" or config.keep_reasoning
    for record in records:
        if config.limit is not None and counts.records_read >= config.limit:
            break
        counts.records_read += 1
        if on_trajectory is not None:
            on_trajectory()
        if isinstance(record, Skip):
            counts.skip(record)
            continue
        if record.trajectory_id in seen_trajectories:
            where = (record.source_file, record.source_line)
            counts.skip(Skip(*where, f"duplicate trajectory_id: {record.trajectory_id}"))
            continue
        aggregate = aggregates.get(record.instance_id)
        if aggregate is None:
            aggregate = _new_aggregate(record, instances, config.gold_rule)
            if aggregate is None:
                missing.add(record.instance_id)
                where = (record.source_file, record.source_line)
                counts.skip(Skip(*where, f"no patch files for instance: {record.instance_id}"))
                continue
            aggregates[record.instance_id] = aggregate
        seen_trajectories.add(record.trajectory_id)
        mining = mine_trajectory(record)
        counts.trajectories += 1
        counts.reads_kept += len(mining.reads)
        counts.reads_dropped.update(mining.dropped)
        counts.reads_total += len(mining.reads) + sum(mining.dropped.values())
        _merge(aggregate, mining, keep_evidence, config.evidence_chars)
    return _finish(aggregates, counts, len(missing), judge, config, on_judge_start, on_judged)


def _new_aggregate(
    record: Trajectory, instances: dict[str, Instance], rule: GoldRule
) -> _InstanceAggregate | None:
    instance = instances.get(record.instance_id)
    if instance is not None:
        files = instance.gold_files_for(rule)
        if not files:
            return None
        return _InstanceAggregate(
            instance.instance_id, instance.repo, files, instance.problem_statement
        )
    files = files_from_patch(record.patch, rule) if record.patch else ()
    if not files:
        return None
    return _InstanceAggregate(record.instance_id, record.repo, files, "")


def _merge(
    aggregate: _InstanceAggregate, mining: TrajectoryMining, keep_evidence: bool, chars: int
) -> None:
    trajectory_id = mining.trajectory.trajectory_id
    aggregate.trajectories.append(trajectory_id)
    for path, evidence in mining.files.items():
        current = aggregate.files.get(path)
        if current is None:
            current = aggregate.files[path] = _FileAggregate()
        if evidence.reasoning_tokens > current.reasoning_tokens or not current.trajectories:
            current.reasoning_tokens = max(current.reasoning_tokens, evidence.reasoning_tokens)
            if keep_evidence:
                current.evidence = mining.evidence_text(path, chars)
        current.n_reads += evidence.n_reads
        current.trajectories.append(trajectory_id)


def _finish(
    aggregates: dict[str, _InstanceAggregate],
    counts: _Counts,
    n_missing: int,
    judge: Judge,
    config: MiningConfig,
    on_judge_start: Callable[[int], None] | None,
    on_judged: Callable[[JudgeResult], None] | None,
) -> MiningResult:
    ordered = sorted(aggregates.values(), key=lambda a: a.instance_id)
    pairs = [(a, path, f) for a in ordered for path, f in sorted(a.files.items())]
    # Stage 2.
    requests = [JudgeRequest(a.instance_id, path, a.issue, f.evidence) for a, path, f in pairs]
    if on_judge_start is not None:
        on_judge_start(len(requests))
    verdicts = judge.judge(requests, on_judged)
    del requests
    # Stage 3: β and the mean over every pair the judge kept.
    kept = [i for i, r in enumerate(verdicts) if r.verdict is not Verdict.NOT_RELEVANT]
    beta = median_beta([pairs[i][2].reasoning_tokens for i in kept])
    raw = [saturation_weight(pairs[i][2].reasoning_tokens, beta) for i in kept]
    weights, mean_raw = normalized_weights(raw)
    weight_of: list[tuple[float, float] | None] = [None] * len(pairs)
    for k, i in enumerate(kept):
        weight_of[i] = (raw[k], weights[k])
    del raw, weights
    passes = [w is not None and w[1] >= config.threshold for w in weight_of]

    contributing: set[str] = set()
    above = mined_only = 0
    mined_gold: dict[str, int] = {}
    for index, (aggregate, path, file) in enumerate(pairs):
        if passes[index]:
            above += 1
            contributing.update(file.trajectories)
            if path not in aggregate.patch_files:
                mined_only += 1
                mined_gold[aggregate.instance_id] = mined_gold.get(aggregate.instance_id, 0) + 1
    gold_total = sum(len(set(a.patch_files)) for a in ordered) + mined_only

    def build() -> Iterator[LabelRecord]:
        index = 0
        for aggregate in ordered:
            mined: list[MinedFile] = []
            while index < len(pairs) and pairs[index][0] is aggregate:
                _, path, file = pairs[index]
                result = verdicts[index]
                weight = weight_of[index]
                in_patch = path in aggregate.patch_files
                mined.append(
                    MinedFile(
                        path=path,
                        reasoning_tokens=file.reasoning_tokens,
                        n_reads=file.n_reads,
                        verdict=result.verdict,
                        judge_answer=result.answer,
                        weight_raw=None if weight is None else round(weight[0], 6),
                        weight=None if weight is None else round(weight[1], 6),
                        in_patch=in_patch,
                        in_gold=passes[index] or in_patch,
                        trajectories=file.trajectories,
                        reasoning=file.evidence if config.keep_reasoning else "",
                    )
                )
                index += 1
            gold = sorted(set(aggregate.patch_files) | {m.path for m in mined if m.in_gold})
            yield LabelRecord(
                instance_id=aggregate.instance_id,
                repo=aggregate.repo,
                patch_files=list(aggregate.patch_files),
                mined=mined,
                gold=gold,
                trajectories=aggregate.trajectories,
                judge=judge.name,
            )

    by_verdict = Counter(r.verdict for r in verdicts)
    stats = MiningStats(
        judge=judge.name,
        tokenizer=TOKENIZER_NAME,
        gold_rule=config.gold_rule,
        beta=beta,
        mean_weight_raw=mean_raw,
        threshold=config.threshold,
        records_read=counts.records_read,
        records_skipped=sum(counts.skip_reasons.values()),
        skip_reasons=dict(counts.skip_reasons),
        trajectories=counts.trajectories,
        instances=len(ordered),
        instances_without_patch=n_missing,
        reads_total=counts.reads_total,
        reads_dropped={str(k): v for k, v in sorted(counts.reads_dropped.items())},
        reads_kept=counts.reads_kept,
        mined_files=len(pairs),
        judged_relevant=by_verdict[Verdict.RELEVANT],
        judged_not_relevant=by_verdict[Verdict.NOT_RELEVANT],
        judge_failed=by_verdict[Verdict.JUDGE_FAILED],
        unjudged=by_verdict[Verdict.UNJUDGED],
        weighted_files=len(kept),
        above_threshold=above,
        mined_not_in_patch=mined_only,
        gold_files=gold_total,
        labels_written=len(ordered),
        trajectories_contributing=len(contributing),
        retention=len(contributing) / counts.trajectories if counts.trajectories else 0.0,
    )
    return MiningResult(stats, counts.skips, build)


@dataclass(frozen=True, slots=True)
class JudgeSpec:
    """Which judge to ask: `model="none"` keeps every mined file and sends no request."""

    model: str = "none"
    endpoint: str = "http://127.0.0.1:8000/v1"
    api_key: str = ""
    cache: Path | None = None  # the judge's SQLite answer cache; None: no cache
    template: Path | None = None  # the judge prompt ({path}, {issue}, {reasoning})
    concurrency: int = 16
    retries: int = 4
    timeout_s: float = 60.0


@dataclass(frozen=True, slots=True)
class MiningProgress:
    """What a caller hears while `mine_to_file` runs (a CLI draws progress bars with it)."""

    on_trajectory: Callable[[], None] | None = None  # one trajectory record read
    on_judge_start: Callable[[int], None] | None = None  # stage 2 starts: this many requests
    on_judged: Callable[[JudgeResult], None] | None = None  # one request answered


@dataclass(slots=True)
class MiningInputs:
    """The usable instances, the `--instances` rows that were not, and the opened judge.

    Owns the judge: `close()` it when done (a no-op for `NoJudge`)."""

    instances: dict[str, Instance]
    instance_skips: list[Skip]
    judge: Judge

    def close(self) -> None:
        if isinstance(self.judge, OpenAIJudge):
            self.judge.close()


def prepare_mining(
    instance_files: Sequence[Path], judge: JudgeSpec, rule: GoldRule
) -> MiningInputs:
    """Read the judge template and the instances and open the judge, in that order.

    Raises `CatmError` (an unreadable template, unusable instance files, a bad endpoint or
    cache) before any mining starts; the endpoint is not contacted here (`OpenAIJudge.preflight`).
    """
    prompt = _read_template(judge.template) if judge.template else None
    table, skips = load_mining_instances(list(instance_files), rule=rule)
    opened: Judge
    if judge.model == "none":
        opened = NoJudge()
    else:
        opened = OpenAIJudge(
            judge.endpoint,
            judge.model,
            api_key=judge.api_key,
            cache=judge.cache,
            template=prompt,
            concurrency=judge.concurrency,
            max_retries=judge.retries,
            timeout_s=judge.timeout_s,
        )
    return MiningInputs(table, skips, opened)


def mine_to_file(
    trajectories: Sequence[Path],
    inputs: MiningInputs,
    output: Path,
    *,
    config: MiningConfig | None = None,
    progress: MiningProgress | None = None,
) -> MiningResult:
    """Stages 1-3 over every record of `trajectories`; write the labels and their stats file.

    Raises `CatmError` for unreadable trajectories and `OSError` when `output` cannot be written.
    """
    hooks = progress or MiningProgress()
    result = mine_labels(
        iter_records(trajectories),
        inputs.instances,
        inputs.judge,
        config=config,
        on_trajectory=hooks.on_trajectory,
        on_judge_start=hooks.on_judge_start,
        on_judged=hooks.on_judged,
    )
    result.stats.instance_rows_skipped = len(inputs.instance_skips)
    write_labels(output, result.iter_labels(), result.stats)
    return result


def _read_template(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise JudgeError(f"cannot read judge template {path}: {exc}") from exc
