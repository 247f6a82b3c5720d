#!/usr/bin/env bash
# Sets everything up, builds inprof with its tests, and runs them all (unit tests, symbolicate
# tests, and the end-to-end test that loads a profile with the Firefox Profiler's own code).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${INPROF_BUILD_DIR:-$root/build}"

bash "$root/tools/scripts/install-deps.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)"
cd "$build"
ctest --output-on-failure --timeout 600 -j"$(nproc)"
