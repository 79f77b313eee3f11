"""Answer parsing, tool schemas, prompts and the JSONL records."""

from __future__ import annotations

import json
from pathlib import Path

import grpo_rewards as rewards
import pytest
from codegrep_model import Answer, Episode, Instance
from codegrep_model.answer import parse_answer, read_answer
from codegrep_model.prompts import PromptSet, render_top_levels
from codegrep_model.tools import openai_tools
from worktree_sandbox import TOOL_ARGS


@pytest.mark.parametrize(
    ("text", "files"),
    [
        ('{"files": ["a.py", "b/c.py"]}', ("a.py", "b/c.py")),
        ('Here you go:\n```json\n{"files": ["./a.py"]}\n```\nDone.', ("a.py",)),
        ('<think>maybe {"files": ["x.py"]}</think>{"files": ["a.py"]}', ("a.py",)),
        ("{'files': ['a.py',], }", ("a.py",)),  # Python literal syntax
        ('["a.py", "b.py"]', ("a.py", "b.py")),  # a bare list
        ('{"locations": ["a.py:10-20", "b.py:Cls.meth"]}', ("a.py", "b.py")),
        ('<answer>{"files": ["a.py", "a.py"]}</answer>', ("a.py",)),
        ('{"files": []}', ()),
        ("```json\n[]\n```", ()),  # an empty list presented as the answer
        ('The files are ["src/a.py", "b.py"].', ("src/a.py", "b.py")),  # paths in prose
    ],
)
def test_parse_answer_tolerates_packaging(text: str, files: tuple[str, ...]) -> None:
    answer = parse_answer(text)
    assert answer is not None
    assert answer.files == files
    assert answer.scores is None  # models' answers carry none


def test_scores_are_aligned_with_the_files_or_refused() -> None:
    answer = Answer.model_validate(
        {"files": ["a.py", "./a.py", "b.py:3-4"], "scores": [0.9, 0.8, 0.5]}
    )
    assert answer.files == ("a.py", "b.py")
    assert answer.scores == (0.9, 0.5)  # the duplicate's score went with it
    # scores written for the files once de-duplicated fit them too
    assert Answer(files=("a.py", "a.py", "b.py"), scores=(0.9, 0.5)).scores == (0.9, 0.5)
    assert Answer.model_validate({"files": "a.py", "scores": [1.0]}).scores == (1.0,)
    assert Answer(files=()).scores is None
    for files, scores in [
        (["a.py", "b.py"], [0.9]),
        (["a.py"], [0.9, 0.8]),
        (["a.py", "a.py"], [0.9, 0.8, 0.7]),
        ([], [0.5]),
    ]:
        with pytest.raises(ValueError, match="scores must be aligned with files"):
            Answer.model_validate({"files": files, "scores": scores})
    for bad in (1.5, -0.1, float("nan"), float("inf"), "high"):
        with pytest.raises(ValueError, match="scores"):
            Answer.model_validate({"files": ["a.py"], "scores": [bad]})


@pytest.mark.parametrize(
    ("text", "files", "scores"),
    [
        ('{"files": ["a.py", "b.py"], "scores": [0.8, 0.4]}', ("a.py", "b.py"), (0.8, 0.4)),
        ("```json\n{'files': ['./a.py'], 'scores': [0.5]}\n```", ("a.py",), (0.5,)),
        ('{"locations": ["a.py:1-2", "a.py"], "scores": [0.7, 0.6]}', ("a.py",), (0.7,)),
        # scores that do not fit lose only themselves: the files stand as parsed without them
        ('{"files": ["a.py", "b.py"], "scores": [0.8]}', ("a.py", "b.py"), None),
        ('{"files": ["a.py"], "scores": [80]}', ("a.py",), None),
        ('{"files": ["a.py"], "scores": {"a.py": 0.8}}', ("a.py",), None),
        ('{"files": ["a.py"], "scores": null}', ("a.py",), None),
    ],
)
def test_parse_answer_carries_scores_that_fit(
    text: str, files: tuple[str, ...], scores: tuple[float, ...] | None
) -> None:
    answer = parse_answer(text)
    assert answer is not None
    assert (answer.files, answer.scores) == (files, scores)


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "I could not find anything.",
        '{"file": "a.py"}',
        # lists in prose are code under discussion, not answers (an empty one ended rollouts)
        "Let me check how `foo([])` behaves first.",
        'It is called as `f(["a", "b"])` in the example.',
    ],
)
def test_parse_answer_none_without_files(text: str | None) -> None:
    assert parse_answer(text) is None


def test_line_ranges_and_reasons() -> None:
    answer = parse_answer(
        '{"files": ["a.py"], "line_ranges": {"a.py": ["10-20", [30, 25]], "b.py": [5, 9]},'
        ' "reasons": {"a.py": "defines f"}}'
    )
    assert answer is not None
    # a reversed range is dropped, exactly as grpo-rewards' parser (what the reward sees) drops it
    assert answer.line_ranges["a.py"] == ((10, 20),)
    assert answer.line_ranges["b.py"] == ((5, 9),)
    assert answer.reasons == {"a.py": "defines f"}
    assert Answer.model_validate_json(answer.model_dump_json()) == answer


def test_openai_tools_follow_the_sandbox_models() -> None:
    tools = openai_tools()
    assert [t["function"]["name"] for t in tools] == list(TOOL_ARGS)
    grep = tools[0]["function"]["parameters"]
    assert grep["required"] == ["pattern"]
    assert grep["properties"]["path"]["type"] == "string"  # Optional[str] simplified
    assert grep["properties"]["pattern"]["description"] == (
        TOOL_ARGS["grep"].model_fields["pattern"].description
    )
    assert "title" not in json.dumps(tools)
    assert grep["additionalProperties"] is False


def test_prompts_render_budget_and_plurals(tmp_path: Path) -> None:
    ps = PromptSet.load()
    system = ps.system(max_calls=8, exploration_turns=3)
    assert "up to 8 calls" in system
    assert '{"files"' in system  # literal braces survive formatting
    assert ps.reminder(turns_left=2).startswith("2 turns with tools left")
    assert ps.reminder(turns_left=1).startswith("1 turn with tools left")
    assert ps.reminder(turns_left=0) == ps.answer()
    user = ps.user(repo="o/n", issue="  boom  ", top_levels="src/")
    assert "<issue>\nboom\n</issue>" in user
    # a directory of variants replaces the shipped templates
    for name in ("system", "user", "reminder", "answer", "rescue", "no_calls", "too_many_calls"):
        (tmp_path / f"{name}.md").write_text(f"{name} {{max_calls}}" if name == "system" else name)
    assert PromptSet.load(tmp_path).system(max_calls=5, exploration_turns=1) == "system 5"


def test_top_levels_listing() -> None:
    paths = ["setup.py", "src/app/__init__.py", "src/app/core.py", "src/cli.py", "docs/a.md"]
    text = render_top_levels(paths)
    assert text.splitlines()[0] == "setup.py"  # root files first
    assert text.splitlines()[1] == "docs/  (1 files)"
    assert "src/  (3 files)" in text
    assert "  app/" in text
    assert "  cli.py" in text


def test_an_episode_never_holds_the_gold_answer() -> None:
    """The instance a policy sees and the conversation it holds carry the task, not its answer."""
    inst = Instance(
        instance_id="o__n-1",
        repo="o/n",
        base_commit="c0ffee",
        problem_statement="the widget breaks",
        patch="diff --git a/SECRET_PATCH.py b/SECRET_PATCH.py\n",
        test_patch="diff --git a/tests/SECRET_TEST.py b/tests/SECRET_TEST.py\n",
        FAIL_TO_PASS=["tests/SECRET_TEST.py::test_it"],
        gold_files=["SECRET_GOLD.py"],
    )
    episode = Episode.start(inst, ["a.py"], policy="scripted")
    seen = episode.instance
    assert (seen.instance_id, seen.repo, seen.base_commit) == ("o__n-1", "o/n", "c0ffee")
    assert seen.problem_statement == "the widget breaks"
    assert (seen.patch, seen.test_patch, seen.FAIL_TO_PASS, seen.gold_files) == ("", "", (), ())
    held = json.dumps([m.model_dump(mode="json") for m in episode.messages])
    held += episode.instance.model_dump_json()
    assert "SECRET" not in held
    assert "the widget breaks" in held


def test_read_answer_strict_is_the_rewards_parse_and_lenient_is_parse_answer() -> None:
    fenced = 'Done.\n```json\n{"files": ["/testbed/a.py"], "line_ranges": {"a.py": [[3, 9]]}}\n```'
    answer, parsed = read_answer(fenced, strict=True)
    assert parsed == rewards.parse_answer(fenced)
    assert answer is not None
    assert answer.files == ("a.py",)
    assert answer.line_ranges == {"a.py": ((3, 9),)}
    assert read_answer(fenced, strict=False) == (parse_answer(fenced), None)

    # what only the engine's tolerance accepts: no answer in training, the files in inference
    quoted = "{'files': ['a.py']}"
    answer, parsed = read_answer(quoted, strict=True)
    assert answer is None
    assert parsed is not None
    assert parsed.error is not None
    lenient, none = read_answer(quoted, strict=False)
    assert lenient is not None
    assert lenient.files == ("a.py",)
    assert none is None
