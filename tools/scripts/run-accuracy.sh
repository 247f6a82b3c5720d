#!/usr/bin/env bash
# inprof against `perf record --call-graph dwarf` on real programs (xz -9, python3.11, zstd -T2
# -19, cc1plus), interleaved, at 1 ms and 100 µs (issue 21); writes a results table.
#
#   bash tools/scripts/run-accuracy.sh                      # 3 repetitions: ~15 minutes
#   bash tools/scripts/run-accuracy.sh --reps 1 --programs xz,zstd --intervals 1ms
#
# Installs what is missing (install-deps.sh: linux-perf, zstd, python3.11-dbg, g++), builds the
# library, symbolicate and the dump summariser in $INPROF_ACCURACY_BUILD (default build-accuracy),
# lets perf sample (as root, if perf cannot: kernel.perf_event_paranoid 1), then runs
# benchmarks/accuracy/accuracy.py. Results: benchmarks/accuracy/results.md (+ results.json).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${INPROF_ACCURACY_BUILD:-$root/build-accuracy}
bash "$root/tools/scripts/install-deps.sh"
paranoid=/proc/sys/kernel/perf_event_paranoid
if ! perf record -q --no-bpf-event -o /dev/null -- true >/dev/null 2>&1; then
  if [[ $(id -u) -eq 0 ]]; then
    echo "run-accuracy: perf cannot sample here; lowering kernel.perf_event_paranoid to 1" >&2
    echo 1 > $paranoid
  else
    echo "run-accuracy: perf cannot sample here (as root: echo 1 > $paranoid)" >&2
    exit 1
  fi
fi
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j2 --target inprof_shared symbolicate dump_summary >/dev/null
python3 "$root/benchmarks/accuracy/accuracy.py" --build-dir "$build" --reps 3 \
  --out "$root/benchmarks/accuracy/results.md" "$@"
