"""`launch`: stages in order through a runner, skipping valid outputs, resuming GRPO."""

from __future__ import annotations

import json
import shlex
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from train_launcher import Event, NodeInfo, PlanError, StageFailed, launch, load_config
from train_launcher.cli import app
from train_launcher.launch import SubprocessRunner, _lock
from train_launcher.outputs import latest_checkpoint
from train_launcher.plan import NodeCommand
from typer.testing import CliRunner

ALL = [
    "catm mine",
    "worktree-sandbox prepare",
    "worktree-sandbox prepare",
    "codegrep-model dataset",
    f"{Path(sys.executable).name} -m",
    f"{Path(sys.executable).name} -m",
    f"{Path(sys.executable).name} -m",  # the capped validation sample (train.val_limit)
    "swift rlhf",
    "swift deploy",
    "swe-eval predict",
    "swe-eval retrieval",
    "swift deploy",
    "swe-eval predict",
    "swe-eval retrieval",
    "swift deploy",
    "swe-eval predict",
    "swe-eval retrieval",
    "swe-eval retrieval",
]


def _launch(path: Path, runner: Any, node: NodeInfo, **kw: Any) -> tuple[Any, list[Event]]:
    events: list[Event] = []
    result = launch(
        load_config(path),
        path,
        node=node,
        runner=runner,
        on_event=events.append,
        sleep=lambda s: None,
        **kw,
    )
    return result, events


def test_every_stage_runs_in_order_with_logs_and_state(
    cpu_config: Callable[..., Path], fake_runner: Any, no_gpu: NodeInfo
) -> None:
    path = cpu_config()
    result, events = _launch(path, fake_runner, no_gpu)
    assert fake_runner.tools() == ALL
    assert result.ran == [
        "labels",
        "prepare",
        "datasets",
        "grpo",
        "eval:checkpoint-2",
        "eval:checkpoint-4",
        "eval:checkpoint-6",
        "eval-summary",
    ]
    assert result.skipped == []
    out = load_config(path).output_dir
    state = json.loads((out / "launch-state.json").read_text())["stages"]
    assert {v["status"] for v in state.values()} == {"done"}
    assert (out / "logs" / "grpo.log").read_text().startswith("$ ")
    assert (out / "plan.json").is_file()
    assert (out / "stamps" / "grpo.json").is_file()
    # the split instance files were written by the real subset module
    assert [
        json.loads(x)["instance_id"] for x in (out / "data" / "val-instances.jsonl").open()
    ] == ["o__lib-3"]
    # each evaluation server was stopped when its stage ended
    assert fake_runner.services
    assert all(s.stopped for s in fake_runner.services)
    assert [e.kind for e in events if e.stage == "grpo"] == ["start", "done"]


def test_a_second_launch_skips_every_valid_stage(
    cpu_config: Callable[..., Path], make_runner: Any, no_gpu: NodeInfo
) -> None:
    path = cpu_config()
    _launch(path, make_runner(), no_gpu)
    again = make_runner()
    result, events = _launch(path, again, no_gpu)
    assert again.calls == []
    assert result.ran == []
    assert len(result.skipped) == 8
    assert {e.kind for e in events} == {"skip"}


def test_an_invalid_output_is_made_again(
    cpu_config: Callable[..., Path], make_runner: Any, no_gpu: NodeInfo
) -> None:
    path = cpu_config()
    _launch(path, make_runner(), no_gpu)
    out = load_config(path).output_dir
    # a dataset cut short: one row fewer than its report says
    (out / "data" / "grpo" / "train.jsonl").write_text('{"instance_id": "o__shop-1"}\n')
    (out / "labels" / "labels.jsonl").write_text('{"instance_id": "x"}\n{broken\n')
    again = make_runner()
    result, _ = _launch(path, again, no_gpu)
    assert result.ran == ["labels", "datasets"]
    assert "prepare" in result.skipped
    assert "grpo" in result.skipped


def test_a_killed_grpo_resumes_from_its_last_complete_checkpoint(
    cpu_config: Callable[..., Path], make_runner: Any, no_gpu: NodeInfo
) -> None:
    path = cpu_config()
    out = load_config(path).output_dir
    killed = make_runner(kill_grpo_after=1)
    with pytest.raises(KeyboardInterrupt):
        _launch(path, killed, no_gpu)
    state = json.loads((out / "launch-state.json").read_text())["stages"]
    assert state["grpo"]["status"] == "interrupted"
    assert latest_checkpoint(out / "grpo") == out / "grpo" / "checkpoint-2"
    assert (out / "grpo" / "checkpoint-4").is_dir()  # cut short: no trainer_state.json
    resumed = make_runner()
    result, events = _launch(path, resumed, no_gpu)
    assert result.skipped[:3] == ["labels", "prepare", "datasets"]
    (grpo,) = [c for c in resumed.calls if c.argv[:2] == ("swift", "rlhf")]
    i = grpo.argv.index("--resume_from_checkpoint")
    assert grpo.argv[i + 1] == str(out / "grpo" / "checkpoint-2")
    start = next(e for e in events if e.stage == "grpo" and e.kind == "start")
    assert "resuming from" in start.message
    assert result.ran[0] == "grpo"
    assert "eval-summary" in result.ran


def test_the_latest_checkpoint_is_the_highest_complete_step(tmp_path: Path) -> None:
    for step, complete in ((9, True), (10, True), (100, True), (120, False)):
        ckpt = tmp_path / f"checkpoint-{step}"
        ckpt.mkdir()
        (ckpt / "adapter_model.safetensors").write_bytes(b"w")
        if complete:
            (ckpt / "trainer_state.json").write_text("{}")
    (tmp_path / "checkpoint-x").mkdir()
    (tmp_path / "checkpoint-200").write_text("a file, not a folder")
    assert latest_checkpoint(tmp_path) == tmp_path / "checkpoint-100"
    assert latest_checkpoint(tmp_path / "nothing") is None


def test_a_failing_stage_stops_the_launch(
    cpu_config: Callable[..., Path], make_runner: Any, no_gpu: NodeInfo
) -> None:
    path = cpu_config()
    runner = make_runner(fail={"grpo": 3})  # `codegrep-model dataset grpo` exits 3
    with pytest.raises(StageFailed) as info:
        _launch(path, runner, no_gpu)
    assert (info.value.stage, info.value.returncode) == ("datasets", 3)
    assert runner.tools()[-1] == "codegrep-model dataset"
    out = load_config(path).output_dir
    state = json.loads((out / "launch-state.json").read_text())["stages"]
    assert state["datasets"] == {**state["datasets"], "status": "failed", "returncode": 3}
    assert "grpo" not in state


def test_only_and_from_stage_select_stages(
    cpu_config: Callable[..., Path], make_runner: Any, no_gpu: NodeInfo
) -> None:
    path = cpu_config()
    first = make_runner()
    result, _ = _launch(path, first, no_gpu, only=["labels", "prepare"])
    assert result.ran == ["labels", "prepare"]
    with pytest.raises(PlanError, match="reads the outputs of datasets"):
        _launch(path, make_runner(), no_gpu, only=["grpo"])
    result, _ = _launch(path, make_runner(), no_gpu, from_stage="datasets")
    assert result.ran[:2] == ["datasets", "grpo"]
    with pytest.raises(PlanError, match="no such stage"):
        _launch(path, make_runner(), no_gpu, from_stage="training")
    with pytest.raises(PlanError, match="not a stage of this run"):
        _launch(path, make_runner(), no_gpu, only=["sft"])


def test_errors_found_by_the_checks_stop_it_unless_forced(
    cpu_config: Callable[..., Path], make_runner: Any, no_gpu: NodeInfo
) -> None:
    path = cpu_config()
    (path.parent / "inputs" / "heldout.jsonl").unlink()
    with pytest.raises(PlanError, match=r"evaluation\.instances"):
        _launch(path, make_runner(), no_gpu)
    result, _ = _launch(path, make_runner(), no_gpu, force=True, only=["labels"])
    assert result.ran == ["labels"]


def test_one_launch_per_output_folder(
    cpu_config: Callable[..., Path], make_runner: Any, no_gpu: NodeInfo
) -> None:
    path = cpu_config()
    with (
        _lock(load_config(path).output_dir / ".launch.lock"),
        pytest.raises(PlanError, match="another launch"),
    ):
        _launch(path, make_runner(), no_gpu)


def test_a_second_node_waits_for_node_0_then_trains(
    cpu_config: Callable[..., Path], make_runner: Any, no_gpu: NodeInfo
) -> None:
    path = cpu_config(
        cluster={"device": "cuda", "nodes": 2, "gpus_per_node": 2, "master_addr": "10.0.0.1"},
        rollout={"engine": "vllm", "gpu_memory_utilization": 0.4},
        evaluation={"server": "vllm"},
        train={"deepspeed": "zero3"},
    )
    clock = iter(range(0, 10**6, 40))
    with pytest.raises(PlanError, match="datasets was not ready within 100 s"):
        _launch(
            path,
            make_runner(),
            no_gpu,
            node_rank=1,
            wait_timeout=100,
            clock=lambda: float(next(clock)),
        )
    _launch(path, make_runner(), no_gpu, node_rank=0, only=["labels", "prepare", "datasets"])
    second = make_runner()
    result, events = _launch(path, second, no_gpu, node_rank=1)
    assert result.ran == ["grpo"]
    (grpo,) = second.calls
    assert grpo.env["NODE_RANK"] == "1"
    assert grpo.env["NNODES"] == "2"
    assert grpo.env["MASTER_ADDR"] == "10.0.0.1"
    assert any(e.kind == "elsewhere" and e.stage == "labels" for e in events)


def test_the_dry_run_prints_every_command_and_writes_nothing(
    cpu_config: Callable[..., Path],
) -> None:
    path = cpu_config(sft={"enabled": True})
    result = CliRunner().invoke(app, ["launch", "--config", str(path), "--dry-run"])
    assert result.exit_code == 0, result.output
    text = result.stdout.replace(str(Path(sys.executable).parent) + "/", "")
    for stage in (
        "labels",
        "prepare",
        "datasets",
        "sft-data",
        "sft",
        "grpo",
        "eval:checkpoint-N",
        "eval-summary",
    ):
        assert f"] {stage}: would run" in text, stage
    for command in (
        "$ catm mine",
        "$ worktree-sandbox prepare",
        "$ codegrep-model dataset grpo",
        "-m train_launcher.subset",
        "$ codegrep-model batch",
        "$ codegrep-model dataset sft",
        "swift sft",
        "swift rlhf",
        "swift deploy",
        "$ swe-eval predict",
        "$ swe-eval retrieval",
    ):
        assert command in text, command
    assert "CUDA_VISIBLE_DEVICES='' \\" in text
    assert "dry run: 8 stage(s) would run, 0 skipped" in text
    assert not (path.parent / "out").exists()


def test_a_dry_run_with_missing_inputs_prints_the_commands_and_exits_2(
    cpu_config: Callable[..., Path],
) -> None:
    path = cpu_config()
    (path.parent / "inputs" / "instances.jsonl").unlink()
    result = CliRunner().invoke(app, ["launch", "--config", str(path), "--dry-run"])
    assert result.exit_code == 2
    assert "swift rlhf" in result.stdout
    assert "error: inputs: data.instances:" in result.stderr
    assert "warning: test only" not in result.stderr


def test_bad_launch_input_exits_2(cpu_config: Callable[..., Path]) -> None:
    path = cpu_config()
    for args in (["--only", "bogus"], ["--from-stage", "sft"], ["--node-rank", "-1"]):
        result = CliRunner().invoke(app, ["launch", "--config", str(path), *args])
        assert result.exit_code == 2, (args, result.output)
    result = CliRunner().invoke(app, ["launch", "--config", str(path.parent / "nope.yaml")])
    assert result.exit_code == 2
    assert "cannot read the config" in result.stderr


def test_version() -> None:
    from train_launcher import __version__

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"train-launcher {__version__}"


# --- the real runner ----------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_subprocess_runner_logs_and_returns_the_exit_status(tmp_path: Path) -> None:
    runner = SubprocessRunner()
    log = tmp_path / "logs" / "x.log"
    code = "import os, sys; print('hello', os.environ['GREETING']); sys.exit(4)"
    rc = runner.run(NodeCommand(argv=(sys.executable, "-c", code), env={"GREETING": "node"}), log)
    assert rc == 4
    text = log.read_text()
    assert "==== " in text
    assert "GREETING=node" in text
    assert "hello node" in text
    assert runner.run(NodeCommand(argv=(str(tmp_path / "no-such-program"),)), log) == 127


def test_the_subprocess_runner_starts_waits_for_and_stops_a_server(tmp_path: Path) -> None:
    from train_launcher._processes import _wait_ready

    port = _free_port()
    command = NodeCommand(
        argv=(sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"),
        background=True,
        ready_url=f"http://127.0.0.1:{port}/",
        ready_timeout=30,
    )
    import time

    service = SubprocessRunner().start(command, tmp_path / "server.log")
    try:
        _wait_ready(service, command, sleep=lambda s: time.sleep(0.1), clock=time.monotonic)
        assert service.ready()
        assert service.alive()
    finally:
        service.stop()
    assert not service.alive()


def test_stopping_a_server_takes_down_children_its_launcher_leaves(tmp_path: Path) -> None:
    # `swift deploy` is a launcher: on SIGTERM it exits, while the server it started may not.
    # The stop must not end when the launcher does, but when the whole group is gone.
    from train_launcher._processes import _group_alive, _kill_group

    pid_file = tmp_path / "child.pid"
    child = (
        "import os, signal, time, sys; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    )
    launcher = f"{sys.executable} -c {shlex.quote(child)} & wait"
    command = NodeCommand(argv=("sh", "-c", launcher), background=True)
    service = SubprocessRunner().start(command, tmp_path / "server.log")
    import time

    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline, "the child never started"
        time.sleep(0.05)
    child_pid = int(pid_file.read_text())
    assert service.alive()
    # with a short grace: the child ignores SIGTERM, so it takes the SIGKILL after it
    proc = service.proc  # type: ignore[attr-defined]
    _kill_group(proc, grace=1.0)
    deadline = time.monotonic() + 10  # the orphan's zombie is init's to reap
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _group_alive(proc.pid)
    assert not service.alive()
    assert not Path(f"/proc/{child_pid}").exists()


def test_links_planted_in_the_output_folder_are_not_written_through(
    cpu_config: Callable[..., Path], fake_runner: Any, no_gpu: NodeInfo, tmp_path: Path
) -> None:
    """The state file, the plan, a stage's stamp and the lock were written with a plain open: a
    link at one of their names made the launch overwrite (or create) the file it points to."""
    path = cpu_config()
    out = load_config(path).output_dir
    victims = tmp_path / "outside"
    victims.mkdir()
    planted = ["launch-state.json", "plan.json", ".launch.lock", "stamps/grpo.json"]
    for name in planted:
        victim = victims / name.replace("/", "-")
        victim.write_text("keep me\n")
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).symlink_to(victim)
    # A link the launch must read (the state, a stamp) or lock stops it, naming the link; the
    # user removes it and runs again. A link it only writes (the plan) is replaced, not followed.
    refused, messages = [], []
    for _ in planted:
        try:
            result, _ = _launch(path, fake_runner, no_gpu)
        except PlanError as exc:
            messages.append(str(exc))
            named = [n for n in planted if str(out / n) in str(exc)]
            refused += named
            if len(named) != 1:
                break
            (out / named[0]).unlink()
            continue
        break
    assert len(refused) == len(messages), messages
    assert all("link" in m for m in messages), messages
    assert ".launch.lock" in refused
    assert "launch-state.json" in refused
    assert "grpo" in result.ran
    assert all(v.read_text() == "keep me\n" for v in victims.iterdir())
    for name in ("launch-state.json", "plan.json", "stamps/grpo.json"):
        assert not (out / name).is_symlink()
        assert (out / name).read_text() != "keep me\n"


def test_the_subprocess_runner_refuses_a_log_that_is_a_link_or_a_folder_out(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    root = tmp_path / "run"
    (root / "logs").mkdir(parents=True)
    (root / "logs" / "x.log").symlink_to(victim)
    runner = SubprocessRunner(within=root)
    command = NodeCommand(argv=(sys.executable, "-c", "print('hello')"))
    with pytest.raises(OSError, match="link"):
        runner.run(command, root / "logs" / "x.log")
    (root / "elsewhere").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(OSError, match="outside"):
        runner.run(command, root / "elsewhere" / "victim.txt")
    assert victim.read_text() == "keep me\n"


def test_an_empty_node_goes_from_the_fetch_to_grpo(
    cpu_config: Callable[..., Path], fake_runner: Any, no_gpu: NodeInfo, tmp_path: Path
) -> None:
    """Nothing fetched the inputs the plan named, so `launch` stopped on them (exit 2)."""
    sha = "a" * 40
    path = cpu_config(
        data={
            "instances": "data/instances.jsonl",
            "trajectories": ["data/trajectories.jsonl"],
            "fetch": [
                {"output": f"data/{name}.jsonl", "repo_id": f"org/{name}", "revision": sha,
                 "source": f"file://{tmp_path / 'mirror'}"}
                for name in ("instances", "trajectories", "heldout")
            ],
        },
        evaluation={"instances": "data/heldout.jsonl"},
    )  # fmt: skip
    inputs = tmp_path / "inputs"
    for name in ("instances", "trajectories", "heldout"):
        mirror = tmp_path / "mirror" / "org" / name / sha
        mirror.mkdir(parents=True)
        (inputs / f"{name}.jsonl").rename(mirror / "train.jsonl")
    config = load_config(path)
    assert not config.data.instances.exists()
    result, _ = _launch(path, fake_runner, no_gpu)
    assert result.ran[:4] == ["fetch", "labels", "prepare", "datasets"]
    assert "grpo" in result.ran
    assert config.data.instances.read_text().count("\n") == 3
