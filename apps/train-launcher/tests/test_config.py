"""The run config: the paper's defaults, path resolution, and errors that name file, line, field."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from train_launcher import ConfigError, load_config
from train_launcher.cli import app
from typer.testing import CliRunner

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
SHIPPED = sorted(CONFIGS.glob("*.yaml"))


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return path


def _problems(path: Path, *overrides: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(path, overrides)
    return info.value.lines()


def test_three_configs_are_shipped() -> None:
    assert {p.name for p in SHIPPED} == {"paper-8xb200.yaml", "single-gpu.yaml", "cpu-smoke.yaml"}


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_configs_validate(path: Path) -> None:
    config = load_config(path)
    assert config.output_dir.is_absolute()
    assert config.data.instances.is_absolute()


def test_the_paper_config_is_the_papers_run() -> None:
    c = load_config(CONFIGS / "paper-8xb200.yaml")
    assert c.model.path == "Qwen/Qwen3-14B"
    assert c.lora.tuner == "lora"
    assert c.train.offload_optimizer is True
    assert (c.rollout.engine, c.rollout.mode) == ("vllm", "colocate")
    assert (c.cluster.nodes, c.cluster.gpus_per_node, c.cluster.gpu) == (1, 8, "B200")
    assert c.train.max_steps == 2000
    assert c.train.max_turns == 4
    assert c.train.reward == "v3"
    assert c.train.early_stopping is not None


def test_defaults_are_the_papers_run(tmp_path: Path) -> None:
    path = _write(tmp_path, "output_dir: out\ndata:\n  instances: i.jsonl\n")
    c = load_config(path)
    assert c.model.path == "Qwen/Qwen3-14B"
    assert (c.lora.tuner, c.lora.rank, c.lora.alpha) == ("lora", 32, 64)
    assert c.train.offload_optimizer
    assert c.rollout.mode == "colocate"
    assert c.rollout.gpu_memory_utilization == pytest.approx(0.45)
    assert (c.cluster.gpus_per_node, c.cluster.nodes) == (8, 1)
    assert (c.train.num_generations, c.train.max_turns, c.train.max_steps) == (8, 4, 2000)
    assert (c.train.save_steps, c.train.eval_steps) == (50, 50)
    assert c.train.early_stopping is not None
    assert c.train.early_stopping.patience == 5
    assert c.train.learning_rate == pytest.approx(1e-5)
    assert c.train.reward == "v3"
    assert c.seed == 42


def test_relative_paths_start_from_the_config_or_base_dir(tmp_path: Path) -> None:
    text = (
        "output_dir: out\n"
        "model: {path: ./models/tiny}\n"
        "data: {instances: i.jsonl, source: 'mirrors/{owner}+{name}'}\n"
    )
    c = load_config(_write(tmp_path, text))
    assert c.output_dir == tmp_path / "out"
    assert c.data.instances == tmp_path / "i.jsonl"
    assert c.data.cache == tmp_path / "cache"
    assert c.data.source == str(tmp_path / "mirrors/{owner}+{name}")
    assert c.model.path == str(tmp_path / "models" / "tiny")
    assert c.model.is_local
    moved = load_config(_write(tmp_path, "base_dir: ../elsewhere\n" + text))
    assert moved.output_dir == tmp_path.parent / "elsewhere" / "out"
    assert moved.base_dir == tmp_path.parent / "elsewhere"


def test_a_hub_model_id_and_a_url_source_stay_as_they_are(tmp_path: Path) -> None:
    text = "output_dir: o\nmodel: {path: Qwen/Qwen3-8B}\ndata: {instances: i.jsonl}\n"
    c = load_config(_write(tmp_path, text))
    assert c.model.path == "Qwen/Qwen3-8B"
    assert not c.model.is_local
    assert c.data.source == "https://github.com/{repo}.git"


def test_an_unknown_field_names_file_line_and_the_closest_name(tmp_path: Path) -> None:
    path = _write(
        tmp_path, "output_dir: o\ndata: {instances: i.jsonl}\ntrain:\n  num_generation: 8\n"
    )
    (line,) = _problems(path)
    assert line.startswith(f"{path}:4: train.num_generation: unknown field")
    assert "did you mean 'num_generations'?" in line


def test_every_bad_field_is_named_with_its_line(tmp_path: Path) -> None:
    text = (
        "output_dir: o\n"
        "data:\n"
        "  instances: i.jsonl\n"
        "lora:\n"
        "  rank: 0\n"
        "rollout:\n"
        "  mode: elsewhere\n"
        "  gpu_memory_utilization: 1.5\n"
    )
    lines = _problems(_write(tmp_path, text))
    assert any(":5: lora.rank: Input should be greater than or equal to 1" in x for x in lines)
    assert any(":7: rollout.mode:" in x and "'elsewhere'" in x for x in lines)
    assert any(":8: rollout.gpu_memory_utilization:" in x for x in lines)
    assert len(lines) == 3


def test_a_missing_section_is_named(tmp_path: Path) -> None:
    (line,) = _problems(_write(tmp_path, "output_dir: o\n"))
    assert line.endswith("data: required, and missing")


def test_an_unknown_reward_lists_the_known_ones(tmp_path: Path) -> None:
    path = _write(tmp_path, "output_dir: o\ndata: {instances: i}\ntrain: {reward: v9}\n")
    (line,) = _problems(path)
    assert "train.reward: unknown reward 'v9'" in line
    assert "codegrep_v3" in line
    assert "v3" in line


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ("cluster: {device: cpu, gpus_per_node: 0}\n", "rollout.engine"),
        ("train: {num_generations: 5}\n", "train.num_generations"),
        ("rollout: {mode: server, server: {gpus: 8}}\n", "rollout.server.gpus"),
        ("data: {instances: i, labels: l.jsonl, trajectories: [t.jsonl]}\n", "data.labels"),
        ("cluster: {device: cpu, gpus_per_node: 0}\nrollout: {engine: none}\n", "train.deepspeed"),
    ],
    ids=[
        "cpu-with-vllm",
        "batch-vs-generations",
        "server-takes-all-gpus",
        "labels-and-trajectories",
        "cpu-with-deepspeed",
    ],
)
def test_fields_that_contradict_each_other(tmp_path: Path, extra: str, field: str) -> None:
    base = "output_dir: o\n" + ("" if extra.startswith("data:") else "data: {instances: i}\n")
    lines = _problems(_write(tmp_path, base + extra))
    assert any(f": {field}: " in x for x in lines), lines


def test_not_yaml_not_a_mapping_and_unreadable(tmp_path: Path) -> None:
    (line,) = _problems(_write(tmp_path, "output_dir: [unclosed\n"))
    assert "not YAML" in line
    assert str(tmp_path) in line
    (line,) = _problems(_write(tmp_path, "- a\n- b\n"))
    assert "must be a mapping" in line
    (line,) = _problems(tmp_path / "missing.yaml")
    assert "cannot read the config" in line


def test_overrides_set_fields_as_yaml(tmp_path: Path) -> None:
    path = _write(tmp_path, "output_dir: o\ndata: {instances: i}\n")
    c = load_config(path, ["train.max_steps=10", "data.val_repos=[a/b, c/d]", "lora.rank=8"])
    assert c.train.max_steps == 10
    assert c.data.val_repos == ("a/b", "c/d")
    assert c.lora.rank == 8
    lines = _problems(path, "train.max_steps=0", "nonsense")
    assert any("--set: 'nonsense' is not KEY=VALUE" in x for x in lines)
    # a field set on the command line has no line in the file
    assert any(x.startswith(f"{path}: train.max_steps:") for x in lines)


def test_the_monitor_section_is_passed_through(tmp_path: Path) -> None:
    text = "output_dir: o\ndata: {instances: i}\nmonitor:\n  kl_max: 0.2\n  anything: [1, 2]\n"
    c = load_config(_write(tmp_path, text))
    assert c.monitor == {"kl_max": 0.2, "anything": [1, 2]}


def test_the_cli_exits_2_naming_file_line_and_field(tmp_path: Path) -> None:
    path = _write(tmp_path, "output_dir: o\ndata: {instances: i}\ntrain:\n  max_turns: -1\n")
    for command in ("plan", "launch"):
        result = CliRunner().invoke(app, [command, "--config", str(path)])
        assert result.exit_code == 2, result.output
        assert f"error: {path}:4: train.max_turns:" in result.stderr


def test_yaml_the_config_dumps_reads_back(cpu_config: Callable[..., Path]) -> None:
    # the fixture's own file is a valid config (the other tests build on it)
    c = load_config(cpu_config())
    assert c.cluster.device == "cpu"
    assert yaml.safe_load(cpu_config().read_text())["rollout"] == {"engine": "none"}


INF, NAN = float("inf"), float("nan")


@pytest.mark.parametrize(
    ("sections", "field"),
    [
        ({"train": {"temperature": INF}}, "train.temperature"),
        ({"train": {"temperature": NAN}}, "train.temperature"),
        ({"train": {"learning_rate": INF}}, "train.learning_rate"),
        ({"train": {"beta": INF}}, "train.beta"),
        ({"evaluation": {"timeout": INF}}, "evaluation.timeout"),
        ({"evaluation": {"ready_timeout": INF}}, "evaluation.ready_timeout"),
        ({"rollout": {"server": {"timeout": INF}}}, "rollout.server.timeout"),
        ({"mining": {"timeout": NAN}}, "mining.timeout"),
        ({"sft": {"teacher_timeout": INF}}, "sft.teacher_timeout"),
        ({"sft": {"threshold": -INF}}, "sft.threshold"),
        ({"cluster": {"gpu_memory_gib": INF}}, "cluster.gpu_memory_gib"),
        ({"model": {"params_b": INF}}, "model.params_b"),
        ({"rollout": {"max_model_len": INF}}, "rollout.max_model_len"),
        ({"train": {"max_length": NAN}}, "train.max_length"),
        ({"seed": -1}, "seed"),
        ({"seed": 2**32}, "seed"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_a_number_that_is_not_one_exits_2_naming_the_field(
    cpu_config: Callable[..., Path], sections: dict[str, object], field: str
) -> None:
    """`.inf` passed `gt=0`, so an infinite temperature, timeout or memory size reached the
    tools; NaN and negative seeds too. `plan` refuses each, naming the field."""
    path = cpu_config(**sections)
    result = CliRunner().invoke(app, ["plan", "--config", str(path)])
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: {path}:")
    assert f": {field}: " in line, line
    # the same through --set
    good = cpu_config()
    key, value = field, yaml.safe_dump(_leaf(sections)).strip().removesuffix("\n...")
    result = CliRunner().invoke(app, ["plan", "--config", str(good), "--set", f"{key}={value}"])
    assert result.exit_code == 2, result.output
    assert f"error: {good}: {field}: " in result.stderr


def _leaf(sections: object) -> object:
    while isinstance(sections, dict):
        (sections,) = sections.values()
    return sections
