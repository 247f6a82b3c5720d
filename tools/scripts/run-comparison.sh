#!/usr/bin/env bash
# inprof side by side with gperftools and perf, in one interleaved run; writes a results table.
#
#   bash tools/scripts/run-comparison.sh                 # full run: 5 repetitions, ~5-8 minutes
#   bash tools/scripts/run-comparison.sh --quick         # smoke test: 1 repetition, ~15 s
#   bash tools/scripts/run-comparison.sh --reps 9 --rate 1000   # any compare.py option
#
# Installs what is missing (google-perftools, linux-perf; apt-get, as root), builds the
# library, the workload (with and without frame pointers) and the dump summariser in
# $INPROF_COMPARE_BUILD (default build-compare), then runs benchmarks/compare/compare.py.
# Results: benchmarks/compare/results.md (+ results.json with every run's raw figures); with
# --quick: build-compare/results-quick.md, so the committed table is left alone.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${INPROF_COMPARE_BUILD:-$root/build-compare}
out=$root/benchmarks/compare/results.md
for arg in "$@"; do
  if [[ $arg == --quick ]]; then out=$build/results-quick.md; fi
done

need=()
[[ -e /usr/lib/x86_64-linux-gnu/libprofiler.so.0 ]] || need+=(libgoogle-perftools4 google-perftools)
command -v perf >/dev/null || need+=(linux-perf)
command -v python3 >/dev/null || need+=(python3)
if ((${#need[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "run-comparison: missing packages (${need[*]}); run as root or install them" >&2
    exit 1
  fi
  echo "run-comparison: installing ${need[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y \
    --no-install-recommends "${need[@]}" >/dev/null ||
    { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get -o \
        DPkg::Lock::Timeout=600 install -y --no-install-recommends "${need[@]}" >/dev/null; }
fi

# perf needs to sample a child process it started; as root that always works. For other users,
# say what to change rather than changing a system setting behind their back.
if ! perf record -q --no-bpf-event -o /dev/null -- true >/dev/null 2>&1; then
  echo "run-comparison: 'perf record' does not work here; as root:" \
       "echo 1 > /proc/sys/kernel/perf_event_paranoid (perf runs are skipped)" >&2
fi

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DINPROF_BUILD_BENCHMARKS=ON >/dev/null
cmake --build "$build" -j2 --target inprof_shared compare_workload_fp compare_workload_nofp \
  dump_summary >/dev/null

python3 "$root/benchmarks/compare/compare.py" --build-dir "$build" --out "$out" "$@"
echo "run-comparison: results in $out" >&2
