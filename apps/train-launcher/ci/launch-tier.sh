#!/usr/bin/env bash
# CI tier for the launcher, with real ms-swift: `codegrep-train plan --check`'s tests
# (tests/with_swift: the shipped configs judged by ms-swift's argument classes, the rules a node
# would hit, the carried rules pinned to ms-swift's source), then `codegrep-train launch` of
# configs/cpu-smoke.yaml through every stage, its plan checked first, killed in the middle of
# GRPO and launched again (ci/cpu-launch.sh), on the self-contained inputs (CI has neither the
# shared data nor GitHub).
#
# Usage: apps/train-launcher/ci/launch-tier.sh VENV_DIR
#   VENV_DIR: the venv packages/codegrep-model/ci/swift-tier.sh made (ms-swift 4.6, CPU torch,
#   codegrep-records, worktree-sandbox, grpo-rewards, codegrep-model); catm, swe-eval and the
#   launcher are added to it here.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
venv="${1:?usage: launch-tier.sh VENV_DIR (made by packages/codegrep-model/ci/swift-tier.sh)}"
start=$(date +%s)

[[ -x "$venv/bin/swift" ]] || { echo "no ms-swift in $venv: run swift-tier.sh $venv first" >&2; exit 2; }
"$venv/bin/pip" install --quiet hatchling  # the build backend, for --no-build-isolation below
# One command, so that the siblings' ranges are met by these folders and not by an index.
"$venv/bin/pip" install --quiet --no-build-isolation \
  "$root/packages/codegrep-records" "$root/packages/codegrep-cli" "$root/packages/worktree-sandbox" \
  "$root/packages/grpo-rewards" "$root/packages/codegrep-model" \
  "$root/packages/catm" "$root/packages/codegrep-gate" "$root/packages/codegrep-report" \
  "$root/packages/swe-eval" "$root/apps/train-launcher[plot]"
"$venv/bin/python" -c "import torch; assert not torch.version.cuda, 'CUDA build of torch in CI'"
installed=$(date +%s)

# `plan --check` with the pinned ms-swift: the shipped configs pass, the rules a node would hit
# are refused naming stage, flag and rule, the carried rules are pinned to ms-swift's source.
cd "$root"
CUDA_VISIBLE_DEVICES="" HF_HUB_OFFLINE=1 "$venv/bin/python" -m pytest -q -p no:cacheprovider \
  -o addopts="" --import-mode=importlib apps/train-launcher/tests/with_swift
checked=$(date +%s)

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
env -u MIRRORS VENV="$venv" bash "$here/cpu-launch.sh" "$scratch/run"
echo "launch tier passed in $(( $(date +%s) - start )) s (installs $(( installed - start )) s," \
  "plan --check tests $(( checked - installed )) s)"
