#!/usr/bin/env bash
# Makes a pip venv with a CPU build of torch, for the test tiers that need torch.
# torch never enters uv.lock: a GPU node needs the CUDA build, and PyPI's default Linux wheel is
# that CUDA build (~3 GB). On this kind of machine pip's own configuration finds a local CPU wheel
# for the pinned version. Fails if a CUDA build got in anyway.
#
# Usage: .ci/cpu-torch-venv.sh VENV_DIR
set -euo pipefail
venv="${1:?VENV_DIR}"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet "torch==2.13.0"
"$venv/bin/python" -c "import torch; assert not torch.version.cuda, 'CUDA build of torch in CI'"
