"""LexicalPolicy through the real engine on small real git repositories made here."""

from __future__ import annotations

import asyncio
import math
import subprocess
from collections.abc import Callable
from pathlib import Path

import codegrep_model.policies.lexical.policy
import pytest
from codegrep_model import (
    DEFAULT_MAX_ISSUE_BYTES,
    Instance,
    RolloutConfig,
    RolloutRecord,
    prediction_from_rollout,
    run_rollout,
)
from codegrep_model.policies.lexical import LexicalConfig, LexicalPolicy
from codegrep_model.policies.lexical._issue import IssueClues
from codegrep_model.policies.lexical.ranker import Ranker
from codegrep_model.policies.protocol import PolicyNeeds, PolicyReply, PolicyRequest, TreeContext
from hypothesis import given
from hypothesis import strategies as st
from worktree_sandbox import DirectoryTree, TreePool
from worktree_sandbox.history import HistoryLog

LIB = {
    "README.md": "# geo\nA geometry library.\n",
    "setup.py": "from setuptools import setup\nsetup(name='geo')\n",
    "geo/__init__.py": "from geo.shapes import Polygon, Circle\nfrom geo.io import load_wkt\n",
    "geo/shapes.py": (
        "import math\n\n"
        "class Polygon:\n"
        "    def __init__(self, points):\n"
        "        self.points = list(points)\n\n"
        "    def area(self):\n"
        "        pts = self.points\n"
        "        return sum(a[0] * b[1] - b[0] * a[1] for a, b in zip(pts, pts[1:])) / 2\n\n"
        "class Circle:\n"
        "    def __init__(self, r):\n"
        "        self.r = r\n\n"
        "    def area(self):\n"
        "        return math.pi * self.r ** 2\n"
    ),
    "geo/io.py": (
        "from geo.shapes import Polygon\n\n"
        "def load_wkt(text):\n"
        "    if not text.startswith('POLYGON'):\n"
        "        raise ValueError('only POLYGON geometries can be parsed from WKT')\n"
        "    return Polygon([])\n"
    ),
    "geo/plot/render.py": "def render_svg(shape):\n    return '<svg/>'\n",
    "tests/test_shapes.py": (
        "from geo.shapes import Polygon\n\n"
        "def test_area():\n    assert Polygon([(0, 0), (1, 0), (1, 1)]).area() >= 0\n"
    ),
    "docs/usage.rst": "Use ``Polygon.area`` and ``load_wkt``.\n",
}


def localize(repo: Path, issue: str, policy: LexicalPolicy | None = None) -> RolloutRecord:
    inst = Instance(instance_id="t", repo="acme/geo", base_commit="HEAD", problem_statement=issue)

    async def go() -> RolloutRecord:
        async with DirectoryTree(repo) as tree:
            return await run_rollout(policy or LexicalPolicy(), tree, inst)

    return asyncio.run(go())


@pytest.fixture(scope="module")
def geo(
    tmp_path_factory: pytest.TempPathFactory,
    repo_factory: Callable[[Path, dict[str, str]], tuple[Path, str]],
) -> Path:
    return repo_factory(tmp_path_factory.mktemp("geo") / "geo", LIB)[0]


def test_identifier_in_the_title_finds_its_definition(geo: Path) -> None:
    rec = localize(
        geo,
        "`Polygon.area` is wrong for unclosed rings\n\n"
        "```python\nfrom geo import Polygon\nPolygon([(0, 0), (2, 0), (2, 2)]).area()\n```\n"
        "returns 2.0 but the ring is not closed.",
    )
    assert rec.status == "answered"
    assert rec.answer is not None
    assert rec.answer.files[0] == "geo/shapes.py"
    assert "tests/test_shapes.py" not in rec.answer.files
    assert "defines `Polygon`" in rec.answer.reasons["geo/shapes.py"]


def test_error_message_finds_where_it_is_raised(geo: Path) -> None:
    rec = localize(
        geo,
        'Loading fails\n\nTraceback (most recent call last):\n  File "app.py", line 3\n'
        "ValueError: only POLYGON geometries can be parsed from WKT\n\nI passed a MULTIPOLYGON.",
    )
    assert rec.answer is not None
    assert rec.answer.files[0] == "geo/io.py"


def test_traceback_frames_and_paths(geo: Path) -> None:
    rec = localize(
        geo,
        "Crash when rendering\n\n"
        '  File "/usr/lib/python3/site-packages/geo/plot/render.py", line 2, in render_svg\n'
        "TypeError: bad shape",
    )
    assert rec.answer is not None
    assert rec.answer.files == ("geo/plot/render.py",)


def test_turn_plan_uses_the_tools(geo: Path) -> None:
    rec = localize(geo, "`load_wkt` should accept `Circle` input")
    kinds = [t.kind for t in rec.turns]
    assert kinds == ["explore", "explore", "explore"]  # searches, confirms, answers on turn 3
    names = [[c.call.name for c in t.calls] for t in rec.turns]
    assert set(names[0]) == {"grep"}
    assert "read" in names[1]
    assert all(c.status == "ok" for t in rec.turns for c in t.calls)
    assert rec.stats.tool_calls == sum(len(n) for n in names) <= 16
    assert rec.answer is not None
    assert rec.answer.files[0] in {"geo/io.py", "geo/shapes.py"}


def test_scores_follow_the_ranking(
    tmp_path: Path,
    repo_factory: Callable[[Path, dict[str, str]], tuple[Path, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ranked: list[dict[str, float]] = []
    real = LexicalPolicy._choose

    def choose(self: LexicalPolicy, scores: dict[str, float]) -> list[str]:
        ranked.append(dict(scores))
        return real(self, scores)

    monkeypatch.setattr(LexicalPolicy, "_choose", choose)
    # Two definitions of what the issue names; the path prior ("cart") ranks one a little higher.
    cart = "class Cart:\n    def total(self):\n        return sum(self.prices)\n"
    files = {
        "shop/cart.py": cart,
        "shop/legacy/basket.py": cart,
        "shop/tax.py": "def vat(x): ...\n",
    }
    repo = repo_factory(tmp_path / "shop", files)[0]
    issue = "`Cart.total` ignores discounts in the cart"
    rec = localize(repo, issue, LexicalPolicy(heuristic=True))
    assert rec.answer is not None
    chosen, scores = rec.answer.files, rec.answer.scores
    assert chosen == ("shop/cart.py", "shop/legacy/basket.py")
    assert scores is not None
    assert len(scores) == len(chosen)
    assert all(0 <= s <= 1 for s in scores)
    assert scores[0] > scores[1]
    # each is s / (s + score_half) of the file's ranking score in the answer turn, and the
    # whole ranking, not only the files answered, keeps its order under it
    internal = ranked[-1]
    policy = LexicalPolicy(heuristic=True)
    half = policy.config.score_half
    assert scores == tuple(round(internal[f] / (internal[f] + half), 4) for f in chosen)
    order = sorted(internal, key=lambda f: (-internal[f], f))
    confidence = [policy._confidence(internal[f]) for f in order]
    assert confidence == sorted(confidence, reverse=True)
    assert prediction_from_rollout(rec).scores == scores
    # on the geometry library too: one file, scored
    one = localize(
        repo_factory(tmp_path / "geo", LIB)[0],
        "`Circle.area` should use `math.tau`",
        LexicalPolicy(heuristic=True),
    )
    assert one.answer is not None
    assert one.answer.files == ("geo/shapes.py",)
    assert one.answer.scores is not None
    assert 0 < one.answer.scores[0] < 1


@pytest.fixture
def seen(
    monkeypatch: pytest.MonkeyPatch,
) -> list[list[codegrep_model.policies.lexical.policy.Candidate]]:
    """The candidates the ranked policy's answers were chosen from, one list per answer."""
    out: list[list[codegrep_model.policies.lexical.policy.Candidate]] = []
    real = LexicalPolicy._choose_ranked

    def choose(
        cands: list[codegrep_model.policies.lexical.policy.Candidate], ranker: Ranker
    ) -> object:
        out.append(cands)
        return real(cands, ranker)

    monkeypatch.setattr(LexicalPolicy, "_choose_ranked", staticmethod(choose))
    return out


def test_ranked_answers_score_each_file_by_the_rankers_probability(
    tmp_path: Path,
    repo_factory: Callable[[Path, dict[str, str]], tuple[Path, str]],
    seen: list[list[codegrep_model.policies.lexical.policy.Candidate]],
) -> None:
    cart = "class Cart:\n    def total(self):\n        return sum(self.prices)\n"
    files = {"shop/cart.py": cart, "shop/legacy/basket.py": cart, "shop/tax.py": "def vat(x): ..."}
    repo = repo_factory(tmp_path / "shop", files)[0]
    policy = LexicalPolicy()
    rec = localize(repo, "`Cart.total` ignores discounts in the cart", policy)
    assert rec.answer is not None
    assert rec.answer.scores is not None
    assert policy.ranker is not None
    by_path = {c.path: c for c in seen[-1]}
    probs = {p: round(policy.ranker.probability(c.features), 4) for p, c in by_path.items()}
    assert rec.answer.scores == tuple(probs[f] for f in rec.answer.files)
    assert list(rec.answer.scores) == sorted(rec.answer.scores, reverse=True)
    # the answer is the ranker's order, cut by its learned cut
    best = sorted(probs.values(), reverse=True)
    assert len(rec.answer.files) == policy.ranker.cut.take(best)
    # the usage greps ran in the first turn (the ranker's extra evidence), the heuristic's did not
    first = [c.call.id for c in rec.turns[0].calls]
    assert any(i.startswith("lex_use_") for i in first)
    old = localize(
        repo, "`Cart.total` ignores discounts in the cart", LexicalPolicy(heuristic=True)
    )
    assert not any(c.call.id.startswith("lex_use_") for c in old.turns[0].calls)


@given(st.lists(st.floats(min_value=0, max_value=1e6), min_size=2, max_size=20))
def test_the_score_is_monotone_in_the_ranking_score(raw: list[float]) -> None:
    policy = LexicalPolicy(heuristic=True)
    confidence = [policy._confidence(s) for s in sorted(raw, reverse=True)]
    assert all(0 <= c <= 1 for c in confidence)
    assert confidence == sorted(confidence, reverse=True)


def test_score_half_must_be_positive() -> None:
    with pytest.raises(ValueError, match="score_half"):
        LexicalConfig(score_half=0)


def test_nothing_to_go_on_gives_an_empty_answer_not_a_crash(geo: Path) -> None:
    rec = localize(geo, "it is slow")
    assert rec.status == "answered"
    assert rec.answer is not None
    assert len(rec.answer.files) <= 2


def test_deterministic_and_at_a_commit(geo: Path) -> None:
    issue = "`Circle.area` should use `math.tau`"
    first = localize(geo, issue)
    assert localize(geo, issue).answer == first.answer
    inst = Instance(instance_id="t", repo="acme/geo", base_commit="HEAD", problem_statement=issue)

    async def at_commit() -> RolloutRecord:
        async with TreePool(materialize="never") as pool, pool.tree_at(geo, "HEAD") as tree:
            return await run_rollout(LexicalPolicy(), tree, inst)

    assert asyncio.run(at_commit()).answer == first.answer
    assert first.answer is not None
    assert first.answer.files[0] == "geo/shapes.py"


def long_issue(size: int) -> str:
    """An issue with a pasted log: a short report, then the same traceback with changing line
    numbers and timestamps until it is `size` characters long (ASCII, so bytes too)."""
    head = "`Polygon.area` is wrong for unclosed rings; the log of the failing job:\n\n```\n"
    blocks: list[str] = []
    total = len(head)
    i = 0
    while total < size:
        i += 1
        block = (
            f"2024-05-01 12:{i // 60 % 60:02d}:{i % 60:02d} DEBUG geo.io: ring {i} of job {i}\n"
            "Traceback (most recent call last):\n"
            f'  File "/srv/app/site-packages/geo/io.py", line {3 + i % 4}, in load_wkt\n'
            "    return Polygon(parse_points(text))\n"
            f'  File "/srv/app/site-packages/geo/shapes.py", line {7 + i % 3}, in area\n'
            "    return sum(a[0] * b[1] - b[0] * a[1] for a, b in zip(pts, pts[1:])) / 2\n"
            "ValueError: only POLYGON geometries can be parsed from WKT\n"
        )
        blocks.append(block)
        total += len(block)
    return head + "".join(blocks)


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The issue texts the real `extract_clues` was called with, in order."""
    seen: list[str] = []
    real = codegrep_model.policies.lexical.policy.extract_clues

    def counting(text: str) -> IssueClues:
        seen.append(text)
        return real(text)

    monkeypatch.setattr(codegrep_model.policies.lexical.policy, "extract_clues", counting)
    return seen


def test_a_1mb_issue_is_parsed_once_per_rollout_and_cut(geo: Path, parses: list[str]) -> None:
    issue = long_issue(1_000_000)
    size = len(issue.encode())
    rec = localize(geo, issue)
    assert rec.status == "answered"
    assert len(parses) == 1  # not once per turn
    assert rec.issue_bytes == size
    assert rec.issue_cut_to == DEFAULT_MAX_ISSUE_BYTES < size
    # the policy and the prompt both saw the first 256 KiB, not the whole issue
    assert parses[0] == issue[:DEFAULT_MAX_ISSUE_BYTES]
    user = next(m.content for m in rec.messages if m.role == "user")
    assert user is not None
    assert issue[:DEFAULT_MAX_ISSUE_BYTES].strip() in user
    assert len(user.encode()) < DEFAULT_MAX_ISSUE_BYTES + 2_000  # the template and the tree
    assert rec.answer is not None
    assert rec.answer.files[0] in {"geo/io.py", "geo/shapes.py"}


def test_one_parse_per_issue_and_the_same_answers(geo: Path, parses: list[str]) -> None:
    issues = ["`Circle.area` should use `math.tau`", "`load_wkt` should accept `Circle` input"]
    fresh = [localize(geo, text) for text in issues]  # a new policy per rollout
    assert parses == issues
    parses.clear()
    policy = LexicalPolicy()  # one policy, each issue twice, as a batch would

    async def go() -> list[RolloutRecord]:
        out = []
        async with DirectoryTree(geo) as tree:
            for text in issues * 2:
                inst = Instance(
                    instance_id="t", repo="acme/geo", base_commit="HEAD", problem_statement=text
                )
                out.append(await run_rollout(policy, tree, inst))
        return out

    shared = asyncio.run(go())
    assert parses == issues
    assert [r.answer for r in shared] == [r.answer for r in fresh] * 2
    assert all(r.issue_cut_to is None for r in fresh + shared)
    assert fresh[0].issue_bytes == len(issues[0])


def test_the_cut_keeps_whole_characters(geo: Path, parses: list[str]) -> None:
    issue = "`Circle.area` " + "é" * 40  # é is 2 bytes in UTF-8; 14 + 80 bytes in all
    inst = Instance(instance_id="t", repo="acme/geo", base_commit="HEAD", problem_statement=issue)

    async def go() -> RolloutRecord:
        async with DirectoryTree(geo) as tree:
            cfg = RolloutConfig(max_issue_bytes=21)
            return await run_rollout(LexicalPolicy(), tree, inst, config=cfg)

    rec = asyncio.run(go())
    assert (rec.issue_bytes, rec.issue_cut_to) == (94, 20)  # 21 would split the fourth é
    assert parses == ["`Circle.area` " + "é" * 3]


JAVA = {
    "src/main/java/com/acme/stream/JsonWriter.java": (
        "package com.acme.stream;\n\n"
        "public final class JsonWriter implements java.io.Closeable {\n"
        "  private boolean lenient;\n\n"
        "  public JsonWriter value(double value) throws java.io.IOException {\n"
        "    if (Double.isNaN(value)) {\n"
        '      throw new IllegalArgumentException("Numeric values must be finite");\n'
        "    }\n    return this;\n  }\n\n"
        "  public void close() {}\n}\n"
    ),
    "src/main/java/com/acme/Gson.java": (
        "package com.acme;\n\nimport com.acme.stream.JsonWriter;\n\n"
        "public class Gson {\n  public void toJson(Object o, JsonWriter writer) {}\n}\n"
    ),
    "src/test/java/com/acme/stream/JsonWriterTest.java": (
        "package com.acme.stream;\n\npublic class JsonWriterTest {\n"
        "  public void testNaN() { new JsonWriter().value(Double.NaN); }\n}\n"
    ),
    "README.md": "# acme\nJsonWriter writes JSON.\n",
}


def test_the_syntax_tree_finds_definitions_the_regular_expression_misses(
    tmp_path: Path, repo_factory: Callable[[Path, dict[str, str]], tuple[Path, str]]
) -> None:
    pytest.importorskip("tree_sitter_language_pack", reason="needs worktree-sandbox[symbols]")
    repo = repo_factory(tmp_path / "acme", JAVA)[0]
    issue = (
        "JsonWriter.value(double) rejects NaN in lenient mode\n\n"
        "`JsonWriter#value(double)` throws IllegalArgumentException for `Double.NaN` even when "
        "the writer is lenient."
    )
    ranked = localize(repo, issue, LexicalPolicy())
    assert ranked.answer is not None
    main = "src/main/java/com/acme/stream/JsonWriter.java"
    assert ranked.answer.files[0] == main
    assert "defines `JsonWriter`" in ranked.answer.reasons[main]
    # the Java test file is a test file, as a Python one would be
    assert "src/test/java/com/acme/stream/JsonWriterTest.java" not in ranked.answer.files
    # the heuristic policy's first-turn regular expression knows no `public final class`
    old = localize(repo, issue, LexicalPolicy(heuristic=True))
    assert old.answer is not None
    assert all("defines `JsonWriter`" not in r for r in old.answer.reasons.values())


@pytest.mark.parametrize(
    ("path", "test"),
    [
        ("core/logx/logs_test.go", True),
        ("src/utils.test.ts", True),
        ("lib/__tests__/parse.js", True),
        ("src/test/java/com/acme/FooTest.java", True),
        ("gson/src/main/java/com/google/gson/JsonWriterTest.java", True),
        ("tests/test_io.py", True),
        ("src/main/java/com/acme/Test.java", False),  # a class named Test is not a test file
        ("lib/latest.go", False),
        ("sympy/testing/runtests.py", True),
    ],
)
def test_test_files_of_many_languages_are_recognized(path: str, test: bool) -> None:
    assert bool(codegrep_model.policies.lexical.policy._TEST.search(path)) is test


def test_the_history_brings_files_whose_commit_messages_match_the_issue(
    tmp_path: Path,
    repo_factory: Callable[[Path, dict[str, str]], tuple[Path, str]],
    seen: list[list[codegrep_model.policies.lexical.policy.Candidate]],
) -> None:
    """No identifier of the issue names `shop/rebates.py`; the commits that changed it say
    "rebate ... rounding": the ranked policy's candidates include it, with history features
    relative to the other candidates; the heuristic policy never asks for the history."""
    files = {
        "shop/cart.py": "class Cart:\n    def total(self):\n        return sum(self.prices)\n",
        "shop/rebates.py": "def apply(x):\n    return x\n",
        "shop/tax.py": "def vat(x):\n    return x * 1.2\n",
    }
    repo = repo_factory(tmp_path / "shop", files)[0]
    ident = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for path, text, message in (
        ("shop/rebates.py", "def apply(x):\n    return round(x, 2)\n", "Round the rebate"),
        ("shop/tax.py", "def vat(x):\n    return x * 1.19\n", "VAT is 19 percent now"),
        ("shop/rebates.py", "def apply(x):\n    return round(x, 3)\n", "Rebate rounding: 3"),
    ):
        (repo / path).write_text(text)
        subprocess.run([*ident, "commit", "-q", "-am", message], check=True, capture_output=True)
    issue = "The rebate is rounded wrongly when the `Cart` total is computed"
    policy = LexicalPolicy()
    assert policy.needs.history
    assert not LexicalPolicy(heuristic=True).needs.history
    rec = localize(repo, issue, policy)
    assert rec.answer is not None
    cands = {c.path: c.features for c in seen[-1]}
    rebates = cands["shop/rebates.py"]
    assert rebates["hist_rank_inv"] == 1.0
    assert rebates["hist_bm25"] > 0
    assert rebates["hist_bm25_best"] == 1.0
    assert rebates["hist_bm25_gap"] == 0.0
    assert rebates["churn"] == pytest.approx(math.log1p(3))  # init and two rebate commits
    assert cands["shop/cart.py"]["hist_bm25_gap"] < 0
    # the heuristic's answer is the same whether or not its candidates carry history features
    plain = localize(repo, issue, LexicalPolicy(heuristic=True))
    recorded = localize(repo, issue, LexicalPolicy(heuristic=True, history=True))
    assert plain.answer == recorded.answer


def test_the_engine_hands_the_history_only_to_policies_that_use_it(
    geo: Path,
) -> None:
    class Probe:
        """A policy asking for the history or not, and nothing else of the tree."""

        name = "probe"

        def __init__(self, uses: bool, logs: list[object] | None = None) -> None:
            self.uses = uses
            self.tree = TreeContext()
            self.logs: list[object] = [] if logs is None else logs

        @property
        def needs(self) -> PolicyNeeds:
            return PolicyNeeds(history=self.uses)

        def for_tree(self, context: TreeContext) -> Probe:
            assert context.definitions is None  # not asked for
            bound = Probe(self.uses, self.logs)
            bound.tree = context
            return bound

        async def reply(self, request: PolicyRequest) -> PolicyReply:
            if self.tree.commit_log is not None:
                self.logs.append(await self.tree.commit_log())
            else:
                self.logs.append(None)
            return PolicyReply(content='{"files": []}')

    inst = Instance(instance_id="t", repo="acme/geo", base_commit="HEAD", problem_statement="x")

    async def go(policy: Probe) -> None:
        async with DirectoryTree(geo) as tree:
            await run_rollout(policy, tree, inst)

    yes, no = Probe(True), Probe(False)
    asyncio.run(go(yes))
    asyncio.run(go(no))
    assert no.logs == [None]
    (log,) = yes.logs
    assert isinstance(log, HistoryLog)
    assert [c.message for c in log.commits] == ["init"]


def test_answer_gives_line_ranges_of_the_definitions_it_matched(geo: Path) -> None:
    issue = "`Polygon.area` returns a negative value for clockwise points"
    rec = localize(geo, issue)
    assert rec.answer is not None
    assert rec.answer.files[0] == "geo/shapes.py"
    # the class Polygon spans lines 3-9 (its method `area` inside it is not repeated); Circle's
    # `area` is a definition of an issue name too, outside Polygon: its own span
    assert rec.answer.line_ranges["geo/shapes.py"] == ((3, 9), (15, 16))
    # a prediction carries them, as it carries a model's
    assert prediction_from_rollout(rec).line_ranges == rec.answer.line_ranges
    # the answer itself is what it was without them
    plain = localize(geo, issue, LexicalPolicy(LexicalConfig(line_ranges=False)))
    assert plain.answer is not None
    assert plain.answer.line_ranges == {}
    assert (plain.answer.files, plain.answer.scores) == (rec.answer.files, rec.answer.scores)


def test_ranking_gives_the_best_files_beyond_the_answer(geo: Path) -> None:
    issue = "`Polygon.area` returns a negative value for clockwise points"
    ranked = localize(geo, issue, LexicalPolicy(LexicalConfig(ranking=5)))
    plain = localize(geo, issue)
    assert ranked.answer is not None
    assert plain.answer is not None
    assert plain.answer.ranking is None  # only when asked for
    assert (ranked.answer.files, ranked.answer.scores) == (plain.answer.files, plain.answer.scores)
    ranking = ranked.answer.ranking
    assert ranking is not None
    assert 1 < len(ranking) <= 5
    n = len(plain.answer.files)
    # the answer's files first, with the same scores, then more, best first
    answered = zip(plain.answer.files, plain.answer.scores or (), strict=True)
    assert list(ranking[:n]) == list(answered)
    scores = [s for _, s in ranking]
    assert scores == sorted(scores, reverse=True)
    assert len({p for p, _ in ranking}) == len(ranking)
    with pytest.raises(ValueError, match="ranking"):
        LexicalConfig(ranking=-1)


def test_a_stray_ranking_in_a_reply_costs_nothing() -> None:
    from codegrep_model.answer import parse_answer

    text = (
        '{"files": ["a.py", "b.py"], "scores": [0.9, 0.5], '
        '"ranking": [["a.py", 0.9], ["./c.py", 0.4], ["a.py", 0.3], ["d.py", 2], [1, 0.2], "e"]}'
    )
    answer = parse_answer(text)
    assert answer is not None
    assert answer.files == ("a.py", "b.py")
    assert answer.scores == (0.9, 0.5)
    # repeated paths, scores outside [0, 1] and entries that are not pairs are left out
    assert answer.ranking == (("a.py", 0.9), ("c.py", 0.4))
    stray = parse_answer('{"files": ["a.py"], "ranking": "x"}')
    assert stray is not None
    assert stray.ranking is None
