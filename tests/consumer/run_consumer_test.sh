#!/usr/bin/env bash
# Builds inprof once and installs it twice into scratch prefixes, as BUILD_SHARED_LIBS=OFF and =ON
# would (the setting only decides which library `inprof::inprof` names: nothing is rebuilt), then
# for each builds tests/consumer (C++) and tests/consumer_c (a C-only project) against it with
# find_package(inprof), runs them and checks that symbolicate reads their dumps; a consumer
# linking inprof::allocations records every allocation of its site. Last, pkg-config against the
# static install: a C++ program, and a C program linked with the archive.
set -euo pipefail
source_dir="$1"; work="$2"; symbolicate="$3"
rm -rf "$work"; mkdir -p "$work"
for shared in OFF ON; do
  # A unity build (batches of sources compiled as one): what is checked here is the packaging,
  # and it takes a third of the time (CI's budget; the main build compiles each file alone).
  cmake -S "$source_dir" -B "$work/lib" -DBUILD_SHARED_LIBS="$shared" -DINPROF_BUILD_TESTS=OFF \
    -DINPROF_BUILD_EXAMPLES=OFF -DINPROF_BUILD_BENCHMARKS=OFF -DINPROF_BUILD_TOOLS=OFF \
    -DCMAKE_UNITY_BUILD=ON \
    -DCMAKE_INSTALL_PREFIX="$work/prefix-$shared" >/dev/null
  cmake --build "$work/lib" -j2 >/dev/null
  cmake --install "$work/lib" >/dev/null
done

for shared in OFF ON; do
  prefix="$work/prefix-$shared" out="$work/$shared"
  mkdir -p "$out"
  cmake -S "$source_dir/tests/consumer" -B "$out/consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  cmake --build "$out/consumer" >/dev/null
  LD_LIBRARY_PATH="$prefix/lib" "$out/consumer/consumer" "$out/consumer.inprof"
  if [ "$shared" = ON ]; then
    # (not `ldd | grep -q`: with pipefail, grep's early exit can fail the pipeline)
    libs="$(ldd "$out/consumer/consumer")"
    [[ "$libs" == *"libinprof.so.0"* ]] || { echo "not linked to libinprof.so.0"; exit 1; }
  else
    libs="$(ldd "$out/consumer/consumer")"
    [[ "$libs" != *"libinprof.so"* ]] || { echo "static: linked to libinprof.so"; exit 1; }
  fi
  "$symbolicate" "$out/consumer.inprof" -o "$out/consumer.json"
  test -s "$out/consumer.json"
  # inprof::allocations: the interposer is DT_NEEDED (under gcc's default --as-needed too) and
  # every allocation of consumer_site is in the dump, exactly its 100,000 bytes.
  dynamic="$(readelf -d "$out/consumer/consumer_allocations")"
  [[ "$dynamic" == *"NEEDED"*"libinprof_allocations.so"* ]] ||
    { echo "consumer_allocations: no DT_NEEDED for libinprof_allocations.so"; exit 1; }
  LD_LIBRARY_PATH="$prefix/lib" "$out/consumer/consumer_allocations" "$out/allocations.inprof"
  "$symbolicate" "$out/allocations.inprof" -o "$out/allocations.folded" --format folded \
    --folded-weight alloc-bytes 2>/dev/null
  bytes=$(awk '/consumer_site/ { sum += $NF } END { print sum + 0 }' "$out/allocations.folded")
  [[ $bytes == 100000 ]] ||
    { echo "consumer_allocations: consumer_site allocated $bytes bytes, not 100000"; cat "$out/allocations.folded"; exit 1; }
  # A C-only project (project(x C)): the static target brings its C++ runtime along.
  cmake -S "$source_dir/tests/consumer_c" -B "$out/c-consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  cmake --build "$out/c-consumer" >/dev/null
  LD_LIBRARY_PATH="$prefix/lib" "$out/c-consumer/c_consumer" "$out/c-consumer.inprof"
  "$symbolicate" "$out/c-consumer.inprof" -o "$out/c-consumer.json"
  test -s "$out/c-consumer.json"
  echo "consumer ($([ "$shared" = ON ] && echo shared || echo static)): ok"
done

echo "== pkg-config"
prefix="$work/prefix-OFF"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# The language standard is the consumer's: no -std in Cflags (C compiles warned, C++23 users
# were downgraded).
cflags=$(pkg-config --cflags inprof)
if [[ " $cflags " == *" -std="* ]]; then echo "pkg-config --cflags sets the standard: $cflags"; exit 1; fi
# shellcheck disable=SC2046
c++ -std=c++20 -o "$work/pc-consumer" "$source_dir/tests/consumer/main.cc" $cflags \
  $(pkg-config --libs --static inprof) -Wl,-rpath,"$prefix/lib"
"$work/pc-consumer" "$work/pc.inprof"
"$symbolicate" "$work/pc.inprof" -o "$work/pc.json"
test -s "$work/pc.json"

echo "== pkg-config, a C program linked statically"
# Only the archive in the first -L directory: -linprof then takes it, not libinprof.so.
mkdir -p "$work/static-only"
cp "$prefix/lib/libinprof.a" "$work/static-only/"
# shellcheck disable=SC2046
cc -Werror -o "$work/pc-c-consumer" "$source_dir/tests/consumer_c/main.c" $cflags \
  -L"$work/static-only" $(pkg-config --libs --static inprof)
libs="$(ldd "$work/pc-c-consumer")"
[[ "$libs" != *"libinprof.so"* ]] || { echo "linked to libinprof.so, not the archive"; exit 1; }
"$work/pc-c-consumer" "$work/pc-c.inprof"
"$symbolicate" "$work/pc-c.inprof" -o "$work/pc-c.json"
test -s "$work/pc-c.json"
echo "installed consumers: ok"
