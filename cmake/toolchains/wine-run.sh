#!/bin/sh
# The tests' emulator for the Windows cross build (CMAKE_CROSSCOMPILING_EMULATOR): runs a Windows
# program under Wine, as `wine PROGRAM ARGS...` would, and when it fails says how: its exit status
# and how long it ran. A Windows program that dies loses what its C runtime had buffered of
# its output, so without this line a failure under ctest can show nothing at all.
#
#   wine-run.sh WINE PROGRAM [ARGS...]
wine=$1
shift
started=$(date +%s%N)
"$wine" "$@"
status=$?
if [ "$status" -ne 0 ]; then
  ended=$(date +%s%N)
  echo "wine-run: $1 ended with status $status after $(((ended - started) / 1000000)) ms" >&2
fi
exit "$status"
