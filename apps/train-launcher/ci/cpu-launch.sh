#!/usr/bin/env bash
# The CPU smoke run of `codegrep-train`, end to end with real ms-swift (issue 13):
#   1. inputs (ci/make-cpu-inputs.py): a tiny Qwen3, 4 psf/requests + 2 pallets/flask Lite
#      instances, their shared OpenHands sessions, the local mirrors (with MIRRORS set); without
#      MIRRORS, self-contained inputs (two small git repositories made on the spot, 4 + 2
#      issues, one session each): what CI runs, having neither the shared data nor GitHub;
#   2. `codegrep-train launch --config configs/cpu-smoke.yaml`, SIGKILLed (the launcher's and the
#      running swift's process groups) as soon as GRPO's checkpoint-1 is complete;
#   3. the same launch again: the finished stages skipped, GRPO resumed from checkpoint-1, the
#      evaluation of the last checkpoint, the summary;
#   4. `codegrep-train monitor` on the run's real logs (verdict, monitor.png).
# Before 2, `codegrep-train plan --check` must pass; each launch judges sft and grpo again before
# starting them (a "trainer check" line).
# Prints each part's wall time.
#
# Usage: apps/train-launcher/ci/cpu-launch.sh [BASE_DIR] (default /tmp/codegrep-cpu-smoke; wiped)
# Env: MIRRORS: a folder with a local clone per repository (OWNER+NAME or OWNER+NAME/repo), or
#      `github` to clone them (network); with either, the shared data must be there.
#      Unset: the self-contained inputs.
# Every check is fatal: the script exits non-zero when the kill, the resume or a skip is not
# what it should be.
# Env: VENV (default /tmp/swiftvenv): a venv with ms-swift 4.6, CPU torch and the workspace
#      packages (packages/codegrep-model/ci/swift-tier.sh VENV makes one; then
#      `VENV/bin/pip install ./packages/catm ./packages/swe-eval ./apps/train-launcher[plot]`).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
app="$(cd "$here/.." && pwd)"
base="${1:-/tmp/codegrep-cpu-smoke}"
venv="${VENV:-/tmp/swiftvenv}"
config="$app/configs/cpu-smoke.yaml"
out="$base/out"
export PATH="$venv/bin:$PATH"
export HF_HOME="$base/hf" MODELSCOPE_CACHE="$base/modelscope" CUDA_VISIBLE_DEVICES=""
launch=(codegrep-train launch --config "$config" --set "base_dir=$base")

for tool in swift codegrep-train catm worktree-sandbox codegrep-model swe-eval; do
  command -v "$tool" >/dev/null || { echo "missing $tool in $venv" >&2; exit 2; }
done
python -c "import matplotlib" 2>/dev/null || pip install --quiet "matplotlib>=3.8.4"

t() { date +%s; }
rm -rf "$base"
mkdir -p "$base"
t0=$(t)
echo "== inputs"
if [[ -n "${MIRRORS:-}" ]]; then
  python "$here/make-cpu-inputs.py" "$base" --mirrors "$MIRRORS"
else
  python "$here/make-cpu-inputs.py" "$base" --self-contained
fi
t1=$(t)

echo "== plan --check (the sft and grpo command lines judged by ms-swift's argument classes)"
codegrep-train plan --check --config "$config" --set "base_dir=$base" >"$base/plan-check.out" 2>&1 \
  && rc0=0 || rc0=$?
sed -n '/^trainer check:/,$p' "$base/plan-check.out"
if [[ $rc0 -ne 0 ]] || ! grep -q '^trainer check: passed' "$base/plan-check.out"; then
  echo "plan --check did not pass (exit $rc0)" >&2; exit 1
fi
tc=$(t)

echo "== launch (to be killed once grpo/checkpoint-1 is complete)"
setsid "${launch[@]}" >"$base/launch1.out" 2>&1 &
pid=$!
ckpt="$out/grpo/checkpoint-1"
while kill -0 "$pid" 2>/dev/null; do
  if [[ -f "$ckpt/trainer_state.json" ]] && ls "$ckpt"/adapter_model.safetensors >/dev/null 2>&1; then
    sleep 1  # let the checkpoint's other files land; GRPO is then computing step 2
    swift_pids=$(pgrep -P "$pid" || true)
    echo "checkpoint-1 complete; SIGKILL launcher $pid and swift [$swift_pids] (their groups)"
    for p in $swift_pids; do kill -KILL -- "-$p" 2>/dev/null || true; done
    kill -KILL -- "-$pid" 2>/dev/null || true
    break
  fi
  sleep 0.5
done
wait "$pid" && rc1=0 || rc1=$?
t2=$(t)
cat "$base/launch1.out" | grep -E '^\[|stage|done|fail' || true
echo "first launch exit: $rc1 (137 = killed)"
ls "$out/grpo"
if [[ $rc1 -eq 0 ]]; then echo "the first launch finished before the kill" >&2; exit 1; fi

echo "== launch again (resume)"
set +e  # the launch's own exit code, not the filter's (PIPESTATUS after `|| true` is true's)
"${launch[@]}" 2>&1 | tee "$base/launch2.out" | grep -vE 'OFFLINE|PARALLELISM'
rc2=${PIPESTATUS[0]}
set -e
t3=$(t)
echo "second launch exit: $rc2"
fail=0
if grep -q "grpo: running (resuming from $ckpt" "$base/launch2.out"; then
  echo "RESUME: launcher resumed GRPO from $ckpt"
else
  echo "RESUME: no resume line" >&2; fail=1
fi
grep -c -- "--resume_from_checkpoint" "$out/logs/grpo.log" | sed 's/^/--resume_from_checkpoint occurrences in grpo.log: /'
for s in labels prepare datasets sft-data sft; do
  if grep -q "] $s: skipped" "$base/launch2.out"; then
    echo "  $s: skipped"
  else
    echo "  $s: NOT skipped" >&2; fail=1
  fi
done
for f in "$out/grpo/checkpoint-4/trainer_state.json" "$out/eval/summary.md"; do
  [[ -f "$f" ]] || { echo "missing after the resumed launch: $f" >&2; fail=1; }
done

echo "== GRPO per-step logs (ms-swift logging.jsonl)"
python - "$out/grpo" <<'PY'
import json, sys, pathlib
d = pathlib.Path(sys.argv[1])
for line in (d / "logging.jsonl").open():
    r = json.loads(line)
    keys = [k for k in r if k in ("global_step/max_steps", "loss", "reward", "reward_std", "kl",
            "completions/mean_length", "learning_rate") or k.startswith("rewards/")]
    print({k: r[k] for k in keys} if keys else r)
print("== per-rollout figures (codegrep_rollouts.jsonl)")
print(f"{'step':>4} {'instance':<22} {'policy':<8} {'reward':>6} {'calls/turn':<14} {'cbar':>5} "
      f"{'factor':>6} {'A_group':>8} {'A':>8} degenerate")
for line in (d / "codegrep_rollouts.jsonl").open():
    e = json.loads(line)
    g = lambda k, default=None: e.get(k, default)
    print(f"{g('step'):>4} {str(g('instance_id')):<22} {str(g('test_policy')):<8} "
          f"{(g('reward') or 0):>6.3f} {str(g('tool_calls_per_turn')):<14} {g('cbar', 0):>5.2f} "
          f"{g('factor', 0):>6.3f} {g('advantage_group', 0):>8.4f} {g('advantage', 0):>8.4f} "
          f"{g('degenerate') or ''}")
PY
[[ -f "$out/eval/summary.md" ]] && { echo "== eval/summary.md"; cat "$out/eval/summary.md"; }

echo "== monitor"
codegrep-train monitor "$out/grpo" --config "$config" -o "$base/monitor" && rc3=0 || rc3=$?
t4=$(t)
echo "monitor exit: $rc3 (0: no alarm, 1: an alarm); files: $(ls "$base/monitor" | tr '\n' ' ')"
[[ $rc3 -le 1 && -f "$base/monitor/monitor.png" ]] || { echo "the monitor failed" >&2; fail=1; }
echo "wall: inputs $((t1 - t0)) s, plan --check $((tc - t1)) s," \
  "first launch until killed $((t2 - tc)) s," \
  "resumed launch $((t3 - t2)) s, monitor $((t4 - t3)) s, total $((t4 - t0)) s"
if [[ $rc2 -ne 0 || $fail -ne 0 ]]; then
  echo "cpu launch FAILED (second launch exit $rc2, checks $fail)" >&2
  exit 1
fi
echo "cpu launch passed"
