#!/usr/bin/env bash
# Wall time of allocation-heavy programs nobody here wrote, run as is, under inprof (CPU only),
# under inprof with sampled allocations (default rate), and under heaptrack (every allocation),
# interleaved RUNS times each; prints the median and range per configuration (issue 24).
# Usage: compare.sh BUILD_DIR [RUNS]   (heaptrack: apt-get install heaptrack)
set -euo pipefail
build=$(cd "$1" && pwd)
runs=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
inprof=$build/tools/inprof/inprof
work=$(mktemp -d /tmp/alloc-compare-XXXX)
trap 'rm -rf "$work"' EXIT

workloads=(
  "python3.11 PYTHONMALLOC=malloc /usr/bin/python3.11 $here/alloc_heavy.py"
  "python3.11 (pymalloc) /usr/bin/python3.11 $here/alloc_heavy.py"
)
seq 2000000 | shuf --random-source=<(yes) >"$work/sortinput"
workloads+=("sort -S 64M /usr/bin/sort -S 64M $work/sortinput -o $work/sorted")

time_of() {  # runs "$@", prints its wall time in seconds
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for workload in "${workloads[@]}"; do
  # "NAME [ENV=VALUE] PROGRAM ARGS...": the name is the words before the program's path.
  read -r -a words <<<"$workload"
  name=() env_vars=() cmd=()
  for w in "${words[@]}"; do
    if ((${#cmd[@]})); then cmd+=("$w")
    elif [[ $w == /* ]]; then cmd+=("$w")
    elif [[ $w == *=* ]]; then env_vars+=("$w"); name+=("$w")
    else name+=("$w")
    fi
  done
  declare -A times=()
  for ((i = 0; i < runs; i++)); do
    times[none]+=" $(time_of env "${env_vars[@]}" "${cmd[@]}")"
    times[inprof]+=" $(time_of env "${env_vars[@]}" "$inprof" record --no-children -o "$work/o.inprof" -- "${cmd[@]}")"
    times[inprof+alloc]+=" $(time_of env "${env_vars[@]}" "$inprof" record --allocations --no-children -o "$work/a.inprof" -- "${cmd[@]}")"
    if command -v heaptrack >/dev/null; then
      times[heaptrack]+=" $(time_of env "${env_vars[@]}" heaptrack -o "$work/ht" "${cmd[@]}")"
      rm -f "$work"/ht*
    fi
  done
  echo "== ${name[*]}"
  for config in none inprof inprof+alloc heaptrack; do
    [[ -n ${times[$config]:-} ]] || continue
    sorted=$(tr ' ' '\n' <<<"${times[$config]}" | grep . | sort -g)
    median=$(sed -n "$(((runs + 1) / 2))p" <<<"$sorted")
    printf '  %-13s median %6.3f s  (min %s, max %s)\n' "$config" "$median" \
      "$(head -1 <<<"$sorted")" "$(tail -1 <<<"$sorted")"
  done
  unset times
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
