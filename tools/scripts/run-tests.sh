#!/usr/bin/env bash
# Sets everything up, builds inprof with its tests, and runs them all:
#   1. the native build and its ctest suite (unit, symbolicate, end-to-end with the Firefox
#      Profiler's own code, torture, preload, consumers, performance properties);
#   2. a short fuzzing run of every libFuzzer target over its committed corpus (run-fuzz.sh);
#   3. the library and its tests under ASan + UBSan, then under TSan (run-sanitizers.sh);
#      INPROF_SANITIZERS=asan|tsan picks one, INPROF_SANITIZERS=none skips them;
#   4. the aarch64 cross build, its tests under qemu-user (run-aarch64.sh);
#   5. the Windows cross build (MinGW-w64), its tests under Wine (run-windows.sh);
#   6. the macOS compile check: platform/macos and lib/ compiled for x86_64 and arm64 macOS with
#      Debian's clang (run-macos-compile.sh; no SDK, nothing linked or run).
# Each step installs what it needs (Debian packages, as root). INPROF_QUICK=1 runs step 1 only.
# Every step runs even if an earlier one failed; the exit status says whether all passed.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${INPROF_BUILD_DIR:-$root/build}"
started=$SECONDS
failed=()
# Marks the run's start: only ctest logs written after it are recapped.
stamp=$(mktemp)
trap 'rm -f "$stamp"' EXIT
phase() { echo; echo "run-tests: [$((SECONDS - started)) s] $*"; }
step() {
  local name=$1
  shift
  phase "$name"
  if ! "$@"; then
    failed+=("$name")
    phase "$name FAILED"
  fi
}

# Builds ahead: the later steps' builds (each in its own tree) run in the background at the
# lowest priority from the start of the native build, on the CPU the native build and its tests
# leave idle (links, the tests that run alone, waits); a test sees them as it sees any busy
# machine, and a CI run is shorter by most of their time. Each later step waits for its own build
# and then runs as before: its build finds nothing left to do, or fails again with its messages.
ahead_pid=
ahead_dir=
start_builds_ahead() {
  ahead_dir="$build/builds-ahead"
  rm -rf "$ahead_dir" && mkdir -p "$ahead_dir" || return 0
  local scripts="$root/tools/scripts"
  # In the steps' order. The ASan tree first: the fuzzers are built in it (configure-asan-tree.sh).
  # The TSan tree next, the longest build, while the ASan tests run: last, it was the run's
  # critical path (started 1,690 s in, done at 2,271 s of a 2,509 s run).
  (
    ahead asan env INPROF_SKIP_INSTALL=1 bash "$scripts/run-sanitizers.sh" --build-only asan
    [[ $sanitizers != all && $sanitizers != tsan ]] ||
      ahead tsan env INPROF_SKIP_INSTALL=1 bash "$scripts/run-sanitizers.sh" --build-only tsan
    ahead aarch64 env INPROF_HOST_BUILD_DIR="$build" bash "$scripts/run-aarch64.sh" --build-only
    ahead windows env INPROF_HOST_BUILD_DIR="$build" bash "$scripts/run-windows.sh" --build-only
    ahead macos env INPROF_SKIP_INSTALL=1 bash "$scripts/run-macos-compile.sh"
  ) </dev/null &
  ahead_pid=$!
}
# One build ahead: its output to builds-ahead/NAME.log, then NAME.done with its exit status and
# when it started and ended (seconds into the run).
ahead() {
  local name=$1 from=$((SECONDS - started)) rc=0
  shift
  nice -n 19 "$@" >"$ahead_dir/$name.log" 2>&1 || rc=$?
  echo "$rc $from $((SECONDS - started))" >"$ahead_dir/$name.done"
}
# Waits for the build ahead NAME (if one was started) and says how it went. Returns its status.
await_ahead() {
  local name=$1 rc from to
  [[ -n $ahead_pid ]] || return 0
  while [[ ! -e $ahead_dir/$name.done ]] && kill -0 "$ahead_pid" 2>/dev/null; do sleep 1; done
  [[ -e $ahead_dir/$name.done ]] || return 0
  read -r rc from to <"$ahead_dir/$name.done"
  echo "run-tests: $name built ahead from $from s to $to s, exit status $rc ($ahead_dir/$name.log)"
  return "$rc"
}
# Each later step: its build ahead first (a failed one is built again by the step, which shows
# why), then the step itself.
after_ahead() {
  local name=$1
  shift
  await_ahead "$name" || true
  "$@"
}
# The macOS check is all compiling: done ahead whole, its verdict is the log's.
macos_check() {
  if [[ -n $ahead_pid ]]; then
    local rc=0
    await_ahead macos || rc=$?
    if [[ -e $ahead_dir/macos.done ]]; then
      cat "$ahead_dir/macos.log"
      return "$rc"
    fi
  fi
  env INPROF_SKIP_INSTALL=1 bash "$root/tools/scripts/run-macos-compile.sh"
}

sanitizers=${INPROF_SANITIZERS:-all}
[[ $sanitizers == asan || $sanitizers == tsan || $sanitizers == none ]] || sanitizers=all
# ASan + UBSan, then TSan (or the one INPROF_SANITIZERS names), each after its build ahead.
sanitizer_runs() {
  local rc=0 which
  for which in asan tsan; do
    [[ $sanitizers == all || $sanitizers == "$which" ]] || continue
    await_ahead "$which" || true
    env INPROF_SKIP_INSTALL=1 bash "$root/tools/scripts/run-sanitizers.sh" "$which" || rc=1
  done
  return $rc
}

native() {
  bash "$root/tools/scripts/install-deps.sh" || return 1
  # Every build tree this run creates (each step's, and the consumers' in the tests) uses Ninja,
  # which compiles a target's sources while the targets it links are still linking: with unity
  # builds' few large sources, make left a core idle for much of each build. A tree configured
  # before keeps its generator (CMake ignores this for an existing cache).
  if command -v ninja >/dev/null; then export CMAKE_GENERATOR=Ninja; fi
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DINPROF_BUILD_TESTS=ON \
    -DINPROF_BUILD_BENCHMARKS=ON -DCMAKE_UNITY_BUILD=ON >/dev/null || return 1
  [[ -n ${INPROF_QUICK:-} ]] || start_builds_ahead
  cmake --build "$build" -j"$(nproc)" &&
    (cd "$build" && ctest --output-on-failure --timeout 600 -j"$(nproc)")
}

step "native build and tests" native
if [[ -z ${INPROF_QUICK:-} ]]; then
  step "fuzzing (short run over the corpus)" after_ahead asan \
    env INPROF_SKIP_INSTALL=1 bash "$root/tools/scripts/run-fuzz.sh" --seconds 5
  if [[ $sanitizers != none ]]; then
    step "sanitizers ($sanitizers)" sanitizer_runs
  fi
  step "aarch64 under qemu-user" after_ahead aarch64 env INPROF_HOST_BUILD_DIR="$build" \
    bash "$root/tools/scripts/run-aarch64.sh"
  step "Windows (MinGW-w64) under Wine" after_ahead windows env INPROF_HOST_BUILD_DIR="$build" \
    bash "$root/tools/scripts/run-windows.sh"
  step "macOS compile check (x86_64, arm64)" macos_check
fi
[[ -z $ahead_pid ]] || wait "$ahead_pid" 2>/dev/null

# The last lines of each failed ctest entry's output, from every build directory this run
# used: a CI log is often read from its end, far below where ctest printed the failure.
recap_failed_tests() {
  local dir list
  for dir in $(realpath -e "$build" "$root"/build-* 2>/dev/null | sort -u); do
    list="$dir/Testing/Temporary/LastTestsFailed.log"
    [[ -s $list && $list -nt $stamp ]] || continue
    echo "run-tests: failed in $dir: $(cut -d: -f2- "$list" | tr '\n' ' ')"
    awk -v lines=30 '
      / Testing: / { name = $0; sub(/^[0-9]+\/[0-9]+ Testing: /, "", name); n = 0; out = 0; next }
      /^Output:$/ { out = 1; getline; next }  # (and the dashes under it)
      /^<end of output>$/ { out = 0; next }
      out { buf[n++] = $0; next }
      /^Test Failed\.|^Test Fail/ {
        print "---- " name " (last " lines " lines of its output)"
        for (i = (n > lines ? n - lines : 0); i < n; i++) print buf[i]
      }' "$dir/Testing/Temporary/LastTest.log" 2>/dev/null | head -200
  done
}

if ((${#failed[@]})); then
  recap_failed_tests
  phase "FAILED: ${failed[*]}"
  exit 1
fi
phase "all passed"
