"""What the node the launcher runs on has: its GPUs (from `nvidia-smi`) and free space.

`probe_node()` never raises: a node without `nvidia-smi`, or whose `nvidia-smi` fails or prints
something unexpected, is a node with no GPU and a reason (`gpu_probe`). Free space is measured
with `shutil.disk_usage` on the nearest folder that exists above each path asked about.
This module only observes; judging the config against it is `estimate`'s work.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "GpuInfo",
    "NodeInfo",
    "existing_parent",
    "free_bytes",
    "host_memory_gib",
    "probe_gpus",
    "probe_node",
]

NVIDIA_SMI_QUERY = (
    "nvidia-smi",
    "--query-gpu=index,name,memory.total",
    "--format=csv,noheader,nounits",
)


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str
    memory_mib: int

    @property
    def memory_gib(self) -> float:
        return self.memory_mib / 1024


@dataclass(frozen=True)
class NodeInfo:
    """The node as probed. `gpus` is empty where there is no GPU; `gpu_probe` says why."""

    gpus: tuple[GpuInfo, ...] = ()
    gpu_probe: str = "not probed"
    free: dict[str, int] = field(default_factory=dict)
    memory_gib: float | None = None  # host RAM (MemTotal of /proc/meminfo); None: unknown

    @property
    def has_gpu(self) -> bool:
        return bool(self.gpus)


def _parse_nvidia_smi(text: str) -> tuple[GpuInfo, ...]:
    gpus = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 3:
            raise ValueError(f"unexpected line {line!r}")
        gpus.append(GpuInfo(int(parts[0]), parts[1], int(float(parts[2]))))
    return tuple(gpus)


def probe_gpus(timeout: float = 20.0) -> tuple[tuple[GpuInfo, ...], str]:
    """The GPUs `nvidia-smi` lists, and a sentence saying what was found (or why none)."""
    exe = shutil.which(NVIDIA_SMI_QUERY[0])
    if exe is None:
        return (), "no GPU here (nvidia-smi not found)"
    try:
        out = subprocess.run(
            [exe, *NVIDIA_SMI_QUERY[1:]],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return (), f"no GPU here (nvidia-smi did not answer: {exc})"
    if out.returncode != 0:
        tail = (out.stderr or out.stdout).strip().splitlines()
        reason = tail[-1] if tail else f"exit {out.returncode}"
        return (), f"no GPU here (nvidia-smi failed: {reason})"
    try:
        gpus = _parse_nvidia_smi(out.stdout)
    except ValueError as exc:
        return (), f"no GPU here (nvidia-smi output not understood: {exc})"
    if not gpus:
        return (), "no GPU here (nvidia-smi lists none)"
    kinds = sorted({g.name for g in gpus})
    smallest = min(g.memory_gib for g in gpus)
    return gpus, f"nvidia-smi: {len(gpus)} GPU(s), {', '.join(kinds)}, {smallest:.0f} GiB each"


def existing_parent(path: Path) -> Path:
    """`path`, or its nearest ancestor that exists (the folder a new file would land in)."""
    p = path.expanduser().absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def free_bytes(path: Path) -> int | None:
    """Free bytes on the file system that holds (or would hold) `path`; None if unknown."""
    try:
        return shutil.disk_usage(existing_parent(path)).free
    except OSError:
        return None


def host_memory_gib(meminfo: Path = Path("/proc/meminfo")) -> float | None:
    """This machine's RAM in GiB (`MemTotal`), or None where it cannot be read."""
    try:
        for line in meminfo.read_text(encoding="ascii", errors="replace").splitlines()[:64]:
            name, _, rest = line.partition(":")
            if name == "MemTotal":
                kib = rest.split()[0]
                return int(kib) / 1024**2 if kib.isdigit() and len(kib) < 16 else None
    except (OSError, IndexError):
        return None
    return None


def probe_node(paths: Iterable[Path] = ()) -> NodeInfo:
    """The GPUs here, this machine's RAM and the free bytes where each of `paths` is (or
    would be)."""
    gpus, said = probe_gpus()
    free: dict[str, int] = {}
    for p in paths:
        n = free_bytes(p)
        if n is not None:
            free[str(p)] = n
    return NodeInfo(gpus=gpus, gpu_probe=said, free=free, memory_gib=host_memory_gib())
