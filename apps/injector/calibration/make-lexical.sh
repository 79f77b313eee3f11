#!/usr/bin/env bash
# Reproduces the calibration of LexicalPolicy that codegrep-gate ships
# (packages/codegrep-gate/src/codegrep_gate/calibrations/lexical.json):
#   1. `swe-eval predict -r lexical` on SWE-bench Lite and on the Verified dev slice, for the
#      repositories that can be cloned here (django, matplotlib and scikit-learn are left out:
#      too large to fetch), into this folder (predictions and the runner's .meta.json only):
#      the shipped ranker's own answers, the calibration's held-out check (Verified dev's
#      astropy and sphinx) and what benchmarks/surfaces_agree.py compares the surfaces with;
#   2. `codegrep calibrate` on the out-of-fold answers of the localizer's cross-validation
#      (calibrate-lexical.sh says what they are and why; they are written by
#      packages/codegrep-model/benchmarks/localizer_cv.sh, which is run first when the ranker
#      or its features change, since it needs the pool's repositories and an hour or so).
# The file names in the calibration are relative to the repository root, as run here.
#
# Usage: apps/injector/calibration/make-lexical.sh
# Env: MIRRORS: a folder with a local clone per repository (OWNER+NAME/repo or OWNER+NAME);
#        default: clone from GitHub into CACHE.
#      CODEGREP_SHARED_DATA: the shared data folder (default ../shared/data).
#      CACHE: the clone cache (default: a temporary folder).
set -euo pipefail
cd "$(dirname "$0")/../../.."
here=apps/injector/calibration
data="${CODEGREP_SHARED_DATA:-../shared/data}"
cache="${CACHE:-$(mktemp -d)}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
if [[ -n "${MIRRORS:-}" ]]; then
  source_template="$MIRRORS/{owner}+{name}/repo"
  [[ -d "$MIRRORS/psf+requests/repo" ]] || source_template="$MIRRORS/{owner}+{name}"
else
  source_template="https://github.com/{repo}.git"
fi
skip=(--exclude-repo django/django --exclude-repo matplotlib/matplotlib
      --exclude-repo scikit-learn/scikit-learn)

for split in lite verified_dev; do
  uv run --all-packages swe-eval predict -r lexical -i "$data/swebench/$split.jsonl" \
    --cache "$cache" --source "$source_template" "${skip[@]}" -j 2 \
    -o "$scratch/lexical-$split.jsonl"
  cp "$scratch/lexical-$split.jsonl" "$here/lexical-$split.predictions.jsonl"
  cp "$scratch/lexical-$split.jsonl.meta.json" "$here/lexical-$split.predictions.jsonl.meta.json"
done

"$here/calibrate-lexical.sh" "$data" packages/codegrep-gate/src/codegrep_gate/calibrations/lexical.json
