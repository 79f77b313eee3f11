# Sourced by localizer_cv.sh and train_ranker.sh: the localizer's labelled pool, one definition.
# Needs: data (the shared data folder), out (an output folder), here (this folder), and
# source_template (from _clone_source.sh). Sets:
#   pool_sources: SWE-bench Lite and the Verified dev slice, CodeScout's two SWE-Gym validation
#     files, and with MIRRORS the LocBench rows whose repository and commit are at hand and
#     whose id no earlier file gives another patch (written to $out/locbench.jsonl);
#   pool_excluded: --exclude-repo for the repositories too large to fetch here.
pool_sources=("$data/swebench/lite.jsonl" "$data/swebench/verified_dev.jsonl"
              "$data/codescout_train/swe_gym_validation.parquet"
              "$data/codescout_train/SWE-Gym-code-search_validation.parquet")
if [[ -n "${MIRRORS:-}" ]]; then
  uv run --all-packages python "$here/locbench_at_hand.py" "$MIRRORS" "$out/locbench.jsonl" \
    --locbench "$data/locbench/locbench_gt.jsonl" \
    $(printf -- '--unless-in %s ' "${pool_sources[@]}")
  pool_sources+=("$out/locbench.jsonl")
fi
pool_excluded=()
for r in django/django matplotlib/matplotlib scikit-learn/scikit-learn pandas-dev/pandas \
  bokeh/bokeh; do pool_excluded+=(--exclude-repo "$r"); done
