# Sourced by the learning benchmarks (learn_cpu.sh, learn_answer.sh): `stage NAME CMD...` runs
# CMD unless OUT/.done-NAME exists (a finished stage is skipped on a rerun) or STAGES names
# other stages; its output is added to OUT/NAME.log (a stage resumed after a stop keeps the
# earlier part's output) and its time to OUT/timings.txt.
# Needs: out (the output folder).
timings="$out/timings.txt"
stage() { # NAME CMD...: run unless done (or not in STAGES), log, time
  local name="$1" t0 t1
  shift
  if [[ -f "$out/.done-$name" ]]; then echo "== $name (done before)"; return; fi
  if [[ -n "${STAGES:-}" && " $STAGES " != *" $name "* ]]; then return; fi
  t0=$(date +%s)
  echo "== $name"
  echo "== $name started $(date -u +%FT%TZ)" >>"$out/$name.log"
  "$@" >>"$out/$name.log" 2>&1 || { tail -40 "$out/$name.log"; echo "stage $name failed" >&2; exit 1; }
  t1=$(date +%s)
  touch "$out/.done-$name"
  echo "$name $((t1 - t0)) s" | tee -a "$timings"
}
