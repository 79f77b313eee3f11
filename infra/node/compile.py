"""Resolve requirements-gpu.in into constraints-gpu.txt for a linux x86_64 CUDA node.

Runs `uv pip compile` for the node's platform and Python (nothing is installed; only metadata is
read, plus the build of a few pure-Python sdists' metadata), then writes the pins with a reason
each: the comment of the line in requirements-gpu.in for a top-level need, the packages that
pull it in for the others.

    python3 infra/node/compile.py            # (re)write constraints-gpu.txt and its metadata
    python3 infra/node/compile.py --check    # resolve again; exit 1 if a pin would change

Besides the pins it writes `constraints-gpu.metadata.json`: each pin's `Requires-Dist` and
`Requires-Python`, read from the core metadata of the pin's node wheel on the index (PEP 658).
With it, the test suite checks offline that the pins satisfy one another; `--check` is the
drift report, a release step that needs the network, never part of the test suite.

Exit status: 0 done (or the pins are the same), 1 the pins differ, 2 uv is missing or failed
(its error is printed; a network failure is one of those). Standard library only.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
import zipfile
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from email.parser import HeaderParser
from pathlib import Path

HERE = Path(__file__).resolve().parent
IN_FILE = HERE / "requirements-gpu.in"
OUT_FILE = HERE / "constraints-gpu.txt"
METADATA_FILE = HERE / "constraints-gpu.metadata.json"
# The index uv resolves against (its default), read through the simple API's JSON form.
INDEX_URL = os.environ.get("UV_DEFAULT_INDEX") or "https://pypi.org/simple"

# The node: linux x86_64 with glibc >= 2.28 (the image, Ubuntu 24.04, has 2.39; the pins are the
# same for x86_64-manylinux_2_39), CPython 3.11. EXCLUDE_NEWER freezes the index as it was when
# the pins were made, so that `--check` gives the same answer later; move it to take newer releases.
# It must be a moment already past when compile.py runs: a cutoff in the future admits releases
# made after the pins were written, and `--check` then fails for no change of ours.
PYTHON_PLATFORM = "x86_64-manylinux_2_28"
PYTHON_VERSION = "3.11"
EXCLUDE_NEWER = "2026-12-03T12:00:00Z"

_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)")
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)")


def normalize(name: str) -> str:
    """PEP 503 normalised project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def compile_args(in_name: str) -> list[str]:
    """The uv command, run in this folder (so the file names in it are relative)."""
    return [
        "uv",
        "pip",
        "compile",
        in_name,
        "--python-platform",
        PYTHON_PLATFORM,
        "--python-version",
        PYTHON_VERSION,
        "--exclude-newer",
        EXCLUDE_NEWER,
        "--annotation-style",
        "line",
        "--no-header",
        "--no-config",
        "--quiet",
    ]


def read_reasons(text: str) -> dict[str, str]:
    """Normalised name -> the comment after that requirement in the .in file."""
    reasons: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _NAME.match(line)
        if m is None:
            continue
        _, _, comment = line.partition(" #")
        reasons[normalize(m.group(1))] = comment.strip().lstrip("#").strip()
    return reasons


def read_pins(text: str) -> dict[str, str]:
    """Normalised name -> pinned version, from compiled or constraints text."""
    pins: dict[str, str] = {}
    for raw in text.splitlines():
        m = _PIN.match(raw.strip())
        if m:
            pins[normalize(m.group(1))] = m.group(2)
    return pins


def resolve() -> tuple[str, str]:
    """Run uv; returns (compiled text, uv version). Raises RuntimeError with uv's message."""
    uv = shutil.which("uv")
    if uv is None:
        raise RuntimeError("uv is not on PATH (python3 -m pip install uv)")
    # The workspace's CI settings (UV_LOCKED, ...) are for `uv run`/`uv sync`, not this.
    env = {k: v for k, v in os.environ.items() if k not in {"UV_LOCKED", "UV_FROZEN"}}
    version = subprocess.run(
        [uv, "--version"], capture_output=True, text=True, check=False
    ).stdout.strip()
    proc = subprocess.run(
        [uv, *compile_args(IN_FILE.name)[1:]],
        cwd=HERE,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip() or f"uv exited {proc.returncode}")
    return proc.stdout, version


def render(compiled: str, reasons: dict[str, str], uv_version: str) -> str:
    """The constraints file: a header, then each pin with its reason."""
    command = " ".join(compile_args(f"infra/node/{IN_FILE.name}"))
    out = [
        "# Pinned versions for a CodeGrep GPU node: linux x86_64, NVIDIA driver for CUDA 13.0,",
        f"# Python {PYTHON_VERSION}. Generated by infra/node/compile.py from requirements-gpu.in;",
        "# do not edit by hand (change the .in file, then run compile.py).",
        "# Use as constraints: pip/uv pip install -c infra/node/constraints-gpu.txt ...",
        "# Separate from uv.lock, which stays right for CPU users.",
        f"# Resolved with {uv_version or 'uv'}:",
        f"#   {command}",
        f"# python-version: {PYTHON_VERSION}",
        f"# python-platform: {PYTHON_PLATFORM}",
        "# Each pin says why: `why:` for a top-level need of requirements-gpu.in, `via` for the",
        "# packages that require it.",
        "",
    ]
    for raw in compiled.splitlines():
        line = raw.strip()
        m = _PIN.match(line)
        if m is None:
            continue
        name = normalize(m.group(1))
        _, _, annotation = line.partition("# via ")
        via = [
            v.strip() for v in annotation.split(",") if v.strip() and not v.strip().startswith("-r")
        ]
        out.append(f"{m.group(1)}=={m.group(2)}")
        if name in reasons:
            out.append(f"    # why: {reasons[name] or 'listed in requirements-gpu.in'}")
        if via:
            out.append(f"    # via {', '.join(via)}")
    return "\n".join(out) + "\n"


def _wheel_rank(filename: str) -> int:
    """How well a wheel fits the node (lower is better); 99 for a file that is no wheel."""
    if not filename.endswith(".whl"):
        return 99
    tags = filename[:-4].split("-")[-3:]
    python, _, platform = tags
    fits_python = "cp311" in python or python.startswith(("py3", "py2.py3")) or "abi3" in tags[1]
    if platform == "any":
        return 1 if fits_python else 5
    if "manylinux" in platform and "x86_64" in platform:
        return 0 if fits_python else 4
    return 9


def _get(url: str, first: int | None = None, last: int | None = None) -> bytes:
    headers = {"Accept": "application/vnd.pypi.simple.v1+json"}
    if first is not None:
        headers["Range"] = f"bytes={first}-{last}"
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=120) as response:
        body: bytes = response.read(64 * 1024 * 1024)
        return body


class _RemoteWheel(io.RawIOBase):
    """A wheel on the index read by HTTP range requests, so that `zipfile` reads only its
    central directory and METADATA (a few hundred KiB of a torch wheel, not 900 MB)."""

    BLOCK = 256 * 1024

    def __init__(self, url: str, size: int) -> None:
        self.url, self.size, self.pos = url, size, 0
        self.blocks: dict[int, bytes] = {}

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def _block(self, index: int) -> bytes:
        if index not in self.blocks:
            first = index * self.BLOCK
            last = min(self.size, first + self.BLOCK) - 1
            self.blocks[index] = _get(self.url, first, last)
        return self.blocks[index]

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        out = bytearray()
        while self.pos < end:
            block = self._block(self.pos // self.BLOCK)
            lo = self.pos % self.BLOCK
            piece = block[lo : lo + (end - self.pos)]
            if not piece:
                break
            out += piece
            self.pos += len(piece)
        return bytes(out)


def wheel_metadata(name: str, version: str) -> dict[str, object]:
    """The pin's Requires-Dist and Requires-Python, from its best node wheel's METADATA."""
    listing = json.loads(_get(f"{INDEX_URL.rstrip('/')}/{name}/"))
    files = [
        f
        for f in listing.get("files", [])
        if isinstance(f, dict)
        and str(f.get("filename", "")).endswith(".whl")
        and str(f["filename"]).split("-")[1] == version
        and not f.get("yanked")
        and isinstance(f.get("size"), int)
    ]
    if not files:
        return {"version": version, "source": "no wheel on the index (an sdist)"}
    best = min(files, key=lambda f: _wheel_rank(str(f["filename"])))
    with zipfile.ZipFile(_RemoteWheel(str(best["url"]), int(best["size"]))) as wheel:
        member = next(
            n for n in wheel.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")
        )
        headers = HeaderParser().parsestr(wheel.read(member).decode("utf-8"))
    return {
        "version": version,
        "source": str(best["filename"]),
        "requires_python": headers.get("Requires-Python") or "",
        "requires_dist": [str(r) for r in headers.get_all("Requires-Dist") or []],
    }


def write_metadata(pins: dict[str, str]) -> int:
    """Write METADATA_FILE for these pins; returns how many came without wheel metadata."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        found = dict(
            zip(pins, pool.map(lambda item: wheel_metadata(*item), pins.items()), strict=True)
        )
    payload = {
        "about": "Requires-Dist of every pin of constraints-gpu.txt, from its wheel's core "
        "metadata on the index; written by infra/node/compile.py, do not edit by hand",
        "python_platform": PYTHON_PLATFORM,
        "python_version": PYTHON_VERSION,
        "pins": dict(sorted(found.items())),
    }
    METADATA_FILE.write_text(json.dumps(payload, indent=1, sort_keys=False) + "\n", "utf-8")
    return sum(1 for meta in found.values() if "requires_dist" not in meta)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--metadata-only",
        action="store_true",
        help="write constraints-gpu.metadata.json for the committed pins; resolve nothing",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="resolve again and compare with constraints-gpu.txt; write nothing",
    )
    args = parser.parse_args(argv)
    if args.metadata_only:
        try:
            missing = write_metadata(read_pins(OUT_FILE.read_text(encoding="utf-8")))
        except (OSError, ValueError, StopIteration, zipfile.BadZipFile) as exc:
            print(f"compile.py: reading the pins' metadata failed: {exc}", file=sys.stderr)
            return 2
        print(f"wrote {METADATA_FILE.name} ({missing} pins without wheel metadata)")
        return 0
    cutoff = datetime.fromisoformat(EXCLUDE_NEWER.replace("Z", "+00:00"))
    if not args.check and cutoff > datetime.now(UTC):
        print(
            f"compile.py: EXCLUDE_NEWER {EXCLUDE_NEWER} is in the future: releases made after "
            "the pins are written would change them; set a moment already past",
            file=sys.stderr,
        )
        return 2
    try:
        compiled, uv_version = resolve()
    except RuntimeError as exc:
        print(f"compile.py: resolution failed:\n{exc}", file=sys.stderr)
        return 2
    if args.check:
        fresh = read_pins(compiled)
        committed = read_pins(OUT_FILE.read_text(encoding="utf-8"))
        if fresh == committed:
            print(f"constraints-gpu.txt: the same {len(fresh)} pins resolve again")
            return 0
        for name in sorted(fresh.keys() | committed.keys()):
            old, new = committed.get(name, "-"), fresh.get(name, "-")
            if old != new:
                print(f"{name}: constraints-gpu.txt {old}, resolves to {new}")
        return 1
    text = render(compiled, read_reasons(IN_FILE.read_text(encoding="utf-8")), uv_version)
    OUT_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {OUT_FILE.name}: {len(read_pins(text))} pins")
    try:
        missing = write_metadata(read_pins(text))
    except (OSError, ValueError, StopIteration, zipfile.BadZipFile) as exc:
        print(f"compile.py: reading the pins' metadata failed: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {METADATA_FILE.name} ({missing} pins without wheel metadata)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
