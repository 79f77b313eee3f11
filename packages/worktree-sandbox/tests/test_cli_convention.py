"""The toolkit's one command-line convention in `worktree-sandbox`: `--version`; `prepare` takes
its instances file as INSTANCES or -i/--instances; bad input is one line `error: ...` and exit 2
before anything is cloned or made; work that ran and failed is exit 1; --dry-run runs nothing;
rich markup never eats square brackets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner
from worktree_sandbox import BareRepoCache, SandboxError, __version__
from worktree_sandbox.cli import app

runner = CliRunner()


def _error_line(output: str) -> str:
    [line] = [line for line in output.splitlines() if line.startswith("error: ")]
    return line


@pytest.fixture
def origin(tmp_path: Path, git_kit: Any) -> Any:
    """A repository `someone/proj` served from the local template `<folder>/{name}`."""
    return git_kit.make_repo(tmp_path / "origin")


def _rows(tmp_path: Path, origin: Any) -> Path:
    rows = [
        {"instance_id": f"a-{i}", "repo": "someone/proj", "base_commit": sha}
        for i, sha in enumerate(origin.commits)
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _source(origin: Any) -> str:
    return str(origin.path.parent / "{name}")


def test_version_prints_the_distribution_and_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"worktree-sandbox {__version__}"


# -- prepare: INSTANCES or -i/--instances ---------------------------------------------------------


@pytest.mark.parametrize("form", ["positional", "option", "both"])
def test_prepare_takes_the_instances_file_either_way(
    tmp_path: Path, origin: Any, form: str
) -> None:
    rows = _rows(tmp_path, origin)
    named = {
        "positional": [str(rows)],
        "option": ["-i", str(rows)],
        "both": [str(rows), "--instances", str(tmp_path / "." / "rows.jsonl")],
    }[form]
    report = tmp_path / "report.json"
    cache = ["--cache", str(tmp_path / "c"), "--source", _source(origin), "-o", str(report)]
    result = runner.invoke(app, ["prepare", *named, *cache])
    assert result.exit_code == 0, result.output
    assert json.loads(report.read_text())["repos"][0]["commits_ok"] == 2


def test_prepare_without_an_instances_file_is_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["prepare", "--cache", str(tmp_path / "c")])
    assert result.exit_code == 2, result.output
    assert _error_line(result.output) == (
        "error: no instances file: give INSTANCES or -i/--instances FILE"
    )
    assert not (tmp_path / "c").exists()


def test_prepare_with_two_different_instances_files_is_exit_2(tmp_path: Path, origin: Any) -> None:
    rows = _rows(tmp_path, origin)
    other = tmp_path / "other.jsonl"
    other.write_text(rows.read_text())
    result = runner.invoke(
        app, ["prepare", str(rows), "-i", str(other), "--cache", str(tmp_path / "c")]
    )
    assert result.exit_code == 2, result.output
    assert "differ: give one" in _error_line(result.output)
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("form", ["positional", "option"])
def test_prepare_refuses_a_negative_limit_in_either_form(
    tmp_path: Path, origin: Any, form: str
) -> None:
    rows = _rows(tmp_path, origin)
    named = [str(rows)] if form == "positional" else ["-i", str(rows)]
    cache = tmp_path / "c"
    result = runner.invoke(app, ["prepare", *named, "--cache", str(cache), "--limit", "-1"])
    assert result.exit_code == 2, result.output
    assert "--limit" in result.output
    assert not cache.exists()


@pytest.mark.parametrize("what", ["missing", "directory"])
def test_prepare_on_an_instances_file_it_cannot_open_is_exit_2(tmp_path: Path, what: str) -> None:
    path = tmp_path / "rows[1].jsonl"
    if what == "directory":
        path.mkdir()
    result = runner.invoke(app, ["prepare", "-i", str(path), "--cache", str(tmp_path / "c")])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    why = "No such file or directory" if what == "missing" else "it is a directory"
    assert _error_line(result.output) == f"error: INSTANCES {path}: cannot open ({why})"
    assert not (tmp_path / "c").exists()


# -- --cache and --source are checked before anything is read or made ----------------------------


@pytest.mark.parametrize("where", ["a_file", "under_a_file"])
def test_a_cache_that_cannot_be_a_folder_is_exit_2(tmp_path: Path, origin: Any, where: str) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cache = blocker if where == "a_file" else blocker / "c"
    rows = _rows(tmp_path, origin)
    for argv in (
        ["prepare", str(rows), "--cache", str(cache)],
        ["grep", "x", "--repo", "someone/proj", "--cache", str(cache)],
        ["bench", "--cache", str(cache), "--repo", "someone/proj"],
    ):
        result = runner.invoke(app, argv)
        assert result.exit_code == 2, (argv, result.output)
        assert isinstance(result.exception, SystemExit)  # no traceback
        assert _error_line(result.output).startswith(
            f"error: --cache {cache}: cannot use it as the clone cache"
        )


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("https://example.com/{bogus}/{repo}.git", "cannot be filled in (KeyError: 'bogus')"),
        ("https://example.com/fixed.git", "names no repository"),
        ("https://example.com/{repo}/{", "cannot be filled in (ValueError"),
    ],
)
def test_a_source_template_it_cannot_fill_is_exit_2(
    tmp_path: Path, origin: Any, source: str, message: str
) -> None:
    cache = tmp_path / "c"
    result = runner.invoke(
        app, ["prepare", str(_rows(tmp_path, origin)), "--cache", str(cache), "--source", source]
    )
    assert result.exit_code == 2, result.output
    line = _error_line(result.output)
    assert line.startswith("error: --source: source template")
    assert message in line
    assert not cache.exists()
    with pytest.raises(SandboxError, match="source template"):
        BareRepoCache(cache, source)  # the library refuses it at once, not at the first clone
    assert not cache.exists()


def test_prepare_refuses_an_unwritable_output_naming_it_whole(tmp_path: Path, origin: Any) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    output = blocker / "run[1]" / "report.json"
    cache = tmp_path / "c"
    result = runner.invoke(
        app, ["prepare", str(_rows(tmp_path, origin)), "--cache", str(cache), "-o", str(output)]
    )
    assert result.exit_code == 2, result.output
    assert _error_line(result.output).startswith(f"error: -o {output}: cannot write a file there")
    assert not cache.exists()


def test_prepare_makes_the_output_folder(tmp_path: Path, origin: Any) -> None:
    output = tmp_path / "new" / "report.json"
    result = runner.invoke(
        app,
        ["prepare", str(_rows(tmp_path, origin)), "--cache", str(tmp_path / "c"),
         "--source", _source(origin), "-o", str(output)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert output.exists()


# -- --dry-run -------------------------------------------------------------------------------------


def test_prepare_dry_run_says_what_it_would_clone_and_makes_nothing(
    tmp_path: Path, origin: Any
) -> None:
    cache = tmp_path / "new" / "c"
    output = tmp_path / "out" / "report.json"
    result = runner.invoke(
        app,
        ["prepare", "-i", str(_rows(tmp_path, origin)), "--cache", str(cache),
         "--source", _source(origin), "-o", str(output), "--dry-run"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    said = " ".join(result.stdout.split())
    assert "dry run: nothing was cloned" in said
    assert f"someone/proj: clone or update from {origin.path}" in said
    assert "2 commit(s) for 2 instance(s)" in said
    assert not (tmp_path / "new").exists()
    assert not (tmp_path / "out").exists()


def test_bench_dry_run_and_the_old_spelling_of_jobs(tmp_path: Path, origin: Any) -> None:
    cache = tmp_path / "c"
    base = ["bench", "--cache", str(cache), "--source", _source(origin), "--repo", "someone/proj"]
    result = runner.invoke(app, [*base, "--concurrency", "3", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "load test at 3 concurrent calls" in result.stdout
    assert not cache.exists()
    result = runner.invoke(app, [*base, "-j", "5", "--dry-run"])
    assert "load test at 5 concurrent calls" in result.stdout
    result = runner.invoke(app, [*base, "-j", "5", "--concurrency", "3", "--dry-run"])
    assert result.exit_code == 2, result.output
    assert "differ" in _error_line(result.output)
    result = runner.invoke(app, [*base, "-j", "0", "--dry-run"])
    assert result.exit_code == 2, result.output
    assert "--concurrency" not in runner.invoke(app, ["bench", "--help"]).output


# -- bench -----------------------------------------------------------------------------------------


def test_bench_bad_inputs_are_exit_2_before_any_work(tmp_path: Path) -> None:
    cache = tmp_path / "c"
    for argv, message in (
        (["--repo", "not a name"], "error: --repo: repository name 'not a name' is not of"),
        ([], f"error: no repositories in {cache}: pass --repo owner/name"),
        (["--repo", "a/b", "-i", str(tmp_path / "no.jsonl")], "error: -i/--instances"),
        (["--repo", "a/b", "-o", str(tmp_path)], f"error: -o {tmp_path}: cannot write"),
    ):
        result = runner.invoke(app, ["bench", "--cache", str(cache), *argv])
        assert result.exit_code == 2, (argv, result.output)
        assert isinstance(result.exception, SystemExit)
        assert _error_line(result.output).startswith(message)
        assert not cache.exists()


def test_bench_on_a_repository_it_cannot_clone_is_exit_1(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        ["bench", "--cache", str(tmp_path / "c"), "--source", str(tmp_path / "none" / "{name}"),
         "--repo", "a/b"],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)
    assert "no repository at" in _error_line(result.output)


# -- the tools and gc ------------------------------------------------------------------------------


def test_a_repository_name_without_a_cache_is_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["read", "README.md", "--repo", "someone/proj"])
    assert result.exit_code == 2, result.output
    assert "give --cache DIR" in _error_line(result.output)


def test_gc_refuses_what_is_not_a_folder_and_makes_no_cache(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for flag in ("--workdir", "--cache"):
        result = runner.invoke(app, ["gc", "--workdir", str(tmp_path / "w"), flag, str(blocker)])
        assert result.exit_code == 2, (flag, result.output)
        assert _error_line(result.output) == f"error: {flag} {blocker}: not a folder"
    missing = tmp_path / "no-cache"
    result = runner.invoke(app, ["gc", "--workdir", str(tmp_path / "w"), "--cache", str(missing)])
    assert result.exit_code == 0, result.output
    assert f"cache: nothing at {missing}" in " ".join(result.output.split())
    assert not missing.exists()


# -- square brackets in what is printed ------------------------------------------------------------


def test_skipped_rows_keep_their_square_brackets(tmp_path: Path, origin: Any) -> None:
    rows = _rows(tmp_path, origin)
    with rows.open("a") as f:
        f.write(json.dumps({"repo": "some[one]/proj", "base_commit": "abc"}) + "\n")
    result = runner.invoke(
        app, ["prepare", str(rows), "--cache", str(tmp_path / "c"), "--source", _source(origin)]
    )
    assert result.exit_code == 1, result.output  # the row is skipped, named, and counted
    assert "'some[one]/proj'" in " ".join(result.output.split())
    assert _error_line(result.output) == "error: 0 instance(s) failed, 1 row(s) skipped"
