#!/usr/bin/env bash
# Reproduces the ranker codegrep-model ships (src/codegrep_model/rankers/lexical.json) from data:
# LexicalPolicy rollouts on the training instances, then the fit (see "The learned ranking" in
# the README). Training data, never the held-out Verified dev slice:
#   - SWE-bench Lite, fetchable repositories (140);
#   - CodeScout's SWE-Gym validation rows (swe_gym_validation + SWE-Gym-code-search_validation,
#     6 instances in both, used once), fetchable repositories (153 of 202: pandas and bokeh
#     are too large to fetch here).
#
# Usage: train_ranker.sh OUT_DIR
# Env: MIRRORS (a folder with a local clone per repository, OWNER+NAME/repo or OWNER+NAME;
#      default: clone from GitHub), CODEGREP_SHARED_DATA (default ../shared/data),
#      CACHE (default OUT_DIR/cache), JOBS (default 2).
set -euo pipefail
out="${1:?OUT_DIR}"
cd "$(dirname "$0")/../../.."
data="${CODEGREP_SHARED_DATA:-../shared/data}"
mkdir -p "$out"
source packages/codegrep-model/benchmarks/_clone_source.sh
uv run --all-packages codegrep-model train-ranker \
  -i "$data/swebench/lite.jsonl" \
  -i "$data/codescout_train/swe_gym_validation.parquet" \
  -i "$data/codescout_train/SWE-Gym-code-search_validation.parquet" \
  --exclude-repo django/django --exclude-repo matplotlib/matplotlib \
  --exclude-repo scikit-learn/scikit-learn --exclude-repo pandas-dev/pandas \
  --exclude-repo bokeh/bokeh \
  --cache "${CACHE:-$out/cache}" --source "$source_template" -j "${JOBS:-2}" \
  --examples "$out/examples.jsonl" -o "$out/lexical.json"
