#!/usr/bin/env bash
# Sets everything up and shows the main job: build inprof, profile the multi-threaded example,
# and turn the dump into a Firefox Profiler JSON you can open on profiler.firefox.com.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${INPROF_BUILD_DIR:-$root/build}"

bash "$root/tools/scripts/install-deps.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target multithreaded symbolicate

out="$root/demo"
mkdir -p "$out"
"$build/examples/multithreaded" "$out/multithreaded.inprof"
"$build/tools/symbolicate/symbolicate" "$out/multithreaded.inprof" -o "$out/multithreaded.json"
cat <<MSG

Profile ready: $out/multithreaded.json
Open https://profiler.firefox.com, choose "Load a profile from file", and pick that file.
MSG
