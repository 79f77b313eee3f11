"""One meaning per shared record and rule, across every package that uses it.

Each test here is a disagreement that existed between packages before `codegrep-records` owned
the records and rules: the same patch gave different gold files, the same path different
repository paths, the same answer different files depending on its quotes, and the same
instances file read in one package failed in another.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import catm
import codegrep_model
import codegrep_records as records
import grpo_rewards
import pytest
from catm._paths import to_repo_relative
from catm.cli import app as catm_app
from codegrep_model import answer_path
from codegrep_model.answer import parse_answer
from codegrep_model.cli import app as model_app
from codegrep_records import files_from_patch
from typer.testing import CliRunner

FIXTURES = Path(__file__).parent / "fixtures" / "written-by-0.1"
runner = CliRunner()


def _patch() -> str:
    row = json.loads((FIXTURES / "catm-input.instances.jsonl").read_text())
    return str(row["patch"])


def test_the_fixture_patch_renames_adds_and_changes_a_test() -> None:
    kinds = {c.path: c.kind for c in records.parse_patch(_patch())}
    assert kinds == {
        "p/old.py": records.ChangeKind.RENAMED,
        "p/added.py": records.ChangeKind.ADDED,
        "tests/test_p.py": records.ChangeKind.MODIFIED,
    }


def test_catm_and_swe_eval_take_the_same_gold_from_a_patch(tmp_path: Path) -> None:
    """A rename counts under its old name (the file at the base commit); an added file and a
    test file do not count: catm's labels used to hold all three under the new names."""
    labels = tmp_path / "labels.jsonl"
    result = runner.invoke(
        catm_app,
        [
            "mine",
            str(FIXTURES / "catm-input.trajectories.jsonl"),
            "-i",
            str(FIXTURES / "catm-input.instances.jsonl"),
            "-o",
            str(labels),
        ],
    )
    assert result.exit_code == 0, result.output
    [label] = list(catm.read_labels(labels))
    assert files_from_patch(_patch()) == ("p/old.py",)
    assert label.patch_files == ["p/old.py"]
    assert not {"p/new.py", "p/added.py", "tests/test_p.py"} & set(label.gold)
    # The agent read p/old.py: it is the patch's file, and the label says so.
    [old] = [m for m in label.mined if m.path == "p/old.py"]
    assert old.in_patch
    # swe-eval reads the label file catm wrote with the same meaning.
    loaded = records.load_labels(labels)
    assert loaded.records[0].files == frozenset(label.gold)


@pytest.mark.parametrize(
    "raw",
    [
        "/repo/src/x.py",
        "/app/src/x.py",
        "/testbed/src/x.py",
        "/workspace/o__p__1.0/src/x.py",
        "/tmp/testbed/abc123/src/x.py",
    ],
)
def test_every_package_maps_a_mounted_path_to_the_same_repository_path(raw: str) -> None:
    assert records.normalize_path(raw) == "src/x.py"
    assert grpo_rewards.normalize_paths([raw]) == frozenset({"src/x.py"})
    assert answer_path(raw) == "src/x.py"
    assert to_repo_relative(raw, "") == "src/x.py"


@pytest.mark.parametrize(
    "text",
    [
        '{"files": ["/testbed/x.py"]}',
        "{'files': ['/testbed/x.py']}",
        '```json\n{"files": ["./x.py"]}\n```',
    ],
)
def test_an_answer_means_the_same_whatever_its_quotes(text: str) -> None:
    answer = parse_answer(text)
    assert answer is not None
    assert answer.files == ("x.py",)


def test_each_shared_record_has_one_definition() -> None:
    assert codegrep_model.Instance is records.Instance
    assert codegrep_model.Prediction is records.Prediction


def test_a_prediction_keeps_fallback_through_swe_eval(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    row = {"instance_id": "a__b-1", "files": ["x.py"], "retriever": "lexical", "fallback": True}
    path.write_text(json.dumps(row) + "\n")
    [pred] = records.load_predictions(path).records
    assert pred.fallback is True


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".json", ".parquet"])
def test_codegrep_model_reads_every_instance_format_swe_eval_reads(
    tmp_path: Path, suffix: str
) -> None:
    rows = [
        {
            "instance_id": f"o__p-{i}",
            "repo": "o/p",
            "base_commit": "0" * 40,
            "problem_statement": "the parser mis-handles tuples",
            "patch": "diff --git a/p/a.py b/p/a.py\n",
        }
        for i in (1, 2)
    ]
    path = tmp_path / f"instances{suffix}"
    if suffix == ".jsonl.gz":
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)
    elif suffix == ".json":
        path.write_text(json.dumps(rows))
    else:
        pq = pytest.importorskip("pyarrow.parquet")
        pa = pytest.importorskip("pyarrow")
        pq.write_table(pa.Table.from_pylist(rows), path)
    assert len(records.load_instances(path).records) == 2
    out = tmp_path / "pred.jsonl"
    result = runner.invoke(
        model_app,
        ["batch", str(path), "-o", str(out), "--cache", str(tmp_path / "c"), "--dry-run"],
    )
    assert result.exit_code == 0, result.output
    assert "2 instances" in result.output


def test_the_sandbox_prepares_from_a_gzipped_instances_file(tmp_path: Path) -> None:
    from worktree_sandbox.cli import app as sandbox_app

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    path = tmp_path / "i.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"instance_id": "o__p-1", "repo": "o/p", "base_commit": "0" * 40}))
    result = runner.invoke(
        sandbox_app,
        [
            "prepare",
            str(path),
            "--cache",
            str(tmp_path / "c"),
            "--source",
            str(tmp_path / "nowhere" / "{owner}+{name}"),
        ],
    )
    # No source repository exists, so the instance fails to prepare; what matters is that the
    # row was read (it is named as a failure, not skipped as unreadable).
    assert "o__p-1" in result.output
    assert "row(s) skipped" not in result.output or "0 row(s) skipped" in result.output


# A reply's formats, read the same by the engine that acts on it, the reward that scores it and
# the report that shows it (grpo-rewards' `_formats` is the home; codegrep-report, which has no
# dependency, mirrors the tool-call rule and is held to it here).
REPLIES = [
    '<tool_call>{"name": "grep", "arguments": {"pattern": "a"}}</tool_call>',
    '<tool_call>\n{"name": "glob", "arguments": {"pattern": "*.py"}}\n</tool_call> and text',
    'two <tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": "b", '
    '"arguments": {}}</tool_call>',
    'cut off <tool_call>{"name": "read", "arguments": {"path": "x.py"',  # unclosed at the end
    "<tool_call>not json</tool_call>",
    '<tool_call>{"name": "grep", "parameters": {"pattern": "b"}}</tool_call>',
    '<tool_call>{"name": "read"}</tool_call>',  # no arguments: {}
    '<tool_call>{"name": "read", "arguments": "{\\"path\\": \\"x.py\\"}"}</tool_call>',
    '<tool_call>["grep", {"pattern": "a"}]</tool_call>',  # JSON, not an object
    '<tool_call>{"name": 3, "arguments": {}}</tool_call>',
    # OpenAI's shape is for structured tool_calls; inside a Hermes block it names no tool (the
    # CodeScout reward counted it as a call the engine never ran)
    '<tool_call>{"function": {"name": "localization_finish", "arguments": {}}}</tool_call>',
    "no call at all",
    # JSON the toolkit refuses as hostile is no call for any of them (the reward read these with
    # json.loads and counted a call the engine answered as malformed)
    '<tool_call>{"name": "grep", "arguments": {"pattern": "a", "max": NaN}}</tool_call>',
    '<tool_call>{"name": "localization_finish", "arguments": {"n": 1e999}}</tool_call>',
    '<tool_call>{"name": "grep", "arguments": {"max": ' + "9" * 65 + "}}</tool_call>",
    '<tool_call>{"name": "grep", "arguments": {"pattern": "a", "x": '
    + "[" * 201
    + "]" * 201
    + "}}</tool_call>",
    '<tool_call>{"name": "grep", "arguments": {"pattern": "a", "x": '
    + "[" * 190
    + "]" * 190
    + "}}</tool_call>",  # deep, within the limit: a call
]

HOSTILE_JSON = [
    '{"a": 1}',
    '{"a": NaN}',
    '{"a": Infinity}',
    '{"a": -Infinity}',
    '{"a": 1e999}',
    '{"a": -1e999}',
    '{"a": 1.8e308}',
    '{"a": 1e308}',
    '{"a": -1e-400}',
    '{"a": ' + "1" * 64 + "}",
    '{"a": ' + "1" * 65 + "}",
    '{"a": 0.' + "5" * 70 + "}",
    "[" * 200 + "]" * 200,
    "[" * 201 + "]" * 201,
    "[" * 5000,
    '{"s": "' + "[" * 300 + '"}',  # brackets inside a string are not nesting
    '"just a string"',
    "not json",
    "",
    *(
        LONE_SURROGATES := [
            # JSON's escape decodes to a lone surrogate, which no record can carry
            '{"s": "\\udce9"}',
            '{"\\ud800": 1}',
            '["ok", "r\\udce9sum\\udce9.py"]',
            '{"s": "\\ude00\\ud83d"}',  # low before high: two lone ones
            '{"s": "\udce9"}',  # the surrogate itself in the text (bytes read with surrogateescape)
        ]
    ),
    '{"s": "\\ud83d\\ude00"}',  # a pair: one character, U+1F600
    '{"s": "\\\\udce9"}',  # an escaped backslash, then the letters: text
]


def _read(loads: object, text: str) -> tuple[str, object]:
    try:
        return "ok", loads(text)  # type: ignore[operator]
    except ValueError:
        return "refused", None


@pytest.mark.parametrize("text", HOSTILE_JSON, ids=lambda t: t[:24])
def test_one_hostile_json_rule_for_the_engine_the_reward_and_the_report(text: str) -> None:
    """codegrep-records' `parse_json` (the engine's), grpo-rewards' copy (the reward's) and the
    report's copy accept and refuse the same texts, with the same values."""
    from codegrep_records.io import parse_json
    from codegrep_report._jsonl import loads_strict as report_loads

    engine = _read(parse_json, text)
    assert _read(grpo_rewards.loads_strict, text) == engine
    assert _read(report_loads, text) == engine


@pytest.mark.parametrize("text", LONE_SURROGATES, ids=ascii)
def test_a_lone_surrogate_is_refused_by_the_engine_the_reward_and_the_report(text: str) -> None:
    """A string JSON decodes to a lone surrogate is no Unicode text: a model's call or answer
    holding one made the rollout record unwritable. All three readers refuse it."""
    from codegrep_records.io import parse_json
    from codegrep_report._jsonl import loads_strict as report_loads

    for loads in (parse_json, grpo_rewards.loads_strict, report_loads):
        with pytest.raises(ValueError, match="lone surrogate"):
            loads(text)


def test_a_surrogate_pair_and_an_escaped_backslash_are_text() -> None:
    from codegrep_records.io import parse_json

    assert parse_json('{"s": "\\ud83d\\ude00"}') == {"s": "\U0001f600"}
    assert parse_json('{"s": "\\\\udce9"}') == {"s": "\\udce9"}


@pytest.mark.parametrize("reply", REPLIES)
def test_one_tool_call_rule_for_engine_reward_and_report(reply: str) -> None:
    from codegrep_model._hermes import split_hermes
    from codegrep_report._training import parse_completion
    from grpo_rewards._codescout import _calls_in_text
    from grpo_rewards._formats import tool_call_bodies

    bodies = tool_call_bodies(reply)
    _, calls = split_hermes(reply)
    scored = _calls_in_text(reply)
    assert len(calls) == len(scored) == len(bodies)
    for call, (name, arguments) in zip(calls, scored, strict=True):
        # the engine answers a call without a name with feedback; the reward sees no name
        assert (call.name or None) == name
        if name is not None:
            assert json.loads(call.arguments) == arguments
    turns, _ = parse_completion([{"role": "assistant", "content": reply}])
    shown = turns[0]["calls"]
    assert len(shown) == len(bodies)
    # the report shows the engine's calls: the same names ("?" for none), the same arguments
    assert [c["name"] for c in shown] == [c.name or "?" for c in calls]
    for c, engine in zip(shown, calls, strict=True):
        if engine.name:
            assert json.loads(c["args"]) == json.loads(engine.arguments)


@pytest.mark.parametrize(
    "text",
    [
        '{"files": ["a.py", "r\\udce9sum.py"]}',
        '{"files": ["r\\udce9.py", "r\\udcea.py", "b.py"]}',  # one path once replaced
        '{"files": ["a.py"], "line_ranges": {"r\\ud800.py": [[1, 2]]}}',
        '{"files": ["\\ude00\\ud83d.py"]}',  # low before high: two lone ones
        '{"files": ["\\ud83d\\ude00.py"]}',  # a pair: one character
        '{"files": ["r\udce9.py"]}',  # the surrogate itself in the text
    ],
    ids=ascii,
)
def test_a_lone_surrogate_in_an_answer_means_the_same_to_the_engine_and_the_reward(
    text: str,
) -> None:
    """JSON's `"\\udce9"` in an answer's path: the engine records U+FFFD (`record_text`), and
    the reward reads the same files, so the training reward scores what the engine recorded."""
    from codegrep_model.answer import read_answer
    from grpo_rewards import record_text

    reward = grpo_rewards.parse_answer(text).answer
    assert reward is not None
    engine, parsed = read_answer(text, strict=True)
    assert engine is not None
    assert parsed is not None
    assert engine.files == reward.files == parsed.answer.files  # type: ignore[union-attr]
    assert set(engine.line_ranges) == set(reward.line_ranges)
    assert parse_answer(text).files == reward.files  # type: ignore[union-attr]
    for f in reward.files:
        assert record_text(f) == f


def test_an_unclosed_think_holds_no_answer_for_the_engine_or_the_reward() -> None:
    open_thought = '<think>maybe {"files": ["a.py"]} is it'
    assert grpo_rewards.parse_answer(open_thought).answer is None
    assert parse_answer(open_thought) is None  # the engine found a.py inside the thought
    closed = '<THINK>not {"files": ["b.py"]}</THINK>{"files": ["a.py"]}'
    assert grpo_rewards.parse_answer(closed).answer.files == ("a.py",)
    assert parse_answer(closed).files == ("a.py",)


# Names two members both export as two objects: none. `MissingExtraError` was the last (each
# package's own class under its error base); catm and swe-eval now keep theirs in their `errors`
# module, off the package's face. The list only shrinks.
TWO_THINGS_UNDER_ONE_NAME: set[str] = set()
_PACKAGES = (
    "catm",
    "codegrep",
    "codegrep_cli",
    "codegrep_gate",
    "codegrep_model",
    "codegrep_records",
    "codegrep_report",
    "grpo_rewards",
    "swe_eval",
    "train_launcher",
    "worktree_sandbox",
)


def test_a_name_two_members_export_is_one_object() -> None:
    """`from a import X` and `from b import X` give the same thing, or the names differ."""
    import importlib

    found: dict[str, dict[str, object]] = {}
    for module in _PACKAGES:
        package = importlib.import_module(module)
        for name in package.__all__:
            if name != "__version__":
                found.setdefault(name, {})[module] = getattr(package, name)
    two_things = {
        name
        for name, where in found.items()
        if len(where) > 1 and len({id(value) for value in where.values()}) > 1
    }
    assert two_things == TWO_THINGS_UNDER_ONE_NAME


@pytest.mark.parametrize(
    "text",
    [
        "plain",
        "r\udce9sum\udce9.py",
        "\ud83d\ude00 pair",
        "\ude00\ud83d reversed",
        "\ud83d",
        "a\udc80b\udfffc",
        "",
    ],
)
def test_one_rule_makes_model_text_writable_for_the_engine_and_the_reward(text: str) -> None:
    """The engine's `record_text` is grpo-rewards' (codegrep-model depends on it): the same
    text becomes the same writable text."""
    from codegrep_model import episode
    from grpo_rewards import record_text as reward_rule

    engine_rule = episode.record_text
    assert engine_rule is reward_rule

    out = engine_rule(text)
    assert out == reward_rule(text)
    out.encode("utf-8")  # writable: no lone surrogate is left
