#!/usr/bin/env bash
# Items 15 and 16: what is at the output path, and who else writes it.
#  15. A FIFO at the dump or crash path (with or without a reader) never holds the program up: it
#      is refused at start with a clear message, and the program runs unprofiled, unchanged.
#  16. Processes given one output path (sh -c 'a; b', timeout, a path reused after a process
#      ended) never share a file: a path another live process is writing makes this one write
#      PATH-PID (before the extension) and say so once; every dump is whole. symbolicate exits 3
#      (output written, records lost) on a damaged dump, 0 on a whole one.
#   output_paths.sh --plain PROG --linked PROG --preload LIB --symbolicate SYM --work-dir DIR
set -uo pipefail
while (($#)); do
  case $1 in
    --plain) plain=$2 ;; --linked) linked=$2 ;; --preload) preload=$2 ;;
    --symbolicate) symbolicate=$2 ;; --work-dir) work=$2 ;;
    *) echo "output_paths: unknown argument $1"; exit 2 ;;
  esac
  shift 2
done
rm -rf "$work"; mkdir -p "$work"; cd "$work" || exit 2
failed=0
fail() { echo "FAIL: $*"; failed=1; }

"$plain" 50 >plain.out 2>/dev/null; echo $? >plain.status
# run LABEL COMMAND...: like the unprofiled run (same output, same status), within 60 s.
run() {
  local label=$1; shift
  timeout 60 "$@" >"$label.out" 2>"$label.err" </dev/null
  echo $? >"$label.status"
  if ! cmp -s plain.out "$label.out" || ! cmp -s plain.status "$label.status"; then
    fail "$label: exit $(cat "$label.status") (unprofiled: $(cat plain.status)), output differs"
    sed 's/^/   /' "$label.out" "$label.err" | head
  fi
}
# whole DUMP: symbolicate reads it without losing anything.
whole() {
  local dump=$1 status
  "$symbolicate" --summary --quiet-modules "$dump" >/dev/null 2>"$dump.symerr"
  status=$?
  if ((status != 0)); then
    fail "$dump: symbolicate exit $status"; sed 's/^/   /' "$dump.symerr" | head -5
  elif grep -q "warning" "$dump.symerr"; then
    fail "$dump: symbolicate warned"; grep warning "$dump.symerr" | sed 's/^/   /' | head -5
  fi
}
# undamaged DUMP: like whole, except that it may end early: dash leaves with _exit(), which
# runs no atexit handler, so the shell's own dump has no end record (preloaded by hand, with no
# `inprof record` to finish it from its lifeboat: lib/session/lifeboat.h).
undamaged() {
  local dump=$1 status
  "$symbolicate" --summary --quiet-modules "$dump" >/dev/null 2>"$dump.symerr"
  status=$?
  if ((status != 0)); then
    fail "$dump: symbolicate exit $status"; sed 's/^/   /' "$dump.symerr" | head -5
  elif grep "warning" "$dump.symerr" | grep -v -q "no end record"; then
    fail "$dump: damaged"; grep warning "$dump.symerr" | sed 's/^/   /' | head -5
  fi
}

# 15: FIFOs.
mkfifo fifo.inprof crash-fifo.inprof
for how in linked preload; do
  if [[ $how == linked ]]; then prog=("$linked" 50); pre=(); else prog=("$plain" 50); pre=(LD_PRELOAD="$preload"); fi
  run "fifo-$how" env "${pre[@]}" INPROF_STARTUP=1 INPROF_OUTPUT=fifo.inprof "${prog[@]}"
  grep -q "not a regular file" "fifo-$how.err" || fail "fifo-$how: no message: $(cat "fifo-$how.err")"
  # A reader waiting on the FIFO: opening succeeds, the file type refuses it.
  timeout 60 cat fifo.inprof >/dev/null & reader=$!
  run "fifo-reader-$how" env "${pre[@]}" INPROF_STARTUP=1 INPROF_OUTPUT=fifo.inprof "${prog[@]}"
  grep -q "not a regular file" "fifo-reader-$how.err" || fail "fifo-reader-$how: no message"
  kill $reader 2>/dev/null; wait $reader 2>/dev/null
  run "crash-fifo-$how" env "${pre[@]}" INPROF_STARTUP=1 INPROF_OUTPUT=ring.inprof INPROF_MODE=ring \
    INPROF_CRASH="$work/crash-fifo.inprof" "${prog[@]}"
  grep -q "crash file .* not a regular file" "crash-fifo-$how.err" ||
    fail "crash-fifo-$how: no message: $(cat "crash-fifo-$how.err")"
done

# 16: one path, several processes. The shell holds same.inprof while its two children run.
rm -f same*.inprof
timeout 60 env LD_PRELOAD="$preload" INPROF_STARTUP=1 INPROF_OUTPUT="$work/same.inprof" \
  sh -c "'$plain' 50; '$plain' 50" >shared.out 2>shared.err </dev/null
echo $? >shared.status
cat plain.out plain.out >shared.expected
cmp -s shared.expected shared.out && [[ $(cat shared.status) == 7 ]] ||
  fail "sh -c 'a; b': exit $(cat shared.status), output differs"
dumps=(same*.inprof)
[[ ${#dumps[@]} == 3 ]] || fail "sh -c 'a; b': ${#dumps[@]} dumps (${dumps[*]}), expected 3"
[[ $(grep -c "is being written by another process; this one ([0-9]*) writes .*/same-[0-9]*\.inprof" shared.err) == 2 ]] ||
  fail "sh -c 'a; b': expected the message once per child: $(cat shared.err)"
for d in "${dumps[@]}"; do undamaged "$d"; done
[[ $(grep -L "no end record" same*.symerr | wc -l) -ge 2 ]] || fail "sh -c 'a; b': the programs' dumps are not complete"

# timeout(1) profiled too: it and the program it runs each keep a dump.
rm -f same*.inprof
run timeout env LD_PRELOAD="$preload" INPROF_STARTUP=1 INPROF_OUTPUT="$work/same.inprof" \
  timeout 60 "$plain" 50
dumps=(same*.inprof)
[[ ${#dumps[@]} == 2 ]] || fail "timeout prog: ${#dumps[@]} dumps (${dumps[*]}), expected 2"
for d in "${dumps[@]}"; do whole "$d"; done

# A path left by a process that has ended is simply replaced.
rm -f same*.inprof
run first env INPROF_STARTUP=1 INPROF_OUTPUT="$work/same.inprof" "$linked" 50
run second env INPROF_STARTUP=1 INPROF_OUTPUT="$work/same.inprof" "$linked" 50
dumps=(same*.inprof)
[[ ${#dumps[@]} == 1 ]] || fail "one after the other: ${#dumps[@]} dumps (${dumps[*]}), expected 1"
grep -q "another process" second.err && fail "one after the other: the second moved aside"
whole same.inprof

# Ring mode with crash capture: the crash file follows the dump's own path.
rm -f ring*.inprof
LD_PRELOAD="$preload" INPROF_STARTUP=1 INPROF_MODE=ring INPROF_CRASH=1 \
  INPROF_OUTPUT="$work/ring.inprof" timeout 60 "$plain" 50 >ring.out 2>ring.err </dev/null
[[ $? == 7 ]] || fail "ring: exit status changed: $(cat ring.err)"
dumps=(ring*.inprof)
[[ ${#dumps[@]} == 2 ]] || fail "ring: ${#dumps[@]} dumps (${dumps[*]}), expected 2"
for d in "${dumps[@]}"; do whole "$d"; done

# symbolicate's exit status: 0 on a whole dump, 3 when records were lost (the profile is still
# written), with one line saying so.
run long env INPROF_STARTUP=1 INPROF_INTERVAL=100us INPROF_OUTPUT="$work/long.inprof" "$linked" 1200
size=$(stat -c %s long.inprof)
for where in first middle; do
  cp long.inprof "damaged-$where.inprof"
  offset=$((size / 2)); [[ $where == first ]] && offset=24
  head -c 64 /dev/zero | tr '\0' '\377' |
    dd of="damaged-$where.inprof" bs=1 seek=$offset conv=notrunc status=none
  "$symbolicate" "damaged-$where.inprof" -o "damaged-$where.json" 2>"damaged-$where.symerr"
  status=$?
  [[ $status == 3 ]] || fail "symbolicate on a dump damaged at its $where chunk: exit $status"
  [[ $(grep -c "error: records were lost" "damaged-$where.symerr") == 1 ]] ||
    fail "symbolicate on a dump damaged at its $where chunk: $(cat "damaged-$where.symerr")"
  [[ -s damaged-$where.json ]] || fail "symbolicate wrote no profile for the damaged dump"
done
grep -q "no process record" damaged-first.symerr || fail "damaged first chunk: process record not missed"

if ((failed)); then echo "FAIL: output paths"; exit 1; fi
echo "PASS: FIFOs refused without blocking, one path never shared, symbolicate's status says what was lost"
