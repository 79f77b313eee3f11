"""Answer parsing, tool schemas, prompts and the JSONL records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from codegrep_model import (
    Answer,
    Instance,
    PromptSet,
    RecordError,
    openai_tools,
    parse_answer,
    read_jsonl,
    render_top_levels,
)
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
    assert text.splitlines()[0] == "docs/  (1 files)"
    assert "src/  (3 files)" in text
    assert "  app/" in text
    assert "  cli.py" in text
    assert text.splitlines()[-1] == "setup.py"


def test_read_jsonl_names_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "i.jsonl"
    good = {"instance_id": "a", "repo": "o/n", "base_commit": "c", "problem_statement": "x"}
    p.write_text(json.dumps(good) + "\n{not json}\n" + json.dumps({"repo": "o/n"}) + "\n")
    errors: list[str] = []
    rows = list(read_jsonl(p, Instance, errors))
    assert [r.instance_id for r in rows] == ["a"]
    assert len(errors) == 2
    assert f"{p}:2:" in errors[0]
    assert f"{p}:3:" in errors[1]
    with pytest.raises(RecordError, match=":2:"):
        list(read_jsonl(p, Instance))
