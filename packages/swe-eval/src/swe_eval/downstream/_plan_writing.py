"""Writing a plan's folder: which files it will hold, refusing to overwrite what is not the
plan's own, and writing them (and only them).
Not for: building the plan (`_plan_commands`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from codegrep_gate import (
    openhands_template_path,
)
from codegrep_records import RecordError
from codegrep_records.io import write_atomically

from swe_eval.downstream._plan_commands import Plan, render_commands, report_manifest, run_manifest
from swe_eval.downstream._plan_gating import BuiltConfig
from swe_eval.downstream._plan_pins import PLAN_KIND, TEMPLATE_NAME
from swe_eval.errors import PlanError

__all__ = [
    "check_output",
    "write_plan",
]

# -- the output folder --------------------------------------------------------------------------


def _previous_files(out: Path) -> set[str]:
    """The files an earlier plan in `out` says it wrote (none when there is no such plan).

    An unreadable plan.json (hostile, cut short, a link) claims nothing: then nothing in `out`
    counts as ours to overwrite, the safe side.
    """
    from codegrep_records.io import read_json_object

    try:
        data = read_json_object(out / "plan.json", refuse_links=True)
    except RecordError:
        return set()
    if not isinstance(data, Mapping) or data.get("kind") != PLAN_KIND:
        return set()
    files = data.get("files")
    return {f for f in files if isinstance(f, str)} if isinstance(files, list) else set()


def check_output(out: Path, targets: Sequence[str], *, force: bool) -> list[str]:
    """Refuse an output folder the plan cannot write, or one it would have to clobber.

    Not empty: refused without `force`; with it, only files an earlier plan wrote there (its
    plan.json lists them) are overwritten, and nothing is ever deleted. Returns notes (a
    runner's output left from an earlier run is resumed, not restarted).
    """
    from codegrep_records.io import why_unwritable

    problem = why_unwritable(out, folder=True)
    if problem is not None:
        raise PlanError(f"cannot write -o {out}: {problem}")
    if not out.exists() or not any(out.iterdir()):
        return []
    if not force:
        raise PlanError(
            f"-o {out} is not empty; give an empty or new folder, or --force to overwrite the "
            "files an earlier plan wrote there (nothing else is touched)"
        )
    ours = _previous_files(out)
    for rel in targets:
        path = out / rel
        if path.is_dir() and not path.is_symlink():
            raise PlanError(f"--force: {path} is a folder; the plan writes a file there")
        if path.parent.exists() and not path.parent.is_dir():
            raise PlanError(f"--force: {path.parent} is a file; the plan writes a folder there")
        if (path.exists() or path.is_symlink()) and rel not in ours:
            raise PlanError(
                f"--force: {path} exists and no earlier plan in {out} wrote it; not overwriting"
            )
    notes = []
    for rel in targets:
        if rel.endswith("/dataset.jsonl") and (out / rel).parent.joinpath("infer").exists():
            notes.append(
                f"{(out / rel).parent / 'infer'} exists: the runner resumes from it, skipping "
                "the instances done there; move it away for a fresh run"
            )
    return notes


def _write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace `path` in one step (a reader never sees half a file) through a new file with a
    random name (codegrep-records' `write_atomically`), so a link planted beside the plan's
    files is never followed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, data, mode=mode)


def write_plan(plan: Plan, built: Sequence[BuiltConfig]) -> list[Path]:
    """Write the plan's files under `plan.out` (check the folder with `check_output` first);
    returns the paths written. plan.json comes first: it lists the files as the plan's own, so
    a write that fails halfway can be redone with --force; commands.sh comes last."""
    out = Path(plan.out)
    template = openhands_template_path().read_bytes()
    written: list[Path] = []

    def put(rel: str, text: str | bytes, mode: int | None = None) -> None:
        data = text.encode("utf-8") if isinstance(text, str) else text
        _write(out / rel, data, mode)
        written.append(out / rel)

    put("plan.json", plan.model_dump_json(indent=2) + "\n")
    ids = [i.instance_id for i in built[0].rows] if built else []
    put("instances.txt", "".join(f"{i}\n" for i in ids))
    by_arm = {b.spec.name: b for b in built}
    for c in plan.configs:
        b = by_arm[c.arm]
        put(f"{c.name}/dataset.jsonl", "".join(r.json_line() for r in b.rows))
        put(f"{c.name}/gate.jsonl", "".join(g.model_dump_json() + "\n" for g in b.gate_lines))
        if plan.agent.prompt == "gate":
            put(f"{c.name}/{TEMPLATE_NAME}", template)
        put(f"{c.name}/llm_config.json", plan.agent.llm_config(c.repeat))
        put(f"{c.name}/manifest.json", json.dumps(run_manifest(plan, c), indent=2) + "\n")
        if b.spec.kind != "baseline":
            put(
                f"{c.name}/injected.jsonl",
                "".join(p.model_dump_json(exclude_none=True) + "\n" for p in b.injected),
            )
    put("report-runs.json", report_manifest(plan))
    put("commands.sh", render_commands(plan), 0o755)
    return written
