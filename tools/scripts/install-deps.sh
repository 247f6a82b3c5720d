#!/usr/bin/env bash
# Installs what inprof needs to build, test and check profiles, on Debian 12. Installs only
# what is missing, so it is quick when run again. Needs root (uses sudo if not root).
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  # The test command's builds use Ninja (better parallel across targets than make: see run-tests.sh).
  ninja-build
  libzstd-dev libdw-dev libelf-dev rapidjson-dev
  # symbolicate --open: the assembly view's disassembler (/asm/v1)
  libcapstone-dev
  # symbolicate: inflating compressed debug sections (twice zlib's speed)
  libdeflate-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  python3 xz-utils
  # symbolicate's tests: Debian's detached libc and python3.11 debug symbols, llvm-symbolizer to
  # agree with, elfutils' debuginfod client.
  libc6-dbg python3.11-dbg llvm-14 libdebuginfod1
  # The accuracy harness (benchmarks/accuracy): perf to compare with, and the real programs it
  # profiles (xz, zstd, python3.11, cc1plus from g++).
  linux-perf zstd python3.11 g++
  # The macOS compile check (run-macos-compile.sh): clang targets Darwin; the arm64 C++ and C
  # headers stand in for the SDK's on that target.
  clang libstdc++-12-dev-arm64-cross libc6-dev-arm64-cross
  # The ASan + UBSan tree the sanitizer job and the fuzzers share (configure-asan-tree.sh):
  # clang-14 with its sanitizer runtimes and libFuzzer.
  clang-14 libclang-rt-14-dev
  # Regenerating symbolicate's Mach-O test binaries (tests/symbolicate/testdata/macho):
  # ld64.lld links them, llvm-14's dsymutil and llvm-lipo make the .dSYM and the fat file.
  lld
  # symbolicate --format pprof is checked by the real consumer, `go tool pprof`.
  golang-go
  # The allocation interposer keeps a program's own allocator: a test program links jemalloc.
  libjemalloc-dev
)
# The Firefox Profiler's own loading code (profiler-cli, from npm) checks generated profiles.
if ! command -v node >/dev/null 2>&1; then packages+=(nodejs); fi
if ! command -v npm >/dev/null 2>&1; then packages+=(npm); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "install-deps: missing packages (${missing[*]}) and not root; run as root" >&2
    exit 1
  fi
fi
echo "install-deps: installing ${missing[*]}"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
