#!/usr/bin/env bash
# The persistent symbol cache (symbolicate --cache-dir), cold against warm (not run in CI):
#
#   benchmarks/symbolicate/cache_bench.sh [BUILD_DIR [DUMP_A DUMP_B [DUMP_C]]]   (default: build)
#
# Dumps of the same release: by default three recordings of one /usr/bin/python3.11 workload (its
# DWARF from python3.11-dbg), made here with `inprof record` at 200 us. With WINDOWS=1 instead
# the fleet's case (issue 25): ONE recording of that workload run for WINDOW_SECONDS (default 7)
# with `inprof record --rotate 2s`, whose first three windows, consecutive, are A, B and C (the
# windows of one long-running service, symbolicated in batch). For each of RUNS
# (default 5) rounds, interleaved so that a change in the machine's load hits all alike:
#   cold   DUMP_B with --no-cache (the baseline: what every run cost before the cache)
#   fill   DUMP_A into an empty cache (a cold run that also writes the cache)
#   warm   DUMP_B with that cache (the second dump of the release)
#   again  DUMP_B once more (every address now known: no module is opened)
#   third  DUMP_C with the cache A and B left (a third dump; its cold run is "cold C")
# and checks that every cached output is byte-identical to the cold one. Prints the best and median
# wall time of each, the symbolization phase's own time (symbolicate's "time:" line), the cache's
# hits and misses and its size on disk. Environment: RUNS, FORMAT (default json), KEEP=1 keeps
# the work directory, WINDOWS=1 (above), BUILD_JOBS (default 2) for the build of the tools.
set -euo pipefail

build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
case $build in /*) ;; *) build=$root/$build ;; esac
runs=${RUNS:-5}
format=${FORMAT:-json}
symbolicate=$build/tools/symbolicate/symbolicate
work=$(mktemp -d /tmp/cache-bench-XXXXXX)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT

if [ $# -ge 3 ]; then
  dump_a=$2
  dump_b=$3
  dump_c=${4:-}
else
  cmake --build "$build" -j"${BUILD_JOBS:-2}" --target symbolicate inprof_launcher inprof_shared >/dev/null
  launcher=$(find "$build/tools/inprof" -maxdepth 1 -type f -name inprof -perm -u+x | head -1)
  cat >"$work/workload.py" <<'PY'
import json, re
def fib(n): return n if n < 2 else fib(n - 1) + fib(n - 2)
def text(n):
    words = ["w%d" % (i * 7919 % 1000) for i in range(n)]
    counts = {}
    for w in words: counts[w] = counts.get(w, 0) + 1
    s = json.dumps(sorted(counts.items()))
    return len(re.findall(r"w\d+", s)) + len(json.loads(s))
def step(): return fib(24) + text(100000) + sum(sorted(range(100000), key=lambda x: -x)[:10])
total = 0
import os, time
seconds = float(os.environ.get("WORKLOAD_SECONDS", "0"))
if seconds:  # a service: the same work over and over until the time is up
    end = time.monotonic() + seconds
    while time.monotonic() < end: total += step()
else:
    for _ in range(12): total += step()
print(total)
PY
  if [ "${WINDOWS:-0}" = 1 ]; then
    # One process, a dump per 2-second window (docs/fleet.md): win-1, win-2, ... The last one,
    # cut short by the exit, is not used.
    WORKLOAD_SECONDS=${WINDOW_SECONDS:-7} "$launcher" record --no-children -i 200us --rotate 2s \
      -o "$work/win-%n.inprof" -- /usr/bin/python3.11 "$work/workload.py" >/dev/null
    dump_a=$work/win-1.inprof
    dump_b=$work/win-2.inprof
    dump_c=$work/win-3.inprof
    for d in "$dump_a" "$dump_b" "$dump_c"; do
      [ -s "$d" ] || { echo "cache-bench: no window $d (a longer WINDOW_SECONDS?)" >&2; exit 1; }
    done
  else
    for d in a b c; do
      "$launcher" record --no-children -i 200us -o "$work/$d.inprof" -- /usr/bin/python3.11 "$work/workload.py" >/dev/null
    done
    dump_a=$work/a.inprof
    dump_b=$work/b.inprof
    dump_c=$work/c.inprof
  fi
fi

ext=$format; [ "$format" = pprof ] && ext=pb.gz
# Runs symbolicate; prints "WALL SYMBOLIZE" seconds; stderr kept in $work/last.err. Timed by
# bash's own clock (EPOCHREALTIME, bash 5), read without starting a process: two `$(date
# +%s.%N)` around the run timed a start of `date` with it, 5-15 ms on this machine, as much as a
# warm run's own fixed costs (docs/results.md, "Symbol cache", round 8).
timed() {
  local t0 t1
  t0=${EPOCHREALTIME:-}
  [ -n "$t0" ] || t0=$(date +%s.%N)  # bash before 5
  "$symbolicate" "$@" --format "$format" --no-progress 2>"$work/last.err" || {
    cat "$work/last.err" >&2; exit 1; }
  t1=${EPOCHREALTIME:-}
  [ -n "$t1" ] || t1=$(date +%s.%N)
  t0=${t0/,/.} t1=${t1/,/.}  # a locale's decimal comma
  local sym
  sym=$(sed -n 's/.*symbolize \([0-9.]*\) s.*/\1/p' "$work/last.err" | head -1)
  echo "$(echo "$t1 - $t0" | bc) ${sym:-0}"
}
cold=() fill=() warm=() again=() cold_sym=() fill_sym=() warm_sym=() again_sym=()
coldc=() third=() coldc_sym=() third_sym=()
for r in $(seq "$runs"); do
  read -r w s < <(timed "$dump_b" --no-cache -o "$work/cold.$ext")
  cold+=("$w"); cold_sym+=("$s")
  rm -rf "$work/cache"
  read -r w s < <(timed "$dump_a" --cache-dir "$work/cache" -o "$work/fill.$ext")
  fill+=("$w"); fill_sym+=("$s")
  read -r w s < <(timed "$dump_b" --cache-dir "$work/cache" -o "$work/warm.$ext")
  warm+=("$w"); warm_sym+=("$s")
  hits=$(sed -n 's/.*symbol cache .*: \([0-9]*\) addresses found, \([0-9]*\) symbolized (\([0-9]*\) found by the module index), \([0-9]*\) modules* opened.*/\1 found (\3 by the module index), \2 symbolized, \4 modules opened/p' "$work/last.err")
  cmp -s "$work/cold.$ext" "$work/warm.$ext" || { echo "cache-bench: warm output differs from cold" >&2; exit 1; }
  read -r w s < <(timed "$dump_b" --cache-dir "$work/cache" -o "$work/again.$ext")
  again+=("$w"); again_sym+=("$s")
  cmp -s "$work/cold.$ext" "$work/again.$ext" || { echo "cache-bench: output differs from cold" >&2; exit 1; }
  if [ -n "$dump_c" ]; then
    read -r w s < <(timed "$dump_c" --no-cache -o "$work/coldc.$ext")
    coldc+=("$w"); coldc_sym+=("$s")
    read -r w s < <(timed "$dump_c" --cache-dir "$work/cache" -o "$work/third.$ext")
    third+=("$w"); third_sym+=("$s")
    third_hits=$(sed -n 's/.*symbol cache .*: \([0-9]*\) addresses found, \([0-9]*\) symbolized (\([0-9]*\) found by the module index), \([0-9]*\) modules* opened.*/\1 found (\3 by the module index), \2 symbolized, \4 modules opened/p' "$work/last.err")
    cmp -s "$work/coldc.$ext" "$work/third.$ext" || { echo "cache-bench: third output differs from cold" >&2; exit 1; }
  fi
done
stats() {  # best median
  printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {printf "%.3f %.3f\n", v[1], v[int((NR+1)/2)]}'
}
read -r cb cm < <(stats "${cold[@]}"); read -r fb fm < <(stats "${fill[@]}")
read -r wb wm < <(stats "${warm[@]}")
read -r csb csm < <(stats "${cold_sym[@]}"); read -r fsb fsm < <(stats "${fill_sym[@]}")
read -r wsb wsm < <(stats "${warm_sym[@]}")
read -r ab am < <(stats "${again[@]}"); read -r asb asm < <(stats "${again_sym[@]}")
echo "dumps: A $(basename "$dump_a"), B $(basename "$dump_b"); format $format; $runs rounds; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "warm B: $hits; cache on disk $(du -sk "$work/cache" | cut -f1) KiB; warm output identical to cold"
echo
echo "| run | wall best | wall median | symbolize phase best | median |"
echo "|---|---|---|---|---|"
echo "| cold: B, --no-cache | $cb s | $cm s | $csb s | $csm s |"
echo "| fill: A into an empty cache | $fb s | $fm s | $fsb s | $fsm s |"
echo "| warm: B with A's cache | $wb s | $wm s | $wsb s | $wsm s |"
echo "| again: B with B's own addresses cached | $ab s | $am s | $asb s | $asm s |"
if [ -n "$dump_c" ]; then
  read -r ccb ccm < <(stats "${coldc[@]}"); read -r tb tm < <(stats "${third[@]}")
  read -r ccsb ccsm < <(stats "${coldc_sym[@]}"); read -r tsb tsm < <(stats "${third_sym[@]}")
  echo "| cold C, --no-cache | $ccb s | $ccm s | $ccsb s | $ccsm s |"
  echo "| third: C with A's and B's cache ($third_hits) | $tb s | $tm s | $tsb s | $tsm s |"
fi
echo
echo "speed-up warm vs cold: wall $(echo "scale=1; $cb / $wb" | bc)x best, $(echo "scale=1; $cm / $wm" | bc)x median; symbolize phase $(echo "scale=1; $csb / ($wsb + 0.0005)" | bc)x best"
echo "speed-up again vs cold: wall $(echo "scale=1; $cb / $ab" | bc)x best, $(echo "scale=1; $cm / $am" | bc)x median"
if [ -n "$dump_c" ]; then
  echo "speed-up third vs cold C: wall $(echo "scale=1; $ccb / $tb" | bc)x best, $(echo "scale=1; $ccm / $tm" | bc)x median"
fi
