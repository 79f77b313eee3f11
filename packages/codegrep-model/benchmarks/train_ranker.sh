#!/usr/bin/env bash
# Reproduces the ranker codegrep-model ships (src/codegrep_model/policies/lexical/rankers/lexical.json) from data:
# LexicalPolicy rollouts on the training instances, then the fit (see "The learned ranking" in
# the README). The training instances are the localizer pool's cross-validation part
# (`_pool.sh`, `localizer_splits.json`): every labelled instance at hand but the test
# repositories', which are read once per release (localizer_cv.sh with TEST=1) and never fitted.
# The fit is the one `localizer_cv.py test` makes, so the test figure is this file's.
#
# Usage: MIRRORS=DIR train_ranker.sh OUT_DIR
# Env: MIRRORS (a folder with a local clone per repository, OWNER+NAME/repo or OWNER+NAME;
#      without it the clones come from GitHub and the LocBench rows, which need local clones to
#      be checked, are left out: the file then differs), CODEGREP_SHARED_DATA (default
#      ../shared/data), CACHE (default OUT_DIR/cache), JOBS (default 2).
set -euo pipefail
out="${1:?OUT_DIR}"
cd "$(dirname "$0")/../../.."
here=packages/codegrep-model/benchmarks
data="${CODEGREP_SHARED_DATA:-../shared/data}"
mkdir -p "$out"
source "$here/_clone_source.sh"
source "$here/_pool.sh"
# the test repositories, from the ids the splits file fixed
test_repos=$(uv run --all-packages python "$here/localizer_cv.py" test-repos \
  "$here/localizer_splits.json")
[[ -n "$test_repos" ]] || { echo "error: no test repositories in the splits file" >&2; exit 2; }
for r in $test_repos; do pool_excluded+=(--exclude-repo "$r"); done
uv run --all-packages codegrep-model train-ranker $(printf -- '-i %s ' "${pool_sources[@]}") \
  "${pool_excluded[@]}" --cache "${CACHE:-$out/cache}" --source "$source_template" \
  -j "${JOBS:-2}" --examples "$out/examples.jsonl" -o "$out/lexical.json"
