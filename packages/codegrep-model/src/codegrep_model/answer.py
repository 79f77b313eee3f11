"""The answer schema and a tolerant parser for what models actually write.

Models wrap the JSON in code fences, add a sentence before it, use single quotes, answer with a
bare list, or name line ranges as "a-b" strings. `parse_answer` accepts all of these and returns
`None` only when there is no list of files to be found; the engine then asks again or falls back.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

import grpo_rewards as rewards
from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["Answer", "normalize_path", "parse_answer"]

LineRange = tuple[int, int]


def normalize_path(path: str) -> str:
    """Repository-relative, forward slashes, no `./`, `a/`/`b/` diff prefixes kept as written."""
    p = path.strip().strip("`'\"").replace("\\", "/")
    while p.startswith("./"):
        p = p[2:]
    return p.lstrip("/")


class Answer(BaseModel):
    """What the agent hands to the coding agent: files (ranked) and optional line ranges."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    files: tuple[str, ...] = Field(description="Files to edit, most important first.")
    line_ranges: dict[str, tuple[LineRange, ...]] = Field(default_factory=dict)
    reasons: dict[str, str] = Field(
        default_factory=dict, description="Optional: why each file (shown to people, not scored)."
    )

    @field_validator("reasons", mode="before")
    @classmethod
    def _reasons(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            return {}
        return {normalize_path(str(k)): str(r)[:300] for k, r in v.items() if r}

    @field_validator("files", mode="before")
    @classmethod
    def _files(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = [v]
        if not isinstance(v, list | tuple):
            return v
        seen: list[str] = []
        for item in v:
            # Models sometimes write `path:10-20` or `path:Class.method` inside the files list.
            raw = item.get("path", "") if isinstance(item, dict) else str(item)
            p = normalize_path(re.sub(r":[\w.\-, ]*$", "", raw))
            if p and p not in seen:
                seen.append(p)
        return seen

    @field_validator("line_ranges", mode="before")
    @classmethod
    def _ranges(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            return {}
        out: dict[str, list[tuple[int, int]]] = {}
        for path, ranges in v.items():
            items = ranges if isinstance(ranges, list | tuple) else [ranges]
            # a single [a, b] pair instead of a list of pairs
            if len(items) == 2 and all(isinstance(x, int) for x in items):
                items = [items]
            parsed: list[tuple[int, int]] = []
            for r in items:
                pair = _range(r)
                if pair is not None:
                    parsed.append(pair)
            if parsed:
                out[normalize_path(str(path))] = parsed
        return out


def _range(r: Any) -> tuple[int, int] | None:
    if isinstance(r, str):
        m = re.fullmatch(r"\s*(\d+)\s*(?:[-:,]\s*(\d+))?\s*", r)
        if not m:
            return None
        a = int(m.group(1))
        return (a, int(m.group(2) or a))
    if isinstance(r, int):
        return (r, r)
    if isinstance(r, list | tuple) and len(r) == 2:
        try:
            a, b = int(r[0]), int(r[1])
        except (TypeError, ValueError):
            return None
        return (min(a, b), max(a, b))
    if isinstance(r, dict) and "start" in r:
        start, end = r["start"], r.get("end", r["start"])
        if not isinstance(start, int | str) or not isinstance(end, int | str):
            return None
        try:
            return (int(start), int(end))
        except (TypeError, ValueError):
            return None
    return None


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)


def _spans(text: str) -> list[str]:
    """Every balanced {...} or [...] span of `text`, outermost first."""
    out: list[str] = []
    for opener, closer in (("{", "}"), ("[", "]")):
        depth, start = 0, -1
        for i, ch in enumerate(text):
            if ch == opener:
                if depth == 0:
                    start = i
                depth += 1
            elif ch == closer and depth:
                depth -= 1
                if depth == 0:
                    out.append(text[start : i + 1])
    return out


def _wholes(text: str) -> list[str]:
    """What the reply presents as its answer: a fenced block, an <answer> tag, the whole text."""
    out = [m.group(1) for m in _FENCE.finditer(text)]
    m = re.search(r"<answer>(.*?)</answer>", text, re.DOTALL)
    if m:
        out.append(m.group(1))
    out.append(text)
    return out


def _candidates(text: str) -> list[str]:
    """Substrings that may hold the answer, most specific first."""
    wholes = _wholes(text)
    return wholes[:-1] + _spans(text) + wholes[-1:]


_PATHLIKE = re.compile(r"[^\s]*[./][^\s]*")


def _load(blob: str) -> Any:
    blob = blob.strip()
    try:
        return json.loads(blob)
    except ValueError:
        pass
    try:
        # single quotes, trailing commas, True/None: Python literal syntax is a superset models hit
        return ast.literal_eval(blob)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def _find_reasons(text: str) -> dict[str, str]:
    for blob in _candidates(text):
        data = _load(blob)
        if isinstance(data, dict) and isinstance(data.get("reasons"), dict):
            return {str(k): str(v) for k, v in data["reasons"].items()}
    return {}


def parse_answer(text: str | None) -> Answer | None:
    """The answer in a model reply, or None when the reply holds no list of files.

    `grpo_rewards.parse_answer` (what the rewards score) is asked first, so that whatever the
    reward accepts the engine accepts with the same files; only replies it rejects get the extra
    tolerance here (single quotes, bare lists, `locations`), which serves inference.
    """
    if not text:
        return None
    strict = rewards.parse_answer(text).answer
    text = _THINK.sub("", text)
    if strict is not None:
        return Answer(
            files=strict.files,
            line_ranges={
                f: tuple((r.start, r.end) for r in rs) for f, rs in strict.line_ranges.items()
            },
            reasons=_find_reasons(text),
        )
    wholes = {blob.strip() for blob in _wholes(text)}
    for blob in _candidates(text):
        data = _load(blob)
        if isinstance(data, dict):
            files = data.get("files", data.get("locations", data.get("paths")))
            if files is None:
                continue
            data = {
                "files": files,
                "line_ranges": data.get("line_ranges", {}),
                "reasons": data.get("reasons", {}),
            }
        elif isinstance(data, list) and all(isinstance(x, str) for x in data):
            # A list inside prose ("foo([])", "x = ['a']") is code the model is talking about,
            # not an answer: only a list the reply presents as its answer, or one of paths, is.
            if blob.strip() not in wholes and not (
                data and all(_PATHLIKE.fullmatch(x.strip()) for x in data)
            ):
                continue
            data = {"files": data}
        else:
            continue
        try:
            answer = Answer.model_validate(data)
        except ValueError:
            continue
        return answer
    return None
