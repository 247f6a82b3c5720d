#!/usr/bin/env bash
# Items 15 and 16: what is at the output path, and who else writes it.
#  15. A FIFO at the dump or crash path (with or without a reader) never holds the program up: it
#      is refused at start with a clear message, and the program runs unprofiled, unchanged.
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

if ((failed)); then echo "FAIL: output paths"; exit 1; fi
echo "PASS: FIFOs refused without blocking"
