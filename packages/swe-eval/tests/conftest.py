"""Shared fixtures: the shared data folder beside the checkout, and tiny instance sets."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from swe_eval.downstream._plan_pins import SDK_COMMIT, STOCK_TEMPLATE

# packages/swe-eval/tests -> repository root is parents[3]; shared/ sits beside the checkout.
_DEFAULT_SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    root = Path(os.environ.get("CODEGREP_SHARED_DATA", _DEFAULT_SHARED)).resolve()
    if not (root / "swebench" / "lite.jsonl").is_file():
        pytest.skip(f"shared data not found at {root} (set CODEGREP_SHARED_DATA)")
    return root


def make_runner_checkout(folder: Path, head: str, sdk_head: str = SDK_COMMIT) -> Path:
    """A runner checkout as git leaves it (HEAD detached at `head`, the agent SDK a submodule
    whose git dir is under .git/modules), with the runner's template; no git is run."""
    (folder / ".git" / "objects").mkdir(parents=True)
    (folder / ".git" / "HEAD").write_text(head + "\n")
    modules = folder / ".git" / "modules" / "vendor" / "software-agent-sdk"
    (modules / "objects").mkdir(parents=True)
    (modules / "HEAD").write_text("ref: refs/heads/main\n")
    (modules / "packed-refs").write_text(f"# pack-refs with: peeled\n{sdk_head} refs/heads/main\n")
    sdk = folder / "vendor" / "software-agent-sdk"
    sdk.mkdir(parents=True)
    (sdk / ".git").write_text("gitdir: ../../.git/modules/vendor/software-agent-sdk\n")
    (folder / ".gitmodules").write_text(
        '[submodule "vendor/software-agent-sdk"]\n\tpath = vendor/software-agent-sdk\n'
        "\turl = https://github.com/OpenHands/software-agent-sdk.git\n"
    )
    template = folder / STOCK_TEMPLATE
    template.parent.mkdir(parents=True)
    template.write_text("{{ instance.problem_statement }}\n")
    return folder


@pytest.fixture
def runner_checkout() -> Callable[..., Path]:
    """`make_runner_checkout` for the tests (importlib mode cannot import conftest)."""
    return make_runner_checkout
