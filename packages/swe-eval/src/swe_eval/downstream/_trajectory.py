"""Tool calls, opened files and edits from an agent's trajectory, for the per-instance case view.

Three shapes come in: OpenHands V0 `history` (action/observation dicts), OpenHands V1 events
(`kind` discriminator) and OpenAI-style `messages` with `tool_calls`. Which tool is the editor
and which the shell, and which files a shell line reads, are catm's rules (`catm.EDITOR_TOOLS`,
`catm.SHELL_TOOLS`, `catm.parse_shell`, `catm.view_failed`, `catm.is_directory_listing`), as
is reading a content field and a tool call's arguments (`catm.text_of`, `catm.json_arguments`),
so that "the agent opened this file" means the same in a mined label and in this report: a file
counts as opened when the editor showed it (not a directory listing, not an error) or a shell
command printed it (`cat`, `head`, `tail`, `nl`, `less`, `more`, `bat`, `sed` without `-i`,
`awk`, and `grep`/`rg` over exactly one file; a grep over several files or a tree is a search),
with the shell's `cd`s followed across calls; a path whose name says it is a folder
(`catm.looks_like_directory`: no extension, a trailing `/`) or that is the sandbox's
repository root is not a file opened. Reading shell commands is a heuristic: a read through a
script, a variable or `$(...)` is not seen. An edit is an editor command
(`str_replace`, `insert`, `undo_edit`) on a file the agent did not create itself: `create`
writes a new file (a reproduction script, usually), and neither it nor later edits of that
script are "the first edit". Shell writes are not seen.

Not for mining relevance labels (that is catm, which reads the same formats with the reasoning).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from catm import (
    EDITOR_ACTIONS,
    EDITOR_TOOLS,
    SHELL_ACTIONS,
    SHELL_TOOLS,
    guess_root,
    is_directory_listing,
    json_arguments,
    looks_like_directory,
    parse_shell,
    text_of,
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

    def shell(self, tool: str, command: str) -> None:
        self.actions.append(Action(tool, command))
        reads, self.cwd = shell_reads(command, self.cwd)
        for path in reads:  # a shell line names folders too (`grep -r x src/`)
            self._open(path, by_name=True)

    def other(self, tool: str) -> None:
        self.actions.append(Action(tool))

    def call(self, tool: str, args: dict[str, Any], observation: str | None) -> None:
        """An OpenAI-style tool call (completions, or V0 events carrying the tool name)."""
        if tool in EDITOR_TOOLS:
            # an editor call without a command is a view (`view_file`), as catm reads it
            command = str(args.get("command") or "view")
            self.editor(tool, command, str(args.get("path") or ""), observation)
        elif tool in SHELL_TOOLS:
            self.shell(tool, str(args.get("command") or ""))
        else:
            self.other(tool)

    def trace(self) -> Trace:
        return Trace(
            tuple(self.actions), tuple(self.opened), tuple(self.before_edit), tuple(self.edited)
        )


def _dicts(items: Iterable[Any]) -> Iterator[dict[str, Any]]:
    return (x for x in items if isinstance(x, dict))


def trace_v0(history: list[Any]) -> Trace:
    """OpenHands V0 events: agent actions (`run`, `read`, `edit`, ...) and their observations."""
    observations = {
        str(e.get("cause")): text_of(e.get("content"))
        for e in _dicts(history)
        if "observation" in e and e.get("cause") is not None
    }
    c = _Collector()
    for e in _dicts(history):
        action = e.get("action")
        if not isinstance(action, str) or e.get("source") != "agent":
            continue
        if action in ("system", "recall", "message", "condensation", "change_agent_state"):
            continue
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        assert isinstance(args, dict)
        meta = e.get("tool_call_metadata")
        tool = str(meta.get("function_name") or action) if isinstance(meta, dict) else action
        obs = observations.get(str(e.get("id")))
        if action == "read":
            c.editor(tool, "view", str(args.get("path") or ""), obs)
        elif action == "edit":
            c.editor(tool, str(args.get("command") or "edit"), str(args.get("path") or ""), obs)
        elif action == "run":
            c.shell(tool, str(args.get("command") or ""))
        else:
            c.other(tool)
    return c.trace()


def trace_v1(history: list[Any]) -> Trace:
    """OpenHands V1 (openhands-sdk) events: `ActionEvent`s and their `ObservationEvent`s."""
    observations: dict[str, str] = {}
    for e in _dicts(history):
        if e.get("kind") == "ObservationEvent":
            obs = e.get("observation")
            text = text_of(obs.get("content")) if isinstance(obs, dict) else ""
            for key in (e.get("action_id"), e.get("tool_call_id")):
                if key is not None:
                    observations[str(key)] = text
    c = _Collector()
    for e in _dicts(history):
        if e.get("kind") != "ActionEvent":
            continue
        action = e.get("action") if isinstance(e.get("action"), dict) else {}
        assert isinstance(action, dict)
        kind = str(action.get("kind") or "")
        tool = str(e.get("tool_name") or kind or "unknown")
        obs = observations.get(str(e.get("id"))) or observations.get(str(e.get("tool_call_id")))
        if tool in EDITOR_TOOLS or kind in EDITOR_ACTIONS:
            command = str(action.get("command") or "view")
            c.editor(tool, command, str(action.get("path") or ""), obs)
        elif tool in SHELL_TOOLS or kind in SHELL_ACTIONS:
            c.shell(tool, str(action.get("command") or ""))
        else:
            c.other(tool)
    return c.trace()


def trace_messages(messages: list[Any], final_message: dict[str, Any] | None) -> Trace:
    """OpenAI chat messages (assistant `tool_calls`, `tool` results), plus a final response."""
    results = {
        str(m.get("tool_call_id")): text_of(m.get("content"))
        for m in _dicts(messages)
        if m.get("role") == "tool"
    }
    c = _Collector()
    turns = [m for m in _dicts(messages) if m.get("role") == "assistant"]
    if final_message is not None:
        turns.append(final_message)
    for m in turns:
        for call in _dicts(m.get("tool_calls") or []):
            fn = call.get("function") if isinstance(call.get("function"), dict) else {}
            assert isinstance(fn, dict)
            tool = str(fn.get("name") or "unknown")
            # hostile arguments make the row a bad row (counted), not a call without arguments
            args = json_arguments(fn.get("arguments"), refuse_hostile=True)
            c.call(tool, args, results.get(str(call.get("id"))))
    return c.trace()
