#!/usr/bin/env bash
# Builds the consumer program with FetchContent (inprof built as part of the consumer) and runs
# it. (find_package and pkg-config against an installed inprof: run_consumer_test.sh.)
set -euo pipefail
source_dir="$1"; work="$2"; symbolicate="$3"
rm -rf "$work"; mkdir -p "$work"

# No build type given: inprof must not pick one for the parent (it once set RelWithDebInfo).
# A unity build: the packaging is what is checked, in a third of the time.
cmake -S "$source_dir/tests/consumer_fetchcontent" -B "$work/fc" -DINPROF_SOURCE_DIR="$source_dir" \
  -DCMAKE_INSTALL_PREFIX="$work/fc-prefix" -DCMAKE_UNITY_BUILD=ON >/dev/null
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$work/fc/CMakeCache.txt")
if [ -n "$build_type" ]; then echo "FetchContent: the parent's build type became '$build_type'"; exit 1; fi
# Everything the parent builds by default: the library, never the 26 MB internal archive.
cmake --build "$work/fc" -j2 >/dev/null
if [ -n "$(find "$work/fc/_deps" -name 'libinprof_internal.a')" ]; then
  echo "FetchContent: the internal archive was built"; exit 1
fi
# The parent's install tree holds the parent's files only.
cmake --install "$work/fc" >/dev/null
installed=$(cd "$work/fc-prefix" && find . -type f | sort | tr '\n' ' ')
if [ "$installed" != "./bin/consumer " ]; then
  echo "FetchContent: the parent's install tree has inprof's files: $installed"; exit 1
fi
"$work/fc/consumer" "$work/fc.inprof"
"$symbolicate" "$work/fc.inprof" -o "$work/fc.json"
test -s "$work/fc.json"

echo "FetchContent consumer: ok"
