#!/usr/bin/env bash
# Profiles programs nobody here wrote, without changing them: Debian's python3 and xz run under
# `inprof record` (LD_PRELOAD + INPROF_* variables). Their profiles must symbolicate, pass the
# structural check, and show the programs' own functions (python's interpreter loop).
set -euo pipefail
launcher="$1"; symbolicate="$2"; check="$3"; work="$4"
rm -rf "$work"; mkdir -p "$work"

fail() { echo "FAIL: $*"; exit 1; }

echo "== python3"
# Debian's interpreter itself, not a wrapper script found first on PATH (pyenv shims exec a chain
# of processes, each of which would write its own dump).
python=/usr/bin/python3
[ -x "$python" ] || fail "$python is not installed (the setup script installs it)"
"$launcher" record -o "$work/python-%p.inprof" -- "$python" -c 'print(sum(i * i for i in range(4000000)))' \
  || fail "python3 under the launcher exited with $?"
dump=$(ls -S "$work"/python-*.inprof 2>/dev/null | head -n 1 || true)
[ -n "$dump" ] || fail "python3 wrote no dump"
"$symbolicate" "$dump" -o "$work/python.json" 2>"$work/python.log"
"$check" "$work/python.json"
grep -q '_PyEval_EvalFrameDefault' "$work/python.json" || fail "no interpreter frames in python's profile"

echo "== xz"
command -v xz >/dev/null || fail "xz is not installed"
head -c 20000000 /dev/urandom > "$work/data"
"$launcher" record -o "$work/xz.inprof" -- xz -6 -T1 -k -f "$work/data" || fail "xz exited with $?"
"$symbolicate" "$work/xz.inprof" -o "$work/xz.json" 2>"$work/xz.log"
"$check" "$work/xz.json"
grep -q 'lzma' "$work/xz.json" || fail "no liblzma frames in xz's profile"

echo "== ring mode (flight recorder), captured by a signal sent from outside"
# The program waits for the capture to appear, then exits: stop() writes the ring once more.
"$launcher" record --ring --capture-signal SIGUSR2 -o "$work/ring.inprof" -- \
  "$python" -c '
import os, sys, time
open(sys.argv[1], "w").close()
start = time.time()
while not os.path.exists(sys.argv[2]) and time.time() - start < 120:
    sum(i * i for i in range(200000))
time.sleep(0.5)' "$work/ready" "$work/ring-capture-1.inprof" &
pid=$!
for _ in $(seq 600); do [ -e "$work/ready" ] && break; sleep 0.1; done
[ -e "$work/ready" ] || fail "python did not start"
sleep 0.5  # some samples in the ring first
kill -USR2 "$pid"
wait "$pid" || fail "python in ring mode exited with $?"
for f in ring-capture-1 ring; do
  [ -s "$work/$f.inprof" ] || fail "ring mode wrote no $f.inprof"
  "$symbolicate" "$work/$f.inprof" -o "$work/$f.json" 2>"$work/$f.log"
  "$check" "$work/$f.json"
  grep -q '_PyEval_EvalFrameDefault' "$work/$f.json" || fail "no interpreter frames in $f.json"
  grep -q 'profilingStartTime' "$work/$f.json" || fail "$f.json states no capture range"
done

echo "== launcher usage errors"
set +e
"$launcher" record >/dev/null 2>&1; [ $? -eq 2 ] || fail "missing program: expected exit 2"
"$launcher" record -- /nonexistent/program >/dev/null 2>&1; [ $? -eq 127 ] || fail "expected 127"
# (bad flags and variables: tests/launcher)
set -e
echo "preload: ok"
