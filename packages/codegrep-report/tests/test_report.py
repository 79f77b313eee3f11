"""The page, the reader and the training records, without a browser (tests/test_html_reports.py
opens the pages in Chromium)."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from codegrep_report import (
    ReportInputError,
    RetrievalCase,
    write_downstream_report,
    write_retrieval_report,
    write_training_report,
)
from codegrep_report._jsonl import BadRow, iter_json_objects
from codegrep_report._page import embed_json
from codegrep_report._training import parse_completion, training_payload

ROOT = Path(__file__).resolve().parents[3]
HEALTHY = ROOT / "apps" / "train-launcher" / "tests" / "fixtures" / "monitor" / "healthy"
HOSTILE = "</script><img src=x onerror=alert(1)><!--\u2028\u2029&"


@dataclass(frozen=True)
class Series:
    steps: tuple[int, ...]
    values: tuple[float, ...]


@dataclass(frozen=True)
class Alarm:
    name: str
    metric: str
    step: int
    message: str


def _blocks(html: str) -> dict[str, str]:
    return dict(re.findall(r'<script type="application/json" id="([^"]+)">(.*?)</script>', html))


def test_embedded_json_cannot_close_its_script_and_reads_back() -> None:
    data = {"s": HOSTILE, "n": [1.5, float("nan"), float("inf")], HOSTILE: (1, 2)}
    text = embed_json(data)
    for raw in ("<", ">", "&", "\u2028", "\u2029"):
        assert raw not in text
    assert json.loads(text) == {"s": HOSTILE, "n": [1.5, None, None], HOSTILE: [1, 2]}


def test_every_string_stays_inside_its_block(tmp_path: Path) -> None:
    case = RetrievalCase(
        system=HOSTILE,
        instance_id=HOSTILE,
        repo="r",
        issue=HOSTILE,
        files=(HOSTILE,),
        scores=(0.5,),
        gold=(),
        fbeta=0.0,
        precision=0.0,
        recall=0.0,
    )
    html = write_retrieval_report(tmp_path / "r.html", [case], title=HOSTILE).read_text()
    # exactly the page's own two script elements, and its data reads back whole
    assert html.count("<script") == 2
    assert html.count("</script>") == 2
    assert "<img" not in html
    data = json.loads(_blocks(html)["report-data"])
    assert data["cases"][0]["issue"] == HOSTILE
    assert data["title"] == HOSTILE


def test_csp_allows_only_the_inline_script_and_style_it_carries(tmp_path: Path) -> None:
    html = write_downstream_report(tmp_path / "d.html", {"configs": [], "cases": []}).read_text()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert csp is not None
    policy = csp.group(1)
    assert policy.startswith("default-src 'none';")
    script = re.search(r"<script>(.*?)</script>", html, re.S)
    style = re.search(r"<style>(.*?)</style>", html, re.S)
    assert script is not None
    assert style is not None

    def digest(text: str) -> str:
        return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()

    assert f"script-src 'sha256-{digest(script.group(1))}'" in policy
    assert f"style-src 'sha256-{digest(style.group(1))}'" in policy
    assert "http" not in html.split("<body>", 1)[1].split('id="report-data"')[0]


def test_the_reader_counts_hostile_lines_and_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(
        b'{"step": 1}\n'
        b"\xff\xfe\n"
        + b"[" * 100_000
        + b"\n"
        + b'{"x": 1e999}\n{"x": 1'
        + b"0" * 5000
        + b"}\n[1, 2]\nnot json\n\n"
        + b'{"step": 2, "loss": NaN}\n'
    )
    bad: list[BadRow] = []
    got = [obj for _, obj in iter_json_objects(path, bad)]
    # NaN is what ms-swift logs for a NaN loss: a value (the report draws it as a gap)
    assert got[0] == {"step": 1}
    assert got[1]["step"] == 2
    assert math.isnan(got[1]["loss"])  # type: ignore[arg-type]
    assert len(got) == 2
    assert [(b.line, b.reason.split(" (")[0]) for b in bad] == [
        (2, "not UTF-8"),
        (3, "not JSON"),
        (4, "not JSON"),  # 1e999: a number no log writes
        (5, "not JSON"),
        (6, "a JSON list, not an object"),
        (7, "not JSON"),
    ]
    assert "out of range" in bad[2].reason


def test_the_tail_reads_what_was_added_and_waits_for_an_unfinished_line(tmp_path: Path) -> None:
    from codegrep_report import JsonLinesTail

    path = tmp_path / "logging.jsonl"
    path.write_bytes(b'{"step": 1}\n{"step": 2')
    tail = JsonLinesTail(path)
    assert tail.poll() == [(1, {"step": 1})]
    assert tail.pending_tail
    with path.open("ab") as fh:
        fh.write(b'}\n[1]\n{"step": 3}\n')
    assert tail.poll() == [(2, {"step": 2}), (4, {"step": 3})]
    assert not tail.pending_tail
    assert [(b.line, b.reason) for b in tail.bad] == [(3, "a JSON list, not an object")]
    assert tail.poll() == []  # nothing new
    path.write_bytes(b'{"step": 9}\n')  # replaced by a shorter file: read from the start
    assert tail.poll() == [(1, {"step": 9})]
    assert tail.restarted
    assert tail.bad == []
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    with pytest.raises(ReportInputError, match="symbolic link"):
        JsonLinesTail(link).poll()


def test_the_reader_refuses_links_and_folders(tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl"
    real.write_text('{"step": 1}\n')
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    with pytest.raises(ReportInputError, match="symbolic link"):
        list(iter_json_objects(link, []))
    with pytest.raises(ReportInputError, match="not a regular file"):
        list(iter_json_objects(tmp_path, []))
    with pytest.raises(ReportInputError, match="cannot read"):
        list(iter_json_objects(tmp_path / "missing.jsonl", []))


def test_completions_as_messages_and_as_flat_text() -> None:
    messages = [
        {"role": "user", "content": "issue"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"function": {"name": "grep", "arguments": '{"pattern": "a"}'}},
                {"function": {"name": "glob", "arguments": {"pattern": "*.py"}}},
            ],
        },
        {"role": "tool", "content": "hit a"},
        {"role": "tool", "content": [{"type": "text", "text": "x.py"}]},
        {"role": "assistant", "content": '{"files": ["x.py"]}'},
    ]
    turns, answer = parse_completion(messages)
    assert turns == [
        {
            "calls": [
                {"name": "grep", "args": '{"pattern": "a"}', "result": "hit a"},
                {"name": "glob", "args": '{"pattern": "*.py"}', "result": "x.py"},
            ]
        },
        {"calls": []},
    ]
    assert answer == '{"files": ["x.py"]}'
    flat = (
        '<tool_call>{"name": "read", "arguments": {"path": "a.py"}}</tool_call>'
        "<|im_end|>\n<|im_start|>user\n<tool_response>1: x</tool_response><|im_end|>\n"
        '<|im_start|>assistant\n{"files": ["a.py"]}<|im_end|>'
    )
    turns, answer = parse_completion(flat)
    assert turns[0]["calls"] == [{"name": "read", "args": '{"path": "a.py"}', "result": "1: x"}]
    assert answer == '{"files": ["a.py"]}'


def test_training_report_from_the_monitor_fixture(tmp_path: Path) -> None:
    files = sorted(HEALTHY.glob("*/codegrep_rollouts.jsonl"))
    payload, blocks, bad = training_payload(
        curves={"reward": Series((1, 2), (0.1, 0.2))},
        alarms=[Alarm("kl_drift", "kl", 20, "KL drift")],
        record_files=files,
    )
    assert bad == []
    rollouts, groups = payload["rollouts"], payload["groups"]
    assert isinstance(rollouts, list)
    assert isinstance(groups, list)
    lines = sum(1 for f in files for line in f.read_text().splitlines() if line.strip())
    # the second launch resumes and logs some steps again: those replace the first's
    steps_v0 = {json.loads(x)["step"] for x in files[0].read_text().splitlines() if x.strip()}
    steps_v1 = {json.loads(x)["step"] for x in files[1].read_text().splitlines() if x.strip()}
    redone = steps_v0 & steps_v1
    assert len(rollouts) == lines - 4 * len(redone)
    assert {g["s"] for g in groups} == steps_v0 | steps_v1
    assert all(len(g["m"]) == 4 for g in groups)  # 4 rollouts a step, groups of 8 generations
    assert blocks == {}  # no completions logged: no turns


def test_zero_variance_and_the_turns_block(tmp_path: Path) -> None:
    log = tmp_path / "codegrep_rollouts.jsonl"
    (tmp_path / "args.json").write_text('{"num_generations": 2}')
    rows = [
        {"step": 5, "index": i, "reward": r, "num_turns": 1, "num_tool_calls": 1}
        for i, r in enumerate([0.0, 0.0, 0.5, 1.0])
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    comp = tmp_path / "completions.jsonl"
    table = {
        "step": ["5"] * 4,
        "completion": [
            f'<tool_call>{{"name": "grep", "arguments": {{"p": {i}}}}}</tool_call>'
            for i in range(4)
        ],
    }
    comp.write_text(json.dumps(table) + "\n")
    summary = write_training_report(
        tmp_path / "out.html", curves={}, alarms=[], record_files=[log, comp]
    )
    assert (summary.steps, summary.groups, summary.rollouts) == (1, 2, 4)
    blocks = _blocks(summary.path.read_text())
    data = json.loads(blocks["report-data"])
    assert [g["zv"] for g in data["groups"]] == [True, False]
    # the sample standard deviation, as ms-swift's reward_std: {0.5, 1.0} -> 0.3536, not 0.25
    assert [g["std"] for g in data["groups"]] == [0.0, pytest.approx(0.5**0.5 / 2)]
    turns = json.loads(blocks["turns-5"])
    assert turns["3"]["turns"][0]["calls"] == [{"name": "grep", "args": '{"p": 3}'}]
    assert all(r["T"] == 1 for r in data["rollouts"])


def test_a_multi_turn_rollout_as_ms_swift_logs_it(tmp_path: Path) -> None:
    """ms-swift logs a multi-turn rollout's last assistant message as `completion`; its
    earlier turns and the tool results (folded into user messages by the Hermes template) are
    inside the chat-templated `prompt`. The report reads both, and the issue from the prompt."""
    prompt = (
        "<|im_start|>system\nYou find files.<|im_end|>\n<|im_start|>user\nIssue:\n<issue>\n"
        "rewrite(abs) should call rewrite(Abs)\n</issue>\n<|im_end|>\n<|im_start|>assistant\n"
        '<tool_call>\n{"name": "glob", "arguments": {"pattern": "**/abs.py"}}\n</tool_call>'
        "<|im_end|>\n<|im_start|>user\n<tool_response>\nNo files match\n</tool_response>"
        "<|im_end|>\n<|im_start|>user\nAnswer now.<|im_end|>\n<|im_start|>assistant\n"
    )
    log = tmp_path / "codegrep_rollouts.jsonl"
    log.write_text(json.dumps({"step": 1, "index": 0, "reward": 0.0, "instance_id": "a__b-1",
                               "stop_cause": "answered", "rollout_tokens": 1286,
                               "completion_tokens": 57, "tool_results_cut": 0}) + "\n")  # fmt: skip
    comp = tmp_path / "completions.jsonl"
    table = {"step": ["1"], "prompt": [prompt], "completion": ['{"files": ["a.py"]}']}
    comp.write_text(json.dumps(table) + "\n")
    summary = write_training_report(
        tmp_path / "out.html", curves={}, alarms=[], record_files=[log, comp]
    )
    blocks = _blocks(summary.path.read_text())
    rollout = json.loads(blocks["report-data"])["rollouts"][0]
    assert (rollout["stop"], rollout["tok"], rollout["ctok"], rollout["cut"]) == (
        "answered",
        1286,
        57,
        0,
    )
    turn = json.loads(blocks["turns-1"])["0"]
    assert turn["turns"][0]["calls"] == [
        {"name": "glob", "args": '{"pattern": "**/abs.py"}', "result": "No files match"}
    ]
    assert turn["ans"] == '{"files": ["a.py"]}'
    assert turn["issue"] == "rewrite(abs) should call rewrite(Abs)"
    # the same rollout as messages: tool results folded into a user message are attached
    messages = [
        {"role": "system", "content": "You find files."},
        {"role": "user", "content": "<tool_response>not a result: the issue</tool_response>"},
        {
            "role": "assistant",
            "content": '<tool_call>{"name": "grep", "arguments": {}}</tool_call>',
        },
        {"role": "user", "content": "<tool_response>\nhit\n</tool_response>\nReminder"},
        {"role": "assistant", "content": '{"files": []}'},
    ]
    turns, answer = parse_completion(messages)
    assert turns[0]["calls"] == [{"name": "grep", "args": "{}", "result": "hit"}]
    assert answer == '{"files": []}'


def test_the_last_steps_table_logged_twice_is_read_once(tmp_path: Path) -> None:
    """ms-swift 4.6 writes the final step's completions table again when training ends."""
    log = tmp_path / "codegrep_rollouts.jsonl"
    log.write_text(
        "".join(json.dumps({"step": 6, "index": i, "reward": 0.0}) + "\n" for i in range(2))
    )
    comp = tmp_path / "completions.jsonl"
    table = json.dumps({"step": ["6", "6"], "completion": ["a", "b"]}) + "\n"
    comp.write_text(table + table)
    payload, _, bad = training_payload(curves={}, alarms=[], record_files=[log, comp])
    assert bad == []
    assert not any("completions for 2 logged rollouts" in n for n in payload["notes"])
    assert any("the table before it again" in n for n in payload["notes"])
