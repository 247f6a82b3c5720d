#!/usr/bin/env bash
# Sets everything up and shows the main job: build inprof, profile the multi-threaded example,
# and turn the dump into a Firefox Profiler JSON you can open on profiler.firefox.com; then
# profile a program nobody changed (gzip) with `inprof record`. The tools stay in build/: the
# README's next commands (tested as they are: tests/readme) run with the PATH printed at the end.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${INPROF_BUILD_DIR:-$root/build}"

bash "$root/tools/scripts/install-deps.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" \
  --target multithreaded symbolicate inprof_launcher inprof_shared inprof_allocations
cd "$root"
bash "$root/tools/scripts/demo-run.sh" "$build" "$root/demo"
