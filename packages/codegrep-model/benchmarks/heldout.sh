#!/usr/bin/env bash
# The held-out table of the built-in localizer as it was made for the previous ranker (see
# "Held-out protocol" in the README): LexicalPolicy with its learned ranker (`lexical`), without
# it (`lexical-heuristic`, the policy of 0.1) and BM25 top-1, on the Verified dev slice, SWE-bench
# Lite and LocBench (the instances whose repository and base commit are in MIRRORS; only when
# MIRRORS is set: its 165 repositories are not cloned from GitHub here). For the ranker shipped
# now, fitted on the localizer pool's cross-validation part, none of the three is held out: it
# was fitted on 118 of the 140 Lite instances, 27 of the 52 Verified dev ones (Lite instances
# too) and 60 of the LocBench ones; its held-out figures are localizer_cv.sh's test part and
# swe-eval's Multi-SWE-bench slice. The heuristic was tuned on Lite.
# by repository and overall, with bootstrap intervals and a paired bootstrap of each system
# minus the first (`lexical-heuristic`).
#
# Usage: heldout.sh OUT_DIR
# Env: MIRRORS: a folder with a local clone per repository (OWNER+NAME/repo or OWNER+NAME);
#        default: clone from GitHub into CACHE.
#      CODEGREP_SHARED_DATA: the shared data folder (default ../shared/data).
#      CACHE: the clone cache (default OUT_DIR/cache). JOBS: rollouts at a time (default 2).
set -euo pipefail
out="${1:?OUT_DIR}"
cd "$(dirname "$0")/../../.."
data="${CODEGREP_SHARED_DATA:-../shared/data}"
cache="${CACHE:-$out/cache}"
jobs="${JOBS:-2}"
mkdir -p "$out"
source packages/codegrep-model/benchmarks/_clone_source.sh
# too large to fetch here; the same three are left out of every row and both splits
skip=(--exclude-repo django/django --exclude-repo matplotlib/matplotlib
      --exclude-repo scikit-learn/scikit-learn)
se=(uv run --all-packages swe-eval)

splits=(verified_dev lite)
if [[ -n "${MIRRORS:-}" ]]; then
  uv run python packages/codegrep-model/benchmarks/locbench_at_hand.py "$MIRRORS" \
    "$out/locbench.instances.jsonl" --locbench "$data/locbench/locbench_gt.jsonl"
  splits+=(locbench)
fi
instances_of() {
  if [[ "$1" == locbench ]]; then echo "$out/locbench.instances.jsonl"
  else echo "$data/swebench/$1.jsonl"; fi
}

for split in "${splits[@]}"; do
  instances="$(instances_of "$split")"
  for r in lexical-heuristic lexical bm25; do
    echo "== $split: $r" >&2
    "${se[@]}" predict -r "$r" -i "$instances" --cache "$cache" --source "$source_template" \
      "${skip[@]}" -j "$jobs" -o "$out/$split.$r.jsonl"
  done
  "${se[@]}" cut -i "$instances" -p "$out/$split.bm25.jsonl" --top-k 1 --name bm25@1 \
    -o "$out/$split.bm25@1.jsonl"
done

"${se[@]}" retrieval -i "$data/swebench/verified_dev.jsonl" "${skip[@]}" \
  -p "$out/verified_dev.lexical-heuristic.jsonl" -p "$out/verified_dev.lexical.jsonl" \
  -p "$out/verified_dev.bm25@1.jsonl" --paired --by-repo -f markdown \
  --title "Verified dev slice, fetchable repositories (HELD OUT)" -o "$out/verified_dev.md"
"${se[@]}" retrieval -i "$data/swebench/lite.jsonl" "${skip[@]}" \
  -p "$out/lite.lexical-heuristic.jsonl" -p "$out/lite.lexical.jsonl" \
  -p "$out/lite.bm25@1.jsonl" --paired --by-repo -f markdown \
  --title "SWE-bench Lite, fetchable repositories (IN-SAMPLE)" -o "$out/lite.md"
tables=("$out/verified_dev.md" "$out/lite.md")
if [[ -n "${MIRRORS:-}" ]]; then
  "${se[@]}" retrieval -i "$out/locbench.instances.jsonl" \
    -p "$out/locbench.lexical-heuristic.jsonl" -p "$out/locbench.lexical.jsonl" \
    -p "$out/locbench.bm25@1.jsonl" --paired --by-repo -f markdown \
    --title "LocBench, repositories at hand (HELD OUT)" -o "$out/locbench.md"
  tables+=("$out/locbench.md")
fi
cat "${tables[@]}"
