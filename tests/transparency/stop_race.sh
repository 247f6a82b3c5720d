#!/usr/bin/env bash
# Item 13: stop() racing exit(), and the INPROF_DURATION / dump-signal stopper and a forked child's
# stop() racing the end of the process: every dump must be complete (end record, whole JIT map) and
# the program's output and exit status unchanged. See stop_race.cc for the modes.
#   stop_race.sh PROG SYMBOLICATE WORK_DIR [ROUNDS]
set -uo pipefail
prog=$1 symbolicate=$2 work=$3 rounds=${4:-3}
rm -rf "$work"; mkdir -p "$work"
failed=0

check_dump() {  # check_dump LABEL DUMP JIT_MAP_EXPECTED
  local label=$1 dump=$2 jit=$3
  "$symbolicate" --summary --quiet-modules "$dump" >"$work/$label.summary" 2>"$work/$label.symerr"
  local status=$?
  if ((status != 0)); then
    echo "FAIL $label: symbolicate exit $status"; sed 's/^/   /' "$work/$label.symerr" | head; failed=1; return
  fi
  if grep -q "no end record\|cut short" "$work/$label.symerr"; then
    echo "FAIL $label: the dump is not complete"; sed 's/^/   /' "$work/$label.symerr" | head; failed=1
  fi
  if [[ $jit == yes ]] && ! grep -q "JIT map: 300000 code ranges" "$work/$label.symerr"; then
    echo "FAIL $label: JIT map incomplete: $(grep 'JIT map' "$work/$label.symerr")"; failed=1
  fi
}

run_mode() {  # run_mode ROUND MODE ENV...
  local round=$1 mode=$2; shift 2
  local label="$mode-$round" dump="$work/$mode-$round.inprof"
  (cd "$work" && timeout 60 env "$@" INPROF_OUTPUT="$dump" "$prog" "$mode" "$dump.child") \
    >"$work/$label.out" 2>"$work/$label.err" </dev/null
  local status=$?
  # The JIT maps this run left (the program names them on stderr).
  grep -o '/tmp/perf-[0-9]*\.map' "$work/$label.err" | xargs -r rm -f
  # The map is whole in the dump if it was complete before the stop began (with INPROF_DURATION
  # on a loaded machine it may not have been).
  local jit=no
  grep -q "before the stop" "$work/$label.err" && jit=yes
  local expected="jit map lines: 300000"
  [[ $mode == fork ]] && expected=$'jit map lines: 300000\nchild exit status: 0'
  if [[ $status != 0 || "$(cat "$work/$label.out")" != "$expected" ]]; then
    echo "FAIL $label: exit $status, output:"; sed 's/^/   /' "$work/$label.out" "$work/$label.err" | head
    failed=1; return
  fi
  if [[ $mode == fork ]]; then
    check_dump "$label-child" "$dump.child" $jit
  else
    check_dump "$label" "$dump" $jit
  fi
}

for ((round = 1; round <= rounds; round++)); do
  run_mode $round thread-stop INPROF_STARTUP=1 INPROF_INTERVAL=1ms
  run_mode $round thread-exit INPROF_STARTUP=1 INPROF_INTERVAL=100us
  run_mode $round duration INPROF_STARTUP=1 INPROF_INTERVAL=1ms INPROF_DURATION=1s
  run_mode $round signal INPROF_STARTUP=1 INPROF_INTERVAL=100us INPROF_SIGNAL_DUMP=SIGUSR2
  run_mode $round fork INPROF_STARTUP=1 INPROF_INTERVAL=1ms
  run_mode $round jit-fifo INPROF_STARTUP=1 INPROF_INTERVAL=1ms
done
if ((failed)); then echo "FAIL: a stop racing the end of the process left an incomplete dump"; exit 1; fi
echo "PASS: $rounds rounds of 5 stop paths racing exit (and a FIFO as JIT map), every dump complete"
