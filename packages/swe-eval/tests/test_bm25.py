"""The BM25 baseline over in-memory trees and over a real git repository via worktree-sandbox."""

from __future__ import annotations

import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest
from codegrep_records import Instance
from swe_eval._corpus import MappingTree, code_tokens
from swe_eval.bm25 import BM25Config, BM25Retriever
from swe_eval.predict import predict


def test_code_tokens_split_identifiers() -> None:
    toks = code_tokens("HTTPAdapter.send_request(self)")
    assert {"httpadapter", "http", "adapter", "send_request", "send", "request"} <= set(toks)
    assert "self" not in toks


def test_ranks_by_path_and_content_and_skips_tests() -> None:
    tree = MappingTree(
        {
            "src/session.py": b"class Session:\n    def rebuild_auth(self, req):\n        pass",
            "src/cookies.py": b"def merge_cookies(jar, cookies):\n    return jar\n",
            "tests/test_session.py": b"def test_rebuild_auth(): Session().rebuild_auth(None)\n",
            "README.md": b"A library.\n",
        }
    )
    ranked = BM25Retriever().rank(tree, "Session.rebuild_auth drops the proxy auth header")
    assert ranked[0][0] == "src/session.py"
    assert all(not p.startswith("tests/") for p, _ in ranked)
    # Files without one shared term are not returned at all.
    assert "README.md" not in [p for p, _ in ranked]
    assert BM25Retriever().rank(tree, "zzzz qqqq") == []


def test_depth_limits_the_ranking() -> None:
    tree = MappingTree({f"m{i}.py": b"parse value" for i in range(20)})
    assert len(BM25Retriever(BM25Config(depth=5)).rank(tree, "parse")) == 5


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    """A real repository with two commits; the first is the base commit."""
    work = tmp_path / "src" / "acme" / "widgets"
    work.mkdir(parents=True)
    _git(work, "init", "-q", "-b", "main")
    _git(work, "config", "user.email", "t@example.com")
    _git(work, "config", "user.name", "t")
    (work / "widgets").mkdir()
    (work / "widgets" / "render.py").write_text("def render_widget(w):\n    return w.html\n")
    (work / "widgets" / "store.py").write_text("def save_widget(w, db):\n    db.put(w)\n")
    _git(work, "add", ".")
    _git(work, "commit", "-q", "-m", "base")
    base = _git(work, "rev-parse", "HEAD")
    (work / "widgets" / "later.py").write_text("render_widget render_widget\n")
    _git(work, "add", ".")
    _git(work, "commit", "-q", "-m", "later")
    return tmp_path / "src", base


def test_predict_over_a_sandbox_tree_at_the_base_commit(
    repo: tuple[Path, str], tmp_path: Path
) -> None:
    from worktree_sandbox import BareRepoCache, SyncSandbox

    src, base = repo
    cache = BareRepoCache(tmp_path / "cache", source=str(src) + "/{owner}/{name}")
    cache.ensure("acme/widgets", commits=[base])
    inst = Instance(
        instance_id="acme__widgets-1",
        repo="acme/widgets",
        base_commit=base,
        problem_statement="render_widget returns the wrong html",
    )
    broken = inst.model_copy(update={"instance_id": "acme__widgets-2", "base_commit": "0" * 40})
    with SyncSandbox(cache) as sb:

        @contextmanager
        def open_tree(i: Instance):  # type: ignore[no-untyped-def]
            assert i.base_commit is not None
            with sb.tree(i.repo, i.base_commit) as tree:
                yield tree

        outcomes = list(predict([inst, broken], BM25Retriever(), open_tree))
    ok, failed = outcomes
    assert ok.prediction is not None
    assert ok.prediction.files[0] == "widgets/render.py"
    # The file added after the base commit is not in the tree the retriever saw.
    assert "widgets/later.py" not in ok.prediction.files
    assert ok.prediction.scores is not None
    assert len(ok.prediction.scores) == len(ok.prediction.files)
    assert failed.prediction is None
    assert failed.error


def test_files_the_clone_lacks_are_left_out() -> None:
    # Partial mirrors list blobs they do not hold; the sandbox raises for those reads.
    from swe_eval._corpus import MappingTree, collect_documents
    from worktree_sandbox import SandboxError

    class PartialTree(MappingTree):
        def read_bytes(self, path: str) -> bytes:
            if path == "data/huge.csv":
                raise SandboxError("no file 'data/huge.csv'")
            return super().read_bytes(path)

    tree = PartialTree({"a.py": b"def a(): pass\n", "data/huge.csv": b"", "b.py": b"x = 1\n"})
    assert [d.path for d in collect_documents(tree)] == ["a.py", "b.py"]


def test_predict_cli_runs_the_lexical_agent(repo: tuple[Path, str], tmp_path: Path) -> None:
    import json

    from swe_eval.cli import app
    from typer.testing import CliRunner

    src, base = repo
    instances = tmp_path / "i.jsonl"
    instances.write_text(
        json.dumps(
            {
                "instance_id": "acme__widgets-1",
                "repo": "acme/widgets",
                "base_commit": base,
                "problem_statement": "render_widget in widgets/render.py returns the wrong html",
                "patch": "",
            }
        )
        + "\n"
    )
    out = tmp_path / "lex.jsonl"
    source = str(src) + "/{owner}/{name}"
    argv = ["predict", "-r", "lexical", "-i", str(instances), "-o", str(out),
            "--cache", str(tmp_path / "cache"), "--source", source]  # fmt: skip
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["instance_id"] for r in rows] == ["acme__widgets-1"]
    assert rows[0]["retriever"] == "lexical"
    assert rows[0]["files"][0] == "widgets/render.py"
    assert (tmp_path / "lex.rollouts.jsonl").is_file()
    # The agent needs an endpoint: said at once, nothing run.
    agent = CliRunner().invoke(app, [*argv[:2], "agent", *argv[3:]])
    assert agent.exit_code == 2


def test_predict_cli_counts_a_commit_it_cannot_find_and_goes_on(
    repo: tuple[Path, str], tmp_path: Path
) -> None:
    import json

    from swe_eval.cli import app
    from typer.testing import CliRunner

    src, base = repo
    rows = [
        {"instance_id": f"acme__widgets-{i}", "repo": "acme/widgets", "base_commit": commit,
         "problem_statement": "render_widget returns the wrong html", "patch": ""}
        for i, commit in enumerate(["0" * 40, base])
    ]  # fmt: skip
    instances = tmp_path / "i.jsonl"
    instances.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "bm25.jsonl"
    argv = ["predict", "-r", "bm25", "-i", str(instances), "-o", str(out),
            "--cache", str(tmp_path / "cache")]  # fmt: skip
    # The missing commit is said, counted and skipped; it no longer ends the run.
    result = CliRunner().invoke(app, [*argv, "--source", str(src) + "/{owner}/{name}"])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    said = " ".join(result.output.split())
    assert "acme__widgets-0" in said
    assert "1 predicted, 1 failed" in said
    assert [json.loads(x)["instance_id"] for x in out.read_text().splitlines()] == [
        "acme__widgets-1"
    ]
    # A source template that names no repository is a clear error, not a traceback.
    result = CliRunner().invoke(app, [*argv, "--source", str(src)])
    assert result.exit_code == 2
    assert "names no repository" in " ".join(result.output.split())
