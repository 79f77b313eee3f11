#!/usr/bin/env bash
# Does training learn, on CPU? A tiny Qwen3 (random weights, real architecture, a tokenizer
# trained here) on the 26 SWE-bench Lite instances of psf/requests, pallets/flask and
# pytest-dev/pytest (real repositories at their base commits):
#   1. inputs: teacher rollouts of LexicalPolicy (`codegrep-model batch`), SFT rows filtered by
#      reward (`codegrep-model dataset sft --threshold 0.5`), GRPO rows (`dataset grpo`), the model;
#   2. greedy evaluation of the untrained model;
#   3. `swift sft` (full fine-tuning of the tiny model: it must learn the tool-call and answer
#      format), then the greedy evaluation again;
#   4. `swift rlhf --rlhf_type grpo` from the SFT model with our plugin (codegrep_tools scheduler,
#      codegrep_v3 reward), LoRA, beta > 0, the model's own rollouts only (CODEGREP_TEST_POLICY
#      unset), then the greedy evaluation again;
#   5. the table and the per-step curve (OUT/report), `codegrep-train monitor` on the GRPO run,
#      with its default thresholds (OUT/grpo/run/monitor) and with the windows scaled to the run
#      (learn_cpu_monitor.yaml; OUT/grpo/run/monitor-scaled): verdict.txt, report.json.
# A stage that finished (OUT/.done-NAME) is skipped on a rerun.
# Prints each stage's wall time. The evaluation is in-sample (the GRPO rows are the instances).
#
# Usage: MIRRORS=DIR VENV=DIR packages/codegrep-model/benchmarks/learn_cpu.sh OUT
#   MIRRORS: a folder with OWNER+NAME/repo clones of the three repositories
#   VENV: the ms-swift venv (ci/swift-tier.sh's: .ci/cpu-torch-venv.sh VENV, then
#         swift-requirements.txt and the four workspace packages); the monitor runs in the
#         workspace environment (`uv run --all-packages codegrep-train monitor`).
# Env knobs (defaults are what the committed figures used): SFT_STEPS GRPO_STEPS GENERATIONS
# GRPO_LR BETA MAX_LENGTH.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
out="$(mkdir -p "${1:?OUT}" && cd "$1" && pwd)"
venv="${VENV:?VENV: the ms-swift venv}"
mirrors="${MIRRORS:?MIRRORS: a folder with OWNER+NAME/repo clones}"
sft_steps="${SFT_STEPS:-300}"
grpo_steps="${GRPO_STEPS:-40}"
generations="${GENERATIONS:-8}"
max_length="${MAX_LENGTH:-6144}"
beta="${BETA:-0.04}"
grpo_lr="${GRPO_LR:-1e-3}"
py="$venv/bin/python"
swift="$venv/bin/swift"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 MODELSCOPE_OFFLINE=1
export TOKENIZERS_PARALLELISM=false CUDA_VISIBLE_DEVICES="" PATH="$venv/bin:$PATH"
export HF_HOME="$out/hf" MODELSCOPE_CACHE="$out/modelscope"
unset CODEGREP_TEST_POLICY CODEGREP_ROLLOUT_LOG
timings="$out/timings.txt"
echo "run $(date -u +%FT%TZ)" >>"$timings"  # appended: a rerun skips the stages done before
stage() { # NAME CMD...: run, log, time
  local name="$1" t0 t1
  shift
  if [[ -f "$out/.done-$name" ]]; then echo "== $name (done before)"; return; fi
  t0=$(date +%s)
  echo "== $name"
  "$@" >"$out/$name.log" 2>&1 || { tail -40 "$out/$name.log"; echo "stage $name failed" >&2; exit 1; }
  t1=$(date +%s)
  touch "$out/.done-$name"
  echo "$name $((t1 - t0)) s" | tee -a "$timings"
}
common=(
  --model_type qwen3 --template qwen3 --use_hf true --check_model false
  --torch_dtype float32 --split_dataset_ratio 0 --report_to none --logging_steps 1
  --gradient_checkpointing false --dataloader_num_workers 0 --seed 0
)
start=$(date +%s)

stage inputs "$py" "$here/learn_cpu.py" inputs "$out" --mirrors "$mirrors" --max-length "$max_length"
model="$out/tiny-qwen3"
stage eval-base "$py" "$here/learn_cpu.py" eval "$out" base --model "$model"

stage sft "$swift" sft --model "$model" "${common[@]}" \
  --tuner_type full --dataset "$out/sft.jsonl" --max_length "$max_length" --truncation_strategy right \
  --learning_rate 2e-3 --lr_scheduler_type cosine --warmup_ratio 0.05 \
  --max_steps "$sft_steps" --per_device_train_batch_size 1 --gradient_accumulation_steps 1 \
  --save_steps "$sft_steps" --save_only_model true --output_dir "$out/sft" --add_version false
sft_model="$out/sft/checkpoint-$sft_steps"
stage eval-sft "$py" "$here/learn_cpu.py" eval "$out" sft --model "$sft_model"

plugin="$("$py" -c 'import codegrep_model.train as t; print(t.swift_plugin_path())')"
stage grpo "$swift" rlhf --rlhf_type grpo --model "$sft_model" "${common[@]}" \
  --tuner_type lora --lora_rank 16 --lora_alpha 32 --target_modules all-linear \
  --external_plugins "$plugin" --multi_turn_scheduler codegrep_tools --max_turns 4 \
  --reward_funcs codegrep_v3 --use_vllm false --dataset "$out/grpo/train.jsonl" \
  --num_generations "$generations" --per_device_train_batch_size "$generations" --gradient_accumulation_steps 1 \
  --max_completion_length 160 --completion_length_limit_scope per_round --max_length "$max_length" \
  --temperature 1.0 --beta "$beta" --learning_rate "$grpo_lr" --max_steps "$grpo_steps" \
  --save_steps "$grpo_steps" --save_only_model true --log_completions true \
  --output_dir "$out/grpo/run" --add_version false
adapter="$out/grpo/run/checkpoint-$grpo_steps"
stage eval-grpo "$py" "$here/learn_cpu.py" eval "$out" grpo --model "$sft_model" --adapter "$adapter"

"$py" "$here/learn_cpu.py" report "$out"
end=$(date +%s)
echo "total $((end - start)) s" | tee -a "$timings"
echo "== monitor (exit 1 = an alarm fired)"
set +e
cd "$root"
uv run --all-packages codegrep-train monitor "$out/grpo/run" --no-plot
echo "monitor, default thresholds: exit $?"
uv run --all-packages codegrep-train monitor "$out/grpo/run" --no-plot \
  --config "$here/learn_cpu_monitor.yaml" -o "$out/grpo/run/monitor-scaled"
echo "monitor, windows scaled to the run: exit $?"
