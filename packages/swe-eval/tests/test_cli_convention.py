"""swe-eval and the toolkit's flag convention: --version, -i, -o checked before any work (and
gzipped or refused by its .gz name), --limit >= 0, a --repo filter that must match, files in the
wrong format; exit 2 for bad input, said in one `error:` line that rich did not cut."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from swe_eval import __version__
from swe_eval.cli import app
from typer.testing import CliRunner

runner = CliRunner()


def _patch(path: str) -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n"


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    row = {"repo": "o/r", "base_commit": "abc"}
    inst = _jsonl(
        tmp_path / "inst.jsonl",
        [{**row, "instance_id": f"o__r-{n}", "patch": _patch(f"m{n}.py")} for n in range(4)],
    )
    pred = _jsonl(
        tmp_path / "pred.jsonl",
        [{"instance_id": f"o__r-{n}", "files": [f"m{n}.py"], "scores": [1.0]} for n in range(4)],
    )
    (tmp_path / "a-file").write_text("")
    return {"inst": inst, "pred": pred, "tmp": tmp_path, "a-file": tmp_path / "a-file"}


def _error_line(output: str) -> str:
    """The one `error:` line; rich neither wrapped nor cut it."""
    (line,) = [x for x in output.splitlines() if x.startswith("error:")]
    return line


def test_version_flag() -> None:
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0
    assert res.stdout == f"swe-eval {__version__}\n"


def test_dash_i_and_instances_are_one_flag(files: dict[str, Path]) -> None:
    outs = [
        runner.invoke(app, ["retrieval", flag, str(files["inst"]), "-p", str(files["pred"]),
                            "-f", "csv", "--resamples", "0"]).stdout
        for flag in ("-i", "--instances")
    ]  # fmt: skip
    assert outs[0] == outs[1]
    assert ",4," in outs[0]


@pytest.mark.parametrize(
    "argv",
    [
        ["retrieval", "-i", "{inst}", "-p", "{pred}", "--limit", "-1"],
        ["predict", "-r", "bm25", "-i", "{inst}", "--cache", "{tmp}/c", "-o", "{tmp}/o.jsonl",
         "--limit", "-1"],
    ],
)  # fmt: skip
def test_a_negative_limit_is_refused(files: dict[str, Path], argv: list[str]) -> None:
    filled = [a.format(**{k: str(v) for k, v in files.items()}) for a in argv]
    res = runner.invoke(app, filled)
    assert res.exit_code == 2
    assert "Invalid value for '--limit'" in res.output
    assert not (files["tmp"] / "o.jsonl").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["retrieval", "-i", "{inst}", "-p", "{pred}"],
        ["cut", "-i", "{inst}", "-p", "{pred}", "--best"],
        ["convert", "locagent", "{pred}"],
        ["predict", "-r", "bm25", "-i", "{inst}", "--cache", "{tmp}/c"],
        ["plot", "-i", "{inst}", "-p", "{pred}"],
    ],
)
def test_an_unwritable_output_is_said_before_the_work(
    files: dict[str, Path], argv: list[str]
) -> None:
    filled = [a.format(**{k: str(v) for k, v in files.items()}) for a in argv]
    target = files["a-file"] / "out" / ("x.png" if argv[0] == "plot" else "x.jsonl")
    res = runner.invoke(app, [*filled, "-o", str(target)])
    assert res.exit_code == 2
    assert res.exception is None or isinstance(res.exception, SystemExit)  # not a traceback
    assert _error_line(res.stderr) == (
        f"error: cannot write -o {target}: {files['a-file']} is not a directory"
    )
    res = runner.invoke(app, [*filled, "-o", str(files["tmp"])])
    assert res.exit_code == 2
    assert _error_line(res.stderr) == f"error: cannot write -o {files['tmp']}: it is a directory"
    assert not (files["tmp"] / "c").exists()  # predict cloned nothing


def test_gz_outputs_are_gzipped_or_refused(files: dict[str, Path]) -> None:
    tmp = files["tmp"]
    table = tmp / "table.csv.gz"
    res = runner.invoke(app, ["retrieval", "-i", str(files["inst"]), "-p", str(files["pred"]),
                              "-f", "csv", "--resamples", "0", "-o", str(table)])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert gzip.decompress(table.read_bytes()).decode().startswith("system,")
    # predict appends as it goes: a .gz name is refused, for every retriever
    for kind in ("bm25", "lexical"):
        res = runner.invoke(app, ["predict", "-r", kind, "-i", str(files["inst"]), "--cache",
                                  str(tmp / "c"), "-o", str(tmp / "p.jsonl.gz")])  # fmt: skip
        assert res.exit_code == 2
        assert "appends to it as it goes; name a plain .jsonl file" in _error_line(res.stderr)
    res = runner.invoke(app, ["plot", "-i", str(files["inst"]), "-p", str(files["pred"]), "-o",
                              str(tmp / "p.png.gz")])  # fmt: skip
    assert res.exit_code == 2
    assert "name a file of one of the kinds .png, .svg" in _error_line(res.stderr)


def test_convert_of_a_file_in_another_format_exits_2(files: dict[str, Path]) -> None:
    out = files["tmp"] / "o.jsonl"
    res = runner.invoke(app, ["convert", "chronorepo", str(files["pred"]), "-o", str(out)])
    assert res.exit_code == 2
    assert _error_line(res.stderr) == (
        f"error: nothing converted from {files['pred']}: chronorepo wants rows with instance_id "
        "and a 'hybrid' list of [path, score] pairs; found 4 row(s) with the keys files, "
        f"instance_id, scores; e.g. {files['pred']}:1: no 'hybrid' ranking"
    )
    assert not out.exists()
    # a patch format reads a row without model_patch as an empty prediction: still no format
    res = runner.invoke(app, ["convert", "swe-agent", str(files["pred"]), "-o", str(out)])
    assert res.exit_code == 2
    assert "swe-agent wants SWE-bench prediction rows with instance_id and model_patch" in (
        _error_line(res.stderr)
    )
    # the format's fields in every row, and not one row that converts
    broken = _jsonl(files["tmp"] / "broken.jsonl", [{"instance_id": "a", "hybrid": ["x.py"]}])
    res = runner.invoke(app, ["convert", "chronorepo", str(broken), "-o", str(out)])
    assert res.exit_code == 2
    assert _error_line(res.stderr) == (
        f"error: nothing converted from {broken}: all 1 rows skipped, "
        f"e.g. {broken}:1: hybrid: expected [path, score] pairs"
    )
    empty = files["tmp"] / "empty.jsonl"
    empty.write_text("")
    res = runner.invoke(app, ["convert", "locagent", str(empty), "-o", str(out)])
    assert res.exit_code == 2
    assert _error_line(res.stderr).endswith("; found no rows")
    assert not out.exists()


def test_convert_counts_the_rows_it_skips(files: dict[str, Path]) -> None:
    src = _jsonl(
        files["tmp"] / "chrono.jsonl",
        [
            {"instance_id": "a", "hybrid": [["x.py", 0.9]]},
            {"instance_id": "b", "hybrid": ["y.py"]},
            {"instance_id": "c", "bm25": [["z.py", 0.1]]},
        ],
    )
    out = files["tmp"] / "o.jsonl"
    res = runner.invoke(app, ["convert", "chronorepo", str(src), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert [json.loads(x)["instance_id"] for x in out.read_text().splitlines()] == ["a"]
    lines = res.stderr.splitlines()
    assert f"wrote 1 predictions (0 empty) to {out}" in lines
    assert "skipped 2 of 3 rows (not converted):" in lines
    # the reason keeps its brackets: rich read "[path, score]" as a style tag and dropped it
    assert f"  {src}:2: hybrid: expected [path, score] pairs" in lines


def test_a_repo_filter_must_match_and_files_must_hold_rows(files: dict[str, Path]) -> None:
    base = ["retrieval", "-i", str(files["inst"]), "-p", str(files["pred"])]
    res = runner.invoke(app, [*base, "--repo", "o/x"])
    assert res.exit_code == 2
    assert _error_line(res.stderr) == (
        f"error: --repo o/x: no instance of this repository in {files['inst']}"
    )
    res = runner.invoke(app, [*base, "--exclude-repo", "o/r"])
    assert res.exit_code == 2
    assert "left (4 read); --exclude-repo or --limit leave none" in _error_line(res.stderr)
    bad = files["tmp"] / "bad.jsonl"
    bad.write_text("not json\n")
    res = runner.invoke(app, ["retrieval", "-i", str(files["inst"]), "-p", str(bad)])
    assert res.exit_code == 2
    assert _error_line(res.stderr).startswith(f"error: {bad}: no valid prediction (bad.jsonl) row")
    res = runner.invoke(app, ["cut", "-i", str(bad), "-p", str(files["pred"])])
    assert res.exit_code == 2
    assert _error_line(res.stderr).startswith(f"error: {bad}: no valid instance row (1 bad")


def test_predict_dry_run_and_an_empty_selection(files: dict[str, Path]) -> None:
    tmp = files["tmp"]
    out = tmp / "o.jsonl"
    base = ["predict", "-i", str(files["inst"]), "--cache", str(tmp / "c"), "-o", str(out)]
    res = runner.invoke(app, [*base, "-r", "bm25", "--dry-run"])
    assert res.exit_code == 0, res.output
    assert f"0 already done, 4 to do, 0 without base_commit -> {out}" in res.stderr
    assert not out.exists()
    assert not (tmp / "c").exists()
    # --exclude-repo of every repository: nothing runs (the batch runner read an empty
    # repository list as "all of them")
    res = runner.invoke(app, [*base, "-r", "lexical", "--exclude-repo", "o/r"])
    assert res.exit_code == 0, res.output
    assert "0 to do" in res.stderr
    assert not out.exists()


def test_predict_agent_checks_its_endpoint_first(files: dict[str, Path]) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    tmp = files["tmp"]
    res = runner.invoke(app, ["predict", "-r", "agent", "-i", str(files["inst"]), "--cache",
                              str(tmp / "c"), "-o", str(tmp / "o.jsonl"), "--base-url", url,
                              "--timeout", "5"])  # fmt: skip
    assert res.exit_code == 2
    assert _error_line(res.stderr).startswith(f"error: --base-url {url} cannot be reached: ")
    assert not (tmp / "c").exists()


def test_install_hints_keep_their_brackets(
    files: dict[str, Path], hide_modules: Callable[..., None]
) -> None:
    hide_modules("matplotlib", "sentence_transformers")  # as if the extras were not installed
    tmp = files["tmp"]
    res = runner.invoke(app, ["plot", "-i", str(files["inst"]), "-p", str(files["pred"]), "-o",
                              str(tmp / "p.png")])  # fmt: skip
    assert res.exit_code == 2
    assert _error_line(res.stderr) == (
        "error: matplotlib is not installed; install the 'plot' extra: pip install 'swe-eval[plot]'"
    )
    res = runner.invoke(app, ["predict", "-r", "dense", "-i", str(files["inst"]), "--cache",
                              str(tmp / "c"), "-o", str(tmp / "o.jsonl")])  # fmt: skip
    assert res.exit_code == 2  # said once, before any tree, not once per instance
    assert _error_line(res.stderr).endswith("pip install 'swe-eval[dense]'")
    assert not (tmp / "c").exists()


def test_predict_runs_the_batch_as_a_function_not_through_another_command(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import codegrep_model.cli

    def no_command(*args: object, **kwargs: object) -> None:
        raise AssertionError("predict called codegrep-model's typer command")

    monkeypatch.setattr(codegrep_model.cli, "batch", no_command)
    tmp = files["tmp"]
    out = tmp / "o.jsonl"
    res = runner.invoke(app, ["predict", "-r", "lexical", "-i", str(files["inst"]), "--cache",
                              str(tmp / "c"), "-o", str(out), "--dry-run"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert f"already done, 4 to run -> {out}, " in res.stderr.replace("\n", "")
    assert not out.exists()


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        ([], "error: give -r/--retriever"),
        (["-r", "bm25", "--policy", "lexical"], "error: -r bm25 ranks files itself"),
        (["-r", "lexical", "--policy", "lexical"], "error: -r lexical is a policy already"),
        (["-r", "agent"], "error: -r agent needs --policy SPEC"),
        (["--policy", "bm25"], "error: --policy: policy 'bm25': not one of"),
        (["--model", "m"], "error: -r agent needs --policy SPEC"),
    ],
)
def test_predict_reads_the_policy_as_every_command_does(
    files: dict[str, Path], flags: list[str], says: str
) -> None:
    tmp = files["tmp"]
    argv = ["predict", "-i", str(files["inst"]), "--cache", str(tmp / "c"), "-o",
            str(tmp / "o.jsonl"), *flags]  # fmt: skip
    res = runner.invoke(app, argv)
    assert res.exit_code == 2, res.output
    assert _error_line(res.stderr).startswith(says)
    assert not (tmp / "o.jsonl").exists()


def test_predict_policy_alone_is_the_agent(files: dict[str, Path]) -> None:
    """`--policy SPEC` without -r runs the agent retriever; the served spec is checked first."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    tmp = files["tmp"]
    res = runner.invoke(app, ["predict", "-i", str(files["inst"]), "--cache", str(tmp / "c"),
                              "-o", str(tmp / "o.jsonl"), "--policy", f"openai:m@{url}",
                              "--timeout", "5"])  # fmt: skip
    assert res.exit_code == 2
    assert _error_line(res.stderr).startswith(f"error: --base-url {url} cannot be reached: ")
