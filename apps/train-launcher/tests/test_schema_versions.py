"""Every record the launcher writes says its layout (`schema_version`), and reads the records
written before it had one: the launch state and stamps, the fetch sidecar, the monitor report,
the plan."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from train_launcher._plan_records import NODE_PLAN_SCHEMA_VERSION, NodePlan
from train_launcher.errors import PlanError
from train_launcher.fetch import FETCH_REPORT_SCHEMA_VERSION, FetchReport
from train_launcher.monitor._checks import MONITOR_REPORT_SCHEMA_VERSION, MonitorReport
from train_launcher.outputs import Layout

# the module, not the `launch` function the package exports under the same name
launch = importlib.import_module("train_launcher.launch")


def test_the_launch_state_is_versioned_and_an_old_one_reads(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    old = {"stages": {"prepare": {"status": "done"}}}  # written before schema_version
    layout.state.write_text(json.dumps(old), encoding="utf-8")
    state = launch._State(layout)
    assert state.data["stages"] == old["stages"]
    state.record("datasets", status="running")
    written = json.loads(layout.state.read_text(encoding="utf-8"))
    assert written["schema_version"] == launch.LAUNCH_RECORD_SCHEMA_VERSION == 1
    assert written["stages"]["prepare"] == {"status": "done"}


@pytest.mark.parametrize("version", [2, "1", True, 0])
def test_a_state_of_another_layout_stops_the_launch(tmp_path: Path, version: object) -> None:
    layout = Layout(tmp_path)
    layout.state.write_text(json.dumps({"schema_version": version, "stages": {}}))
    with pytest.raises(PlanError, match=f"schema_version {version!r}; this launcher reads 1"):
        launch._State(layout)


def test_a_stamp_is_read_with_or_without_its_version(tmp_path: Path) -> None:
    path = tmp_path / "stamp.json"
    assert launch._versioned(path, {"fingerprint": "x"}) == {"fingerprint": "x"}
    assert launch._versioned(path, {"schema_version": 1, "fingerprint": "x"}) is not None
    with pytest.raises(PlanError, match="schema_version 9"):
        launch._versioned(path, {"schema_version": 9})


def test_the_fetch_sidecar_and_the_monitor_report_say_their_layout() -> None:
    report = FetchReport("o/d", "main", None, "train", 3, "out.jsonl")
    assert json.loads(report.to_json())["schema_version"] == FETCH_REPORT_SCHEMA_VERSION == 1
    fields = {
        "run_dir": "run",
        "last_step": None,
        "max_steps": None,
        "finished": False,
        "alarms": [],
        "latest": {},
        "notes": [],
        "bad_lines": [],
        "verdict": "OK",
    }
    from train_launcher.monitor._checks import MonitorThresholds

    old = MonitorReport.model_validate({**fields, "thresholds": MonitorThresholds()})
    assert old.schema_version == MONITOR_REPORT_SCHEMA_VERSION == 1
    assert json.loads(old.model_dump_json())["schema_version"] == 1
    assert NodePlan.model_fields["schema_version"].default == NODE_PLAN_SCHEMA_VERSION == 1
