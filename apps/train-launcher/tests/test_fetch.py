"""The fetch stage: inputs from a dataset hub at a pinned revision, tested with a local mirror
(the same command, the same sidecar, the same check; only the row source differs)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from train_launcher import NodeInfo, build_plan, load_config
from train_launcher.config import expand_env
from train_launcher.errors import ConfigError
from train_launcher.fetch import main as fetch_main
from train_launcher.fetch import sidecar
from train_launcher.plan import stage_validity


def instance(i: int) -> dict[str, object]:
    return {"instance_id": f"o__shop-{i}", "repo": "o/shop", "base_commit": "0" * 40}


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


CONFIGS = Path(__file__).resolve().parents[1] / "configs"
SHA = "0123456789abcdef0123456789abcdef01234567"


def _mirror(
    root: Path, repo_id: str, revision: str, split: str, rows: list[dict[str, object]]
) -> Path:
    return write_jsonl(root / repo_id / revision / f"{split}.jsonl", rows)


def test_fetch_writes_the_rows_and_a_sidecar_from_a_local_mirror(tmp_path: Path) -> None:
    rows = [instance(i) for i in range(3)]
    _mirror(tmp_path / "mirror", "org/set", SHA, "train", rows)
    out = tmp_path / "data" / "instances.jsonl"
    argv = ["--repo-id", "org/set", "--revision", SHA, "--source"]
    rc = fetch_main([*argv, f"file://{tmp_path / 'mirror'}", "-o", str(out)])
    assert rc == 0
    assert [json.loads(x) for x in out.read_text().splitlines()] == rows
    side = json.loads(sidecar(out).read_text())
    assert (side["repo_id"], side["revision"], side["commit"], side["rows"]) == (
        "org/set",
        SHA,
        SHA,
        3,
    )


def test_fetch_of_an_unknown_revision_or_a_bad_name_is_exit_2(tmp_path: Path) -> None:
    _mirror(tmp_path / "m", "org/set", SHA, "train", [instance(0)])
    out = tmp_path / "o.jsonl"
    other = "f" * 40
    src = ["--source", str(tmp_path / "m"), "-o", str(out)]
    assert fetch_main(["--repo-id", "org/set", "--revision", other, *src]) == 2
    assert fetch_main(["--repo-id", "../x", "--revision", SHA, *src]) == 2
    assert not out.exists()


def test_fetch_streams_up_to_the_limit_and_replaces_a_planted_link(tmp_path: Path) -> None:
    _mirror(tmp_path / "m", "org/set", SHA, "train", [instance(i) for i in range(5)])
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    out = tmp_path / "data" / "o.jsonl"
    out.parent.mkdir()
    out.symlink_to(victim)
    src = ["--source", str(tmp_path / "m"), "-o", str(out)]
    assert fetch_main(["--repo-id", "org/set", "--revision", SHA, "--limit", "2", *src]) == 0
    assert victim.read_text() == "keep me\n"
    assert not out.is_symlink()
    assert len(out.read_text().splitlines()) == 2
    assert json.loads(sidecar(out).read_text())["rows"] == 2
    assert not out.with_name("o.jsonl.part").exists()


@pytest.mark.parametrize(
    "data", [b"not gzip", gzip.compress(b"\xff\xfe\n"), gzip.compress(b"[1]\n"), b"\x1f\x8b"]
)
def test_a_hostile_gzip_split_is_exit_2_not_a_traceback(tmp_path: Path, data: bytes) -> None:
    folder = tmp_path / "m" / "org" / "set" / SHA
    folder.mkdir(parents=True)
    (folder / "train.jsonl.gz").write_bytes(data)
    out = tmp_path / "o.jsonl"
    argv = ["--repo-id", "org/set", "--revision", SHA, "--source", str(tmp_path / "m")]
    assert fetch_main([*argv, "-o", str(out)]) == 2
    assert not out.exists()


def test_the_paper_plan_on_an_empty_node_names_the_fetch_stage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, b200_node: NodeInfo
) -> None:
    # Before the fetch stage, `plan` stopped on "data.instances: ... does not exist" (exit 2).
    monkeypatch.setenv("CODEGREP_HOME", str(tmp_path / "home"))
    path = CONFIGS / "paper-8xb200.yaml"
    config = load_config(path)
    assert config.output_dir == tmp_path / "home" / "runs" / "paper-8xb200"
    plan = build_plan(config, path, node=b200_node)
    assert plan.stages[0].name == "fetch"
    assert plan.errors == []
    fetched = {Path(c.argv[c.argv.index("-o") + 1]) for c in plan.stage("fetch").commands}
    assert {config.data.instances, *config.data.trajectories} <= fetched
    assert config.evaluation.instances in fetched
    assert plan.stage("labels").requires == ("fetch",)


def test_the_fetch_stage_runs_and_its_check_holds(tmp_path: Path, b200_node: NodeInfo) -> None:
    mirror = tmp_path / "mirror"
    _mirror(mirror, "org/set", SHA, "train", [instance(i) for i in range(2)])
    path = tmp_path / "run.yaml"
    path.write_text(
        "output_dir: out\ndata:\n  instances: data/i.jsonl\n  fetch:\n"
        f"    - {{output: data/i.jsonl, repo_id: org/set, revision: '{SHA}', source: {mirror}}}\n"
    )
    config = load_config(path)
    plan = build_plan(config, path, node=b200_node)
    stage = plan.stage("fetch")
    assert not stage_validity(stage, config).ok
    (command,) = stage.commands
    done = subprocess.run(command.argv, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert stage_validity(stage, config).ok
    # another revision asked for: the file on disk no longer counts
    path.write_text(path.read_text().replace(SHA, "e" * 40))
    other = load_config(path)
    assert not stage_validity(build_plan(other, path, node=b200_node).stage("fetch"), other).ok


def test_a_fetch_output_nothing_reads_is_not_fetched(tmp_path: Path, b200_node: NodeInfo) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(
        "output_dir: out\ndata:\n  instances: i.jsonl\n  fetch:\n"
        "    - {output: other.jsonl, repo_id: org/set, revision: main}\n"
    )
    config = load_config(path)
    plan = build_plan(config, path, node=b200_node)
    assert "fetch" not in [s.name for s in plan.stages]
    assert any("org/set is not fetched" in f.message for f in plan.findings)
    assert any("i.jsonl does not exist" in f.message for f in plan.errors)


def test_base_dir_reads_the_environment_and_never_resolves_to_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert expand_env("${A:-~/x}/y", {}) == ("~/x/y", None)
    assert expand_env("${A:-~/x}", {"A": "/s"}) == ("/s", None)
    assert expand_env("${A}", {}) == ("", "A")
    # the old paper config's `base_dir: ../../..` from a container's /workspace was `/`
    path = tmp_path / "run.yaml"
    path.write_text("base_dir: /\noutput_dir: runs\ndata:\n  instances: i.jsonl\n")
    with pytest.raises(ConfigError, match="file system's root"):
        load_config(path)
    monkeypatch.delenv("CODEGREP_NOPE", raising=False)
    path.write_text("base_dir: ${CODEGREP_NOPE}\noutput_dir: runs\ndata:\n  instances: i.jsonl\n")
    with pytest.raises(ConfigError, match="CODEGREP_NOPE"):
        load_config(path)


def test_python_m_fetch_is_the_stage_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "train_launcher.fetch", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    assert "--revision" in done.stdout
