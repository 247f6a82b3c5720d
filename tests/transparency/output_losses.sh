#!/usr/bin/env bash
# Item (issue 39): a dump that cannot be written is said to be lost, never silently.
#  (a) The output directory is deleted while the program runs (preloaded, and linked): the
#      program's output and exit status stay as unprofiled, and the profiler says on stderr (a
#      line starting "inprof:") that the dump was lost.
#  (b) The disk fills up under the dump (a 256 KiB tmpfs, filled to the last byte once the dump
#      has its first bytes, so what comes after cannot fit however well it compresses; skipped with
#      a message where tmpfs cannot be mounted): output and status unchanged, a line "inprof:" on
#      stderr, and symbolicate on what was written exits non-zero or says the disk was full.
#   output_losses.sh --plain PROG --linked PROG --preload LIB --symbolicate SYM --work-dir DIR
# PROG is busy_sum: it computes for argv[1] ms of CPU and exits 7.
set -uo pipefail
while (($#)); do
  case $1 in
    --plain) plain=$2 ;; --linked) linked=$2 ;; --preload) preload=$2 ;;
    --symbolicate) symbolicate=$2 ;; --work-dir) work=$2 ;;
    *) echo "output_losses: unknown argument $1"; exit 2 ;;
  esac
  shift 2
done
if mountpoint -q "$work/full" 2>/dev/null; then umount "$work/full"; fi
rm -rf "$work"; mkdir -p "$work"; cd "$work" || exit 2
failed=0
fail() { echo "FAIL: $*"; failed=1; }

"$plain" 1500 >plain.out 2>/dev/null; echo $? >plain.status
same() {  # same LABEL: output and status as unprofiled
  if ! cmp -s plain.out "$1.out" || ! cmp -s plain.status "$1.status"; then
    fail "$1: exit $(cat "$1.status") (unprofiled: $(cat plain.status)), output differs"
    diff plain.out "$1.out" | sed 's/^/   /'
  fi
}

# (a) The directory goes once the dump has been created.
for how in preload linked; do
  label=deleted-$how
  mkdir -p "$work/gone"
  if [[ $how == linked ]]; then prog=$linked; pre=(); else prog=$plain; pre=(LD_PRELOAD="$preload"); fi
  timeout -k 5 60 env "${pre[@]}" INPROF_STARTUP=1 INPROF_INTERVAL=1ms \
    INPROF_OUTPUT="$work/gone/dump.inprof" "$prog" 1500 >"$label.out" 2>"$label.err" </dev/null &
  pid=$!
  for _ in $(seq 100); do [[ -e $work/gone/dump.inprof ]] && break; sleep 0.05; done
  [[ -e $work/gone/dump.inprof ]] || fail "$label: the dump was never created"
  rm -rf "$work/gone"
  wait $pid; echo $? >"$label.status"
  echo "== $label: exit $(cat "$label.status")"; sed 's/^/   stderr: /' "$label.err"
  same "$label"
  grep -q "^inprof:" "$label.err" || fail "$label: nothing on stderr says the dump was lost"
done

# (b) A full disk.
mkdir -p "$work/full"
if ! mount_error=$(mount -t tmpfs -o size=256k tmpfs "$work/full" 2>&1); then
  echo "SKIP (b) full disk: cannot mount a tmpfs here: $mount_error"
else
  trap 'umount "$work/full" 2>/dev/null' EXIT
  for how in preload linked; do
    label=full-$how
    rm -f "$work/full/dump.inprof" "$work/full/filler"
    if [[ $how == linked ]]; then prog=$linked; pre=(); else prog=$plain; pre=(LD_PRELOAD="$preload"); fi
    timeout -k 5 60 env "${pre[@]}" INPROF_STARTUP=1 INPROF_INTERVAL=100us \
      INPROF_OUTPUT="$work/full/dump.inprof" "$prog" 1500 >"$label.out" 2>"$label.err" </dev/null &
    pid=$!
    # A whole run's dump of this program can be as small as 16 KiB (one stack, well compressed):
    # a disk with a fixed room left may hold all of it. Filled to the last byte once the dump's
    # first chunk is written (after 0.5 s of the 1.5 s run), it holds none of the chunks and end
    # record still to come (several KiB, more than the part of a page the last write may leave).
    size() { stat -c %s "$work/full/dump.inprof" 2>/dev/null || echo 0; }
    for _ in $(seq 300); do (($(size) > 64)) && break; sleep 0.01; done
    (($(size) > 64)) || fail "$label: no chunk of the dump was written in 3 s"
    cat /dev/zero >"$work/full/filler" 2>/dev/null
    echo "   tmpfs filled: $(df -k --output=avail "$work/full" | tail -1 | tr -d ' ') KiB free," \
      "dump $(stat -c %s "$work/full/dump.inprof") bytes then"
    wait $pid; echo $? >"$label.status"
    echo "== $label: exit $(cat "$label.status"), dump $(stat -c %s "$work/full/dump.inprof" 2>/dev/null || echo none) bytes"
    sed 's/^/   stderr: /' "$label.err"
    same "$label"
    grep -q "^inprof:" "$label.err" || fail "$label: nothing on stderr says the dump was cut short"
    if [[ -e $work/full/dump.inprof ]]; then
      "$symbolicate" --summary --quiet-modules "$work/full/dump.inprof" >"$label.summary" 2>"$label.symerr"
      status=$?
      echo "   symbolicate: exit $status"; sed 's/^/   symbolicate: /' "$label.symerr" | head -5
      # Its "cut short ... the process probably ended before the profiler stopped" names
      # another cause: the disk must be named (or the exit status say the dump is damaged).
      if ((status == 0)) && ! grep -qiE "disk|no space" "$label.symerr"; then
        fail "$label: symbolicate exits 0 and does not say the disk was full"
      fi
    fi
  done
fi
if ((failed)); then echo "FAIL: a lost dump goes unsaid"; exit 1; fi
echo "PASS: lost dumps are reported"
