"""The training run report: the monitor's curves and alarms, and a rollout browser built from
the per-rollout log (`codegrep_rollouts.jsonl`) and ms-swift's `completions.jsonl`.

What it is not: a second monitor. Curves and alarms come from the caller (the monitor computed
them); this module only reads the rollout records the monitor does not keep.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from codegrep_report._jsonl import BadRow, iter_json_objects, loads_strict
from codegrep_report._page import render_page, write_page

__all__ = [
    "COMPLETIONS_FILE",
    "AlarmLike",
    "SeriesLike",
    "TrainingReportSummary",
    "completion_rows",
    "parse_completion",
    "training_payload",
    "write_training_report",
]

COMPLETIONS_FILE = "completions.jsonl"
MAX_TEXT = 4000  # characters kept of one tool result, call argument or answer
MAX_CURVE_POINTS = 1500  # a curve of more steps is thinned evenly (its last point kept)
_NOT_REWARD = frozenset({"step", "index", "advantages", "num_turns", "global_step"})
_TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.S)
_TOOL_RESPONSE = re.compile(r"<tool_response>(.*?)(?:</tool_response>|$)", re.S)
_ISSUE = re.compile(r"<issue>\n?(.*?)\n?</issue>", re.S)
MAX_ISSUE = 20_000  # characters of an issue kept beside a rollout
_TOKEN = re.compile(
    r"<\|im_start\|>assistant|<tool_call>(.*?)(?:</tool_call>|$)|<tool_response>(.*?)(?:</tool_response>|$)",
    re.S,
)


class SeriesLike(Protocol):
    """A curve: the monitor's `Series` fits."""

    @property
    def steps(self) -> Sequence[int]: ...
    @property
    def values(self) -> Sequence[float]: ...


class AlarmLike(Protocol):
    """An alarm: the monitor's `Alarm` fits."""

    @property
    def name(self) -> str: ...
    @property
    def metric(self) -> str: ...
    @property
    def step(self) -> int: ...
    @property
    def message(self) -> str: ...


@dataclass(frozen=True)
class ComparedRun:
    """A second run drawn beside the first: its curves over the first's, and its per-instance
    group rewards in a side-by-side table."""

    title: str
    curves: Mapping[str, SeriesLike]
    record_files: Sequence[str | Path] = ()


@dataclass(frozen=True)
class TrainingReportSummary:
    """What was written: the file, its size, and what the rollout browser holds."""

    path: Path
    bytes: int
    steps: int
    groups: int
    rollouts: int
    bad_rows: tuple[BadRow, ...]


def _cap(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f" … [{len(text)} chars]"


def _num(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit() and len(value) < 13:
        return int(value)
    return None


def _strings(value: object) -> list[str] | None:
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return [_cap(v) for v in value]
    return None


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts: [{"type": "text", "text": ...}]
        return "".join(
            p.get("text", "")
            for p in value
            if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return "" if value is None else json.dumps(value, ensure_ascii=False)[:MAX_TEXT]


def _call(raw: str) -> dict[str, str]:
    """A `<tool_call>` body as {"name", "args"}, by grpo-rewards' rule for a body, mirrored
    here (this package has no dependency; a workspace test holds the two equal): a JSON object
    with a string `name` is a call, its arguments `arguments`, else `parameters`, else `{}`;
    any other body (JSON the engine refuses too: NaN, 1e999, deep nesting) is kept as text
    under the name "?"."""
    try:
        obj = loads_strict(raw)
    except ValueError:
        obj = None
    name = obj.get("name") if isinstance(obj, dict) else None
    if not isinstance(obj, dict) or not isinstance(name, str):
        return {"name": "?", "args": _cap(raw.strip())}
    args = obj.get("arguments", obj.get("parameters", {}))
    return {
        "name": _cap(name),
        "args": _cap(args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)),
    }


def _attach(turns: list[list[dict[str, str]]], result: str) -> None:
    if not turns:
        turns.append([])
    calls = turns[-1]
    for c in calls:
        if "result" not in c:
            c["result"] = _cap(result)
            return
    calls.append({"name": "(result)", "args": "", "result": _cap(result)})


def parse_completion(completion: object) -> tuple[list[dict[str, object]], str | None]:
    """A logged completion as (turns, answer): each turn's tool calls with their results, and
    the last assistant text without its tool calls. Reads OpenAI-style message lists (with
    `tool_calls` or `<tool_call>` blocks, and tool results as `tool` messages or as
    `<tool_response>` blocks in `user` messages, which is how a Hermes template folds them) and
    flat text with `<tool_call>` / `<tool_response>` blocks. A list is read from its first
    assistant message: the system and issue messages before it hold no turn."""
    turns: list[list[dict[str, str]]] = []
    answer: str | None = None
    if isinstance(completion, list):
        started = False
        for msg in completion:
            if not isinstance(msg, dict):
                continue
            role = msg.get("role")
            started = started or role == "assistant"
            if not started:
                continue
            content = _text(msg.get("content"))
            if role == "user":
                for result in _TOOL_RESPONSE.findall(content):
                    _attach(turns, result.strip("\n"))
            elif role == "assistant":
                calls = [_call(m) for m in _TOOL_CALL.findall(content)]
                for tc in msg.get("tool_calls") or []:
                    fn = tc.get("function") if isinstance(tc, dict) else None
                    if isinstance(fn, dict):
                        args = fn.get("arguments")
                        calls.append(
                            {
                                "name": _cap(str(fn.get("name", "?"))),
                                "args": _cap(args if isinstance(args, str) else json.dumps(args)),
                            }
                        )
                turns.append(calls)
                rest = _TOOL_CALL.sub("", content).strip()
                if rest:
                    answer = rest
            elif role == "tool":
                _attach(turns, content)
    elif isinstance(completion, str):
        start = 0
        for m in _TOKEN.finditer(completion):
            if m.group(0).startswith("<|im_start|>"):
                turns.append([])
            elif m.group(1) is not None:
                if not turns or any("result" in c for c in turns[-1]):
                    turns.append([])
                turns[-1].append(_call(m.group(1)))
            else:
                _attach(turns, (m.group(2) or "").strip("\n"))  # the template's own newlines
            start = m.end()
        tail = completion[start:].replace("<|im_end|>", "").strip()
        if tail:
            answer = tail
    shown: list[dict[str, object]] = [{"calls": calls} for calls in turns]
    return shown, (_cap(answer) if answer is not None else None)


def _group_size(path: Path) -> int | None:
    """ms-swift's `num_generations` from the args.json beside a log, when it is readable."""
    args = path.parent / "args.json"
    try:
        if args.is_symlink() or not args.is_file() or args.stat().st_size > (1 << 20):
            return None
        obj = json.loads(args.read_text("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    n = _int(obj.get("num_generations")) if isinstance(obj, dict) else None
    return n if n and n > 0 else None


def _rollout_from_log(obj: Mapping[str, object]) -> dict[str, object]:
    out: dict[str, object] = {
        "i": _int(obj.get("index")),
        "id": obj.get("instance_id") if isinstance(obj.get("instance_id"), str) else None,
        "r": _num(obj.get("reward")),
        "a": _num(obj.get("advantage")),
        "ag": _num(obj.get("advantage_group")),
        "t": _int(obj.get("num_turns")),
        "c": _int(obj.get("num_tool_calls")),
        "cbar": _num(obj.get("cbar")),
        "f": _strings(obj.get("answer_files")),
    }
    per_turn = obj.get("tool_calls_per_turn")
    if isinstance(per_turn, list) and all(_int(c) is not None for c in per_turn):
        out["cpt"] = per_turn
    for key, short in (
        ("answer_error", "err"),
        ("degenerate", "deg"),
        ("episode_status", "st"),
        ("test_policy", "tp"),
        ("stop_cause", "stop"),
    ):
        v = obj.get(key)
        if isinstance(v, str):
            out[short] = _cap(v)
    for key, short in (
        ("rollout_tokens", "tok"),
        ("completion_tokens", "ctok"),
        ("tool_results_cut", "cut"),
    ):
        n = _int(obj.get(key))
        if n is not None:
            out[short] = n
    gold = _strings(obj.get("gold_files")) or _strings(obj.get("gold"))
    if gold is not None:
        out["gold"] = gold
    return {k: v for k, v in out.items() if v is not None}


def completion_rows(obj: Mapping[str, object]) -> list[dict[str, object]] | None:
    """The rollouts of one `completions.jsonl` line: ms-swift writes a table of columns per
    logging step (`{"step": [...], "completion": [...], ...}`), older writers one row per line.
    None when the columns differ in length (a bad line). Read by this report and by the run
    monitor, so that both see the same rollouts in a line."""
    steps = obj.get("step")
    if isinstance(steps, list):  # ms-swift: one table of columns per logging step
        columns = {k: v for k, v in obj.items() if isinstance(v, list)}
        if any(len(v) != len(steps) for v in columns.values()):
            return None
        return [{k: v[i] for k, v in columns.items()} for i in range(len(steps))]
    return [dict(obj)]


def _whole_rollout(prompt: object, completion: object) -> object:
    """The rollout's turns as one text or message list: ms-swift logs a multi-turn rollout's
    last assistant message as `completion`, its earlier turns and their tool results inside
    the chat-templated `prompt` (text, or a message list)."""
    if isinstance(prompt, str) and isinstance(completion, str):
        first = prompt.find("<|im_start|>assistant")
        return prompt[first:] + completion if first >= 0 else completion
    if isinstance(prompt, list):
        tail = (
            completion
            if isinstance(completion, list)
            else [{"role": "assistant", "content": completion}]
        )
        return [*prompt, *tail]
    return completion


def _issue_of(prompt: object) -> str | None:
    if isinstance(prompt, list):
        text = "\n".join(_text(m.get("content")) for m in prompt if isinstance(m, dict))
    else:
        text = prompt if isinstance(prompt, str) else ""
    found = _ISSUE.search(text)
    return _cut_issue(found.group(1)) if found else None


def _cut_issue(text: str) -> str:
    return text if len(text) <= MAX_ISSUE else text[:MAX_ISSUE] + f" … [{len(text)} chars]"


def _rollout_from_completion(row: Mapping[str, object]) -> dict[str, object]:
    prompt = row.get("prompt")
    turns, answer = parse_completion(_whole_rollout(prompt, row.get("completion")))
    out: dict[str, object] = {"turns": turns}
    issue = _issue_of(prompt)
    if issue is not None:
        out["issue"] = issue
    out["c"] = sum(len(t["calls"]) for t in turns if isinstance(t["calls"], list))
    if answer is not None:
        out["ans"] = answer
    rewards = {k: _num(v) for k, v in row.items() if k not in _NOT_REWARD and _num(v) is not None}
    if "reward" in rewards:
        out["r"] = rewards["reward"]
    elif rewards:
        out["r"] = sum(v for v in rewards.values() if v is not None)
    adv = _num(row.get("advantages"))
    if adv is not None:
        out["a"] = adv
    t = _num(row.get("num_turns"))
    if t is not None:
        out["t"] = int(t)
    gold = _strings(row.get("gold_files")) or _strings(row.get("solution"))
    if gold is not None:
        out["gold"] = gold
    return out


def _read_records(
    files: Sequence[Path], bad: list[BadRow], notes: list[str]
) -> dict[int, list[dict[str, object]]]:
    """step -> rollouts, in index order. A later launch's records of a step replace those of
    the launch before (a resumed run logs those steps again)."""
    logged: dict[int, list[dict[str, object]]] = {}
    completed: dict[int, list[dict[str, object]]] = {}
    sizes: dict[int, int | None] = {}
    for launch_no, path in enumerate(files):
        is_completions = path.name == COMPLETIONS_FILE
        target = completed if is_completions else logged
        owner: dict[int, tuple[int, int]] = {}
        launch, last = 0, -1
        size = None if is_completions else _group_size(path)
        previous: object = None
        for number, obj in iter_json_objects(path, bad):
            if is_completions and obj == previous:
                # ms-swift logs the last step's table again when training ends: one table
                notes.append(f"{path.name}:{number}: the table before it again; read once")
                continue
            previous = obj
            rows = completion_rows(obj) if is_completions else [obj]
            if rows is None:
                bad.append(BadRow(str(path), number, "the columns of the table differ in length"))
                continue
            for row in rows:
                step = _int(row.get("step"))
                if step is None:
                    bad.append(BadRow(str(path), number, "no integer step"))
                    break
                if step < last:
                    launch += 1
                last = step
                tag = (launch_no, launch)
                if owner.get(step) != tag:
                    target[step] = []
                    owner[step] = tag
                record = _rollout_from_completion(row) if is_completions else _rollout_from_log(row)
                target[step].append(record)
                if not is_completions:
                    sizes[step] = size
    for step, rows in logged.items():
        rows.sort(key=lambda r: r.get("i", 0))  # type: ignore[arg-type, return-value]
        extra = completed.pop(step, None)
        if extra is not None:
            if len(extra) != len(rows):
                notes.append(
                    f"step {step}: {len(extra)} completions for {len(rows)} logged rollouts; "
                    "paired by order up to the shorter"
                )
            for rec, comp in zip(rows, extra, strict=False):
                for key in ("turns", "ans", "gold", "issue"):
                    if key in comp and key not in rec:
                        rec[key] = comp[key]
    for step, rows in completed.items():
        for i, rec in enumerate(rows):
            rec["i"] = i
        logged[step] = rows
    for step, rows in logged.items():
        n = sizes.get(step)
        for rec in rows:
            rec["_n"] = n
    return dict(sorted(logged.items()))


def _groups(
    by_step: Mapping[int, list[dict[str, object]]], notes: list[str]
) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    rollouts: list[dict[str, object]] = []
    groups: list[dict[str, object]] = []
    unknown_size = False
    for step, rows in by_step.items():
        keyed: dict[str, list[int]] = {}
        for pos, rec in enumerate(rows):
            n = rec.pop("_n", None)
            if isinstance(rec.get("id"), str):
                key = str(rec["id"])
            elif isinstance(n, int):
                idx = rec.get("i")
                key = f"#{(idx if isinstance(idx, int) else pos) // n}"
            else:
                key, unknown_size = "all", True
            rec["s"] = step
            keyed.setdefault(key, []).append(len(rollouts))
            rollouts.append(rec)
        for key, members in keyed.items():
            rewards = [rollouts[m].get("r") for m in members]
            known = [float(r) for r in rewards if isinstance(r, float | int)]
            mean = sum(known) / len(known) if known else None
            # the sample standard deviation (n - 1), as ms-swift logs `reward_std` (torch.std)
            std = (
                math.sqrt(sum((r - mean) ** 2 for r in known) / (len(known) - 1))
                if len(known) > 1 and mean is not None
                else None  # one rollout: no spread to speak of
            )
            turns = [rollouts[m].get("t") for m in members]
            calls = [rollouts[m].get("c") for m in members]
            groups.append(
                {
                    "s": step,
                    "g": key,
                    "m": members,
                    "mean": mean,
                    "std": std,
                    "zv": len(known) > 1 and len(known) == len(members) and std == 0.0,
                    "minr": min(known) if known else None,
                    "len": max(
                        (
                            (t if isinstance(t, int) else 0) * 1000
                            + (c if isinstance(c, int) else 0)
                            for t, c in zip(turns, calls, strict=True)
                        ),
                        default=0,
                    ),
                }
            )
    if unknown_size:
        notes.append(
            "no instance_id and no num_generations (args.json) for some steps: their rollouts "
            "form one group per step"
        )
    return groups, rollouts


def _curve(series: SeriesLike) -> dict[str, object]:
    steps, values = list(series.steps), list(series.values)
    if len(steps) > MAX_CURVE_POINTS:
        stride = math.ceil(len(steps) / MAX_CURVE_POINTS)
        keep = list(range(0, len(steps), stride))
        if keep[-1] != len(steps) - 1:
            keep.append(len(steps) - 1)
        steps, values = [steps[i] for i in keep], [values[i] for i in keep]
    return {"x": steps, "y": values}


def training_payload(
    *,
    curves: Mapping[str, SeriesLike],
    alarms: Sequence[AlarmLike],
    record_files: Sequence[str | Path],
    verdict: str = "",
    notes: Sequence[str] = (),
) -> tuple[dict[str, object], dict[str, object], list[BadRow]]:
    """The report's data (JSON-ready), its per-step turn blocks (`turns-<step>`: rollout
    index -> turns and answer), and the bad rows met reading `record_files`: rollout logs, and
    files named `completions.jsonl` for the turns."""
    bad: list[BadRow] = []
    all_notes = list(notes)
    by_step = _read_records([Path(p) for p in record_files], bad, all_notes)
    groups, rollouts = _groups(by_step, all_notes)
    blocks: dict[str, dict[str, object]] = {}
    for rec in rollouts:
        if "turns" in rec or "ans" in rec:
            # the turns are most of a big run's bytes: parsed by the page only when opened
            block = blocks.setdefault(f"turns-{rec['s']}", {})
            block[str(rec.get("i"))] = {
                "turns": rec.pop("turns", []),
                "ans": rec.pop("ans", None),
                "issue": rec.pop("issue", None),
            }
            rec["T"] = 1
        else:
            rec.pop("issue", None)
    payload: dict[str, object] = {
        "verdict": verdict,
        "curves": {name: _curve(s) for name, s in curves.items() if len(s.steps)},
        "alarms": [
            {"name": a.name, "metric": a.metric, "step": a.step, "message": a.message}
            for a in alarms
        ],
        "groups": groups,
        "rollouts": rollouts,
        "notes": all_notes,
        "bad": [{"file": b.file, "line": b.line, "reason": b.reason} for b in bad[:200]],
        "bad_count": len(bad),
    }
    return payload, dict(blocks), bad


def write_training_report(
    path: str | Path,
    *,
    curves: Mapping[str, SeriesLike],
    alarms: Sequence[AlarmLike],
    record_files: Sequence[str | Path],
    verdict: str = "",
    title: str = "training run",
    notes: Sequence[str] = (),
    compare: ComparedRun | None = None,
) -> TrainingReportSummary:
    """Write the training run's HTML report to `path` (one file, opens from disk); with
    `compare`, a second run's curves are drawn over this one's and the two runs' group rewards
    per instance and step stand side by side.

    Raises `ReportInputError` for a record file that cannot be read, `ReportWriteError` when
    `path` cannot be written.
    """
    payload, blocks, bad = training_payload(
        curves=curves, alarms=alarms, record_files=record_files, verdict=verdict, notes=notes
    )
    if compare is not None:
        other, _, other_bad = training_payload(
            curves=compare.curves, alarms=(), record_files=compare.record_files
        )
        bad.extend(other_bad)
        groups = other["groups"]
        assert isinstance(groups, list)
        payload["compare"] = {
            "title": compare.title,
            "curves": other["curves"],
            "groups": [{"s": g["s"], "g": g["g"], "mean": g["mean"]} for g in groups],
        }
    html = render_page("training", title, payload, blocks)
    written = write_page(path, html)
    groups = payload["groups"]
    rollouts = payload["rollouts"]
    assert isinstance(groups, list)
    assert isinstance(rollouts, list)
    return TrainingReportSummary(
        path=written,
        bytes=len(html.encode("utf-8")),
        steps=len({g["s"] for g in groups}),
        groups=len(groups),
        rollouts=len(rollouts),
        bad_rows=tuple(bad),
    )
