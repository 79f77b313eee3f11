"""The answer schema and a tolerant parser for what models actually write.

Models wrap the JSON in code fences, add a sentence before it, use single quotes, answer with a
bare list, or name line ranges as "a-b" strings. `parse_answer` accepts all of these and returns
`None` only when there is no list of files to be found; the engine then asks again or falls back.

An answer may carry per-file `scores` (a policy's confidence, aligned with `files`); models'
answers normally have none, and a reply whose scores do not line up with its files keeps its files
and loses only the scores.
"""

from __future__ import annotations

import ast
import re
from typing import Annotated, Any

import codegrep_records as records
import grpo_rewards as rewards
from codegrep_records.io import parse_json
from grpo_rewards import record_text
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["Answer", "answer_path", "parse_answer", "read_answer"]

_LineRange = tuple[int, int]
# Finite, as JSON has no NaN or Infinity; within [0, 1], the scale every confidence is given on.
Score = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]


def answer_path(path: str) -> str:
    """A path as a model wrote it, repository-relative: the quotes and backticks around it go,
    then `codegrep_records.normalize_path` applies the one path rule of the toolkit (mount
    prefixes such as `/testbed/` removed, forward slashes, no `./`), the same rule the rewards
    score with. A lone surrogate in it is U+FFFD (`record_text`)."""
    return records.normalize_path(record_text(path).strip().strip("`'\""))


class Answer(BaseModel):
    """What the agent hands to the coding agent: files (ranked), optional line ranges and scores."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    files: tuple[str, ...] = Field(description="Files to edit, most important first.")
    line_ranges: dict[str, tuple[_LineRange, ...]] = Field(default_factory=dict)
    reasons: dict[str, str] = Field(
        default_factory=dict, description="Optional: why each file (shown to people, not scored)."
    )
    scores: tuple[Score, ...] | None = Field(
        default=None,
        description="Optional: the policy's confidence per file, aligned with `files`, in [0, 1]; "
        "what each policy means by it is its own (see LexicalPolicy), none is calibrated.",
    )

    ranking: tuple[tuple[str, Score], ...] | None = Field(
        default=None,
        description="Optional: the policy's best files with their scores, best first, the "
        "answer's and beyond it (more candidates for a caller that wants them; LexicalPolicy "
        "with `LexicalConfig.ranking`). Never scored.",
    )

    @field_validator("ranking", mode="before")
    @classmethod
    def _ranking(cls, v: Any) -> Any:
        """[[path, score], ...]; entries that are not a path and a score in [0, 1] are left
        out (a model's stray ranking costs it nothing), as are repeated paths."""
        if not isinstance(v, list | tuple):
            return None
        out: list[tuple[str, float]] = []
        seen: set[str] = set()
        for item in v:
            if not (isinstance(item, list | tuple) and len(item) == 2):
                continue
            path, score = item
            if not isinstance(path, str) or type(score) not in (int, float):
                continue
            p = answer_path(path)
            if p and p not in seen and 0.0 <= score <= 1.0:  # NaN fails both
                seen.add(p)
                out.append((p, float(score)))
        return out

    @field_validator("reasons", mode="before")
    @classmethod
    def _reasons(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            return {}
        return {answer_path(str(k)): record_text(str(r)[:300]) for k, r in v.items() if r}

    @model_validator(mode="before")
    @classmethod
    def _align_scores(cls, data: Any) -> Any:
        """Scores given for the files as written follow them through de-duplication."""
        if not isinstance(data, dict) or not isinstance(data.get("scores"), list | tuple):
            return data
        files, scores = data.get("files"), data["scores"]
        raw = [files] if isinstance(files, str) else files
        if not isinstance(raw, list | tuple) or len(scores) != len(raw):
            return data  # a length the final files do not have either fails below
        kept = [i for i, _ in _file_entries(raw)]
        return {**data, "scores": [scores[i] for i in kept]}

    @model_validator(mode="after")
    def _scores_fit(self) -> Answer:
        if self.scores is not None and len(self.scores) != len(self.files):
            raise ValueError(
                f"{len(self.scores)} scores for {len(self.files)} files: scores must be aligned "
                "with files"
            )
        return self

    @field_validator("files", mode="before")
    @classmethod
    def _files(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = [v]
        if not isinstance(v, list | tuple):
            return v
        return [p for _, p in _file_entries(v)]

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
                out[answer_path(str(path))] = parsed
        return out


def _file_entries(items: list[Any] | tuple[Any, ...]) -> list[tuple[int, str]]:
    """(index in `items`, normalized path) of the entries kept: first of duplicates, no empties."""
    seen: set[str] = set()
    out: list[tuple[int, str]] = []
    for i, item in enumerate(items):
        # Models sometimes write `path:10-20` or `path:Class.method` inside the files list.
        raw = item.get("path", "") if isinstance(item, dict) else str(item)
        p = answer_path(re.sub(r":[\w.\-, ]*$", "", raw))
        if p and p not in seen:
            seen.add(p)
            out.append((i, p))
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
        return parse_json(blob)
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


def _with_scores(answer: Answer, text: str) -> Answer:
    """`answer` with the scores (and `ranking`) the reply gives beside the same files, if it
    gives any.

    The files always come from the parse above: scores that are malformed, out of [0, 1] or that
    do not line up with those files are dropped, never a reason to reject the answer.
    """
    if "scores" not in text and "ranking" not in text:  # models' replies: nothing to look for
        return answer
    for blob in _candidates(text):
        data = _load(blob)
        if not isinstance(data, dict) or (data.get("scores") is None and "ranking" not in data):
            continue
        files = data.get("files", data.get("locations", data.get("paths")))
        if files is None:
            continue
        update: dict[str, Any] = {}
        try:
            probe = Answer.model_validate({"files": files, "scores": data.get("scores")})
        except ValueError:  # scores that do not fit: the ranking may still
            try:
                probe = Answer.model_validate({"files": files})
            except ValueError:
                continue
        if probe.files != answer.files:
            continue
        if probe.scores is not None:
            update["scores"] = probe.scores
        # the ranking (beside the answer, never part of it) with the same files only
        ranking = Answer.model_validate({"files": [], "ranking": data.get("ranking")}).ranking
        if ranking:
            update["ranking"] = ranking
        return answer.model_copy(update=update) if update else answer
    return answer


def _from_reward(answer: rewards.RewardAnswer, *, reasons: dict[str, str] | None = None) -> Answer:
    """The engine's record of an answer the rewards parsed: its files and line ranges."""
    return Answer(
        files=answer.files,
        line_ranges={
            f: tuple((r.start, r.end) for r in rs) for f, rs in answer.line_ranges.items()
        },
        reasons=reasons or {},
    )


def read_answer(
    text: str | None, *, strict: bool
) -> tuple[Answer | None, rewards.ParsedAnswer | None]:
    """The answer an episode takes from a reply, and (strict) the parse the reward scores.

    Strict (training): `grpo_rewards.parse_answer` alone, no extra tolerance, and its
    `ParsedAnswer` beside the answer so the reward scores that parse without reading the text
    again. Otherwise (inference): `parse_answer`'s tolerant reading, and no parse.
    """
    if strict:
        parsed = rewards.parse_answer(text)
        return (None if parsed.answer is None else _from_reward(parsed.answer)), parsed
    return parse_answer(text), None


def parse_answer(text: str | None) -> Answer | None:
    """The answer in a model reply, or None when the reply holds no list of files.

    `grpo_rewards.parse_answer` (what the rewards score) is asked first, so that whatever the
    reward accepts the engine accepts with the same files; only replies it rejects get the extra
    tolerance here (single quotes, bare lists, `locations`), which serves inference.
    """
    if not text:
        return None
    strict = rewards.parse_answer(text).answer
    # the reasoning read as the reward reads it: a `<think>` left open holds no answer, not a
    # JSON object to be found inside the thought
    text, unclosed = rewards.split_reasoning(text)
    if unclosed:
        return None
    if strict is not None:
        return _with_scores(_from_reward(strict, reasons=_find_reasons(text)), text)
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
        return _with_scores(answer, text)
    return None
