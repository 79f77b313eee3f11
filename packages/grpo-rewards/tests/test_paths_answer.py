"""Path normalization and answer parsing: the two places where format drift turns into reward."""

from __future__ import annotations

import pytest
from grpo_rewards import LineRange, normalize_paths, parse_answer
from grpo_rewards._paths import normalize_path


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("./src/a.py", "src/a.py"),
        ("/src/a.py", "src/a.py"),
        ("/testbed/src/a.py", "src/a.py"),
        ("/workspace/django__django__3.0/django/db/models/base.py", "django/db/models/base.py"),
        ("/workspace/requests/requests/api.py", "requests/api.py"),
        ("/workspace/setup.py", "setup.py"),
        ("/tmp/testbed/4f1c2a/pkg/mod.py", "pkg/mod.py"),
        ("src\\pkg\\mod.py", "src/pkg/mod.py"),
        ("  src//pkg/./mod.py ", "src/pkg/mod.py"),
        ("src/pkg/../mod.py", "src/mod.py"),
        (".", ""),
        ("", ""),
    ],
)
def test_normalize_path(raw: str, expected: str) -> None:
    assert normalize_path(raw) == expected


def test_roots_are_stripped_longest_first() -> None:
    roots = ["/data/repos", "/data/repos/astropy__astropy-12907"]
    got = normalize_path("/data/repos/astropy__astropy-12907/astropy/io.py", roots=roots)
    assert got == "astropy/io.py"


def test_custom_mount_prefixes_replace_the_defaults() -> None:
    assert normalize_path("/mnt/code/a.py", mount_prefixes=[r"/mnt/code/"]) == "a.py"
    assert normalize_path("/testbed/a.py", mount_prefixes=[r"/mnt/code/"]) == "testbed/a.py"


def test_normalize_paths_collapses_duplicates_and_empties() -> None:
    got = normalize_paths(["a.py", "./a.py", "/testbed/a.py", "", "b.py"])
    assert got == frozenset({"a.py", "b.py"})


def test_parse_plain_json() -> None:
    parsed = parse_answer('{"files": ["a.py", "b.py"], "line_ranges": {"a.py": [[3, 9]]}}')
    assert parsed.ok
    assert parsed.answer is not None
    assert parsed.answer.files == ("a.py", "b.py")
    assert parsed.answer.line_ranges == {"a.py": (LineRange(3, 9),)}


def test_parse_fenced_json_after_think_and_prose() -> None:
    text = (
        '<think>maybe {"files": ["wrong.py"]}</think>\n'
        "Here is my answer:\n```json\n"
        '{"files": ["/workspace/x__y__1.0/pkg/core.py", "./pkg/core.py"]}\n```\nThanks.'
    )
    parsed = parse_answer(text)
    assert parsed.answer is not None
    assert parsed.answer.files == ("pkg/core.py",)


def test_a_fenced_snippet_without_files_does_not_hide_the_answer() -> None:
    text = 'The config:\n```json\n{"debug": true}\n```\nAnswer: {"files": ["settings.py"]}'
    parsed = parse_answer(text)
    assert parsed.answer is not None
    assert parsed.answer.files == ("settings.py",)


def test_reasoning_is_not_an_answer() -> None:
    # the chat template opened <think>: only the text after </think> is the answer
    opened = parse_answer('draft {"files": ["wrong.py"]}</think>\n{"files": ["right.py"]}')
    assert opened.answer is not None
    assert opened.answer.files == ("right.py",)
    gave_up = parse_answer('draft {"files": ["wrong.py"]}</think>\nI could not find it.')
    assert gave_up.error == "no JSON object in the answer"
    # cut off while reasoning: the draft inside the open block must not score
    cut = parse_answer('<think>maybe {"files": ["draft.py"]} but let me check')
    assert cut.answer is None
    assert cut.error == "unclosed <think> block: no answer after the reasoning"


def test_last_object_with_files_wins() -> None:
    text = 'Draft: {"files": ["a.py"]} final: {"files": ["b.py"]} {"note": 1}'
    parsed = parse_answer(text)
    assert parsed.answer is not None
    assert parsed.answer.files == ("b.py",)


def test_line_range_shapes() -> None:
    text = (
        '{"files": ["a.py"], "line_ranges": {"a.py": "10-20", "b.py": [5, 7], '
        '"c.py": [{"start": 1, "end": 2}, "30", [9, 3], "x"]}}'
    )
    parsed = parse_answer(text)
    assert parsed.answer is not None
    assert parsed.answer.line_ranges == {
        "a.py": (LineRange(10, 20),),
        "b.py": (LineRange(5, 7),),
        "c.py": (LineRange(1, 2), LineRange(30, 30)),
    }
    # [9, 3] is reversed and "x" is not a range: dropped and counted, the answer survives
    assert parsed.answer.dropped_line_ranges == 2


def test_file_entries_may_be_objects() -> None:
    parsed = parse_answer('{"files": [{"path": "a.py", "why": "defines X"}, {"file": "b.py"}]}')
    assert parsed.answer is not None
    assert parsed.answer.files == ("a.py", "b.py")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("I looked everywhere.", "no JSON object in the answer"),
        ('{"answer": ["a.py"]}', "no JSON object with a `files` key"),
        ('{"files": "a.py"}', "`files` is missing or not a list"),
        ('{"files": ["a.py", 3]}', "`files` holds a non-path entry: 3"),
        ('{"files": ["a.py"', "no JSON object in the answer"),
    ],
)
def test_malformed_answers_carry_a_reason(text: str, reason: str) -> None:
    parsed = parse_answer(text)
    assert not parsed.ok
    assert parsed.error == reason


def test_non_text_answer() -> None:
    # ms-swift may hand over token-id lists for frozen assistant turns
    assert parse_answer([1, 2, 3]).error == "the answer is not text (list)"


@pytest.mark.parametrize(
    "text",
    [
        '{"files": ' * 50_000,  # past Python's recursion limit
        '{"files": ["a.py"], "n": ' + "9" * 5000 + "}",  # past Python's 4,300-digit limit
    ],
    ids=["deep", "huge integer"],
)
def test_hostile_replies_are_no_answer_not_an_exception(text: str) -> None:
    parsed = parse_answer(text)
    assert parsed.answer is None
    assert parsed.error


def test_an_answer_before_a_hostile_tail_still_counts() -> None:
    parsed = parse_answer('{"files": ["a.py"]} then ' + "[" * 50_000 + '{"files": ' * 5_000)
    assert parsed.answer is not None
    assert parsed.answer.files == ("a.py",)
