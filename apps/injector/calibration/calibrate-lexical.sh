#!/usr/bin/env bash
# The calibration step of make-lexical.sh on its own: `codegrep calibrate` on LexicalPolicy's
# out-of-fold answers, the ones the localizer's cross-validation writes
# (packages/codegrep-model/benchmarks/localizer_cv.sh, results/localizer_cv/cv.predictions.jsonl):
# each of the 331 instances of its cross-validation part (16 Python repositories) answered with
# the probabilities of a ranker fitted on the other 15 repositories, never on its own. That is
# how the shipped ranker meets a repository it was not fitted on, which is what the gate is for;
# a calibration on data the ranker was fitted on claimed more than such a repository gets
# (on these answers the Lite-measured bins promised 0.750 and 0.857 from score 0.63, and the
# gate's injections came out 0.708). The instances are read from the pool's files in the
# pool's order (benchmarks/_pool.sh there: Lite, the Verified dev slice, CodeScout's two
# SWE-Gym validation files, LocBench; the first file holding an id gives it), and only those
# with an answer are measured (--predicted-only). The default eight score bins, and the
# context model (--context): precision on the file's score, its rank and its answer's size,
# its interval from 200 refits on resampled instances, which the gate reads first
# (apps/injector/benchmarks/gate_by_repository.py judges it with each repository left out).
# Checked on the shipped ranker's own answers for the Verified dev slice's instances of astropy
# and sphinx (25), the pool's test repositories: never fitted on, nor in the calibration.
# Runs in the current directory, which must be a checkout of this repository
# (scripts/equivalence.sh runs it in two).
#
# Usage: apps/injector/calibration/calibrate-lexical.sh DATA OUT
#   DATA: the shared data folder (swebench/, codescout_train/, locbench/)
#   OUT:  where the calibration record goes
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: calibrate-lexical.sh DATA OUT" >&2; exit 2; }
data=$1 out=$2
here=apps/injector/calibration
cv=packages/codegrep-model/benchmarks/results/localizer_cv
uv run --quiet --all-packages codegrep calibrate \
  -i "$data/swebench/lite.jsonl" -i "$data/swebench/verified_dev.jsonl" \
  -i "$data/codescout_train/swe_gym_validation.parquet" \
  -i "$data/codescout_train/SWE-Gym-code-search_validation.parquet" \
  -i "$data/locbench/locbench_gt.jsonl" \
  -p "$cv/cv.predictions.jsonl" --predicted-only --context \
  --name "out-of-fold answers of the localizer's cross-validation (331 instances, 16 Python repositories)" \
  --check-instances "$data/swebench/verified_dev.jsonl" \
  --check-predictions "$here/lexical-verified_dev.predictions.jsonl" \
  --check-repo astropy/astropy --check-repo sphinx-doc/sphinx \
  --check-name "SWE-bench Verified dev slice, astropy and sphinx (never fitted on)" \
  -o "$out"
