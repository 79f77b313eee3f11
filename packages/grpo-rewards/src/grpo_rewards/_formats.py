"""The text formats a rollout's completions come in, read one way for every package: Hermes
`<tool_call>` blocks and `<think>` reasoning. The episode (codegrep-model), the rewards, and
CodeScout's rows all read them here, so an unclosed block means the same to the engine that
acts on a reply and to the reward that scores it.

The rules:
- A `<tool_call>` block still open at the end of the text (a generation cut at its length
  limit) runs to the end, as vLLM's hermes tool parser reads it.
- A block is a call when its body is a JSON object with a string `name`; its arguments are
  `arguments`, else `parameters`, else `{}`, as written (a JSON string stays a string). Any
  other body is a call without a name, kept so the engine can answer it and the reward can
  count it.
- A body is JSON as the toolkit reads hostile JSON (`loads_strict`, the rule of
  codegrep-records' `parse_json`, copied because this package imports nothing; a workspace
  test holds the two equal): `NaN` and `Infinity`, a number that overflows (`1e999`) or is
  longer than 64 characters, nesting deeper than 200 levels, and a string or key that decodes
  to a lone surrogate (`"\\udce9"`, no Unicode text; a pair is one character) are not JSON.
- `<think>…</think>` blocks are reasoning, in any case; text before the last `</think>` is too
  (a chat template that opens the block in the prompt leaves only its close in the reply). A
  `<think>` left open means the answer never came.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate

__all__ = [
    "HermesCall",
    "hermes_calls",
    "loads_strict",
    "record_text",
    "split_reasoning",
    "tool_call_bodies",
    "without_tool_calls",
]

_TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)


# codegrep-records' limits (`MAX_JSON_DEPTH`, `MAX_NUMBER_CHARS`)
MAX_JSON_DEPTH = 200
MAX_NUMBER_CHARS = 64
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
# a `\uD800`-`\uDFFF` escape or a surrogate in the text: only then is the value checked
_SURROGATE = re.compile("\\\\u[dD][89a-fA-F]|[\ud800-\udfff]")


def _number(text: str, convert: Callable[[str], float]) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(f"number too long ({len(text)} characters)")
    value = convert(text)
    if not math.isfinite(value):
        raise ValueError(f"number out of range: {text[:24]}")
    return value


def _constant(name: str) -> object:
    raise ValueError(f"{name} is not a number JSON allows")


def loads_strict(text: str) -> object:
    """`json.loads` for a model's text: `ValueError` for what is not JSON, and for what the
    toolkit's readers refuse as hostile (`NaN`, `Infinity`, `1e999`, a number over 64
    characters, nesting past 200 levels, a lone surrogate such as `"\\udce9"`).

    >>> loads_strict('{"pattern": "x", "max": 3}')
    {'pattern': 'x', 'max': 3}
    >>> loads_strict('{"max": NaN}')
    Traceback (most recent call last):
    ...
    ValueError: NaN is not a number JSON allows
    """
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH:
        skeleton = _NOT_BRACKET.sub("", _STRING.sub("", text))
        if max(accumulate(map(_STEP.__getitem__, skeleton)), default=0) > MAX_JSON_DEPTH:
            raise ValueError(f"nested too deeply to read (more than {MAX_JSON_DEPTH} levels)")
    try:
        value = json.loads(
            text,
            parse_int=lambda t: int(_number(t, int)),
            parse_float=lambda t: _number(t, float),
            parse_constant=_constant,
        )
    except RecursionError:  # unbalanced brackets slip past the depth check
        raise ValueError("nested too deeply to read") from None
    if _SURROGATE.search(text) is not None:
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"a string holds a lone surrogate (U+{ord(exc.object[exc.start]):04X}), "
                "which is not Unicode text"
            ) from None
    return value


def record_text(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD (two that form a pair joined into the
    one character they stand for): what any record, log line or UTF-8 writer can carry.

    An answer's JSON is read by Python's decoder, whose `"\\udce9"` is a lone surrogate; the
    engine (codegrep-model, which uses this function) records such a path with U+FFFD, and
    the reward reads it so too, so both see one answer (tests/test_one_meaning.py).

    >>> print(ascii(record_text(json.loads('"r\\\\udce9.py"'))))
    'r\\ufffd.py'
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def tool_call_bodies(text: str) -> list[str]:
    """The bodies of the Hermes `<tool_call>` blocks of `text`, stripped, in order."""
    return [m.group(1).strip() for m in _TOOL_CALL.finditer(text)]


@dataclass(frozen=True)
class HermesCall:
    """One `<tool_call>` block of a text, read by the rule above."""

    #: The block's body, stripped.
    body: str
    #: The tool's name; None when the body is not a JSON object with a string `name`.
    name: str | None
    #: `arguments` (else `parameters`, else `{}`) as written; None when `name` is None.
    arguments: object = None


def hermes_calls(text: str, *, decode: Callable[[str], object] = loads_strict) -> list[HermesCall]:
    """The `<tool_call>` blocks of `text` as calls, in order.

    `decode` reads a body's JSON (default `loads_strict`); whatever it raises as `ValueError`
    or `RecursionError` makes a call without a name. The engine passes codegrep-records'
    `parse_json`, the same rule.

    >>> [(c.name, c.arguments) for c in hermes_calls(
    ...     '<tool_call>{"name": "grep", "arguments": {"pattern": "x"}}</tool_call> '
    ...     '<tool_call>not json</tool_call>')]
    [('grep', {'pattern': 'x'}), (None, None)]
    """
    calls: list[HermesCall] = []
    for body in tool_call_bodies(text):
        try:
            data = decode(body)
        except (ValueError, RecursionError):
            data = None
        name = data.get("name") if isinstance(data, dict) else None
        if isinstance(data, dict) and isinstance(name, str):
            calls.append(HermesCall(body, name, data.get("arguments", data.get("parameters", {}))))
        else:
            calls.append(HermesCall(body, None))
    return calls


def without_tool_calls(text: str) -> str:
    """`text` with its `<tool_call>` blocks removed, stripped."""
    return _TOOL_CALL.sub("", text).strip()


def split_reasoning(text: str) -> tuple[str, bool]:
    """(what follows the reasoning, whether a `<think>` block was left open)."""
    body = _THINK.sub("", text)
    closes = list(_THINK_CLOSE.finditer(body))
    if closes:
        body = body[closes[-1].end() :]
    return body, _THINK_OPEN.search(body) is not None
