"""Shared fixtures: the shared data folder beside the checkout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# packages/codegrep-records/tests -> repository root is parents[3]; shared/ sits beside it.
_DEFAULT_SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    root = Path(os.environ.get("CODEGREP_SHARED_DATA", _DEFAULT_SHARED)).resolve()
    if not (root / "swebench" / "lite.jsonl").is_file():
        pytest.skip(f"shared data not found at {root} (set CODEGREP_SHARED_DATA)")
    return root
