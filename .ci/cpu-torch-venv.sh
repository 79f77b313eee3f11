#!/usr/bin/env bash
# Makes a pip venv with a CPU build of torch, for the test tiers that need torch.
# torch never enters uv.lock: a GPU node needs the CUDA build, and PyPI's default Linux wheel is
# that CUDA build (~3 GB). On this kind of machine pip's own configuration finds a local CPU wheel
# for the pinned version. Fails if a CUDA build got in anyway.
#
# Every later `pip install` into the venv sees the index as it was at .ci/index-cutoff (pip's
# `uploaded-prior-to`, in the venv's own pip.conf), so a tier installs the same versions on any
# day; local wheels and file indexes are not affected. pip itself is pinned to a version that has
# the option. Set CODEGREP_INDEX_TODAY=1 to install from today's index instead (a drift check).
#
# Usage: .ci/cpu-torch-venv.sh VENV_DIR
set -euo pipefail
venv="${1:?VENV_DIR}"
python3 -m venv "$venv"
here="$(cd "$(dirname "$0")" && pwd)"
if [[ "${CODEGREP_INDEX_TODAY:-}" != "1" ]]; then
  cutoff="$(tr -d '[:space:]' <"$here/index-cutoff")"
  printf '[install]\nuploaded-prior-to = %s\n' "$cutoff" >"$venv/pip.conf"
fi
"$venv/bin/python" -m pip install --quiet "pip==26.0.1"
"$venv/bin/pip" install --quiet "torch==2.13.0"
"$venv/bin/python" -c "import torch; assert not torch.version.cuda, 'CUDA build of torch in CI'"
