#!/usr/bin/env bash
# Symbolication speed and memory, in one command (not run in CI):
#
#   tools/scripts/run-symbolicate-bench.sh [BUILD_DIR]   (default: build)
#
# 1. Addresses per second on one set of unique addresses inside python3.11's functions (its DWARF
#    from python3.11-dbg, a separate debug file found by build-id), inline frames on, for
#    symbolicate (1 thread and every core), llvm-symbolizer and addr2line. Each tool is run
#    3 times; the best wall time counts (the machine may be shared).
# 2. A long recording: 10 minutes, 8 threads, 1 kHz (4.8 million samples) written synthetically
#    with the library's dump writer from real python3.11 code addresses; time and peak RSS of
#    symbolicate (/usr/bin/time -v).
# 3. A sparse set (2,000 addresses), as a real profile of a large program has: whole run against
#    llvm-symbolizer.
#
# Every figure is cold: symbolicate runs with --no-cache (no symbol cache or module index read or
# written) and with XDG_CACHE_HOME in the work directory, so nothing of the user's cache is ever
# used (a warm cache made its "best of 3" 3x faster here). The warm cache is measured apart, by
# benchmarks/symbolicate/cache_bench.sh.
#
# Environment: ADDRESSES (default 50000), BINARY (default /usr/bin/python3.11), LONG=0 skips
# part 2, SPARSE (default 2000, 0 skips part 3), KEEP=1 keeps the work directory.
set -euo pipefail

build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
case $build in /*) ;; *) build=$root/$build ;; esac
addresses=${ADDRESSES:-50000}
binary=${BINARY:-/usr/bin/python3.11}

need=()
for p in python3.11 python3.11-dbg llvm-14 binutils time bc; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "run-symbolicate-bench: installing ${need[*]}" >&2
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

cmake --build "$build" -j2 --target symbolicate make_bench_dump >/dev/null
symbolicate=$build/tools/symbolicate/symbolicate
make_dump=$build/benchmarks/symbolicate/make_bench_dump
llvm=$(command -v llvm-symbolizer-14 || command -v llvm-symbolizer)

work=$(mktemp -d /tmp/symbolicate-bench-XXXXXX)
export XDG_CACHE_HOME="$work/xdg-cache"  # never the user's cache
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT

# 3 runs of "$@": the best wall time and the best CPU time (user + system, all threads), in
# seconds, as "WALL CPU". CPU time barely depends on what else the machine runs; wall time does.
best_of_3() {
  local best_wall="" best_cpu=""
  for _ in 1 2 3; do
    /usr/bin/time -f "%e %U %S" -o "$work/t" "$@" >/dev/null 2>&1
    read -r wall user sys <"$work/t"
    local cpu
    cpu=$(echo "$user + $sys" | bc -l)
    if [ -z "$best_wall" ] || [ "$(echo "$wall < $best_wall" | bc -l)" = 1 ]; then best_wall=$wall; fi
    if [ -z "$best_cpu" ] || [ "$(echo "$cpu < $best_cpu" | bc -l)" = 1 ]; then best_cpu=$cpu; fi
  done
  echo "$best_wall $best_cpu"
}

"$make_dump" addresses "$binary" "$addresses" "$work/a.inprof" "$work/a.txt" >/dev/null
n=$(wc -l <"$work/a.txt")
cores=$(nproc)

# symbolicate's own measure of its symbolization phase (the rest is reading the dump and
# building and writing the JSON), best of 3: addresses per second of wall time and per second of
# CPU time (all threads), as "WALL_RATE CPU_RATE". Extra arguments go to symbolicate.
phase_rate() {
  local best=0 best_cpu=0
  for _ in 1 2 3; do
    local line r c
    line=$("$symbolicate" "$work/a.inprof" -o /dev/null --quiet-modules --no-cache "$@" 2>&1 | grep 'time:')
    r=$(echo "$line" | sed -n 's/.*threads*, \([0-9]*\) addresses\/s.*/\1/p')
    c=$(echo "$line" | sed -n 's/.* \([0-9]*\) addresses\/CPU-s.*/\1/p')
    [ "$r" -gt "$best" ] && best=$r
    [ "$c" -gt "$best_cpu" ] && best_cpu=$c
  done
  echo "$best $best_cpu"
}

read -r w_sym1 c_sym1 < <(best_of_3 "$symbolicate" "$work/a.inprof" -o "$work/a1.json" --no-cache -j 1)
read -r w_symn c_symn < <(best_of_3 "$symbolicate" "$work/a.inprof" -o "$work/an.json" --no-cache -j "$cores")
read -r p_sym1 pc_sym1 < <(phase_rate -j 1)
read -r p_symn pc_symn < <(phase_rate -j "$cores")
# All threads, but the module not split between them (50,000 addresses < 999,999), as before the
# split by compilation unit: what splitting gains.
read -r p_split pc_split < <(phase_rate -j "$cores" --split-at 999999)
read -r w_llvm c_llvm < <(best_of_3 sh -c "'$llvm' --obj='$binary' --inlining --demangle <'$work/a.txt'")
read -r w_a2l c_a2l < <(best_of_3 sh -c "addr2line -f -i -C -e '$binary' <'$work/a.txt'")
cmp -s "$work/a1.json" "$work/an.json" || echo "WARNING: -j 1 and -j $cores outputs differ" >&2
"$symbolicate" "$work/a.inprof" -o "$work/as.json" --no-cache -j "$cores" --split-at 999999 2>/dev/null
cmp -s "$work/a1.json" "$work/as.json" || echo "WARNING: -j 1 and an unsplit module differ" >&2

per() { echo "$n / $1" | bc -l | xargs printf '%.0f'; }
times() { echo "$1 / $2" | bc -l | xargs printf '%.1f'; }
llvm_wall=$(per "$w_llvm")
llvm_cpu=$(per "$c_llvm")
echo
echo "Unique addresses: $n in $binary (inline frames on); $cores cores;" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf '| %-42s | %9s | %14s | %7s | %9s | %15s | %7s |\n' tool "best wall" "addresses/s" "vs llvm" \
  "best CPU" "addresses/CPU-s" "vs llvm"
printf '|%s|%s|%s|%s|%s|%s|%s|\n' -------------------------------------------- ----------- \
  ---------------- --------- ----------- ----------------- ---------
row() {  # name wall cpu
  printf '| %-42s | %7.2f s | %14s | %6sx | %7.2f s | %15s | %6sx |\n' "$1" "$2" "$(per "$2")" \
    "$(times "$(per "$2")" "$llvm_wall")" "$3" "$(per "$3")" "$(times "$(per "$3")" "$llvm_cpu")"
}
row "symbolicate -j 1, cold (whole run: read, JSON)" "$w_sym1" "$c_sym1"
row "symbolicate -j $cores, cold (whole run: read, JSON)" "$w_symn" "$c_symn"
phase_row() {  # name wall_rate cpu_rate
  printf '| %-42s | %9s | %14s | %6sx | %9s | %15s | %6sx |\n' "$1" "" "$2" \
    "$(times "$2" "$llvm_wall")" "" "$3" "$(times "$3" "$llvm_cpu")"
}
phase_row "symbolicate -j 1, cold, symbolization phase" "$p_sym1" "$pc_sym1"
phase_row "symbolicate -j $cores, cold, symbolization phase" "$p_symn" "$pc_symn"
phase_row "  same, module not split" "$p_split" "$pc_split"
row "$(basename "$llvm") --inlining" "$w_llvm" "$c_llvm"
row "addr2line -f -i -C" "$w_a2l" "$c_a2l"

# 3. The sparse set (SPARSE=N addresses; 0 skips it). Fixed costs (inflating the debug file,
#    reading each touched unit) weigh more here than per-address ones.
sparse=${SPARSE:-2000}
if [ "$sparse" != 0 ]; then
  "$make_dump" addresses "$binary" "$sparse" "$work/s.inprof" "$work/s.txt" >/dev/null
  ns=$(wc -l <"$work/s.txt")
  read -r w_ssym c_ssym < <(best_of_3 "$symbolicate" "$work/s.inprof" -o "$work/s.json" --no-cache -j "$cores")
  read -r w_sllvm c_sllvm < <(best_of_3 sh -c "'$llvm' --obj='$binary' --inlining --demangle <'$work/s.txt'")
  echo
  echo "| sparse set: $ns addresses | symbolicate -j $cores whole run, cold, $w_ssym s ($c_ssym s CPU)" \
    "| $(basename "$llvm") $w_sllvm s ($c_sllvm s CPU) | $(echo "$w_sllvm / $w_ssym" | bc -l | xargs printf '%.1f')x |"
fi

if [ "${LONG:-1}" = 1 ]; then
  echo
  "$make_dump" long "$binary" "$work/long.inprof" 8 600 1000
  size=$(du -m "$work/long.inprof" | cut -f1)
  /usr/bin/time -v "$symbolicate" "$work/long.inprof" -o "$work/long.json.gz" --no-cache --no-progress \
    2>"$work/time.txt" || { cat "$work/time.txt"; exit 1; }
  wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/time.txt")
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time.txt")
  grep -E 'symbolicate: (wrote|time)' "$work/time.txt"
  echo
  echo "| long recording (10 min, 8 threads, 1 kHz, synthetic) | dump ${size} MB | wall $wall | peak RSS $((rss / 1024)) MB | output $(du -m "$work/long.json.gz" | cut -f1) MB (gzip) |"
fi
