#!/usr/bin/env bash
# Builds the consumer program two more ways and runs it: with FetchContent (inprof built as part
# of the consumer) and with pkg-config against an installed inprof (C++, and C linked statically).
set -euo pipefail
source_dir="$1"; work="$2"; symbolicate="$3"
rm -rf "$work"; mkdir -p "$work"

echo "== FetchContent"
# No build type given: inprof must not pick one for the parent (it once set RelWithDebInfo).
cmake -S "$source_dir/tests/consumer_fetchcontent" -B "$work/fc" -DINPROF_SOURCE_DIR="$source_dir" \
  -DCMAKE_INSTALL_PREFIX="$work/fc-prefix" >/dev/null
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

echo "== pkg-config"
cmake -S "$source_dir" -B "$work/lib" -DINPROF_BUILD_TESTS=OFF -DINPROF_BUILD_EXAMPLES=OFF \
  -DINPROF_BUILD_BENCHMARKS=OFF -DINPROF_BUILD_TOOLS=OFF -DCMAKE_INSTALL_PREFIX="$work/prefix" >/dev/null
cmake --build "$work/lib" -j2 >/dev/null
cmake --install "$work/lib" >/dev/null
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
# The language standard is the consumer's: no -std in Cflags (C compiles warned, C++23 users
# were downgraded).
cflags=$(pkg-config --cflags inprof)
if [[ " $cflags " == *" -std="* ]]; then echo "pkg-config --cflags sets the standard: $cflags"; exit 1; fi
# shellcheck disable=SC2046
c++ -std=c++20 -o "$work/pc-consumer" "$source_dir/tests/consumer/main.cc" $cflags \
  $(pkg-config --libs --static inprof) -Wl,-rpath,"$work/prefix/lib"
"$work/pc-consumer" "$work/pc.inprof"
"$symbolicate" "$work/pc.inprof" -o "$work/pc.json"
test -s "$work/pc.json"

echo "== pkg-config, a C program linked statically"
# Only the archive in the first -L directory: -linprof then takes it, not libinprof.so.
mkdir -p "$work/static-only"
cp "$work/prefix/lib/libinprof.a" "$work/static-only/"
# shellcheck disable=SC2046
cc -Werror -o "$work/pc-c-consumer" "$source_dir/tests/consumer_c/main.c" $cflags \
  -L"$work/static-only" $(pkg-config --libs --static inprof)
libs="$(ldd "$work/pc-c-consumer")"
[[ "$libs" != *"libinprof.so"* ]] || { echo "linked to libinprof.so, not the archive"; exit 1; }
"$work/pc-c-consumer" "$work/pc-c.inprof"
"$symbolicate" "$work/pc-c.inprof" -o "$work/pc-c.json"
test -s "$work/pc-c.json"
echo "other consumers: ok"
