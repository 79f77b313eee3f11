#!/usr/bin/env bash
# The README's side-by-side tables on SWE-bench Lite: peers' published outputs converted to
# prediction files, our baselines' prediction files, scored on all 300 and on the fetchable 140.
#
# Usage: lite-tables.sh OUT_DIR [SHARED_DATA] [EXTRA_PREDICTIONS...]
#   EXTRA_PREDICTIONS: our prediction files (BM25, dense, LexicalPolicy), scored on the 140 only.
set -euo pipefail
out="${1:?OUT_DIR}"; shift
here="$(cd "$(dirname "$0")" && pwd)"
data="${1:-$here/../../../../shared/data}"; [ $# -gt 0 ] && shift
mkdir -p "$out"
lite="$data/swebench/lite.jsonl"
peers="$data/peers"
se="swe-eval"

$se convert locagent "$peers/chronorepo/locagent_claude35_outputs.jsonl" -o "$out/locagent.jsonl"
$se convert locagent "$peers/chronorepo/locagent_claude35_outputs.jsonl" --top-k 1 -o "$out/locagent@1.jsonl"
$se convert swefixer "$peers/codescout_eval/swefixer_evaluation.json" -o "$out/swefixer.jsonl"
$se convert chronorepo "$peers/chronorepo/f1_scores_lite.jsonl" --ranking hybrid --top-k 1 -o "$out/chronorepo-hybrid@1.jsonl"
$se convert chronorepo "$peers/chronorepo/f1_scores_lite.jsonl" --ranking bm25 --top-k 1 -o "$out/chronorepo-bm25@1.jsonl"
$se convert autocoderover "$peers/autocoderover_lite/acr-run-1_predictions_for_swebench.json" -o "$out/autocoderover.jsonl"
$se convert swe-agent "$peers/sweagent_lite/cost_2_1_all_preds.jsonl" -o "$out/swe-agent.jsonl"

published=("$out/locagent.jsonl" "$out/locagent@1.jsonl" "$out/swefixer.jsonl"
  "$out/chronorepo-hybrid@1.jsonl" "$out/chronorepo-bm25@1.jsonl" "$out/autocoderover.jsonl"
  "$out/swe-agent.jsonl")
args=(); for p in "${published[@]}"; do args+=(-p "$p"); done
$se retrieval -i "$lite" "${args[@]}" -f markdown --title "SWE-bench Lite, all 300" -o "$out/lite300.md"

fetchable=(--exclude-repo django/django --exclude-repo matplotlib/matplotlib --exclude-repo scikit-learn/scikit-learn)
ours=(); for p in "$@"; do ours+=(-p "$p"); done
$se retrieval -i "$lite" "${ours[@]}" "${args[@]}" "${fetchable[@]}" -f markdown --paired \
  --title "SWE-bench Lite, the 140 fetchable instances" -o "$out/lite140.md"
$se retrieval -i "$lite" "${ours[@]}" "${args[@]}" "${fetchable[@]}" -f json -o "$out/lite140.json"
$se plot -i "$lite" "${ours[@]}" "${args[@]}" "${fetchable[@]}" -o "$out/precision.png" \
  --title "SWE-bench Lite, 140 fetchable instances"
