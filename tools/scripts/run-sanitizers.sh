#!/usr/bin/env bash
# Builds the library, its tests and symbolicate under a sanitizer and runs them: the unit tests,
# the symbolicate tests, the profile checker's tests and the torture scenarios.
#
#   run-sanitizers.sh [asan|tsan|all]      (default: all)
#
#   asan: ASan + UBSan in build-asan; any report, leak or undefined behaviour fails the run.
#   tsan: TSan in build-tsan; any data race fails the run.
# What a sanitizer itself cannot run is left out, with the reason, in run_asan/run_tsan below.
# Suppressions (each one explained in its file): tests/sanitizers/*.supp.
# INPROF_SKIP_INSTALL=1 skips install-deps.sh (already run); INPROF_SANITIZER_BUILD_ROOT puts the
# build directories elsewhere (default: the source tree); INPROF_JOBS sets the build's -j.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build_root="${INPROF_SANITIZER_BUILD_ROOT:-$root}"
which="${1:-all}"
jobs="${INPROF_JOBS:-$(nproc)}"
supp="$root/tests/sanitizers"

# The sanitizer runtimes (libasan8, libubsan1, libtsan2) come with g++ (build-essential).
[[ -n ${INPROF_SKIP_INSTALL:-} ]] || bash "$root/tools/scripts/install-deps.sh"

# Only what the sanitized tests need: no benchmarks, no examples, no e2e (node) or consumer tests.
targets=(inprof_unit_tests symbolicate_tests symbolicate profile_check profile_checker_test
         torture torture_dump_check torture_spin_a torture_spin_b torture_killed_child
         output_safety_test)

configure_and_build() {
  local dir=$1 sanitize=$2 flags=$3
  cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DINPROF_SANITIZE="$sanitize" -DINPROF_BUILD_BENCHMARKS=OFF -DINPROF_BUILD_EXAMPLES=OFF \
    -DINPROF_BUILD_TOOLS=ON -DINPROF_BUILD_TESTS=ON \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
    >/dev/null
  cmake --build "$dir" -j"$jobs" --target "${targets[@]}"
}

# Runs the sanitized tests of one build directory; returns non-zero on the first failure.
run_tests() {
  local dir=$1 label=$2 unit_filter=${3:-*}
  local failed=()
  echo "== $label: unit tests (filter $unit_filter)"
  "$dir/tests/inprof_unit_tests" --gtest_brief=1 --gtest_filter="$unit_filter" ||
    failed+=(inprof_unit_tests)
  echo "== $label: symbolicate tests"
  "$dir/tests/symbolicate/symbolicate_tests" --gtest_brief=1 || failed+=(symbolicate_tests)
  echo "== $label: profile checker tests"
  "$dir/tests/support/profile_checker_test" --gtest_brief=1 || failed+=(profile_checker_test)
  echo "== $label: output safety tests (SIGKILL mid-profile, failed writes, paths)"
  "$dir/tests/torture/output_safety_test" --gtest_brief=1 || failed+=(output_safety_test)
  echo "== $label: torture scenarios (skipped: ${INPROF_TORTURE_SKIP:-none})"
  ASAN_OPTIONS="${TORTURE_ASAN_OPTIONS:-${ASAN_OPTIONS:-}}" \
    bash "$root/tests/torture/run_torture.sh" --build-dir "$dir" --scenario all ||
    failed+=(torture)
  if ((${#failed[@]})); then
    echo "== $label: FAILED: ${failed[*]}"
    return 1
  fi
  echo "== $label: all green"
}

run_asan() {
  local dir="$build_root/build-asan" start=$SECONDS
  # Undefined behaviour is fatal, except pointer-overflow: it stays recoverable so that the one
  # suppression in ubsan.supp (inside RapidJSON) can apply; halt_on_error makes any other fatal.
  configure_and_build "$dir" "address,undefined" \
    "-fno-sanitize-recover=all -fsanitize-recover=pointer-overflow"
  local built=$((SECONDS - start))
  # abort_on_error: a report is a death by SIGABRT, which every runner counts as a failure.
  export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=0:suppressions=$supp/asan.supp"
  export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp"
  # Torture: no leak check (fork_storm's children exit from a copy of a multi-threaded process,
  # where LSan cannot see the other threads' stacks, so what only they reference looks leaked),
  # and no guard_page (ASan's bigger frames overflow the 8 KiB it leaves above the guard page;
  # the scenario is calibrated for normal frames).
  export TORTURE_ASAN_OPTIONS="${ASAN_OPTIONS/detect_leaks=1/detect_leaks=0}"
  export INPROF_TORTURE_SKIP="guard_page"
  local rc=0
  run_tests "$dir" asan || rc=1
  unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS TORTURE_ASAN_OPTIONS INPROF_TORTURE_SKIP
  echo "== asan: build ${built} s, total $((SECONDS - start)) s"
  return $rc
}

run_tsan() {
  local dir="$build_root/build-tsan" start=$SECONDS
  configure_and_build "$dir" "thread" ""
  local built=$((SECONDS - start))
  export TSAN_OPTIONS="halt_on_error=1:abort_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
  # TSan runs a signal handler only when the thread next enters libc (or blocks), so what needs
  # the sampling signal answered promptly by a thread that computes without calling libc, or a
  # handler run at once, cannot pass under TSan; nor can threads started after a fork of a
  # multi-threaded process. Left out (everything else runs):
  #   unit tests: DwarfUnwinderTest.* (stop a thread spinning in uninstrumented code),
  #     the ProfilerTest/MarkersTest cases below that compare a sample with where the thread
  #     was (a deferred handler copies a stack that has moved on from its registers), that need
  #     no sleeping call cut short (same reason as blocking_syscalls below) or the sampler's
  #     ticks on time, and MarkersTest.ForkLeavesTheParentProfilingAndTheChildClean (threads
  #     started after fork);
  #   torture: blocking_syscalls (the interrupted call returns before the deferred handler runs,
  #     so the EINTR cannot be attributed to inprof), sigaltstack (the deferred handler runs
  #     off the alternate stack), guard_page (TSan's signal frames need more stack than 8 KiB),
  #     fork_storm (children start threads after a multi-threaded fork), and start_stop_loop
  #     for time, not TSan: its 1,001 sessions take more than the 90 s watchdog under TSan
  #     (stop_during_markers still runs 51 sessions stopped from another thread).
  local unit_filter="-DwarfUnwinderTest.*:MarkersTest.CountersBecomeTimeSeries"
  unit_filter+=":MarkersTest.ForkLeavesTheParentProfilingAndTheChildClean"
  unit_filter+=":MarkersTest.LabelsAppearInSamplesInStackOrder"
  unit_filter+=":ProfilerTest.ThreadThatMovesBetweenWaitsGetsItsNewStack"
  unit_filter+=":ProfilerTest.CompleteStacksWithoutFramePointers"
  unit_filter+=":ProfilerTest.SleepingCallsAreNotCutShort"
  export INPROF_TORTURE_SKIP="blocking_syscalls sigaltstack guard_page fork_storm start_stop_loop"
  local rc=0
  run_tests "$dir" tsan "$unit_filter" || rc=1
  unset TSAN_OPTIONS INPROF_TORTURE_SKIP
  echo "== tsan: build ${built} s, total $((SECONDS - start)) s"
  return $rc
}

case "$which" in
  asan) run_asan ;;
  tsan) run_tsan ;;
  all) rc=0; run_asan || rc=1; run_tsan || rc=1; exit $rc ;;
  *) echo "usage: run-sanitizers.sh [asan|tsan|all]" >&2; exit 2 ;;
esac
