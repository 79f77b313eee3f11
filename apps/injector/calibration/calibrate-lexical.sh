#!/usr/bin/env bash
# The calibration step of make-lexical.sh on its own: `codegrep calibrate` on the committed
# LexicalPolicy predictions of SWE-bench Lite (the data its weights were tuned on), checked on
# the Verified dev slice (held out: never tuned on, never fitted); django, matplotlib and
# scikit-learn are left out (too large to fetch). Runs in the current directory, which must be a
# checkout of this repository (scripts/equivalence.sh runs it in two).
#
# Usage: apps/injector/calibration/calibrate-lexical.sh DATA OUT
#   DATA: the shared data folder (holds swebench/lite.jsonl and swebench/verified_dev.jsonl)
#   OUT:  where the calibration record goes
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: calibrate-lexical.sh DATA OUT" >&2; exit 2; }
data=$1 out=$2
here=apps/injector/calibration
skip=() check_skip=()
for repo in django/django matplotlib/matplotlib scikit-learn/scikit-learn; do
  skip+=(--exclude-repo "$repo") check_skip+=(--check-exclude-repo "$repo")
done
uv run --quiet --all-packages codegrep calibrate \
  -i "$data/swebench/lite.jsonl" -p "$here/lexical-lite.predictions.jsonl" "${skip[@]}" \
  --name "SWE-bench Lite, fetchable repositories (LexicalPolicy's tuning data)" \
  --check-instances "$data/swebench/verified_dev.jsonl" \
  --check-predictions "$here/lexical-verified_dev.predictions.jsonl" "${check_skip[@]}" \
  --check-name "SWE-bench Verified dev slice, fetchable repositories (held out)" \
  -o "$out"
