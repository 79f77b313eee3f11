#!/usr/bin/env bash
# The GPU smoke run: a few GRPO steps of `codegrep-train launch` on GPUs, LoRA, beta > 0 (a
# reference model, so KL is computed and logged), then `codegrep-train monitor` on the run's
# logs and a one-line verdict that says what ran: the generation engine (with its version), the
# vLLM sleep level, the DeepSpeed ZeRO stage, the trainer processes and whether vLLM syncs LoRA
# weights, read from ms-swift's own args.json of the run, not from what was asked. It fetches
# nothing: the model and the Python environment are given; the inputs are made on the spot (two
# small git repositories, six issues, one OpenHands-style session per training issue:
# ci/make-cpu-inputs.py --self-contained --no-model). Before launching, `codegrep-train plan
# --check` must pass (ms-swift's argument classes on the exact command lines).
#
# Modes (MODE):
#   one           (default) one GPU, vLLM colocated, sleep level 1, LoRA sync, no DeepSpeed
#   paper         the paper's path at tiny size: two processes on two GPUs, DeepSpeed ZeRO-3,
#                 --offload_model/--offload_optimizer, vLLM colocated at sleep level 1, LoRA sync
#   transformers  one GPU, no vLLM (the trainer generates with transformers): for a machine
#                 without vLLM; its verdict says vLLM, sleep and LoRA sync were not exercised
# A mode that needs vLLM, DeepSpeed or more GPUs than there are exits 2 naming what is missing:
# it never falls back to a smaller path and passes.
#
# Usage: apps/train-launcher/ci/gpu-smoke.sh [BASE_DIR] (default /tmp/codegrep-gpu-smoke; wiped
#        when an earlier run of this script made it, refused when anything else is there)
# Env:
#   MODEL   (required) a local folder of a small Qwen3 chat model (model_type qwen3: the
#           config's template), e.g. Qwen3-0.6B (config.json, tokenizer, *.safetensors)
#   MODE    one | paper | transformers (above)
#   VENV    a venv with ms-swift 4.6 (+ vLLM, + DeepSpeed for paper) and the workspace
#           packages; default: the one whose `codegrep-train` is on PATH
#   WHEELS  instead of VENV: a folder of wheels to build one from, offline
#           (uv pip install --no-index --find-links WHEELS, infra/node/constraints-gpu.txt)
#   STEPS   GRPO steps (default 3)   BETA  the KL coefficient (default 0.04; must be > 0)
#   LIMIT   seconds the launch may take (default 420; 600 for MODE=paper)
#   DRY_RUN=1  make the inputs, print the plan and run `plan --check`; nothing trains and there
#           is no verdict (what runs on a machine without a GPU)
# Exit 0: the verdict is PASS; 1: FAIL (the reasons are printed); 2: bad setup (no GPU, too few
# GPUs, no vLLM or DeepSpeed for the mode, plan --check refused or could not check).
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
command -v swift >/dev/null || die "missing swift (ms-swift) in the environment"
[[ -z ${ENGINE:-} ]] || die "ENGINE is gone: MODE=one|paper|transformers says what runs"
mode="${MODE:-one}"
case $mode in
  one) engine=vllm procs=1 zero=null sleep=1 offload=false ;;
  paper) engine=vllm procs=2 zero=zero3 sleep=1 offload=true ;;
  transformers) engine=none procs=1 zero=null sleep=0 offload=false ;;
  *) die "MODE must be one, paper or transformers, got '$mode'" ;;
esac
# what the mode needs, in the trainer's Python (the one beside swift)
swift_py="$(dirname "$(command -v swift)")/python"
[[ -x $swift_py ]] || swift_py="$py"
# a dry run plans where these are missing and says so; a run stops (exit 2)
missing() {
  if [[ ${DRY_RUN:-0} == 1 ]]; then
    echo "gpu-smoke: $* (a run would stop here)" >&2
  else
    die "$*"
  fi
}
vllm_version=""
if [[ $engine == vllm ]]; then
  vllm_version="$("$swift_py" -c "import vllm; print(vllm.__version__)" 2>/dev/null)" \
    || missing "MODE=$mode needs vLLM, which does not import in $swift_py" \
      "(MODE=transformers runs without it, and says so)"
fi
if [[ $zero != null ]]; then
  "$swift_py" -c "import deepspeed" 2>/dev/null \
    || missing "MODE=$mode needs DeepSpeed (ZeRO-3), which does not import in $swift_py"
fi
limit="${LIMIT:-$([[ $mode == paper ]] && echo 600 || echo 420)}"
[[ $limit =~ ^[1-9][0-9]{1,4}$ ]] || die "LIMIT must be seconds (10..99999), got '$limit'"
gpus=0
if command -v nvidia-smi >/dev/null; then
  gpus=$(nvidia-smi --list-gpus 2>/dev/null | grep -c '^GPU' || true)
fi
if [[ ${DRY_RUN:-0} != 1 ]]; then
  [[ $gpus -ge 1 ]] || die "no GPU (nvidia-smi lists none; DRY_RUN=1 to plan only)"
  [[ $gpus -ge $procs ]] || die "MODE=$mode needs $procs GPUs, nvidia-smi lists $gpus"
fi
gpu_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2>/dev/null \
  | head -n1 | tr -dc '0-9' || true)
gpu_gib=$(( ${gpu_mib:-81920} / 1024 ))

t0=$(date +%s)
"$py" "$here/make-cpu-inputs.py" "$base" --self-contained --no-model

# the CPU smoke config, turned into a GPU run of the given model in the mode's shape
sets=(
  --set "base_dir=$base"
  --set "model.path=$MODEL" --set "model.torch_dtype=bfloat16" --set "model.params_b=null"
  --set "cluster.device=cuda" --set "cluster.gpus_per_node=$procs" --set "cluster.gpu=H100"
  --set "cluster.gpu_memory_gib=$gpu_gib"
  --set "rollout.engine=$engine" --set "rollout.mode=colocate"
  --set "rollout.gpu_memory_utilization=0.3" --set "rollout.sleep_level=$sleep"
  --set "rollout.max_model_len=16384" --set "rollout.enable_lora=true"
  --set "train.deepspeed=$zero" --set "train.offload_model=$offload"
  --set "train.offload_optimizer=$offload"
  --set "train.max_steps=$steps" --set "train.beta=$beta" --set "train.save_steps=$steps"
  --set "train.eval_steps=$steps" --set "train.max_completion_length=512"
  --set "train.env={}" --set "train.report_to=[none]"
  --set "train.extra_args=[--check_model, 'false', --dataloader_num_workers, '0']"
  --set "sft.enabled=false" --set "evaluation.enabled=false"
  --set "swift.extra_args=[--use_hf, 'true']"
)
config="$app/configs/cpu-smoke.yaml"
asked="mode $mode: engine $engine${vllm_version:+ $vllm_version}, sleep level $sleep, deepspeed $zero, $procs process(es), offload $offload"
echo "== plan --check ($asked)"
set +e
codegrep-train plan --check --config "$config" "${sets[@]}" >"$base/plan.out" 2>&1
prc=$?
set -e
if [[ ${DRY_RUN:-0} == 1 ]]; then
  cat "$base/plan.out"
  echo "gpu-smoke: dry run ($asked; plan --check exit $prc): nothing trained, no verdict"
  exit 0
fi
sed -n '/^trainer check:/,$p' "$base/plan.out"
[[ $prc -eq 0 ]] || die "plan --check exit $prc (the plan and its errors: $base/plan.out)"

echo "== launch ($asked; $steps GRPO steps, LoRA, beta $beta)"
set +e
timeout "$limit" codegrep-train launch --config "$config" "${sets[@]}" >"$base/launch.out" 2>&1
rc=$?
set -e
t1=$(date +%s)
tail -n 40 "$base/launch.out"
out="$base/out"

echo "== monitor"
set +e
codegrep-train monitor "$out/grpo" --no-plot -o "$base/monitor"
mrc=$?

"$py" - "$out/grpo" "$steps" "$rc" "$mrc" "$base/monitor/report.json" "$mode" "$engine" \
  "$vllm_version" "$sleep" "$zero" "$procs" "$limit" <<'PY'
import json, math, pathlib, sys

grpo, steps, rc, mrc, report = pathlib.Path(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:6]
mode, engine, vllm_version, sleep, zero, procs, limit = sys.argv[6:13]
why = []

# what ran, from ms-swift's own record of its arguments (not from what was asked)
ran = {}
args_file = grpo / "args.json"
try:
    args = json.loads(args_file.read_text())
except (OSError, ValueError) as exc:
    args = None
    why.append(f"no readable {args_file} ({exc}): what ran is unknown")
if args is not None:
    ds = args.get("deepspeed")
    stage = ((ds or {}).get("zero_optimization") or {}).get("stage") if isinstance(ds, dict) else None
    ran = {
        "engine": (f"vllm {vllm_version} {args.get('vllm_mode')}" if args.get("use_vllm")
                   else "transformers (the trainer generates)"),
        "sleep_level": args.get("sleep_level"),
        "zero_stage": stage,
        "processes": args.get("global_world_size"),
        "lora_sync": bool(args.get("use_vllm") and args.get("vllm_enable_lora")),
        "offload": (args.get("offload_model"), args.get("offload_optimizer")),
    }
    want = {
        "engine": engine == "vllm",
        "sleep_level": int(sleep),
        "zero_stage": 3 if zero == "zero3" else None,
        "processes": int(procs),
        "lora_sync": engine == "vllm",
    }
    got = {
        "engine": bool(args.get("use_vllm")),
        "sleep_level": ran["sleep_level"],
        "zero_stage": stage,
        "processes": ran["processes"],
        "lora_sync": ran["lora_sync"],
    }
    for key, value in want.items():
        if got[key] != value:
            why.append(f"MODE={mode} asked {key}={value}, ms-swift ran {got[key]}")
if rc != "0":
    why.append(f"launch exit {rc}" + (f" (timed out at {limit} s)" if rc == "124" else ""))
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
said = (
    f"engine {ran.get('engine')}, sleep level {ran.get('sleep_level')}, "
    f"ZeRO stage {ran.get('zero_stage') or 'none'}, {ran.get('processes')} process(es), "
    f"LoRA sync {'on' if ran.get('lora_sync') else 'off'}, offload model/optimizer "
    f"{ran.get('offload')}"
    if ran else "what ran is unknown"
)
if mode == "transformers":
    said += "; vLLM, its sleep and the LoRA weight sync were NOT exercised"
print(f"ran ({mode}): {said}")
print(f"GPU SMOKE ({mode}): " + ("PASS" if not why else "FAIL: " + "; ".join(why)) + f" [{said}]")
sys.exit(0 if not why else 1)
PY
status=$?
set -e
echo "wall: launch $((t1 - t0)) s, total $(($(date +%s) - t0)) s"
exit $status
