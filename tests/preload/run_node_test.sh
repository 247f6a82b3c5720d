#!/usr/bin/env bash
# Profiles node running JavaScript (node_jit.js) through the launcher. node --perf-basic-prof
# writes its JIT code map to /tmp/perf-<pid>.map, the library copies it into the dump, and
# symbolicate must name the JIT frames from it: check_node_jit.mjs looks for inprofHotLoop in the
# JSON and in the Firefox Profiler's call tree (profiler-cli, installed as run_e2e.sh does).
#
#   run_node_test.sh LAUNCHER SYMBOLICATE PROFILE_CHECK RUN_E2E CLI_PACKAGE_DIR CLI_DIR WORK_DIR
set -euo pipefail
launcher="$1"; symbolicate="$2"; check="$3"; run_e2e="$4"; package_dir="$5"; cli_dir="$6"
work="$7"
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"; mkdir -p "$work"

fail() { echo "FAIL: $*"; exit 1; }
command -v node >/dev/null || fail "node is not installed (the setup script installs it)"

# node writes its map under its own pid (the launcher's: it execs node); remove whatever it made,
# and anything processes it started made, whatever happens.
maps=()
cleanup() { ((${#maps[@]})) && rm -f "${maps[@]}"; return 0; }
trap cleanup EXIT

# node writes isolate-*.log files next to it with some flags: keep them in the work directory.
cd "$work"
"$launcher" record -o "$work/node-%p.inprof" -- node --perf-basic-prof "$here/node_jit.js" &
pid=$!
maps+=("/tmp/perf-$pid.map")
wait "$pid" || fail "node under the launcher failed (exit status $?)"
shopt -s nullglob
dumps=("$work"/node-*.inprof)
((${#dumps[@]})) || fail "no dump in $work"
for d in "${dumps[@]}"; do
  p=${d##*/node-}; maps+=("/tmp/perf-${p%.inprof}.map")
done

# node may start helper processes; the one that ran the script has the most samples.
best= best_samples=-1
for d in "${dumps[@]}"; do
  json=${d%.inprof}.json
  "$symbolicate" "$d" -o "$json" 2>"${d%.inprof}.log" || fail "symbolicate $d failed: $(cat "${d%.inprof}.log")"
  cat "${d%.inprof}.log"
  n=$(node -e 'const p = require(process.argv[1]); console.log(p.threads.reduce((a, t) => a + t.samples.length, 0))' "$json")
  if ((n > best_samples)); then best=$json best_samples=$n; fi
done
grep -q 'JIT map:' "${best%.json}.log" || fail "symbolicate found no JIT map in ${best%.json}.inprof"

"$run_e2e" --package-dir "$package_dir" --cli-dir "$cli_dir" --checker "$here/check_node_jit.mjs" \
  --profile-check "$check" --json "$best"
echo "preload_node_jit: ok"
