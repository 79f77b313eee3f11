#!/usr/bin/env bash
# The localizer's held-out protocol (see "Held-out protocol" in the README):
#   1. the pool: every labelled instance at hand (SWE-bench Lite and the Verified dev slice,
#      CodeScout's two SWE-Gym validation files, the LocBench rows whose repository and commit
#      are at hand and whose id no earlier file gives another patch), django, matplotlib,
#      scikit-learn, pandas and bokeh left out (too large to fetch here);
#   2. LexicalPolicy's candidates of every pooled instance, with their features
#      (`codegrep-model train-ranker --examples`; resumable);
#   3. cross-validation by repository over the pool's cv part (localizer_splits.json, fixed
#      before any result was read): heuristic, ranker + threshold cut, ranker + expected-F0.5
#      selection, per repository and pooled, with intervals;
#   4. the shipped gate (apps/injector's gate_effect.py) on the cv part's out-of-fold answers:
#      each instance's files with the probabilities of a ranker that never saw its repository
#      (cv.predictions.jsonl, the answers the shipped calibration is measured on: in-sample for
#      the gate, apps/injector/calibration/calibrate-lexical.sh);
#   5. only with TEST=1: the test repositories, read once per release.
#
# Usage: MIRRORS=DIR localizer_cv.sh OUT_DIR
#   MIRRORS: OWNER+NAME/repo clones of the pool's 18 repositories (default: clone from GitHub)
#   CODEGREP_SHARED_DATA (default ../shared/data), CACHE (default OUT_DIR/cache), JOBS (1)
set -euo pipefail
out="${1:?OUT_DIR}"
cd "$(dirname "$0")/../../.."
here=packages/codegrep-model/benchmarks
data="${CODEGREP_SHARED_DATA:-../shared/data}"
mkdir -p "$out"
source "$here/_clone_source.sh"
source "$here/_pool.sh"
uv run --all-packages codegrep-model train-ranker $(printf -- '-i %s ' "${pool_sources[@]}") \
  "${pool_excluded[@]}" --cache "${CACHE:-$out/cache}" --source "$source_template" -j "${JOBS:-1}" \
  --examples "$out/examples.jsonl" --collect-only  # no fit: nothing of the test part is read
uv run --all-packages python "$here/localizer_cv.py" cv "$out/examples.jsonl" \
  --splits "$here/localizer_splits.json" -o "$out"
uv run --all-packages --with 'matplotlib>=3.8.4' python apps/injector/benchmarks/gate_effect.py \
  -i "${pool_sources[@]}" -p "$out/cv.predictions.jsonl" --predicted-only \
  --title "the shipped gate on the out-of-fold answers it is calibrated on (in-sample)" \
  -o "$out/gate-cv"
if [[ "${TEST:-0}" == 1 ]]; then
  uv run --all-packages python "$here/localizer_cv.py" test "$out/examples.jsonl" \
    --splits "$here/localizer_splits.json" -o "$out"
fi
