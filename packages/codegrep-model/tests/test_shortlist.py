"""The answer turn as a task: LexicalPolicy's shortlist, its rendering, the rows that train it
and the policy that answers from it, on a small real git repository made here."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from codegrep_model import Instance, run_rollout
from codegrep_model._grpo_rows import GrpoRow, grpo_rows
from codegrep_model._shortlist_rows import entries_of_row, shortlist_rows
from codegrep_model.dataset_cli import dataset_app
from codegrep_model.policies.lexical import LexicalPolicy
from codegrep_model.policies.local import render_chatml
from codegrep_model.policies.shortlist import (
    ShortlistConfig,
    ShortlistEntry,
    ShortlistPolicy,
    render_candidates,
    shortlist_messages,
    shuffled,
)
from codegrep_model.policies.spec import parse_policy_spec
from codegrep_model.records import Usage
from typer.testing import CliRunner
from worktree_sandbox import BareRepoCache, DirectoryTree

GEO = {
    "README.md": "# geo\nA geometry library.\n",
    "geo/__init__.py": "from geo.shapes import Polygon\nfrom geo.io import load_wkt\n",
    "geo/shapes.py": (
        "import math\n\n"
        "class Polygon:\n"
        "    def __init__(self, points):\n"
        "        self.points = list(points)\n\n"
        "    def area(self):\n"
        "        return 0.0\n"
    ),
    "geo/io.py": (
        "from geo.shapes import Polygon\n\ndef load_wkt(text):\n    return Polygon([])\n"
    ),
    "tests/test_shapes.py": "from geo.shapes import Polygon\n\ndef test_area():\n    pass\n",
}
ISSUE = (
    "`Polygon.area` is wrong for unclosed rings\n\n"
    "```python\nfrom geo import Polygon\nPolygon([(0, 0), (2, 0), (2, 2)]).area()\n```\n"
    "returns 0.0 but the ring is not closed."
)

MakeRepo = Callable[[Path, dict[str, str]], tuple[Path, str]]


@pytest.fixture(scope="module")
def geo(tmp_path_factory: pytest.TempPathFactory, repo_factory: MakeRepo) -> tuple[Path, str]:
    return repo_factory(tmp_path_factory.mktemp("sl") / "geo", GEO)


def _instance(commit: str = "HEAD") -> Instance:
    patch = "diff --git a/geo/shapes.py b/geo/shapes.py\n--- a/geo/shapes.py\n+++ b/geo/shapes.py\n"
    return Instance(
        instance_id="acme__geo-1",
        repo="acme/geo",
        base_commit=commit,
        problem_statement=ISSUE,
        patch=patch + "@@ -1 +1 @@\n-import math\n+import math  # x\n",
    )


class FakeModel:
    """A TextModel that records its prompts and answers with a fixed reply."""

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.prompts: list[str] = []

    @property
    def name(self) -> str:
        return "local:fake"

    async def complete(self, prompt: str) -> tuple[str, Usage]:
        self.prompts.append(prompt)
        return self.reply, Usage(prompt_tokens=len(prompt), completion_tokens=3)


def test_rendering_numbers_the_files_with_reasons_and_lines() -> None:
    entries = [
        ShortlistEntry("a/x.py", "defines `X`", ((3, "class X:"),)),
        ShortlistEntry("a/y.py", "mentions 50% of the issue's names"),
    ]
    assert render_candidates(entries) == (
        "1. a/x.py\n   why: defines `X`\n   3: class X:\n"
        "2. a/y.py\n   why: mentions 50% of the issue's names"
    )
    assert render_candidates([]) == "(the search found no candidate)"
    system, user = shortlist_messages("acme/a", "x" * 50, entries, ShortlistConfig(issue_chars=10))
    assert system["role"] == "system"
    assert '{"files": ["path/to/file.py"]}' in system["content"]
    assert "xxxxxxxxxx\n[... the issue is cut here]" in user["content"]
    assert user["content"].startswith("Repository: acme/a")
    assert "1. a/x.py" in user["content"]


def test_shuffled_is_a_fixed_permutation_per_seed() -> None:
    entries = [ShortlistEntry(f"f{i}.py", "r") for i in range(5)]
    a, b = shuffled(entries, "id-1"), shuffled(entries, "id-1")
    assert a == b
    assert sorted(e.path for e in a) == [e.path for e in entries]
    assert any(shuffled(entries, f"id-{i}") != entries for i in range(5))


def test_config_refuses_nonpositive_sizes() -> None:
    with pytest.raises(ValueError, match="size"):
        ShortlistConfig(size=0)


def test_lexical_shortlist_lists_its_ranked_candidates_with_evidence(
    geo: tuple[Path, str],
) -> None:
    captured: dict[str, list[ShortlistEntry]] = {}

    class Capture(LexicalPolicy):
        async def reply(self, request):  # type: ignore[no-untyped-def]
            reply = await super().reply(request)
            if not reply.tool_calls:
                captured["e"] = await self.shortlist(request, ShortlistConfig(size=3))
            return reply

    async def go() -> None:
        async with DirectoryTree(geo[0]) as tree:
            await run_rollout(Capture(), tree, _instance())

    asyncio.run(go())
    entries = captured["e"]
    assert 1 <= len(entries) <= 3
    assert entries[0].path == "geo/shapes.py"
    assert "defines `Polygon`" in entries[0].reason
    assert any("class Polygon" in text for _, text in entries[0].lines)
    assert all(len(e.lines) <= 2 for e in entries) or ShortlistConfig().lines_per_file == 3


def test_policy_asks_the_model_with_the_rows_rendering_and_takes_its_answer(
    geo: tuple[Path, str],
) -> None:
    model = FakeModel('{"files": ["geo/io.py"]}')
    policy = ShortlistPolicy(model, LexicalPolicy())
    assert policy.name == "shortlist:fake"

    async def go():  # type: ignore[no-untyped-def]
        async with DirectoryTree(geo[0]) as tree:
            return await run_rollout(policy, tree, _instance())

    rec = asyncio.run(go())
    assert rec.answer is not None
    assert rec.answer.files == ("geo/io.py",)
    (prompt,) = model.prompts
    assert prompt.startswith("<|im_start|>system\nYou are CodeGrep")
    assert "# Tools" not in prompt  # no tools block: the rows have none
    assert "Candidate files:\n1. geo/shapes.py" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")


def test_rows_hold_the_prompt_the_policy_gives(geo: tuple[Path, str], tmp_path: Path) -> None:
    path, commit = geo
    cache = BareRepoCache(tmp_path / "cache", source=str(path.parent / "{name}"))
    inst = _instance(commit)

    async def go():  # type: ignore[no-untyped-def]
        made = await grpo_rows([inst], cache, val_fraction=0.0)
        return await shortlist_rows(made, cache, config=ShortlistConfig(size=3))

    data = asyncio.run(go())
    (row,) = data.train
    assert row.tools == "[]"
    assert row.gold_files == ("geo/shapes.py",)
    assert [m.role for m in row.messages] == ["system", "user"]
    entries = entries_of_row(row)
    assert entries[0].path == "geo/shapes.py"
    system, user = shortlist_messages(row.repo, row.problem_statement, entries, ShortlistConfig())
    assert (row.messages[0].content, row.messages[1].content) == (
        system["content"],
        user["content"],
    )
    # what the policy renders for a model is the row's messages under ms-swift's chatml
    model = FakeModel('{"files": []}')

    async def ask():  # type: ignore[no-untyped-def]
        async with DirectoryTree(path) as tree:
            await run_rollout(
                ShortlistPolicy(model, LexicalPolicy(), ShortlistConfig(size=3)), tree, inst
            )

    asyncio.run(ask())
    assert model.prompts == [render_chatml([m.model_dump() for m in row.messages], ())]
    # a row written and read again keeps its shortlist
    assert GrpoRow.model_validate_json(row.model_dump_json()) == row


def test_cli_writes_answer_task_rows(geo: tuple[Path, str], tmp_path: Path) -> None:
    path, commit = geo
    instances = tmp_path / "i.jsonl"
    instances.write_text(_instance(commit).model_dump_json() + "\n")
    out = tmp_path / "rows"
    args = ["grpo", "-i", str(instances), "-o", str(out), "--cache", str(tmp_path / "c")]
    args += ["--source", str(path.parent / "{name}"), "--val-fraction", "0"]
    runner = CliRunner()
    res = runner.invoke(dataset_app, [*args, "--ranker", str(tmp_path / "r.json")])
    assert res.exit_code == 2
    assert "--shortlist" in res.output
    res = runner.invoke(dataset_app, [*args, "--shortlist", "2", "--ranker", str(tmp_path / "r")])
    assert res.exit_code == 2
    assert "--ranker" in res.output
    res = runner.invoke(dataset_app, [*args, "--shortlist", "2"])
    assert res.exit_code == 0, res.output
    (row,) = [json.loads(x) for x in (out / "train.jsonl").read_text().splitlines()]
    assert row["tools"] == "[]"
    assert 1 <= len(row["shortlist"]) <= 2
    assert "Candidate files:" in row["messages"][1]["content"]


def test_spec_names_the_policy_before_it_is_built() -> None:
    spec = parse_policy_spec("shortlist:/models/base+/runs/adapter")
    assert spec.name == "shortlist:base+adapter"
    assert str(spec) == "shortlist:/models/base+/runs/adapter"
