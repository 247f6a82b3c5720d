#!/usr/bin/env bash
# The Windows job: cross-builds inprof for 64-bit Windows with Debian's MinGW-w64 (GCC with POSIX
# threads, static runtime) and runs, under Wine with ctest (CMAKE_CROSSCOMPILING_EMULATOR), the
# library's unit tests and the end-to-end tests: the targets profile themselves under Wine, the
# Windows symbolicate (DbgHelp) converts their dumps under Wine, and the JSON is checked on the
# build machine with profile_check and the Firefox Profiler's own code (profiler-cli, node).
# Runs on a fresh Debian 12 amd64 machine as root; installs only what is missing.
#
#   tools/scripts/run-windows.sh [--build-only]
#
# --build-only: install what is missing and make the cross build, nothing else: not the host's
#               profile_check, whose build tree may be busy (run-tests.sh builds ahead in the
#               background while its native build and tests run)
#
# INPROF_WINDOWS_BUILD_DIR  the cross build (default: build-mingw); Wine's prefix lives inside it
# INPROF_HOST_BUILD_DIR     a native build that provides profile_check (default: build, which
#                           CI's run-tests.sh has built already; otherwise only it is built)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${INPROF_WINDOWS_BUILD_DIR:-$root/build-mingw}"
host_build="${INPROF_HOST_BUILD_DIR:-$root/build}"
jobs="$(nproc)"
build_only=0
if [[ ${1:-} == --build-only ]]; then build_only=1; fi
started=$SECONDS
phase() { echo "run-windows: [$((SECONDS - started)) s] $*"; }

# --- packages ----------------------------------------------------------------------------------
# The host side (cmake, node and npm, RapidJSON for profile_check) as for every job.
phase "host packages"
bash "$root/tools/scripts/install-deps.sh"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "run-windows: needs root to install packages" >&2
    exit 1
  fi
fi
# cmake and GoogleTest's sources (googletest) come from install-deps.sh on CI; listed here too
# so that the job stands alone. Debian 12 has no /usr/bin/wine64: `wine` starts the 64-bit loader.
packages=(cmake make googletest g++-mingw-w64-x86-64-posix wine wine64)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  phase "installing ${missing[*]}"
  apt_get() { $sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 "$@"; }
  if ! apt-cache show g++-mingw-w64-x86-64-posix >/dev/null 2>&1; then apt_get update -qq; fi
  apt_get install -y -qq --no-install-recommends "${missing[@]}"
fi

# --- host profile_check -------------------------------------------------------------------------
if ((build_only == 0)); then
  phase "host profile_check in $host_build"
  if [ ! -f "$host_build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$host_build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DINPROF_BUILD_TESTS=ON \
      -DINPROF_BUILD_EXAMPLES=OFF -DINPROF_BUILD_BENCHMARKS=OFF >/dev/null
  fi
  cmake --build "$host_build" -j"$jobs" --target profile_check >/dev/null
fi
host_profile_check="$host_build/tests/support/profile_check"

# --- cross build --------------------------------------------------------------------------------
phase "cross-configuring $build"
cmake -S "$root" -B "$build" \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/x86_64-w64-mingw32.cmake" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_UNITY_BUILD=ON \
  -DINPROF_BUILD_TESTS=ON -DINPROF_BUILD_TOOLS=ON -DINPROF_BUILD_EXAMPLES=OFF -DINPROF_BUILD_BENCHMARKS=OFF \
  -DINPROF_HOST_PROFILE_CHECK="$host_profile_check" >/dev/null
phase "building"
# Not built here: symbolicate_tests (with PprofTest and RotationTest), the Linux symbolicate's
# tests (the Windows symbolicate writes pprof as plain protobuf; no test of that runs here).
cmake --build "$build" -j"$jobs" --target \
  inprof_unit_tests symbolicate windows_symbolizer_tests e2e_target markers_target
((build_only)) && { phase "built"; exit 0; }

# --- Wine -----------------------------------------------------------------------------------------
# Headless, quiet, a prefix of our own. The server and Wine's services start here, detached from
# any pipe: started by the first test instead, they inherit its output pipe and ctest waits on it
# (about 2.5 s per test, and a persistent server started from inside ctest hung it).
export WINEPREFIX="$build/wine-prefix"
export WINEDEBUG=-all
# No winedbg: a crashing test program must end (and fail its test), not wait in the debugger.
export WINEDLLOVERRIDES="mscoree,mshtml=;winedbg.exe=d"
unset DISPLAY
stop_wine() { wineserver -k </dev/null >/dev/null 2>&1 || true; }
trap stop_wine EXIT
phase "starting Wine (prefix $WINEPREFIX)"
mkdir -p "$WINEPREFIX"  # wineserver needs the directory; wineboot fills it (≈3 s the first time)
wineserver -p </dev/null >/dev/null 2>&1 || true  # already running for this prefix: fine
wine wineboot </dev/null >/dev/null 2>&1

# The macOS backend's fake-Mach tests (mach.*) are not defined in this build: tests/CMakeLists.txt
# defines them for Linux only (they interpose glibc's malloc to count allocations).
# --- tests under Wine ---------------------------------------------------------------------------
# The allocation tests (allocations_*, the allocation unit tests) are Linux-only (the interposer
# forwards to glibc): tests/CMakeLists.txt never registers them in this build.
phase "ctest under $(command -v wine)"
cd "$build"
ctest --output-on-failure --timeout 300 </dev/null
phase "done"
