#!/usr/bin/env bash
# CI tier for the trainer adapters: a separate venv made with pip, since torch must be a CPU
# build here (pip's configuration on this kind of machine finds a local CPU wheel for the pinned
# version; PyPI's default Linux wheel is the CUDA build) and TRL 1.x cannot share the workspace
# lock with ms-swift's trl<1.0. Runs the tests marked `train` with real TRL.
#
# Usage: packages/grpo-rewards/ci/train-tier.sh [VENV_DIR]   (default: a temporary folder)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
# a venv made here (no VENV_DIR given) is this script's own: removed when it exits
if [[ -n "${1:-}" ]]; then
  venv="$1"
else
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  venv="$scratch/train-venv"
fi
start=$(date +%s)

bash "$root/.ci/cpu-torch-venv.sh" "$venv"
pip="$venv/bin/pip"
"$pip" install --quiet "trl==1.16.0" pytest hypothesis
"$pip" install --quiet "$root/packages/grpo-rewards"
# Nothing installed after it may have swapped in a CUDA build.
"$venv/bin/python" -c "import torch; assert not torch.version.cuda, 'CUDA build of torch in CI'"

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
cd "$root"
"$venv/bin/python" -m pytest -q -p no:cacheprovider -o addopts="" --import-mode=importlib \
  -m train packages/grpo-rewards/tests
echo "train tier passed in $(( $(date +%s) - start )) s"
