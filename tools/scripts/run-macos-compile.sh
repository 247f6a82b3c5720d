#!/usr/bin/env bash
# The macOS compile check: compiles the real platform/macos code and all of lib/ with Debian's
# clang for x86_64-apple-macos11 and arm64-apple-macos11, warnings as errors. No Apple SDK exists
# here: platform/macos declares the Darwin functions and structures it uses itself
# (platform/macos/darwin_declarations_macos.h) and includes no C header; the C++ library's headers are
# Debian's libstdc++ over glibc (the host's for x86_64, the arm64 cross ones for arm64), standing
# in for the SDK's libc++. Then every C symbol the platform/macos objects import must be one the
# declarations header names (or the few the C++ headers inline): nothing reaches glibc by mistake.
# Linking and running need a Mac. Fails on any error. About 40 s of CPU in all (run in
# parallel).
#
#   tools/scripts/run-macos-compile.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
started=$SECONDS
phase() { echo "run-macos-compile: [$((SECONDS - started)) s] $*"; }

[ -n "${INPROF_SKIP_INSTALL:-}" ] || bash "$root/tools/scripts/install-deps.sh"
for tool in clang++ llvm-nm; do
  command -v "$tool" >/dev/null || { echo "run-macos-compile: $tool not found" >&2; exit 1; }
done
clang_include="$(clang++ -print-resource-dir)/include"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# zstd.h (the dump writer's) and libdeflate.h (pull mode's gzip; lib/pull and lib/pprof are built
# on Linux only, but compiled here too, so that they stay portable) only: the headers are the
# same on every platform.
mkdir -p "$out/zstd"
cp /usr/include/zstd.h /usr/include/zstd_errors.h /usr/include/libdeflate.h "$out/zstd/"

macos_sources=("$root"/platform/macos/*.cc)
lib_sources=("$root"/lib/*/*.cc)
# Built on Linux only (libdw's CFI): macOS unwinds with frame pointers (os_unwinder_macos.cc).
lib_sources=("${lib_sources[@]/$root\/lib\/unwind\/dwarf_unwinder.cc/}")
# The profiler's own heap is linked into the shared library on Linux only.
lib_sources=("${lib_sources[@]/$root\/lib\/memory\/own_heap.cc/}")

status=0
for arch in x86_64 arm64; do
  if [ "$arch" = x86_64 ]; then
    cxx_dirs=(/usr/include/c++/12 /usr/include/x86_64-linux-gnu/c++/12)
    c_dirs=(/usr/include/x86_64-linux-gnu /usr/include)
  else
    cxx_dirs=(/usr/aarch64-linux-gnu/include/c++/12 /usr/aarch64-linux-gnu/include/c++/12/aarch64-linux-gnu)
    c_dirs=(/usr/aarch64-linux-gnu/include)
  fi
  for d in "${cxx_dirs[@]}" "${c_dirs[@]}"; do
    [ -d "$d" ] || { echo "run-macos-compile: $d missing (install-deps.sh installs it)" >&2; exit 1; }
  done
  flags=(-target "$arch-apple-macos11" -std=c++20 -Wall -Wextra -Werror
         -nostdinc -nostdinc++)
  for d in "${cxx_dirs[@]}"; do flags+=(-isystem "$d"); done
  flags+=(-isystem "$clang_include")
  for d in "${c_dirs[@]}"; do flags+=(-isystem "$d"); done
  # glibc's headers under a Darwin target: clang predefines __nonnull and friends there (Apple's
  # nullability), which glibc uses as attribute macros; and libstdc++ expects _GNU_SOURCE.
  flags+=(-U__nonnull -U__nullable -D_GNU_SOURCE -idirafter "$out/zstd"
          -I"$root/include" -I"$root/lib" -I"$root/platform/macos"
          -DINPROF_BUILDING_LIBRARY -DINPROF_OS_UNWINDER '-DINPROF_VERSION_STRING="macos-check"')
  mkdir -p "$out/$arch"
  phase "$arch: ${#macos_sources[@]} platform/macos files and $(printf '%s\n' "${lib_sources[@]}" | grep -c .) lib files"
  # A response file carries the flags to the parallel compilers.
  rsp="$out/$arch.rsp"
  for f in "${flags[@]}"; do printf "'%s'\n" "$f"; done >"$rsp"
  fail=0
  # platform/macos to objects (their imports are checked below), lib/ for syntax and types only:
  # for arm64 each file alone (CI's other builds are unity builds: this is where a lib/ file
  # that does not include what it uses is caught), for x86_64 all of them as one unit (the
  # same code under the other architecture's definitions, in a tenth of the time).
  unity="$out/$arch-lib.cc"
  for f in "${lib_sources[@]}"; do [ -n "$f" ] && echo "#include \"$f\""; done >"$unity"
  { for f in "${macos_sources[@]}"; do echo "-c $f -o $out/$arch/$(basename "$f" .cc).o"; done
    if [ "$arch" = arm64 ]; then
      for f in "${lib_sources[@]}"; do [ -n "$f" ] && echo "-fsyntax-only $f"; done
    else
      echo "-fsyntax-only $unity"
    fi; } |
    xargs -P "$(nproc)" -L 1 sh -c 'clang++ "@$0" "$@" || { echo "FAILED: $*" >&2; exit 255; }' "$rsp" ||
    fail=1
  if ((fail)); then
    status=1
    phase "$arch: FAILED to compile"
    continue
  fi
  # Every C symbol the platform code imports is declared by darwin_declarations_macos.h, or is one of
  # the C library's that the C++ headers and the compiler call on their own.
  expected="$out/expected-$arch"
  {
    grep -o 'INPROF_DARWIN_SYMBOL([A-Za-z_0-9]*)' "$root/platform/macos/darwin_declarations_macos.h" |
      sed 's/INPROF_DARWIN_SYMBOL(\(.*\))/_\1/'
    grep -o '__asm__("_[^"]*")' "$root/platform/macos/darwin_declarations_macos.h" | sed 's/__asm__("\(.*\)")/\1/'
    printf '%s\n' _memcpy _memmove _memset _memcmp _strlen _strncpy _strcmp _abort \
      ___stack_chk_fail ___stack_chk_guard ___gxx_personality_v0 __Unwind_Resume \
      ___cxa_begin_catch ___cxa_end_catch ___cxa_guard_acquire ___cxa_guard_release \
      ___cxa_guard_abort ___cxa_atexit ___dso_handle ___cxa_allocate_exception \
      ___cxa_throw ___cxa_free_exception ___cxa_pure_virtual ___cxa_rethrow \
      _bzero ___bzero ___udivti3
    # glibc's, called by the inline code of the stand-in C++ library (std::thread, sleep_for,
    # shared_ptr's atomics): on a Mac, libc++'s headers call their own.
    printf '%s\n' ___errno_location ___libc_single_threaded _pthread_create _nanosleep
  } | sort -u >"$expected"
  imported="$out/imported-$arch"
  for f in "${macos_sources[@]}"; do llvm-nm -u "$out/$arch/$(basename "$f" .cc).o"; done |
    awk '{print $NF}' | grep -v '^__Z' | grep -v ':$' | grep . | sort -u >"$imported" || true
  unexpected="$(comm -23 "$imported" "$expected")"
  if [ -n "$unexpected" ]; then
    echo "run-macos-compile: $arch: platform/macos imports C symbols darwin_declarations_macos.h does not declare:" >&2
    echo "$unexpected" >&2
    status=1
  else
    phase "$arch: compiled; imports $(wc -l <"$imported") C symbols, all declared"
  fi
done
((status == 0)) && phase "both targets compile" || phase "FAILED"
exit $status
