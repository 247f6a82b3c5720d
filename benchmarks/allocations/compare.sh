#!/usr/bin/env bash
# Wall time of allocation-heavy programs nobody here wrote, interleaved (issue 24): run as is
# ("bare"), under inprof (CPU samples only), under inprof with sampled allocations at the default
# rate (--allocations, 512 KiB), the same without CPU samples (alloc-only: --allocations --no-cpu,
# a memory-only profile like heaptrack's), with a session that samples nothing (session: --no-cpu
# without --allocations; what the profiler's mere threads cost: once a process has a second thread
# glibc's malloc takes its arena locks, which costs an allocation-heavy program a few percent
# whatever the thread does), under heaptrack (every allocation), under gperftools' heap
# profiler (libtcmalloc preloaded with HEAPPROFILE: every allocation) and with libtcmalloc
# preloaded alone (its allocator differs from glibc's: the heap profiler's own cost is its time
# minus this one), and with a preloaded library that only starts one idle thread (thread: what
# any profiler's first thread costs a single-threaded program through glibc's malloc). Each
# workload runs every configuration once per round, in an order shuffled anew each round, RUNS
# rounds. Prints, per configuration, the median wall time and the median CPU time (user +
# system, children included) with their ranges, and the overhead over bare *paired by round*:
# the median of the rounds' (config / bare of the same round - 1), with a distribution-free 95 %
# confidence interval of that median (paired_overhead.awk; 6 rounds or more). Then the cost of an
# unsampled malloc+free pair (pair_cost.c), bare, with the interposer loaded but no session, and
# under `inprof record --allocations`.
#
# Usage: compare.sh BUILD_DIR [RUNS] [WORKLOADS]   WORKLOADS: any of python,pymalloc,sort,gxx (cc1plus),
#                                                   pairs (default all), comma-separated
#        BASELINE_LIBRARY=OTHER/libinprof.so compare.sh ...: adds that build's pair cost, and its
#          --allocations and alloc-only runs to every workload (two builds in the same rounds)
# Tools (benchmark only, not needed by the tests):
#   apt-get install -y heaptrack libgoogle-perftools4 google-perftools
# A tool that is not installed is left out (and said so).
set -euo pipefail
build=$(cd "$1" && pwd)
runs=${2:-5}
selected=${3:-python,pymalloc,sort,gxx,pairs}
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
inprof=$build/tools/inprof/inprof
interposer=$(find "$build" -maxdepth 1 -name 'libinprof_allocations.so' | head -1)
work=$(mktemp -d /tmp/alloc-compare-XXXX)
trap 'rm -rf "$work"' EXIT
tcmalloc=$(ls /usr/lib/x86_64-linux-gnu/libtcmalloc.so.4 2>/dev/null || true)
have_heaptrack=$(command -v heaptrack >/dev/null && echo 1 || echo 0)
[[ -x $inprof && -n $interposer ]] || { echo "build $build first (inprof, libinprof_allocations.so)" >&2; exit 2; }
((have_heaptrack)) || echo "(heaptrack not installed: left out)"
[[ -n $tcmalloc ]] || echo "(libtcmalloc.so.4 not installed: gperftools left out)"
wants() { [[ ",$selected," == *",$1,"* ]]; }

# Runs "$@" with its output discarded; prints "WALL/CPU": wall seconds, and user + system
# seconds of it and its children (bash's time keyword). On a shared, loaded machine the CPU time
# is the steadier figure: wall time also counts the time spent waiting for a CPU.
time_of() {
  local TIMEFORMAT='%R %U %S' report
  report=$({ time "$@" >/dev/null 2>&1; } 2>&1) || { echo "failed: $*" >&2; return 1; }
  awk '{ printf "%s/%.3f\n", $1, $2 + $3 }' <<<"$report"
}

# One configuration of one workload: $1 config, $2 "ENV=V ..." (or ""), the command after.
# inprof follows child processes (its default) only where the workload starts some (g++);
# heaptrack and LD_PRELOAD follow them by inheritance.
run_config() {
  local config=$1 env_words=$2 children=$3
  shift 3
  local -a env_vars=()
  [[ -n $env_words ]] && read -r -a env_vars <<<"$env_words"
  local -a follow=(--no-children)
  ((children)) && follow=()
  case "$config" in
    bare) time_of env "${env_vars[@]}" "$@" ;;
    thread) time_of env "${env_vars[@]}" LD_PRELOAD="$work/idle_thread.so" "$@" ;;
    inprof) time_of env "${env_vars[@]}" "$inprof" record "${follow[@]}" -o "$work/o" -- "$@" ;;
    inprof+alloc) time_of env "${env_vars[@]}" "$inprof" record --allocations "${follow[@]}" \
      -o "$work/a" -- "$@" ;;
    session) time_of env "${env_vars[@]}" "$inprof" record --no-cpu "${follow[@]}" -o "$work/o" \
      -- "$@" ;;
    alloc-only) time_of env "${env_vars[@]}" "$inprof" record --allocations --no-cpu "${follow[@]}" \
      -o "$work/a" -- "$@" ;;
    # The same two with another build's libinprof.so and interposer (BASELINE_LIBRARY).
    inprof+alloc-base) time_of env "${env_vars[@]}" INPROF_LIBRARY="$BASELINE_LIBRARY" "$inprof" \
      record --allocations "${follow[@]}" -o "$work/a" -- "$@" ;;
    alloc-only-base) time_of env "${env_vars[@]}" INPROF_LIBRARY="$BASELINE_LIBRARY" "$inprof" \
      record --allocations --no-cpu "${follow[@]}" -o "$work/a" -- "$@" ;;
    heaptrack) time_of env "${env_vars[@]}" heaptrack -o "$work/ht" "$@" ;;
    tcmalloc) time_of env "${env_vars[@]}" LD_PRELOAD="$tcmalloc" "$@" ;;
    gperftools) time_of env "${env_vars[@]}" LD_PRELOAD="$tcmalloc" HEAPPROFILE="$work/hp" "$@" ;;
  esac
  rm -rf "$work"/o "$work"/o.* "$work"/a "$work"/a.* "$work"/ht* "$work"/hp* 2>/dev/null || true
}

cc -O2 -shared -fPIC -pthread -o "$work/idle_thread.so" "$here/idle_thread.c"
configs=(bare thread session inprof inprof+alloc alloc-only)
[[ -n ${BASELINE_LIBRARY:-} ]] && configs+=(inprof+alloc-base alloc-only-base)
((have_heaptrack)) && configs+=(heaptrack)
[[ -n $tcmalloc ]] && configs+=(tcmalloc gperftools)
# SKIP="gperftools ...": leave configurations out (gperftools' heap profiler took 112 s of CPU on
# the python workload, which bare runs in 1.5 s).
for skip in ${SKIP:-}; do
  for i in "${!configs[@]}"; do [[ ${configs[$i]} == "$skip" ]] && unset 'configs[i]'; done
done
configs=("${configs[@]}")

# NAME|ENV|CHILDREN|COMMAND
workloads=()
if wants python; then
  workloads+=("python3.11 alloc_heavy.py, PYTHONMALLOC=malloc|PYTHONMALLOC=malloc|0|/usr/bin/python3.11 $here/alloc_heavy.py")
fi
if wants pymalloc; then  # python's own small-object allocator: few malloc calls
  workloads+=("python3.11 alloc_heavy.py (pymalloc)||0|/usr/bin/python3.11 $here/alloc_heavy.py")
fi
if wants sort; then
  seq 3000000 | shuf --random-source=<(yes) >"$work/sortinput"
  workloads+=("sort -S 64M, 3M lines||0|/usr/bin/sort -S 64M $work/sortinput -o $work/sorted")
fi
if wants gxx; then
  # g++'s compiler proper, run directly: the process that allocates, and the same single process
  # for every tool (whether LD_PRELOAD reaches the driver's children, or inprof follows them,
  # would otherwise decide what each one records). A middle-sized file: heaptrack took 137 s on
  # it (bare: 3.3 s) and failed on a larger one (std::bad_alloc after 7 minutes).
  cc1plus=$(g++ -print-prog-name=cc1plus)
  gxx_flags="-quiet -std=c++20 -O1 -I$source_dir/lib -I$source_dir/include -imultiarch $(gcc -print-multiarch) -D_GNU_SOURCE"
  workloads+=("cc1plus -O1 lib/sampling/sampler.cc (g++'s compiler proper)||0|$cc1plus $gxx_flags $source_dir/lib/sampling/sampler.cc -o $work/sampler.s")
fi

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; $runs rounds"
for workload in "${workloads[@]}"; do
  IFS='|' read -r name env_words children command <<<"$workload"
  read -r -a cmd <<<"$command"
  declare -A times=()
  for ((i = 0; i < runs; i++)); do
    # A new order each round (seeded by the round: repeatable), so that no configuration always
    # follows the same one (heaptrack's runs leave the page cache and the CPU's caches warm or cold).
    for config in $(printf '%s\n' "${configs[@]}" | shuf --random-source=<(yes "$i")); do
      times[$config]+=" $(run_config "$config" "$env_words" "$children" "${cmd[@]}")"
    done
  done
  echo "== $name"
  printf '  %-13s %-27s %-22s %-24s %s\n' configuration "wall s, median [range]" \
    "wall vs bare [95% CI]" "CPU s, median [range]" "CPU vs bare [95% CI]"
  for config in "${configs[@]}"; do
    walls=$(tr ' ' '\n' <<<"${times[$config]}" | grep . | cut -d/ -f1)
    cpus=$(tr ' ' '\n' <<<"${times[$config]}" | grep . | cut -d/ -f2)
    bare_walls=$(tr ' ' '\n' <<<"${times[bare]}" | grep . | cut -d/ -f1)
    bare_cpus=$(tr ' ' '\n' <<<"${times[bare]}" | grep . | cut -d/ -f2)
    median() { sort -g | awk '{ v[NR] = $1 } END { printf "%.3f\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
    range() { sort -g | sed -n '1p;$p' | paste -sd- -; }
    paired() { paste -d' ' <(echo "$1") <(echo "$2") | awk -f "$here/paired_overhead.awk" |
      awk '{ printf "%+.1f %% [%+.1f, %+.1f]", $1, $2, $3 }'; }
    if [[ $config == bare ]]; then wall_vs=- cpu_vs=-; else
      wall_vs=$(paired "$bare_walls" "$walls"); cpu_vs=$(paired "$bare_cpus" "$cpus"); fi
    printf '  %-13s %-27s %-22s %-24s %s\n' "$config" \
      "$(median <<<"$walls") [$(range <<<"$walls")]" "$wall_vs" \
      "$(median <<<"$cpus") [$(range <<<"$cpus")]" "$cpu_vs"
  done
  unset times
done

if wants pairs; then
  cc -O2 -o "$work/pair_cost" "$here/pair_cost.c"
  declare -A pairs=()
  pair_configs=(bare preloaded-off inprof inprof+alloc retain-bare retain-inprof+alloc)
  # BASELINE_LIBRARY=DIR/libinprof.so (with another build's libinprof_allocations.so beside it):
  # its --allocations pair cost in the same rounds, to compare two builds of the fast path.
  [[ -n ${BASELINE_LIBRARY:-} ]] && pair_configs+=(baseline+alloc)
  for ((i = 0; i < 3; i++)); do
    if [[ -n ${BASELINE_LIBRARY:-} ]]; then
      pairs[baseline+alloc]+=" $(INPROF_LIBRARY=$BASELINE_LIBRARY "$inprof" record --allocations \
        --no-children -o "$work/p" -- "$work/pair_cost" 2>/dev/null | cut -d' ' -f1)"
      rm -rf "$work"/p "$work"/p.*
    fi
    pairs[bare]+=" $("$work/pair_cost" | cut -d' ' -f1)"
    pairs[preloaded-off]+=" $(LD_PRELOAD=$interposer "$work/pair_cost" | cut -d' ' -f1)"
    pairs[inprof]+=" $("$inprof" record --no-children -o "$work/p" -- "$work/pair_cost" 2>/dev/null |
      cut -d' ' -f1)"
    pairs[inprof+alloc]+=" $("$inprof" record --allocations --no-children -o "$work/p" -- \
      "$work/pair_cost" 2>/dev/null | cut -d' ' -f1)"
    rm -rf "$work"/p "$work"/p.*
    # 64 MiB kept live (about 128 sampled blocks at the default rate): every free looks up the set.
    pairs[retain-bare]+=" $("$work/pair_cost" --retain 64 | cut -d' ' -f1)"
    pairs[retain-inprof+alloc]+=" $("$inprof" record --allocations --no-children -o "$work/p" -- \
      "$work/pair_cost" --retain 64 2>/dev/null | cut -d' ' -f1)"
    rm -rf "$work"/p "$work"/p.*
  done
  echo "== malloc+free pair of 32..47 bytes (pair_cost: best of 7 x 20M pairs; 3 interleaved runs)"
  for config in "${pair_configs[@]}"; do
    printf '  %-14s ns per pair: %s\n' "$config" "$(tr ' ' '\n' <<<"${pairs[$config]}" | grep . |
      sort -g | tr '\n' ' ')"
  done
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
