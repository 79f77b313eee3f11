"""Stage 1: the repository files one trajectory read, and the reasoning that followed each read.

A read is an editor `view` of a file or a shell command that prints one (see `_shell`). The
post-reasoning of a read issued in turn k is the text of turn k+1: the first thing the agent wrote
after it saw the file. Reads of one file in one trajectory combine as follows (`TrajectoryMining`):

- l(f) is the sum of the token lengths of the *distinct* turns that followed a read of f, so one
  turn that follows two parallel reads of f counts once, and a file the agent kept coming back to
  and kept reasoning about scores higher (stage 3 saturates it anyway);
- the evidence shown to the judge is those turns' texts, in order, joined.

What this is not for: combining trajectories of one instance (that is `_pipeline`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from catm._paths import DropReason, classify, guess_root, to_repo_relative, view_failed
from catm._records import FileRead, Trajectory
from catm._shell import parse_shell
from catm._tokens import count_tokens


@dataclass(slots=True)
class FileEvidence:
    """Everything one trajectory says about one file."""

    path: str
    reasoning_tokens: int = 0
    n_reads: int = 0
    steps: list[int] = field(default_factory=list)  # distinct post-reasoning turns, in order


@dataclass(slots=True)
class TrajectoryMining:
    """Stage 1 result for one trajectory."""

    trajectory: Trajectory
    reads: list[FileRead]
    files: dict[str, FileEvidence]
    dropped: Counter[str]
    root: str
    # Repository files read but not kept because the read failed or the agent made the file.
    excluded: dict[str, str]

    def evidence_text(self, path: str, limit: int = 6000) -> str:
        """The post-reasoning turns that followed reads of `path`, joined, at most `limit` chars."""
        steps = self.trajectory.steps
        texts = [steps[i].reasoning for i in self.files[path].steps if steps[i].reasoning]
        text = "\n\n---\n\n".join(texts)
        return text if len(text) <= limit else text[: limit - 3] + "..."


def mine_trajectory(trajectory: Trajectory) -> TrajectoryMining:
    """Find every file read in `trajectory`, normalise and filter it, and measure l(f)."""
    root = trajectory.workspace_root or _root_from_paths(trajectory)
    steps = trajectory.steps
    token_cache: dict[int, int] = {}
    reads: list[FileRead] = []
    files: dict[str, FileEvidence] = {}
    dropped: Counter[str] = Counter()
    created: set[str] = set()
    excluded: dict[str, str] = {}
    cwd = root

    def keep(raw: str, step: int, observation: str, base: str) -> None:
        relative = to_repo_relative(raw, root, base)
        if relative is None:
            dropped[DropReason.OUTSIDE if raw.strip() else DropReason.EMPTY] += 1
            return
        reason = classify(relative, observation)
        if reason is None and relative in created:
            reason = DropReason.CREATED
            excluded.setdefault(relative, reason)
        if reason is not None:
            dropped[reason] += 1
            return
        follow = step + 1 if step + 1 < len(steps) else -1
        tokens = 0
        if follow >= 0:
            tokens = token_cache.get(follow, -1)
            if tokens < 0:
                tokens = token_cache[follow] = count_tokens(steps[follow].reasoning)
        reads.append(FileRead(relative, step, follow, tokens))
        evidence = files.get(relative)
        if evidence is None:
            evidence = files[relative] = FileEvidence(relative)
        evidence.n_reads += 1
        if follow >= 0 and follow not in evidence.steps:
            evidence.steps.append(follow)
            evidence.reasoning_tokens += tokens

    def note_created(raw: str, base: str) -> None:
        relative = to_repo_relative(raw, root, base)
        if relative:
            created.add(relative)

    for index, step in enumerate(steps):
        for call in step.calls:
            if call.tool == "editor":
                if call.command == "view":
                    if view_failed(call.observation):
                        dropped[DropReason.FAILED] += 1
                        relative = to_repo_relative(call.path, root, cwd)
                        if relative:
                            excluded.setdefault(relative, DropReason.FAILED)
                    else:
                        keep(call.path, index, call.observation, cwd)
                elif call.command == "create" and "created successfully" in call.observation:
                    note_created(call.path, cwd)
                elif call.command == "create" and not call.observation:
                    note_created(call.path, cwd)  # formats without observations: trust the call
            elif call.tool == "shell":
                effects = parse_shell(call.command, cwd)
                for path in effects.writes:
                    note_created(path, effects.cwd)
                for path in effects.reads:
                    keep(path, index, "", cwd)
                cwd = call.cwd or effects.cwd or cwd
    return TrajectoryMining(trajectory, reads, files, dropped, root, excluded)


def _root_from_paths(trajectory: Trajectory) -> str:
    """The most common sandbox root among editor paths, for records that do not name one."""
    counts: Counter[str] = Counter()
    for step in trajectory.steps:
        for call in step.calls:
            if call.path.startswith("/"):
                root = guess_root(call.path)
                if root:
                    counts[root] += 1
    return counts.most_common(1)[0][0] if counts else ""
