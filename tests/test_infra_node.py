"""Consistency of infra/node, the GPU node recipe, checked on the CPU with nothing installed.

What only a GPU node can show (the image builds, vLLM starts, ms-swift trains) is out of reach
here; what these tests hold instead: the constraints pin every top-level need and every
third-party requirement of the packages the image installs, inside their ranges and the known
compatibility facts (ms-swift 4.6 / vLLM 0.33 / TRL); the Dockerfile installs with those
constraints, for the same Python they were resolved for, on a CUDA base image of the version
torch's wheel is built for; the scripts parse, and run against stand-ins for srun, scontrol and
codegrep-train, giving each node the launcher's command and the torchrun environment.
Nothing here asks a package index: that the pins resolve together is checked from the wheel
metadata compile.py committed beside them, and drift against today's index is the release step
`python3 infra/node/compile.py --check` (infra/node/README.md), whose verdict is a report.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
NODE = ROOT / "infra" / "node"
CONSTRAINTS = NODE / "constraints-gpu.txt"
IN_FILE = NODE / "requirements-gpu.in"
DOCKERFILE = NODE / "Dockerfile"
LAUNCH = NODE / "launch-node.sh"
SBATCH = NODE / "slurm-multinode.sbatch"

# glibc of the Ubuntu releases a CUDA base image may be built on.
UBUNTU_GLIBC = {"20.04": (2, 31), "22.04": (2, 35), "24.04": (2, 39)}


def _load_compile() -> ModuleType:
    spec = importlib.util.spec_from_file_location("infra_node_compile", NODE / "compile.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


COMPILE = _load_compile()


def pins() -> dict[str, str]:
    return dict(COMPILE.read_pins(CONSTRAINTS.read_text(encoding="utf-8")))


def version(name: str) -> Version:
    found = pins().get(canonicalize_name(name))
    assert found is not None, f"{name} is not pinned in constraints-gpu.txt"
    return Version(found)


def in_requirements() -> list[Requirement]:
    out = []
    for raw in IN_FILE.read_text(encoding="utf-8").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if line and not line.startswith("#"):
            out.append(Requirement(line))
    return out


def header_value(key: str) -> str:
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"constraints-gpu.txt has no '# {key}:' header line")


def docker_lines() -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments dropped."""
    text = DOCKERFILE.read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    return [ln.strip() for ln in joined.splitlines() if ln.strip()]


def docker_args() -> dict[str, str]:
    args = {}
    for line in docker_lines():
        m = re.match(r"ARG\s+(\w+)=(\S+)", line)
        if m:
            args[m.group(1)] = m.group(2).strip("\"'")
    return args


def local_installs() -> list[tuple[str, tuple[str, ...]]]:
    """(folder, extras) of every checkout folder the Dockerfile installs."""
    out = []
    for line in docker_lines():
        if line.startswith("RUN") and "uv pip install" in line and "-c " in line:
            for m in re.finditer(r"\./((?:packages|apps)/[A-Za-z0-9_.-]+)(?:\[([^\]]*)\])?", line):
                extras = tuple(e.strip() for e in (m.group(2) or "").split(",") if e.strip())
                out.append((m.group(1), extras))
    return out


def workspace_projects() -> dict[str, dict]:
    """Normalised distribution name -> [project] table, for every workspace member."""
    out = {}
    for pyproject in sorted(ROOT.glob("*/*/pyproject.toml")):
        if pyproject.parts[-3] not in ("packages", "apps"):
            continue
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
        out[canonicalize_name(project["name"])] = project
    return out


def node_env() -> dict[str, str]:
    return {
        "python_version": header_value("python-version"),
        "python_full_version": header_value("python-version") + ".0",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "x86_64",
        "os_name": "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_version": "",
        "implementation_version": header_value("python-version") + ".0",
    }


# --- the constraints -----------------------------------------------------------------------------


def test_every_top_level_need_is_pinned_inside_its_range():
    pinned = pins()
    for req in in_requirements():
        name = canonicalize_name(req.name)
        assert name in pinned, f"{req.name} (requirements-gpu.in) is not pinned"
        assert req.specifier.contains(pinned[name], prereleases=True), (
            f"{req.name}=={pinned[name]} is outside {req.specifier} of requirements-gpu.in"
        )


def test_every_pin_says_why():
    lines = CONSTRAINTS.read_text(encoding="utf-8").splitlines()
    top = {canonicalize_name(r.name) for r in in_requirements()}
    pin_at = [i for i, ln in enumerate(lines) if re.match(r"^[A-Za-z0-9].*==", ln)]
    assert len(pin_at) == len(pins()) > 0
    for i, start in enumerate(pin_at):
        end = pin_at[i + 1] if i + 1 < len(pin_at) else len(lines)
        notes = [ln.strip() for ln in lines[start + 1 : end]]
        name = canonicalize_name(lines[start].split("==")[0])
        if name in top:
            assert any(n.startswith("# why: ") and len(n) > 12 for n in notes), lines[start]
        else:
            assert any(n.startswith("# via ") for n in notes), lines[start]


def test_the_header_records_how_the_pins_were_resolved():
    text = CONSTRAINTS.read_text(encoding="utf-8")
    assert header_value("python-version") == COMPILE.PYTHON_VERSION
    assert header_value("python-platform") == COMPILE.PYTHON_PLATFORM
    assert COMPILE.PYTHON_PLATFORM.startswith("x86_64-manylinux_")
    assert "uv pip compile infra/node/requirements-gpu.in" in text
    assert f"--exclude-newer {COMPILE.EXCLUDE_NEWER}" in text


def test_the_pins_meet_the_compatibility_facts():
    # integration-facts §0: ms-swift 4.6.0 ∧ vLLM 0.33.0 ∧ TRL.
    assert version("ms-swift") == Version("4.6.0")
    assert version("vllm") == Version("0.33.0")
    # ms-swift declares trl<1.0; its GRPOConfig requires trl>=0.26 at run time.
    assert version("trl") in SpecifierSet(">=0.26,<0.30")
    # transformers inside both ranges: ms-swift's and vLLM's.
    assert version("transformers") in SpecifierSet(">=4.33,<5.20")
    assert version("transformers") in SpecifierSet(">=5.16.1,<5.21")
    assert version("peft") in SpecifierSet(">=0.11,<0.21")
    assert version("datasets") in SpecifierSet(">=4.0,<4.8.5")
    # ms-swift imports msgspec without declaring it; catm needs 0.23.
    assert version("msgspec") in SpecifierSet(">=0.23")
    # vLLM 0.33.0's wheel pins these exactly.
    assert version("torch") == Version("2.14.0")
    assert version("torchvision") == Version("0.29.0")
    assert version("torchaudio") == Version("2.11.0")
    assert version("flashinfer-python") == Version("0.7.2.post1")
    # ms-swift's install script caps DeepSpeed below 0.19.
    assert version("deepspeed") < Version("0.19")
    for name in ("accelerate", "tensorboard", "ripgrep"):
        version(name)
    # flash-attn publishes only an sdist (a CUDA build at install): left out on purpose.
    assert "flash-attn" not in pins()


def test_the_compile_command_and_its_annotations_round_trip():
    compiled = (
        "torch==2.14.0            # via -r requirements-gpu.in, accelerate\n"
        "filelock==3.20.0         # via torch\n"
    )
    text = COMPILE.render(compiled, {"torch": "vLLM's build"}, "uv 0.0.0")
    assert COMPILE.read_pins(text) == {"torch": "2.14.0", "filelock": "3.20.0"}
    assert "    # why: vLLM's build\n    # via accelerate\n" in text
    assert "    # via torch\n" in text
    assert COMPILE.read_reasons("a-B==1  # because\n# c\nd>=2\n") == {"a-b": "because", "d": ""}


# --- the Dockerfile ------------------------------------------------------------------------------


def test_the_image_has_the_python_the_pins_were_resolved_for():
    assert docker_args()["PYTHON_VERSION"] == header_value("python-version")


def torch_cuda() -> tuple[int, ...]:
    """The CUDA version torch's pinned wheel is built for.

    A `+cuXYZ` local version (the PyTorch index) says it; PyPI's wheel carries none but requires
    `cuda-toolkit==X.Y.Z` (and the nvidia-* runtime wheels of that CUDA).
    """
    torch = pins()["torch"]
    local = re.search(r"\+cu(\d+)(\d)$", torch)
    if local:
        return (int(local.group(1)), int(local.group(2)))
    toolkit = Version(pins()["cuda-toolkit"]).release[:3]
    runtime = Version(pins()["nvidia-cuda-runtime"]).release[:2]
    assert toolkit[:2] == runtime, f"cuda-toolkit {toolkit} vs nvidia-cuda-runtime {runtime}"
    return toolkit


def test_the_base_image_cuda_is_the_one_torch_is_built_for():
    # The rule: the image's CUDA equals torch's to the minor (and the patch where the pins say
    # it): DeepSpeed builds its ops with the image's nvcc at first use and torch's extension
    # builder refuses another major; the same minor keeps the image's libraries and the wheels'
    # the same. A devel image, since nvcc is needed.
    image = docker_args()["CUDA_IMAGE"]
    m = re.fullmatch(r"nvidia/cuda:(\d+)\.(\d+)\.(\d+)-(\w+(?:-\w+)?)-ubuntu(\d+\.\d+)", image)
    assert m, f"CUDA_IMAGE {image} is not an nvidia/cuda:X.Y.Z-FLAVOR-ubuntuA.B tag"
    image_cuda = tuple(int(m.group(i)) for i in (1, 2, 3))
    want = torch_cuda()
    assert image_cuda[: len(want)] == want, f"image CUDA {image_cuda}, torch built for {want}"
    assert m.group(4).endswith("devel"), "DeepSpeed's JIT ops need nvcc: a devel image"
    # The nvidia-* wheels that carry a CUDA major in their name agree with it.
    for name in pins():
        suffix = re.search(r"-cu(\d+)$", name)
        if name.startswith("nvidia-") and suffix and "cutlass-dsl-libs" not in name:
            assert int(suffix.group(1)) == want[0], name
    # The image's own build check asserts the same version.
    assert f"startswith('{want[0]}.{want[1]}')" in DOCKERFILE.read_text(encoding="utf-8")
    # Its glibc is at least the manylinux level the pins were resolved for.
    platform_glibc = tuple(
        int(x) for x in COMPILE.PYTHON_PLATFORM.split("manylinux_")[1].split("_")
    )
    assert UBUNTU_GLIBC[m.group(5)] >= platform_glibc


def test_the_image_installs_the_stack_and_our_packages_with_the_constraints():
    lines = docker_lines()
    installs = [ln for ln in lines if ln.startswith("RUN") and "uv pip install" in ln]
    assert any(re.search(r"-r\s+\S*infra/node/constraints-gpu\.txt", ln) for ln in installs), (
        "the pinned stack is not installed from constraints-gpu.txt"
    )
    ours = [ln for ln in installs if "./packages/" in ln]
    assert ours, "our packages are not installed from the checkout"
    assert all(re.search(r"-c\s+\S*constraints-gpu\.txt", ln) for ln in ours)
    # The image has no workspace root: `{ workspace = true }` sources would fail to build.
    assert all("--no-sources" in ln for ln in ours)
    copied = [ln.split()[1] for ln in lines if ln.startswith("COPY") and "--from" not in ln]
    assert "infra/node/constraints-gpu.txt" in copied
    for source in copied:
        assert (ROOT / source).exists(), f"the Dockerfile copies {source}, absent from the repo"
    installed = dict(local_installs())
    projects = workspace_projects()
    for folder, extras in installed.items():
        assert (ROOT / folder / "pyproject.toml").is_file(), folder
        project = tomllib.loads((ROOT / folder / "pyproject.toml").read_text("utf-8"))["project"]
        for extra in extras:
            assert extra in project.get("optional-dependencies", {}), f"{folder}[{extra}]"
        assert any(folder == c or folder.startswith(c + "/") for c in copied), folder
    # The training stack through the `train` extra, the launcher, and every package it runs.
    assert "train" in installed["packages/codegrep-model"]
    names = {
        canonicalize_name(
            tomllib.loads((ROOT / f / "pyproject.toml").read_text("utf-8"))["project"]["name"]
        )
        for f in installed
    }
    for needed in ("train-launcher", "catm", "worktree-sandbox", "codegrep-model", "swe-eval"):
        assert needed in names, needed
        assert needed in projects, needed


def test_our_packages_third_party_requirements_are_pinned_inside_their_ranges():
    projects = workspace_projects()
    env = node_env()
    pinned = pins()
    todo = [
        (
            canonicalize_name(
                tomllib.loads((ROOT / f / "pyproject.toml").read_text("utf-8"))["project"]["name"]
            ),
            extras,
        )
        for f, extras in local_installs()
    ]
    seen: set[tuple[str, str]] = set()
    checked = 0
    while todo:
        name, extras = todo.pop()
        project = projects[name]
        groups = [("", project.get("dependencies", []))]
        groups += [(e, project.get("optional-dependencies", {}).get(e, [])) for e in extras]
        for extra, reqs in groups:
            if (name, extra) in seen:
                continue
            seen.add((name, extra))
            for text in reqs:
                req = Requirement(text)
                if req.marker and not Marker(str(req.marker)).evaluate({**env, "extra": extra}):
                    continue
                dep = canonicalize_name(req.name)
                if dep in projects:
                    todo.append((dep, tuple(req.extras)))
                    continue
                assert dep in pinned, (
                    f"{name}: {text} is not pinned (add it to requirements-gpu.in)"
                )
                assert req.specifier.contains(pinned[dep], prereleases=True), (
                    f"{name}: {text}, but constraints-gpu.txt pins {dep}=={pinned[dep]}"
                )
                checked += 1
    assert checked >= 20


def test_the_image_runs_as_a_user_with_a_cache_volume_and_no_secrets():
    lines = docker_lines()
    users = [ln.split()[1] for ln in lines if ln.startswith("USER")]
    assert users, "no USER"
    assert users[-1] not in ("root", "0")
    volumes = " ".join(ln for ln in lines if ln.startswith("VOLUME"))
    assert "/cache" in volumes
    env = " ".join(ln for ln in lines if ln.startswith("ENV"))
    assert "HF_HOME=/cache/" in env
    for line in lines:
        if line.startswith(("ENV", "ARG")):
            assert not re.search(r"(TOKEN|SECRET|PASSWORD|API_KEY)\w*=", line), line
    installed = " ".join(ln for ln in lines if ln.startswith("RUN"))
    assert re.search(r"\bgit\b", installed)
    assert "rg --version" in installed


# --- the scripts ---------------------------------------------------------------------------------


@pytest.mark.parametrize("script", [LAUNCH, SBATCH], ids=lambda p: p.name)
def test_the_scripts_are_valid_bash(script: Path):
    proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_sbatch_sets_what_the_launcher_needs():
    text = SBATCH.read_text(encoding="utf-8")
    assert "#SBATCH --ntasks-per-node=1" in text
    assert "#SBATCH --gpus-per-node=" in text
    assert re.search(r"hosts=\$\(scontrol show hostnames ", text)
    assert "export MASTER_ADDR=${hosts%%$'\\n'*}" in text
    assert "export MASTER_PORT=" in text
    assert re.search(r"export NNODES=\$\{SLURM_JOB_NUM_NODES", text)
    assert "NODE_RANK=$SLURM_NODEID" in text
    assert "NPROC_PER_NODE=${NPROC_PER_NODE:-${SLURM_GPUS_ON_NODE" in text
    assert re.search(r"srun .*--ntasks-per-node=1", text)


CLEAN = ("NNODES", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT", "NPROC_PER_NODE")


@pytest.fixture
def fake_cluster(tmp_path: Path):
    """srun, scontrol and codegrep-train stand-ins; the launcher's stand-in logs what it got."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    scripts = {
        "codegrep-train": (
            'echo "rank=${NODE_RANK-unset} nnodes=${NNODES-unset} addr=${MASTER_ADDR-unset} '
            'port=${MASTER_PORT-unset} nproc=${NPROC_PER_NODE-unset} hf=${USE_HF-unset} | $*" '
            '>> "$FAKE_LOG"'
        ),
        # One task per node, in turn, with SLURM_NODEID set; srun's own options are dropped.
        "srun": (
            'echo "srun $*" >> "$FAKE_LOG"\n'
            "while [[ $# -gt 0 && $1 == -* ]]; do shift; done\n"
            'for ((i = 0; i < SLURM_JOB_NUM_NODES; i++)); do SLURM_NODEID=$i "$@" || exit $?; done'
        ),
        "scontrol": '[[ "$1 $2" == "show hostnames" ]] && printf "gpu-a\\ngpu-b\\ngpu-c\\n"',
    }
    for name, body in scripts.items():
        path = bin_dir / name
        path.write_text(f"#!/usr/bin/env bash\n{body}\n", encoding="utf-8")
        path.chmod(0o755)
    config = tmp_path / "run.yaml"
    config.write_text("name: smoke\n", encoding="utf-8")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in CLEAN
        and not k.startswith("SLURM_")
        and k not in ("CUDA_VISIBLE_DEVICES", "USE_HF")
    }
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["FAKE_LOG"] = str(log)

    def run(args: list[str], **extra: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
        proc = subprocess.run(
            ["bash", *args], env={**env, **extra}, capture_output=True, text=True, cwd=tmp_path
        )
        calls = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        log.unlink(missing_ok=True)
        return proc, calls

    return run, config


def test_the_sbatch_starts_one_launcher_per_node_with_the_torchrun_env(fake_cluster):
    run, config = fake_cluster
    proc, calls = run(
        [str(SBATCH), str(config), "--dry-run"],
        SLURM_JOB_NODELIST="gpu-[a-c]",
        SLURM_JOB_NUM_NODES="3",
        SLURM_GPUS_ON_NODE="8",
        SLURM_SUBMIT_DIR=str(ROOT),
    )
    assert proc.returncode == 0, proc.stderr
    assert calls[0].startswith("srun --nodes=3 --ntasks-per-node=1 ")
    nodes = calls[1:]
    assert len(nodes) == 3
    for rank, line in enumerate(nodes):
        env, _, argv = line.partition(" | ")
        assert env == f"rank={rank} nnodes=3 addr=gpu-a port=29500 nproc=8 hf=1"
        assert argv == (
            f"launch --config {config} --node-rank {rank} --set cluster.nodes=3 "
            "--set cluster.master_addr=gpu-a --set cluster.master_port=29500 "
            "--set cluster.gpus_per_node=8 --dry-run"
        )


def test_launch_node_on_one_node_leaves_torchrun_to_the_launcher(fake_cluster):
    run, config = fake_cluster
    proc, calls = run([str(LAUNCH), str(config)], CUDA_VISIBLE_DEVICES="0,1,2,3")
    assert proc.returncode == 0, proc.stderr
    assert calls == [
        f"rank=unset nnodes=unset addr=unset port=unset nproc=unset hf=1 | launch --config {config}"
    ]
    assert "4 GPUs" in proc.stderr
    proc, calls = run([str(LAUNCH), str(config)], CODEGREP_TRAIN_ACTION="plan", NPROC_PER_NODE="0")
    assert proc.returncode == 0, proc.stderr
    assert calls[0].endswith(f"| plan --config {config}")


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        ([], {}, "usage"),
        (["missing.yaml"], {"NPROC_PER_NODE": "8"}, "no config file"),
        (["CONFIG"], {"NPROC_PER_NODE": "0"}, "no GPU"),
        (["CONFIG"], {"NPROC_PER_NODE": "8", "NNODES": "2"}, "MASTER_ADDR"),
        (
            ["CONFIG"],
            {"NPROC_PER_NODE": "8", "NNODES": "2", "NODE_RANK": "2", "MASTER_ADDR": "h"},
            "not below",
        ),
        (["CONFIG"], {"NPROC_PER_NODE": "eight"}, "whole number"),
        (["CONFIG"], {"NPROC_PER_NODE": "8", "CODEGREP_TRAIN_ACTION": "monitor"}, "launch or plan"),
    ],
)
def test_launch_node_refuses_what_cannot_work(fake_cluster, args, env, message):
    run, config = fake_cluster
    args = [str(config) if a == "CONFIG" else a for a in args]
    proc, calls = run([str(LAUNCH), *args], **env)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert calls == []


# --- the pins resolve together (offline, from the committed wheel metadata) ----------------------

METADATA = NODE / "constraints-gpu.metadata.json"
# Pins the index has only as sdists: no wheel METADATA to read (infra/node/README.md lists them).
SDIST_ONLY = {"crcmod", "deepspeed", "oss2", "transformers-stream-generator"}


def pin_metadata() -> dict[str, dict]:
    import json

    return json.loads(METADATA.read_text(encoding="utf-8"))["pins"]


def via() -> dict[str, set[str]]:
    """Pin -> the pins constraints-gpu.txt says require it (uv's `# via` annotation)."""
    out: dict[str, set[str]] = {}
    current = ""
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        m = COMPILE._PIN.match(line.strip())
        if m:
            current = canonicalize_name(m.group(1))
        elif line.strip().startswith("# via ") and current:
            names = line.strip().removeprefix("# via ").split(",")
            out[current] = {canonicalize_name(n.strip()) for n in names if n.strip()}
    return out


def sdist_requirements(name: str) -> list[str]:
    """An sdist-only pin's requirements: the pins uv said it pulls in, any version."""
    return [dep for dep, by in via().items() if name in by]


def test_the_metadata_is_of_exactly_the_pinned_versions():
    # A hand edit of constraints-gpu.txt without compile.py leaves the metadata behind: caught here.
    meta = pin_metadata()
    assert {n: m["version"] for n, m in meta.items()} == pins()
    without = {n for n, m in meta.items() if "requires_dist" not in m}
    assert without == SDIST_ONLY, without


def test_the_pins_satisfy_one_another_and_the_image_installs_only_pins():
    # What `uv pip install -c constraints-gpu.txt` of the image does, offline: start from the
    # top-level needs and our packages as the Dockerfile installs them, follow every
    # Requires-Dist that applies on the node (with the extras asked for), and require that each
    # dependency is pinned inside its range. The pins' own metadata was read from their wheels
    # by compile.py; nothing here asks an index, so the verdict cannot change with the day.
    env = node_env()
    pinned, meta, projects = pins(), pin_metadata(), workspace_projects()
    python = Version(env["python_full_version"])
    todo = [("requirements-gpu.in", str(r), "") for r in in_requirements()]
    for folder, extras in local_installs():
        project = tomllib.loads((ROOT / folder / "pyproject.toml").read_text("utf-8"))["project"]
        for extra in ("", *extras):
            reqs = (
                project.get("dependencies", [])
                if not extra
                else (project.get("optional-dependencies", {}).get(extra, []))
            )
            todo += [(project["name"], text, extra) for text in reqs]
    seen: set[tuple[str, str]] = set()
    reached: set[str] = set()
    problems: list[str] = []
    while todo:
        who, text, extra = todo.pop()
        req = Requirement(text)
        if req.marker and not req.marker.evaluate({**env, "extra": extra}):
            continue
        dep = canonicalize_name(req.name)
        if dep in projects:  # a sibling: its own requirements come from its pyproject
            project = projects[dep]
            for e in ("", *sorted(req.extras)):
                if (dep, e) in seen:
                    continue
                seen.add((dep, e))
                reqs = (
                    project.get("dependencies", [])
                    if not e
                    else (project.get("optional-dependencies", {}).get(e, []))
                )
                todo += [(dep, t, e) for t in reqs]
            continue
        if dep not in pinned:
            problems.append(f"{who}: {text} is not pinned")
            continue
        if not req.specifier.contains(pinned[dep], prereleases=True):
            problems.append(f"{who}: {text}, but {dep}=={pinned[dep]} is pinned")
        reached.add(dep)
        info = meta[dep]
        if info.get("requires_python") and not SpecifierSet(info["requires_python"]).contains(
            python, prereleases=True
        ):
            problems.append(f"{dep}=={pinned[dep]} requires Python {info['requires_python']}")
        for e in ("", *sorted(req.extras)):
            if (dep, e) in seen:
                continue
            seen.add((dep, e))
            needs = info.get("requires_dist", sdist_requirements(dep) if not e else [])
            todo += [(f"{dep}=={pinned[dep]}", t, e) for t in needs]
    assert not problems, "\n".join(problems)
    # Every pin is needed by something (a stray pin means the metadata or the pins are stale).
    stray = set(pinned) - reached
    assert not stray, f"pinned but required by nothing on the node: {sorted(stray)}"
    assert len(reached) >= 200


def test_a_pin_outside_a_range_is_caught(monkeypatch):
    # The check above can fail: move one pin below what its dependant requires.
    pinned = pins()
    real = dict(pinned)
    real["huggingface-hub"] = "0.1.0"
    monkeypatch.setattr(sys.modules[__name__], "pins", lambda: real)
    with pytest.raises(AssertionError, match=re.escape("huggingface-hub==0.1.0")):
        test_the_pins_satisfy_one_another_and_the_image_installs_only_pins()
