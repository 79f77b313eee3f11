"""Streaming trajectory readers: OpenHands V0 events, OpenHands V1 events, OpenAI-style messages.

Every input file yields `Trajectory | Skip` one record at a time, so memory does not grow with the
file. The format is detected per record, not per file, because mixed dumps exist. A record that
cannot be used becomes a `Skip` naming file, line and why; nothing here raises on bad data.
`record_steps` (a decoded record's steps, without the record-level fields) is the door for other
readers of agent outputs: swe-eval's downstream case view reads its trajectories with it, so
both read every format by one set of rules; `text_of` and `json_arguments` are public too.

What this module is not for: deciding which reads count (that is `_mining`), or instance files
(that is `_instances`).
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, cast

import msgspec
from codegrep_records.io import parse_json as parse_hostile_json

from catm._records import Skip, Step, Trajectory, TrajectoryCall, TrajectoryFormat
from catm.errors import InputError

# Enough of an observation to recognise a directory listing or a "file created" answer.
_OBSERVATION_HEAD = 240

# The one tool table of the toolkit: which tool names (OpenAI-style calls, OpenHands V0
# `function_name`) and which OpenHands V1 action kinds are the file editor and which the shell.
# swe-eval's downstream case view reads trajectories through `record_steps`, so that "the agent
# opened this file" means one thing in a label and in a report.
EDITOR_TOOLS = frozenset({"str_replace_editor", "file_editor", "edit_file", "view_file"})
SHELL_TOOLS = frozenset({"execute_bash", "terminal", "bash", "run", "shell", "execute_command"})
EDITOR_ACTIONS = frozenset({"FileEditorAction", "StrReplaceEditorAction"})
SHELL_ACTIONS = frozenset({"TerminalAction", "ExecuteBashAction", "BashAction"})
_THINK_TOOLS = frozenset({"think"})
# OpenHands V0 agent events that are not tool calls: the agent's messages and the controller's
# bookkeeping (`system` and `recall` do not even start a step)
_V0_NOT_CALLS = frozenset({"message", "condensation", "change_agent_state"})
_UPLOADED = re.compile(r"<uploaded_files>\s*(\S+?)/?\s*</uploaded_files>")
_THINK_TAGS = re.compile(r"</?think>")


def _gzip_opener() -> Callable[..., IO[bytes]]:
    # ISA-L inflates ~2.5x faster than zlib, and gunzip is a third of stage 1 on OpenHands dumps.
    try:
        from isal import igzip
    except ImportError:  # pragma: no cover - isal ships wheels for every platform we test
        return cast(Callable[..., IO[bytes]], gzip.open)
    return cast(Callable[..., IO[bytes]], igzip.open)


_open_gzip = _gzip_opener()


def _inflate_errors() -> tuple[type[Exception], ...]:
    # What a broken .gz raises mid-stream: BadGzipFile (an OSError) for a bad header or CRC,
    # EOFError when cut short, and for a garbled deflate stream zlib.error or ISA-L's IsalError,
    # neither of which is an OSError.
    errors: tuple[type[Exception], ...] = (OSError, EOFError, zlib.error)
    try:
        from isal.isal_zlib import IsalError
    except ImportError:  # pragma: no cover - isal ships wheels for every platform we test
        return errors
    # isal's stub declares IsalError as an instance of Exception; it is the class.
    return (*errors, cast(type[Exception], IsalError))


_INFLATE_ERRORS = _inflate_errors()
_DOCUMENT_ERRORS: tuple[type[Exception], ...] = (msgspec.DecodeError, *_INFLATE_ERRORS)
_BOM = b"\xef\xbb\xbf"  # UTF-8 byte-order mark; the JSON decoder would call it invalid


def open_text_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """Yield (1-based line number, raw line) of a `.jsonl`/`.jsonl.gz` file.

    A `.json` file (one object or a list of objects) is parsed whole, since JSON arrays cannot be
    streamed without a streaming parser; it is yielded as if each element were a line. A UTF-8
    byte-order mark at the start of the file (Windows editors write one) is dropped.
    """
    name = path.name.lower()
    try:
        stream: IO[bytes] = _open_gzip(path, "rb") if name.endswith(".gz") else path.open("rb")
    except OSError as exc:
        raise InputError(f"{path}: cannot open ({exc})") from exc
    with stream:
        if name.endswith((".json", ".json.gz")):
            try:
                data = _JSON.decode(stream.read().removeprefix(_BOM))
            except _DOCUMENT_ERRORS as exc:
                raise InputError(f"{path}: not a JSON document ({exc})") from exc
            except RecursionError as exc:
                raise InputError(f"{path}: not a JSON document (nested too deeply)") from exc
            items = data if isinstance(data, list) else [data]
            for number, item in enumerate(items, start=1):
                yield number, msgspec.json.encode(item)
            return
        number = 0
        try:
            for number, line in enumerate(stream, start=1):
                yield number, line.removeprefix(_BOM) if number == 1 else line
        except _INFLATE_ERRORS as exc:
            # A truncated or corrupt gzip member: everything before it was yielded; say where.
            raise InputError(f"{path}: unreadable after line {number} ({exc})") from exc


# Reason of a record deeper than the decoder or `_text` can recurse (~1000 levels for msgspec,
# ~500 for nested message content): no real trajectory nests like that.
_TOO_DEEP = "record nested too deeply"
_HOSTILE = "a tool call's arguments are hostile"


def read_trajectories(path: Path) -> Iterator[Trajectory | Skip]:
    """Stream the trajectories of one file, detecting the format of each record."""
    source = str(path)
    for number, line in open_text_lines(path):
        if not line.strip():
            continue
        yield parse_json(line, source, number)


def parse_record(record: Any, source: str = "<memory>", line: int = 0) -> Trajectory | Skip:
    """Turn one decoded record (a dict) into a `Trajectory`, or say why it cannot be one."""
    try:
        data = msgspec.json.encode(record)
    except (TypeError, msgspec.EncodeError) as exc:
        return Skip(source, line, f"record is not JSON-serialisable: {exc}")
    except RecursionError:
        return Skip(source, line, _TOO_DEEP)
    return parse_json(data, source, line)


def parse_json(data: bytes, source: str = "<memory>", line: int = 0) -> Trajectory | Skip:
    """Turn one JSON record into a `Trajectory`, or say why it cannot be one.

    Only the fields stage 1 needs are decoded; the rest (file contents in edit actions, duplicated
    model responses in observations) is skipped by the decoder without being built.
    """
    try:
        return _parse_json(data, source, line)
    except RecursionError:
        return Skip(source, line, _TOO_DEEP)


def _parse_json(data: bytes, source: str, line: int) -> Trajectory | Skip:
    try:
        probe = _PROBE.decode(data)
    except msgspec.ValidationError as exc:
        if str(exc).startswith("Expected `object`"):
            return Skip(source, line, "record is not a JSON object")
        return Skip(source, line, f"invalid JSON: {exc}")  # e.g. a number out of range
    except msgspec.DecodeError as exc:
        return Skip(source, line, f"invalid JSON: {exc}")
    instance = _decode_dict(probe.instance)
    instance_id = probe.instance_id or instance.get("instance_id")
    if not instance_id or not isinstance(instance_id, str | int):
        return Skip(source, line, "no instance_id")
    try:
        fmt, steps = _steps(probe)
    except _Unreadable as exc:
        return Skip(source, line, str(exc))
    if not steps:
        return Skip(source, line, "trajectory has no assistant turns")
    return Trajectory(
        instance_id=str(instance_id),
        trajectory_id=_trajectory_id(probe, str(instance_id), source, line),
        format=fmt,
        steps=tuple(steps),
        workspace_root=_workspace_root(probe, instance),
        patch=str(instance.get("patch") or ""),
        repo=str(probe.repo or instance.get("repo") or ""),
        source_file=source,
        source_line=line,
    )


class _Unreadable(ValueError):
    """A record whose trajectory cannot be read; the message says why."""


def _steps(probe: _Probe) -> tuple[TrajectoryFormat, list[Step]]:
    """The format and the steps of a record's trajectory (maybe none); `_Unreadable` says why
    there is no trajectory to read."""
    try:
        if probe.history:
            history = _V0_HISTORY.decode(probe.history)
            if any(e.kind is not None for e in history[:8]):
                return TrajectoryFormat.OPENHANDS_V1, _steps_v1(_JSON.decode(probe.history))
            return TrajectoryFormat.OPENHANDS_V0, _steps_v0(history)
        messages = _JSON.decode(probe.messages) if probe.messages else None
        if not isinstance(messages, list):
            messages = _JSON.decode(probe.trajectory) if probe.trajectory else None
        if not isinstance(messages, list):
            raise _Unreadable("no history, messages or trajectory list")
        final = _JSON.decode(probe.final_response) if probe.final_response else None
        return TrajectoryFormat.MESSAGES, _steps_messages(messages, final)
    except msgspec.ValidationError as exc:
        raise _Unreadable(f"malformed trajectory: {exc}") from None
    except _Unreadable:
        raise
    except (TypeError, AttributeError, KeyError, ValueError) as exc:
        if isinstance(exc, ValueError) and str(exc).startswith(_HOSTILE):
            raise _Unreadable(str(exc)) from None
        # Malformed inner structure (a string where a dict belongs, ...): say what was wrong
        raise _Unreadable(f"malformed trajectory: {type(exc).__name__}: {exc}") from None


def record_steps(record: Any) -> tuple[TrajectoryFormat, tuple[Step, ...]]:
    """The format and steps of one decoded record's trajectory, read as `parse_record` reads it
    but without the record-level fields (no instance id needed; no steps is `()`, not an error).

    Raises `ValueError` naming why there is nothing to read: not JSON-serialisable or nested too
    deeply, no history / messages / trajectory list, a malformed trajectory, a tool call's
    hostile arguments. swe-eval's downstream case view reads agent outputs with it.
    """
    try:
        probe = _PROBE.decode(msgspec.json.encode(record))
    except msgspec.ValidationError:  # (a DecodeError: first)
        raise ValueError("record is not a JSON object") from None
    except (TypeError, msgspec.EncodeError, msgspec.DecodeError) as exc:
        raise ValueError(f"record is not JSON-serialisable: {exc}") from None
    except RecursionError:
        raise ValueError(_TOO_DEEP) from None
    try:
        fmt, steps = _steps(probe)
    except RecursionError:
        raise ValueError(_TOO_DEEP) from None
    return fmt, tuple(steps)


# -- typed views of the parts we read (msgspec skips every other field unbuilt) --------------------

_RAW = msgspec.Raw()


class _Probe(msgspec.Struct):
    instance_id: Any = None
    history: msgspec.Raw = _RAW
    messages: msgspec.Raw = _RAW
    trajectory: msgspec.Raw = _RAW
    final_response: msgspec.Raw = _RAW
    instance: msgspec.Raw = _RAW
    instruction: Any = None
    workspace: Any = None
    session_id: Any = None
    trajectory_id: Any = None
    run_id: Any = None
    attempt: Any = None
    repo: Any = None


class _V0Args(msgspec.Struct):
    path: Any = None
    command: Any = None
    thought: Any = None
    content: Any = None


class _V0Event(msgspec.Struct):
    id: Any = None
    source: Any = None
    action: Any = None
    observation: Any = None
    cause: Any = None
    kind: Any = None
    message: Any = None
    args: _V0Args | None = None
    content: msgspec.Raw = _RAW
    extras: msgspec.Raw = _RAW
    tool_call_metadata: msgspec.Raw = _RAW


class _Function(msgspec.Struct, frozen=True):
    name: Any = None
    arguments: Any = None


class _ToolCallJson(msgspec.Struct, frozen=True):
    function: _Function | None = None


class _Message(msgspec.Struct, frozen=True):
    content: Any = None
    reasoning_content: Any = None
    tool_calls: list[_ToolCallJson] | None = None


class _Choice(msgspec.Struct, frozen=True):
    message: _Message | None = None


class _Response(msgspec.Struct):
    id: Any = None
    choices: list[_Choice] | None = None


class _ToolCallMetadata(msgspec.Struct):
    function_name: Any = None
    model_response: _Response | None = None


class _RunMetadata(msgspec.Struct):
    working_dir: Any = None


class _RunExtras(msgspec.Struct):
    metadata: _RunMetadata | None = None


_JSON = msgspec.json.Decoder()
_PROBE = msgspec.json.Decoder(_Probe)
_V0_HISTORY = msgspec.json.Decoder(list[_V0Event])
_TOOL_CALL_METADATA = msgspec.json.Decoder(_ToolCallMetadata)
_RUN_EXTRAS = msgspec.json.Decoder(_RunExtras)
_STRING = msgspec.json.Decoder(str)


def _decode_dict(raw: msgspec.Raw) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        value = _JSON.decode(raw)
    except msgspec.DecodeError:
        return {}
    return value if isinstance(value, dict) else {}


# -- record-level fields -------------------------------------------------------------------------


def _trajectory_id(probe: _Probe, instance_id: str, source: str, line: int) -> str:
    for value in (probe.trajectory_id, probe.session_id, probe.run_id):
        if value:
            return str(value)
    if probe.attempt is not None:
        return f"{instance_id}#attempt{probe.attempt}"
    return f"{instance_id}@{Path(source).name}:{line}"


def _workspace_root(probe: _Probe, instance: dict[str, Any]) -> str:
    if isinstance(probe.workspace, str):
        return probe.workspace.rstrip("/")
    if isinstance(instance.get("repo_path"), str):
        return str(instance["repo_path"]).rstrip("/")
    text = probe.instruction if isinstance(probe.instruction, str) else _first_user_text(probe)
    match = _UPLOADED.search(text[:4000]) if text else None
    if match:
        return match.group(1).rstrip("/")
    repo, version = instance.get("repo"), instance.get("version")
    if isinstance(repo, str) and version:
        # OpenHands V0 SWE-bench layout: /workspace/<owner>__<name>__<version>
        return f"/workspace/{repo.replace('/', '__')}__{version}"
    return ""


def _first_user_text(probe: _Probe) -> str:
    if probe.history:
        for event in _V0_HISTORY.decode(probe.history)[:6]:
            if event.source == "user" and isinstance(event.message, str):
                return event.message
        return ""
    raw = probe.messages or probe.trajectory
    items = _JSON.decode(raw) if raw else None
    for item in items[:6] if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("role") == "user":
            return text_of(item.get("content"))
    return ""


def text_of(content: Any) -> str:
    """The text of an OpenAI/OpenHands content field (str, list of parts joined by newlines, or a
    message dict); anything else is no text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(part) for part in content)
    if isinstance(content, dict):
        if "text" in content:
            return text_of(content["text"])
        if "content" in content:
            return text_of(content["content"])
    return ""


def json_arguments(raw: Any, *, refuse_hostile: bool = False) -> dict[str, Any]:
    """A tool call's arguments: a JSON string (OpenAI) or already an object; anything else, and
    a string that is hostile or not an object (too deep, `1e999`, not JSON), is no arguments.

    `refuse_hostile`: a string nested past any real call or holding a number no tool takes
    (`1e999`, 5,000 digits) raises `ValueError` with the reason instead, so a reader can count
    the row as bad; merely malformed JSON (a truncated call) is still no arguments.
    """
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw:
        try:
            value = parse_hostile_json(raw)
        except ValueError as exc:
            reason = str(exc)
            if refuse_hostile and reason.startswith(("nested too deeply", "number")):
                raise ValueError(f"{_HOSTILE}: {reason}") from None
            return {}
        return value if isinstance(value, dict) else {}
    return {}


def _clean(text: str) -> str:
    return _THINK_TAGS.sub("", text).strip() if "think>" in text else text.strip()


class _StepBuilder:
    """Mutable turn under construction; frozen into a `Step` at the end."""

    __slots__ = ("calls", "reasoning")

    def __init__(self, reasoning: str) -> None:
        self.reasoning = reasoning
        self.calls: list[dict[str, str]] = []

    def freeze(self) -> Step:
        return Step(self.reasoning, tuple(TrajectoryCall(**c) for c in self.calls))


def _call_from_tool(name: str, args: dict[str, Any]) -> dict[str, str]:
    """Map a named tool call (OpenAI-style) to catm's reduced call."""
    if name in _THINK_TOOLS:
        return {"tool": "think", "name": name}
    if name in EDITOR_TOOLS:
        return {
            "tool": "editor",
            "command": str(args.get("command") or "view"),
            "path": str(args.get("path") or ""),
            "name": name,
        }
    if name in SHELL_TOOLS:
        return {
            "tool": "shell",
            "command": str(args.get("command") or args.get("cmd") or ""),
            "name": name,
        }
    return {"tool": name or "unknown", "name": name or "unknown"}


# -- OpenHands V0 event stream ---------------------------------------------------------------------


def _steps_v0(history: list[_V0Event]) -> list[Step]:
    observations: dict[Any, _V0Event] = {}
    for event in history:
        if event.observation is not None and event.cause is not None:
            observations[event.cause] = event
    steps: list[_StepBuilder] = []
    last_key: object = None
    for event in history:
        action = event.action
        if action is None or event.source != "agent" or action in ("system", "recall"):
            continue
        args = event.args or _V0Args()
        response = None
        name = action
        if event.tool_call_metadata:
            metadata = _TOOL_CALL_METADATA.decode(event.tool_call_metadata)
            response = metadata.model_response
            if isinstance(metadata.function_name, str) and metadata.function_name:
                name = metadata.function_name
        key = response.id if response is not None else None
        if key is None or key != last_key:
            if response is not None:
                reasoning = _response_reasoning(response)
            elif action == "message":
                reasoning = _clean(str(args.content or ""))
            else:
                reasoning = _clean(str(args.thought or ""))
            steps.append(_StepBuilder(reasoning))
            last_key = key if key is not None else object()
        call = _call_v0(action, args, observations.get(event.id))
        if call is not None:
            steps[-1].calls.append({**call, "name": name})
    return [s.freeze() for s in steps]


def _response_reasoning(response: _Response) -> str:
    message = response.choices[0].message if response.choices else None
    if message is None:
        return ""
    parts = [_clean(text_of(message.content))]
    if message.reasoning_content:
        parts.append(str(message.reasoning_content).strip())
    for tool_call in message.tool_calls or ():
        function = tool_call.function
        if function is not None and function.name in _THINK_TOOLS:
            parts.append(str(json_arguments(function.arguments).get("thought") or ""))
    return "\n".join(p for p in parts if p)


def _observation_head(obs: _V0Event) -> str:
    if not obs.content:
        return ""
    try:
        return _STRING.decode(obs.content)[:_OBSERVATION_HEAD]
    except msgspec.ValidationError:
        return ""


def _call_v0(action: str, args: _V0Args, obs: _V0Event | None) -> dict[str, str] | None:
    if action == "read":
        observation = _observation_head(obs) if obs is not None else ""
        return {
            "tool": "editor",
            "command": "view",
            "path": str(args.path or ""),
            "observation": observation,
        }
    if action == "edit":
        observation = _observation_head(obs) if obs is not None else ""
        return {
            "tool": "editor",
            "command": str(args.command or "edit"),
            "path": str(args.path or ""),
            "observation": observation,
        }
    if action == "run":
        cwd = ""
        if obs is not None and obs.extras:
            try:
                metadata = _RUN_EXTRAS.decode(obs.extras).metadata
            except msgspec.ValidationError:
                metadata = None  # some dumps store metadata as a string; the cwd is then unknown
            if metadata is not None and isinstance(metadata.working_dir, str):
                cwd = metadata.working_dir
        return {"tool": "shell", "command": str(args.command or ""), "cwd": cwd}
    if action == "think":
        return {"tool": "think"}
    if action in _V0_NOT_CALLS:
        return None
    return {"tool": str(action)}


# -- OpenAI-style messages -------------------------------------------------------------------------


def _steps_messages(messages: list[Any], final: Any) -> list[Step]:
    items = list(messages)
    if isinstance(final, dict):
        choices = final.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message")
            if isinstance(message, dict):
                items.append({**message, "role": "assistant"})
    steps: list[_StepBuilder] = []
    by_id: dict[str, dict[str, str]] = {}
    pending: list[dict[str, str]] = []
    for message in items:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "assistant":
            parts = [_clean(text_of(message.get("content")))]
            if message.get("reasoning_content"):
                parts.append(str(message["reasoning_content"]).strip())
            step = _StepBuilder("")
            tool_calls = list(message.get("tool_calls") or [])
            if isinstance(message.get("function_call"), dict):
                tool_calls.append({"function": message["function_call"], "id": ""})
            for tool_call in tool_calls:
                function = tool_call.get("function") or {}
                name = str(function.get("name") or "")
                # hostile arguments make the record unusable (a Skip that says so), not a
                # call without arguments
                args = json_arguments(function.get("arguments"), refuse_hostile=True)
                if name in _THINK_TOOLS:
                    parts.append(str(args.get("thought") or ""))
                call = _call_from_tool(name, args)
                step.calls.append(call)
                pending.append(call)
                if tool_call.get("id"):
                    by_id[str(tool_call["id"])] = call
            step.reasoning = "\n".join(p for p in parts if p)
            steps.append(step)
        elif role in ("tool", "function"):
            text = text_of(message.get("content"))
            if text.startswith("OBSERVATION:"):
                text = text[len("OBSERVATION:") :].lstrip()
            # litellm dumps may rewrite tool_call_id between request and answer: fall back to order.
            answered = by_id.pop(str(message.get("tool_call_id") or ""), None)
            if answered is not None and answered in pending:
                pending.remove(answered)
            elif pending:
                answered = pending.pop(0)
            if answered is not None:
                answered["observation"] = text[:_OBSERVATION_HEAD]
    return [s.freeze() for s in steps]


# -- OpenHands V1 (openhands-sdk) events ----------------------------------------------------------


def _steps_v1(history: list[Any]) -> list[Step]:
    observations: dict[str, dict[str, Any]] = {}
    for event in history:
        if isinstance(event, dict) and event.get("kind") == "ObservationEvent":
            for key in (event.get("action_id"), event.get("tool_call_id")):
                if key is not None:
                    observations[str(key)] = event
    steps: list[_StepBuilder] = []
    last_key: object = None
    for event in history:
        if not isinstance(event, dict) or event.get("source", "agent") != "agent":
            continue
        kind = event.get("kind")
        if kind == "MessageEvent":
            message = event.get("llm_message") or {}
            steps.append(_StepBuilder(_clean(text_of(message.get("content")))))
            last_key = object()
            continue
        if kind != "ActionEvent":
            continue
        key = event.get("llm_response_id")
        if key is None or key != last_key:
            parts = [_clean(text_of(event.get("thought")))]
            if event.get("reasoning_content"):
                parts.append(str(event["reasoning_content"]).strip())
            for block in event.get("thinking_blocks") or []:
                if isinstance(block, dict) and block.get("thinking"):
                    parts.append(str(block["thinking"]))
            steps.append(_StepBuilder("\n".join(p for p in parts if p)))
            last_key = key if key is not None else object()
        action = event.get("action") or {}
        obs_event = observations.get(str(event.get("id"))) or observations.get(
            str(event.get("tool_call_id"))
        )
        obs = (obs_event or {}).get("observation")
        if not isinstance(obs, dict):
            obs = {}
        observation = text_of(obs.get("content"))[:_OBSERVATION_HEAD]
        action_kind = action.get("kind")
        tool_name = event.get("tool_name")
        name = str(tool_name or action_kind or "unknown")
        if action_kind in EDITOR_ACTIONS or tool_name in EDITOR_TOOLS:
            steps[-1].calls.append(
                {
                    "tool": "editor",
                    "command": str(action.get("command") or "view"),
                    "path": str(action.get("path") or ""),
                    "observation": observation,
                    "name": name,
                }
            )
        elif action_kind in SHELL_ACTIONS or tool_name in SHELL_TOOLS:
            metadata = obs.get("metadata")
            if not isinstance(metadata, dict):
                metadata = {}
            steps[-1].calls.append(
                {
                    "tool": "shell",
                    "command": str(action.get("command") or ""),
                    "observation": observation,
                    "cwd": str(metadata.get("working_dir") or ""),
                    "name": name,
                }
            )
        elif action_kind == "ThinkAction" or tool_name in _THINK_TOOLS:
            steps[-1].reasoning = "\n".join(
                p for p in (steps[-1].reasoning, str(action.get("thought") or "")) if p
            )
            steps[-1].calls.append({"tool": "think", "name": name})
        else:
            steps[-1].calls.append({"tool": str(tool_name or action_kind or ""), "name": name})
    return [s.freeze() for s in steps]
