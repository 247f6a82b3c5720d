#!/usr/bin/env bash
# Builds the consumer program two more ways and runs it: with FetchContent (inprof built as part
# of the consumer) and with pkg-config against an installed inprof.
set -euo pipefail
source_dir="$1"; work="$2"; symbolicate="$3"
rm -rf "$work"; mkdir -p "$work"

echo "== FetchContent"
cmake -S "$source_dir/tests/consumer_fetchcontent" -B "$work/fc" -DINPROF_SOURCE_DIR="$source_dir" >/dev/null
cmake --build "$work/fc" -j2 --target consumer >/dev/null
"$work/fc/consumer" "$work/fc.inprof"
"$symbolicate" "$work/fc.inprof" -o "$work/fc.json"
test -s "$work/fc.json"

echo "== pkg-config"
cmake -S "$source_dir" -B "$work/lib" -DINPROF_BUILD_TESTS=OFF -DINPROF_BUILD_EXAMPLES=OFF \
  -DINPROF_BUILD_BENCHMARKS=OFF -DINPROF_BUILD_TOOLS=OFF -DCMAKE_INSTALL_PREFIX="$work/prefix" >/dev/null
cmake --build "$work/lib" -j2 >/dev/null
cmake --install "$work/lib" >/dev/null
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
# shellcheck disable=SC2046
c++ -o "$work/pc-consumer" "$source_dir/tests/consumer/main.cc" $(pkg-config --cflags inprof) \
  $(pkg-config --libs --static inprof) -Wl,-rpath,"$work/prefix/lib"
"$work/pc-consumer" "$work/pc.inprof"
"$symbolicate" "$work/pc.inprof" -o "$work/pc.json"
test -s "$work/pc.json"
echo "other consumers: ok"
