#!/usr/bin/env bash
# Runs one transparency program unprofiled, then profiled (linked and preloaded, 1 kHz and 10 kHz,
# busy threads sampled by the kernel where it allows it, and once by timers; and preloaded with the
# allocation interposer recording allocations, where it is built)
# and fails unless every profiled run prints the same and exits the same as the unprofiled one.
# A profiled run must also leave a dump that symbolicate reads (when --symbolicate is given).
# Extra variables for every profiled run: TRANSPARENCY_ENV="NAME=VALUE ...".
# With --launcher, once more under `inprof record` (the launcher preloads the library itself).
# --args: words given to the program in every run (one argument, split on spaces).
# --complete: every profiled run's dump must have its end record (the profiler finished it).
# Every run is killed after 60 s: a program that never exits (profiled) fails as "hung", not as a
# ctest timeout.
set -uo pipefail
plain= linked= preload= symbolicate= work= launcher= args= complete=
while (($#)); do
  case $1 in
    --plain) plain=$2; shift 2 ;;
    --linked) linked=$2; shift 2 ;;
    --preload) preload=$2; shift 2 ;;
    --symbolicate) symbolicate=$2; shift 2 ;;
    --work-dir) work=$2; shift 2 ;;
    --launcher) launcher=$2; shift 2 ;;
    --args) args=$2; shift 2 ;;
    --complete) complete=1; shift ;;
    *) echo "run_transparency: unknown argument $1"; exit 2 ;;
  esac
done
[[ -n $plain && -n $linked && -n $preload && -n $work ]] || { echo "run_transparency: missing arguments"; exit 2; }
rm -rf "$work"; mkdir -p "$work"
name=$(basename "$plain")

read -r -a prog_args <<<"$args"
# run LABEL COMMAND...: output in $work/LABEL.out, status in $work/LABEL.status ("hung" when it
# had to be killed after 60 s; timeout's own 124, or 137 after the KILL 5 s later).
run() {
  local label=$1 status; shift
  (cd "$work" && timeout -k 5 60 "$@" "${prog_args[@]}") >"$work/$label.out" 2>"$work/$label.err" </dev/null
  status=$?
  if ((status == 124 || status == 137)); then status="hung (killed after 60 s)"; fi
  echo "$status" >"$work/$label.status"
}

run plain "$plain"
echo "== $name unprofiled: exit $(cat "$work/plain.status")"
sed 's/^/   /' "$work/plain.out"
failed=0
# Busy threads are sampled by the kernel where it allows it, else by timers' signals: the last
# run forces timers, so that both ways keep the contract.
# With the allocation interposer beside the library, once more recording allocations at one per
# 4 KiB on average (small sampled blocks tagged, large ones in the set, most blocks not sampled:
# every path of the interposer; rate 1 is the torture suite's). The interposer replaces malloc,
# the contract's one exception, which must change nothing the program can see either.
variants=(linked-1ms preload-1ms linked-100us preload-100us preload-100us-timer)
interposer=$(dirname "$preload")/libinprof_allocations.so
[[ -f $interposer ]] && variants+=(allocations-1ms)
# Under `inprof record` twice: writing raw dumps (it execs the program), and writing a profile
# (it stays the program's parent: signals passed on, the program's exit status or signal passed
# back, the profile written after it).
[[ -n $launcher ]] && variants+=(record-1ms)
# (A flight recorder or rotation in TRANSPARENCY_ENV writes raw dumps by nature: no profile.)
[[ -n $launcher && ${TRANSPARENCY_ENV:-} != *INPROF_MODE=ring* &&
   ${TRANSPARENCY_ENV:-} != *INPROF_ROTATE* ]] && variants+=(record-1ms-profile)
# TRANSPARENCY_SKIP="variant ...": variants whose difference is inherent (said where it is set).
for variant in "${variants[@]}"; do
    [[ " ${TRANSPARENCY_SKIP:-} " == *" $variant "* ]] && { echo "== $variant: skipped (inherent)"; continue; }
    IFS=- read -r how interval way <<<"$variant"
    label=$variant
    dump="$work/$label.inprof"
    way_env=INPROF_SELF_SAMPLING=${way:-auto}
    if [[ $how == linked ]]; then
      run "$label" env INPROF_STARTUP=1 INPROF_INTERVAL=$interval INPROF_OUTPUT="$dump" \
        $way_env ${TRANSPARENCY_ENV:-} "$linked"
    elif [[ $how == record && $way == profile ]]; then
      dump="$work/$label.json"
      run "$label" env INPROF_LIBRARY="$preload" INPROF_SYMBOLICATE="$symbolicate" \
        ${TRANSPARENCY_ENV:-} "$launcher" record -q -i "$interval" -o "$dump" -- "$plain"
    elif [[ $how == record ]]; then
      run "$label" env INPROF_LIBRARY="$preload" ${TRANSPARENCY_ENV:-} "$launcher" record \
        -i "$interval" -o "$dump" -- "$plain"
    elif [[ $how == allocations ]]; then
      run "$label" env LD_PRELOAD="$interposer:$preload" INPROF_STARTUP=1 INPROF_ALLOCATIONS=4K \
        INPROF_INTERVAL=$interval INPROF_OUTPUT="$dump" ${TRANSPARENCY_ENV:-} "$plain"
    else
      run "$label" env LD_PRELOAD="$preload" INPROF_STARTUP=1 INPROF_INTERVAL=$interval \
        INPROF_OUTPUT="$dump" $way_env ${TRANSPARENCY_ENV:-} "$plain"
    fi
    verdict=same
    if ! cmp -s "$work/plain.out" "$work/$label.out" ||
       ! cmp -s "$work/plain.status" "$work/$label.status"; then
      verdict=DIFFERENT
      failed=1
    fi
    echo "== $label: exit $(cat "$work/$label.status"), $verdict"
    if [[ $verdict != same ]]; then
      diff "$work/plain.out" "$work/$label.out" | sed 's/^/   /'
      sed 's/^/   stderr: /' "$work/$label.err" | head -20
    fi
    if [[ $dump == *.json ]]; then
      [[ -s $dump ]] || { echo "   no profile at $dump"; failed=1; }
    elif [[ -n $symbolicate ]]; then
      # A program that exec'd itself: the last image writes the last "-execN" dump beside it.
      for n in $(seq 9 -1 1); do
        [[ -s ${dump%.inprof}-exec$n.inprof ]] && { dump=${dump%.inprof}-exec$n.inprof; break; }
      done
      if [[ ! -s $dump ]]; then
        echo "   no dump at $dump"; failed=1
      elif ! "$symbolicate" --summary "$dump" >"$work/$label.summary" 2>&1; then
        echo "   symbolicate could not read $dump:"; sed 's/^/   /' "$work/$label.summary" | head; failed=1
      elif [[ -n $complete ]] && grep -q "has no end record" "$work/$label.summary"; then
        echo "   the dump is incomplete:"; grep "no end record" "$work/$label.summary" | sed 's/^/   /'; failed=1
      fi
    fi
done
if ((failed)); then echo "FAIL: $name behaves differently when profiled"; exit 1; fi
echo "PASS: $name behaves the same profiled"
