#!/usr/bin/env bash
# The aarch64 job: cross-builds inprof for 64-bit Arm Linux with Debian's cross g++ against arm64
# multiarch libraries, and runs the Linux test suite under qemu-user (unit tests: unwinders,
# ring buffer, dump, sampling; the profile checker; the end-to-end profile checked with the
# Firefox Profiler's own code). Runs on a fresh Debian 12 amd64 machine as root; installs only
# what is missing.
#
#   tools/scripts/run-aarch64.sh [--build-only]
#
# --build-only: install what is missing and make the cross build, nothing else: not the host's
#               symbolicate and profile_check, whose build tree may be busy (run-tests.sh
#               builds ahead in the background while its native build and tests run)
#
# INPROF_AARCH64_BUILD_DIR  the cross build (default: build-aarch64)
# INPROF_HOST_BUILD_DIR     a native build that provides symbolicate and profile_check, which read
#                           the aarch64 dumps on the build machine (default: build, which CI's
#                           run-tests.sh has built already; otherwise only those two are built)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${INPROF_AARCH64_BUILD_DIR:-$root/build-aarch64}"
host_build="${INPROF_HOST_BUILD_DIR:-$root/build}"
jobs="$(nproc)"
build_only=0
if [[ ${1:-} == --build-only ]]; then build_only=1; fi
started=$SECONDS
phase() { echo "run-aarch64: [$((SECONDS - started)) s] $*"; }

# --- packages ----------------------------------------------------------------------------------
phase "host packages"
bash "$root/tools/scripts/install-deps.sh"

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "run-aarch64: needs root to install packages" >&2
    exit 1
  fi
fi
apt_get() {
  # Other jobs may hold the dpkg lock for a while: wait for it rather than fail.
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 "$@"
}
update=0
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  phase "dpkg --add-architecture arm64"
  $sudo dpkg --add-architecture arm64
  update=1
fi
# The cross compiler and qemu-user; arm64 libraries from Debian multiarch. GoogleTest's
# libgtest-dev is Multi-Arch: same, so the arm64 archives install next to the amd64 ones.
packages=(g++-aarch64-linux-gnu qemu-user
  libzstd-dev:arm64 libdeflate-dev:arm64 libdw-dev:arm64 libelf-dev:arm64 libgtest-dev:arm64)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  phase "installing ${missing[*]}"
  if [ $update -eq 1 ] || [ ! -d /var/lib/apt/lists ] ||
    ! apt-cache show libzstd-dev:arm64 >/dev/null 2>&1; then
    apt_get update -qq
  fi
  apt_get install -y -qq --no-install-recommends "${missing[@]}"
fi

# --- host tools ----------------------------------------------------------------------------------
# symbolicate reads foreign-architecture ELF (libdwfl), so the build machine's own converts the
# aarch64 dumps; profile_check checks its JSON.
if ((build_only == 0)); then
  phase "host symbolicate and profile_check in $host_build"
  if [ ! -f "$host_build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$host_build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DINPROF_BUILD_TESTS=ON \
      -DINPROF_BUILD_EXAMPLES=OFF -DINPROF_BUILD_BENCHMARKS=OFF >/dev/null
  fi
  cmake --build "$host_build" -j"$jobs" --target symbolicate profile_check >/dev/null
fi
host_symbolicate="$host_build/tools/symbolicate/symbolicate"
host_profile_check="$host_build/tests/support/profile_check"

# --- cross build --------------------------------------------------------------------------------
phase "cross-configuring $build"
cmake -S "$root" -B "$build" \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/aarch64-linux-gnu.cmake" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_UNITY_BUILD=ON \
  -DINPROF_BUILD_TESTS=ON -DINPROF_BUILD_TOOLS=OFF -DINPROF_BUILD_EXAMPLES=OFF -DINPROF_BUILD_BENCHMARKS=OFF \
  -DINPROF_HOST_SYMBOLICATE="$host_symbolicate" \
  -DINPROF_HOST_PROFILE_CHECK="$host_profile_check" >/dev/null
# Only what the tests below run.
phase "building"
cmake --build "$build" -j"$jobs" --target \
  inprof_unit_tests unwind_targets disabled_build profile_checker_test e2e_target \
  mach_backend_tests
((build_only)) && { phase "built"; exit 0; }

# --- tests under qemu-user ----------------------------------------------------------------------
# Not run here, each for a reason of the emulator (documented, not silent):
#   e2e_markers          its counter check needs the sampler to tick within the first 50 ms of the
#                        program; under qemu the sampler's first samples (translating libdw's code,
#                        reading each module's CFI) take about 100-200 ms.
#   e2e_flight_recorder  re-executes itself for its crash children: without binfmt_misc an aarch64
#                        program cannot exec another one under qemu-user.
#   label perf           the performance-property tests (allocation counts, 1000 threads, RSS)
#                        are native-only: not built here (hence no inprof_perf_tests_NOT_BUILT).
#   symbolicate_tests    (PprofTest, RotationTest and the rest) not built: the cross build has no
#                        tools (INPROF_BUILD_TOOLS=OFF); the native job runs them.
#   allocations_*, AllocationSamplingTest and the other allocation unit tests
#                        are registered only with the tools (symbolicate_core, the launcher),
#                        which the cross build does not build: no ctest entry to leave out. The
#                        interposer itself (libinprof_allocations) is built here.
#   docs_*, disabled_build_c, shared_library_exports, shared_library_dependencies
#                        host-side checks of the documentation, the C header and the shared
#                        library's export list and dependencies: the same on every architecture,
#                        run by the native job (the cross build has no shared library or host
#                        compiler).
#   eh_frame_tests       the .eh_frame parser's own tests compare with libdw reading the host's
#                        files: run natively and under ASan; here the unwinding tests
#                        (DwarfUnwinderTest, CallChainTest) run the parser on aarch64 code.
# Inside the unit tests, checks that need signals to land on every instruction (qemu delivers
# them at block boundaries) or a thread created after fork() (which aborts qemu-user 7.2) step
# aside when INPROF_TEST_EMULATOR is set (tests/test_util.h), as does the resident-memory check of
# the flight recorder (qemu-user's own heap grows with every thread created).
phase "ctest under $(command -v qemu-aarch64)"
cd "$build"
ctest --output-on-failure --timeout 600 -j"$jobs" -LE perf \
  -E '^(e2e_markers|e2e_flight_recorder|inprof_perf_tests_NOT_BUILT|docs_links|docs_snippets_compile|disabled_build_c|shared_library_exports|shared_library_dependencies|eh_frame_tests_NOT_BUILT)$'
phase "done"
