#!/usr/bin/env bash
# The GPU smoke run: a few GRPO steps of `codegrep-train launch` on one GPU, LoRA, beta > 0 (a
# reference model, so KL is computed and logged), then `codegrep-train monitor` on the run's
# logs and a one-line verdict. Built to finish within 8 minutes and to fetch nothing: the model
# and the Python environment are given; the inputs are made on the spot (two small git
# repositories, six issues, one OpenHands-style session per training issue:
# ci/make-cpu-inputs.py --self-contained --no-model).
#
# Usage: apps/train-launcher/ci/gpu-smoke.sh [BASE_DIR] (default /tmp/codegrep-gpu-smoke; wiped
#        when an earlier run of this script made it, refused when anything else is there)
# Env:
#   MODEL   (required) a local folder of a small chat model with tool calling, e.g. Qwen3-0.6B
#           (config.json, tokenizer, *.safetensors)
#   VENV    a venv with ms-swift 4.6 (+ vLLM for ENGINE=vllm) and the workspace packages;
#           default: the one whose `codegrep-train` is on PATH
#   WHEELS  instead of VENV: a folder of wheels to build one from, offline
#           (uv pip install --no-index --find-links WHEELS, infra/node/constraints-gpu.txt)
#   ENGINE  vllm (colocate, default when vllm imports) or none (the trainer generates)
#   STEPS   GRPO steps (default 3)   BETA  the KL coefficient (default 0.04; must be > 0)
#   DRY_RUN=1  make the inputs and print the plan only (what runs on a machine without a GPU)
# Exit 0: the verdict is PASS; 1: FAIL (the reasons are printed); 2: bad setup.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
app="$(cd "$here/.." && pwd)"
root="$(cd "$app/../.." && pwd)"
base="${1:-/tmp/codegrep-gpu-smoke}"
steps="${STEPS:-3}"
beta="${BETA:-0.04}"
die() {
  echo "gpu-smoke: $*" >&2
  exit 2
}

[[ -n ${MODEL:-} ]] || die "set MODEL to a local model folder (nothing is downloaded)"
[[ -f $MODEL/config.json ]] || die "MODEL=$MODEL has no config.json"
[[ $steps =~ ^[1-9][0-9]?$ ]] || die "STEPS must be 1..99, got '$steps'"
[[ $beta =~ ^[0-9]*\.?[0-9]+([eE]-?[0-9]+)?$ ]] && python3 - "$beta" <<'PY' \
  || die "BETA must be a number above 0, got '$beta'"
import sys
sys.exit(0 if float(sys.argv[1]) > 0 else 1)
PY

# nothing leaves the machine
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 USE_HF=1
export TOKENIZERS_PARALLELISM=false PIP_NO_INDEX=1 UV_OFFLINE=1

# BASE_DIR is wiped only when this script made it (its marker file is there)
marker="$base/.codegrep-gpu-smoke"
if [[ -e $base || -L $base ]]; then
  [[ -d $base && ! -L $base && -f $marker ]] \
    || die "$base exists and was not made by this script: give a new folder"
  rm -rf -- "$base"
fi
mkdir -p "$base"
touch "$marker"
if [[ -n ${WHEELS:-} && -z ${VENV:-} ]]; then
  VENV="$base/venv"
  uv venv --quiet --python 3.11 "$VENV"
  VIRTUAL_ENV="$VENV" uv pip install --quiet --offline --no-index --find-links "$WHEELS" \
    -c "$root/infra/node/constraints-gpu.txt" "ms-swift" "$root/packages/"* "$app"
fi
if [[ -n ${VENV:-} ]]; then
  export PATH="$VENV/bin:$PATH"
fi
py="$(command -v python || command -v python3)"
for tool in codegrep-train catm worktree-sandbox codegrep-model; do
  command -v "$tool" >/dev/null || die "missing $tool (set VENV or WHEELS)"
done
if [[ ${DRY_RUN:-0} != 1 ]]; then
  command -v swift >/dev/null || die "missing swift (ms-swift) in the environment"
  command -v nvidia-smi >/dev/null && nvidia-smi --list-gpus | grep -q '^GPU' \
    || die "no GPU (DRY_RUN=1 to plan only)"
fi
engine="${ENGINE:-}"
if [[ -z $engine ]]; then
  "$py" -c "import vllm" 2>/dev/null && engine=vllm || engine=none
fi
[[ $engine == vllm || $engine == none ]] || die "ENGINE must be vllm or none, got '$engine'"

t0=$(date +%s)
"$py" "$here/make-cpu-inputs.py" "$base" --self-contained --no-model

# the CPU smoke config, turned into a one-GPU run of the given model
sets=(
  --set "base_dir=$base"
  --set "model.path=$MODEL" --set "model.torch_dtype=bfloat16" --set "model.params_b=null"
  --set "cluster.device=cuda" --set "cluster.gpus_per_node=1" --set "cluster.gpu=H200"
  --set "cluster.gpu_memory_gib=139"
  --set "rollout.engine=$engine" --set "rollout.mode=colocate"
  --set "rollout.gpu_memory_utilization=0.3" --set "rollout.sleep_level=0"
  --set "rollout.max_model_len=16384" --set "rollout.enable_lora=true"
  --set "train.max_steps=$steps" --set "train.beta=$beta" --set "train.save_steps=$steps"
  --set "train.eval_steps=$steps" --set "train.max_completion_length=512"
  --set "train.env={}" --set "train.report_to=[none]"
  --set "train.extra_args=[--check_model, 'false', --dataloader_num_workers, '0']"
  --set "sft.enabled=false" --set "evaluation.enabled=false"
  --set "swift.extra_args=[--use_hf, 'true']"
)
config="$app/configs/cpu-smoke.yaml"
if [[ ${DRY_RUN:-0} == 1 ]]; then
  codegrep-train plan --config "$config" "${sets[@]}"
  echo "gpu-smoke: dry run; the plan above is what a GPU machine runs"
  exit 0
fi

echo "== launch ($engine, $steps GRPO steps, LoRA, beta $beta)"
set +e
timeout 420 codegrep-train launch --config "$config" "${sets[@]}" >"$base/launch.out" 2>&1
rc=$?
set -e
t1=$(date +%s)
tail -n 40 "$base/launch.out"
out="$base/out"

echo "== monitor"
set +e
codegrep-train monitor "$out/grpo" --no-plot -o "$base/monitor"
mrc=$?

"$py" - "$out/grpo" "$steps" "$rc" "$mrc" "$base/monitor/report.json" <<'PY'
import json, math, pathlib, sys

grpo, steps, rc, mrc, report = pathlib.Path(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:]
why = []
if rc != "0":
    why.append(f"launch exit {rc}" + (" (timed out at 420 s)" if rc == "124" else ""))
rows = []
log = grpo / "logging.jsonl"
if log.is_file():
    for line in log.read_text().splitlines():
        r = json.loads(line)  # ms-swift writes a NaN loss as NaN, which json reads
        if "global_step/max_steps" in r and "loss" in r:
            rows.append(r)
else:
    why.append(f"no {log}")
if len(rows) < steps:
    why.append(f"{len(rows)} of {steps} GRPO steps logged")
kls = [r.get("kl") for r in rows]
if rows and not all(isinstance(k, (int, float)) and math.isfinite(k) for k in kls):
    why.append(f"KL not logged or not finite at every step (beta > 0): {kls}")
losses = [r.get("loss") for r in rows]
if rows and not all(isinstance(x, (int, float)) and math.isfinite(x) for x in losses):
    why.append(f"loss not finite: {losses}")
if not list(grpo.glob(f"checkpoint-{steps}/adapter_model.safetensors")):
    why.append(f"no LoRA adapter in checkpoint-{steps}")
if mrc not in ("0", "1"):
    why.append(f"the monitor failed (exit {mrc})")
else:
    verdict = json.loads(pathlib.Path(report).read_text()).get("verdict", "")
    print("monitor:", verdict.splitlines()[0] if verdict else "(no verdict)")
for r in rows:
    keep = ("global_step/max_steps", "loss", "grad_norm", "reward", "reward_std", "kl")
    print({k: r.get(k) for k in keep})
print("GPU SMOKE: " + ("PASS" if not why else "FAIL: " + "; ".join(why)))
sys.exit(0 if not why else 1)
PY
status=$?
set -e
echo "wall: launch $((t1 - t0)) s, total $(($(date +%s) - t0)) s"
exit $status
