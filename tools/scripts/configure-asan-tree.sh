#!/usr/bin/env bash
# Configures the one ASan + UBSan build tree that the sanitizer job's tests (run-sanitizers.sh
# asan) and the libFuzzer targets (run-fuzz.sh) share: clang-14, everything instrumented for
# libFuzzer's coverage as well (-fsanitize=fuzzer-no-link; the tests run with it at no cost that
# matters), so CI compiles the library and symbolicate under ASan once instead of twice.
#
#   configure-asan-tree.sh DIR
#
# -O1 with line tables only (-g1), as OSS-Fuzz builds and the sanitizers recommend: a report's
# stack still says file:line; the symbolicate tests and their programs keep their own -g
# (tests/symbolicate/CMakeLists.txt). Undefined behaviour is fatal except pointer-overflow, left
# recoverable so that the one suppression in tests/sanitizers/ubsan.supp (inside RapidJSON)
# applies (the runs' halt_on_error makes anything else fatal).
# clang-14 and libFuzzer (libclang-rt-14-dev) come from install-deps.sh.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir=$1
flags="-fno-sanitize-recover=all -fsanitize-recover=pointer-overflow"
CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
  -DINPROF_SANITIZE="address,undefined" -DINPROF_BUILD_FUZZERS=ON \
  -DINPROF_BUILD_BENCHMARKS=OFF -DINPROF_BUILD_EXAMPLES=OFF -DINPROF_BUILD_TOOLS=ON \
  -DINPROF_BUILD_TESTS=ON -DCMAKE_UNITY_BUILD=ON >/dev/null
