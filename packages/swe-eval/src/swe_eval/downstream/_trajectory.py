"""Tool calls, opened files and edits from an agent's trajectory, for the per-instance case view.

Three shapes come in: OpenHands V0 `history` (action/observation dicts), OpenHands V1 events
(`kind` discriminator) and OpenAI-style `messages` with `tool_calls`. A file counts as opened
when the editor viewed it (not a directory listing) or a shell command printed it (`cat`,
`head`, `tail`, `less`, `more`, `nl`, `sed -n`, and `grep` on named files). Reading shell
commands is a heuristic: a read through a script, a variable or a pipe is not seen. An edit is
an editor command (`str_replace`, `insert`, `undo_edit`) on a file the agent did not create
itself: `create` writes a new file (a reproduction script, usually), and neither it nor later
edits of that script are "the first edit". Shell writes are not seen.

Not for mining relevance labels (that is catm, which reads the same formats with the reasoning).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from codegrep_records import normalize_path, parse_json

from swe_eval.downstream.records import Action

_EDITOR_TOOLS = frozenset({"str_replace_editor", "file_editor", "edit_file"})
_SHELL_TOOLS = frozenset({"execute_bash", "terminal", "bash", "shell", "execute_command"})
_EDIT_COMMANDS = frozenset({"str_replace", "insert", "undo_edit", "edit"})
_PRINTERS = frozenset({"cat", "head", "tail", "less", "more", "nl", "bat"})
_SEGMENT = re.compile(r"&&|\|\||[;|\n]")
# options that take a value in the next word
_PRINTER_VALUES = frozenset({"-n", "-c", "--lines", "--bytes"})
_GREP_VALUES = frozenset({"-A", "-B", "-C", "-m", "-e", "-f"})
_DIRECTORY_LISTING = "files and directories"


@dataclass(frozen=True, slots=True)
class Trace:
    """What the case view needs from one trajectory."""

    actions: tuple[Action, ...]
    files_opened: tuple[str, ...]
    files_opened_before_edit: tuple[str, ...]
    files_edited: tuple[str, ...]


def text_of(content: Any) -> str:
    """The text of a message or observation `content`: a string or a list of text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") if isinstance(p, dict) else str(p) for p in content)
    return ""


def json_arguments(raw: Any) -> dict[str, Any]:
    """A tool call's arguments: a JSON string (OpenAI) or already an object."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = parse_json(raw)  # too deep, 1e999, not JSON: no arguments
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}


def _operands(words: list[str], takes_value: frozenset[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for w in words:
        if skip:
            skip = False
            continue
        if w in takes_value:
            skip = True
            continue
        if w.startswith("-") or w.startswith("+"):
            continue
        out.append(w)
    return out


def _looks_like_file(word: str) -> bool:
    last = word.rstrip("/").rsplit("/", 1)[-1]
    return "." in last.strip(".") and not any(c in word for c in "*?$`{}<>")


def _recursive(args: list[str]) -> bool:
    short = [a[1:] for a in args if a.startswith("-") and not a.startswith("--")]
    return "--recursive" in args or any("r" in s or "R" in s for s in short)


def shell_reads(command: str) -> list[str]:
    """Files a shell line prints, as written (not normalized); see the module docstring."""
    if "<<" in command:  # a heredoc body is data, not commands
        command = command.split("\n", 1)[0]
    reads: list[str] = []
    for segment in _SEGMENT.split(command):
        if ">" in segment:  # a redirection writes
            continue
        try:
            words = shlex.split(segment)
        except ValueError:
            continue
        while words and ("=" in words[0] and not words[0].startswith("-")):
            words = words[1:]  # VAR=value prefixes
        if not words:
            continue
        program, args = words[0].rsplit("/", 1)[-1], words[1:]
        if program in _PRINTERS:
            reads += [w for w in _operands(args, _PRINTER_VALUES) if _looks_like_file(w)]
        elif program == "sed" and "-n" in args:
            ops = [w for w in args if not w.startswith("-")]
            reads += [w for w in ops[1:] if _looks_like_file(w)]
        elif program in ("grep", "egrep", "fgrep") and not _recursive(args):
            ops = _operands(args, _GREP_VALUES)
            files = (
                ops if "-e" in args or "-f" in args else ops[1:]
            )  # else the first is the pattern
            reads += [w for w in files if _looks_like_file(w)]
    return reads


class _Collector:
    """Accumulates actions, opened files and edits in trajectory order."""

    def __init__(self) -> None:
        self.actions: list[Action] = []
        self.opened: dict[str, None] = {}
        self.before_edit: dict[str, None] = {}
        self.editing = False  # an existing file has been edited: before_edit stops growing
        self.created: set[str] = set()  # files the agent created (its scripts): not "the edit"
        self.edited: dict[str, None] = {}

    def _open(self, path: str) -> None:
        norm = normalize_path(path)
        if not norm:
            return
        self.opened.setdefault(norm)
        if not self.editing:
            self.before_edit.setdefault(norm)

    def editor(self, tool: str, command: str, path: str, observation: str | None) -> None:
        norm = normalize_path(path)
        self.actions.append(Action(tool, command, norm))
        if command == "view":
            is_dir = (
                _DIRECTORY_LISTING in observation[:400]
                if observation is not None
                else not _looks_like_file(path)
            )
            if not is_dir:
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
        for path in shell_reads(command):
            self._open(path)

    def other(self, tool: str) -> None:
        self.actions.append(Action(tool))

    def call(self, tool: str, args: dict[str, Any], observation: str | None) -> None:
        """An OpenAI-style tool call (completions, or V0 events carrying the tool name)."""
        if tool in _EDITOR_TOOLS:
            self.editor(
                tool, str(args.get("command") or ""), str(args.get("path") or ""), observation
            )
        elif tool in _SHELL_TOOLS:
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
        if tool in _EDITOR_TOOLS or kind == "FileEditorAction":
            command = str(action.get("command") or "view")
            c.editor(tool, command, str(action.get("path") or ""), obs)
        elif tool in _SHELL_TOOLS or kind in ("TerminalAction", "ExecuteBashAction"):
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
            c.call(tool, json_arguments(fn.get("arguments")), results.get(str(call.get("id"))))
    return c.trace()
