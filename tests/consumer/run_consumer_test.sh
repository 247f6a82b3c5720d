#!/usr/bin/env bash
# Installs inprof (static or shared) into a scratch prefix, builds tests/consumer (C++) and
# tests/consumer_c (a C-only project) against it with find_package(inprof), runs them, and checks
# that their dumps are readable by symbolicate; a consumer linking inprof::allocations records
# every allocation of its site.
set -euo pipefail
source_dir="$1"; work="$2"; shared="$3"; symbolicate="$4"
rm -rf "$work"; mkdir -p "$work"
cmake -S "$source_dir" -B "$work/lib" -DBUILD_SHARED_LIBS="$shared" -DINPROF_BUILD_TESTS=OFF \
  -DINPROF_BUILD_EXAMPLES=OFF -DINPROF_BUILD_BENCHMARKS=OFF -DINPROF_BUILD_TOOLS=OFF \
  -DCMAKE_INSTALL_PREFIX="$work/prefix" >/dev/null
cmake --build "$work/lib" -j2 >/dev/null
cmake --install "$work/lib" >/dev/null
cmake -S "$source_dir/tests/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
LD_LIBRARY_PATH="$work/prefix/lib" "$work/consumer/consumer" "$work/consumer.inprof"
if [ "$shared" = ON ]; then
  # (not `ldd | grep -q`: with pipefail, grep's early exit can fail the pipeline)
  libs="$(ldd "$work/consumer/consumer")"
  [[ "$libs" == *"libinprof.so.0"* ]] || { echo "not linked to libinprof.so.0"; exit 1; }
fi
"$symbolicate" "$work/consumer.inprof" -o "$work/consumer.json"
test -s "$work/consumer.json"
# inprof::allocations: the interposer is DT_NEEDED (under gcc's default --as-needed too) and
# every allocation of consumer_site is in the dump, exactly its 100,000 bytes.
dynamic="$(readelf -d "$work/consumer/consumer_allocations")"
[[ "$dynamic" == *"NEEDED"*"libinprof_allocations.so"* ]] ||
  { echo "consumer_allocations: no DT_NEEDED for libinprof_allocations.so"; exit 1; }
LD_LIBRARY_PATH="$work/prefix/lib" "$work/consumer/consumer_allocations" "$work/allocations.inprof"
"$symbolicate" "$work/allocations.inprof" -o "$work/allocations.folded" --format folded \
  --folded-weight alloc-bytes 2>/dev/null
bytes=$(awk '/consumer_site/ { sum += $NF } END { print sum + 0 }' "$work/allocations.folded")
[[ $bytes == 100000 ]] ||
  { echo "consumer_allocations: consumer_site allocated $bytes bytes, not 100000"; cat "$work/allocations.folded"; exit 1; }
# A C-only project (project(x C)): the static target brings its C++ runtime along.
cmake -S "$source_dir/tests/consumer_c" -B "$work/c-consumer" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/c-consumer" >/dev/null
LD_LIBRARY_PATH="$work/prefix/lib" "$work/c-consumer/c_consumer" "$work/c-consumer.inprof"
"$symbolicate" "$work/c-consumer.inprof" -o "$work/c-consumer.json"
test -s "$work/c-consumer.json"
echo "consumer ($([ "$shared" = ON ] && echo shared || echo static)): ok"
