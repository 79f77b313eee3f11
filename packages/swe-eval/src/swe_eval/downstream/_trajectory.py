"""Tool calls, opened files and edits from an agent's trajectory, for the per-instance case view.

The trajectory is read by catm's reader (`catm.record_steps`), the one reader of the toolkit's
trajectory formats: OpenHands V0 `history` (action/observation events), OpenHands V1 events
(`kind` discriminator) and OpenAI-style `messages` with `tool_calls`. Which tool is the editor
and which the shell, which observation belongs to which call, and which files a shell line reads
are catm's rules too (`catm.parse_shell`, `catm.view_failed`, `catm.is_directory_listing`), so
that "the agent opened this file" means the same in a mined label and in this report: a file
counts as opened when the editor showed it (not a directory listing, not an error) or a shell
command printed it (`cat`, `head`, `tail`, `nl`, `less`, `more`, `bat`, `sed` without `-i`,
`awk`, and `grep`/`rg` over exactly one file; a grep over several files or a tree is a search),
with the shell's working directory followed across calls as catm follows it (the one the
environment reported, else the `cd`s); a path whose name says it is a folder
(`catm.looks_like_directory`: no extension, a trailing `/`) or that is the sandbox's
repository root is not a file opened. Reading shell commands is a heuristic: a read through a
script, a variable or `$(...)` is not seen. An edit is an editor command
(`str_replace`, `insert`, `undo_edit`) on a file the agent did not create itself: `create`
writes a new file (a reproduction script, usually), and neither it nor later edits of that
script are "the first edit". Shell writes are not seen.

Not for mining relevance labels (that is catm, which reads the same steps with the reasoning).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from catm import (
    guess_root,
    is_directory_listing,
    looks_like_directory,
    parse_shell,
    record_steps,
    view_failed,
)
from codegrep_records import normalize_path

from swe_eval.downstream.records import Action

_EDIT_COMMANDS = frozenset({"str_replace", "insert", "undo_edit", "edit"})


@dataclass(frozen=True, slots=True)
class Trace:
    """What the case view needs from one trajectory."""

    actions: tuple[Action, ...]
    files_opened: tuple[str, ...]
    files_opened_before_edit: tuple[str, ...]
    files_edited: tuple[str, ...]


def _is_mount_root(path: str) -> bool:
    """`/workspace/django__django__4.1`: the repository itself, though its name has a dot."""
    folder = path.rstrip("/")
    return bool(folder) and guess_root(folder + "/x") == folder


def shell_reads(command: str, cwd: str = "") -> tuple[tuple[str, ...], str]:
    """Files a shell line prints (as written, joined with the working directory), and the
    working directory after its `cd`s: catm's rule, see the module docstring."""
    effects = parse_shell(command, cwd)
    return effects.reads, effects.cwd


class _Collector:
    """Accumulates actions, opened files and edits in trajectory order."""

    def __init__(self) -> None:
        self.actions: list[Action] = []
        self.opened: dict[str, None] = {}
        self.before_edit: dict[str, None] = {}
        self.editing = False  # an existing file has been edited: before_edit stops growing
        self.created: set[str] = set()  # files the agent created (its scripts): not "the edit"
        self.edited: dict[str, None] = {}
        self.cwd = ""  # the shell's working directory, followed across calls

    def _open(self, path: str, *, by_name: bool = False) -> None:
        norm = normalize_path(path)
        if not norm or (by_name and (looks_like_directory(norm) or _is_mount_root(path))):
            return
        self.opened.setdefault(norm)
        if not self.editing:
            self.before_edit.setdefault(norm)

    def editor(self, tool: str, command: str, path: str, observation: str | None) -> None:
        norm = normalize_path(path)
        self.actions.append(Action(tool, command, norm))
        if command == "view":
            if observation is None:  # a format without observations: judge by the name
                self._open(path, by_name=True)
            elif not (view_failed(observation) or is_directory_listing(observation)):
                self._open(path)
        elif command in _EDIT_COMMANDS or command == "create":
            if norm:
                self.edited.setdefault(norm)
            if command == "create":
                self.created.add(norm)
            elif norm not in self.created:
                self.editing = True

    def shell(self, tool: str, command: str, reported_cwd: str = "") -> None:
        self.actions.append(Action(tool, command))
        reads, cwd = shell_reads(command, self.cwd)
        for path in reads:  # a shell line names folders too (`grep -r x src/`)
            self._open(path, by_name=True)
        # catm's rule: the directory the environment reported after the call, else the `cd`s
        self.cwd = reported_cwd or cwd or self.cwd

    def other(self, tool: str) -> None:
        self.actions.append(Action(tool))

    def trace(self) -> Trace:
        return Trace(
            tuple(self.actions), tuple(self.opened), tuple(self.before_edit), tuple(self.edited)
        )


def trace(record: Mapping[str, Any]) -> Trace:
    """The actions, opened files and edits of one agent output record's trajectory (any of the
    three formats). `ValueError` says why the record's trajectory cannot be read (malformed,
    hostile tool-call arguments, nested too deeply): the row is then a bad row."""
    _, steps = record_steps(record)
    c = _Collector()
    for step in steps:
        for call in step.calls:
            name = call.name or call.tool
            if call.tool == "editor":
                c.editor(name, call.command, call.path, call.observation or None)
            elif call.tool == "shell":
                c.shell(name, call.command, call.cwd)
            else:
                c.other(name)
    return c.trace()
