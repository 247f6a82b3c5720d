#!/usr/bin/env bash
# Builds the library, its tests and symbolicate under a sanitizer and runs them through ctest:
# the unit tests, the symbolicate tests, the profile checker's tests, the output-safety tests and
# the torture scenarios.
#
#   run-sanitizers.sh [--build-only] [asan|tsan|all]      (default: all)
#
#   asan: ASan + UBSan in build-asan (clang-14, the tree the fuzzers share:
#     configure-asan-tree.sh); any report, leak or undefined behaviour fails the run.
#   tsan: TSan in build-tsan; any data race fails the run.
#   --build-only: configure and build, run nothing (run-tests.sh builds ahead in the background).
# Each job is meant to take at most ~10 minutes on 2 cores (build + tests), so it is lean:
#   - only the targets its tests need are built (no examples, benchmarks, launcher), and under
#     ASan the fuzzers, which run-fuzz.sh then finds built;
#   - -O1 -g1 instead of RelWithDebInfo's -O2 -g: the sanitizers' own recommendation for
#     speed with usable reports (line tables are enough for file:line in every stack); the
#     symbolicate tests and their targets keep their own -g (tests/symbolicate/CMakeLists.txt);
#   - ctest -j2 (the sampling tests are RUN_SERIAL: they still run alone);
#   - tests that add time but no coverage under a sanitizer are left out (`never_here` below).
# What a sanitizer itself cannot run is left out, with the reason, in run_asan/run_tsan below.
# The continuous-mode tests (RotationTest.*, a rotating session of this process) and the pprof
# tests (PprofTest.*, which run `go tool pprof`, installed by install-deps.sh) are symbolicate
# tests and run under both sanitizers.
# Suppressions (each one explained in its file): tests/sanitizers/*.supp.
# INPROF_SKIP_INSTALL=1 skips install-deps.sh (already run); INPROF_SANITIZER_BUILD_ROOT puts the
# build directories elsewhere (default: the source tree); INPROF_JOBS sets the build's and
# ctest's -j (default: the number of cores).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build_root="${INPROF_SANITIZER_BUILD_ROOT:-$root}"
build_only=0
if [[ ${1:-} == --build-only ]]; then build_only=1; shift; fi
which="${1:-all}"
jobs="${INPROF_JOBS:-$(nproc)}"
supp="$root/tests/sanitizers"

# The sanitizer runtimes (libasan8, libubsan1, libtsan2) come with g++ (build-essential).
[[ -n ${INPROF_SKIP_INSTALL:-} ]] || bash "$root/tools/scripts/install-deps.sh"

# Only what the sanitized tests need.
targets=(inprof_unit_tests symbolicate_tests symbolicate profile_check profile_checker_test
         torture torture_dump_check torture_spin_a torture_spin_b torture_killed_child
         output_safety_test inprof_allocation_tests eh_frame_tests pull_service)
fuzzers=(fuzz_dump_reader fuzz_dump_records fuzz_symbolicate_profile fuzz_jit_map fuzz_macho_file
         fuzz_dwarf_expression fuzz_eh_frame fuzz_unwinders)

# ctest entries not built here, or with nothing a sanitizer adds (whole-program runs of code the
# tests above already cover): the e2e tests (node + the Firefox Profiler's code, minutes each),
# the consumer builds (CMake/pkg-config packaging), the preload tests (python3/node/xz under
# LD_PRELOAD; a sanitized library cannot be preloaded into an unsanitized program), the
# performance-property tests (timing, meaningless under a sanitizer), disabled_build (the API
# compiled to nothing), the examples, and the transparency programs (each runs preloaded as well
# as linked, and compares the profiled run's behaviour with an unsanitized one's), and the
# launcher's tests (the launcher is not built here), the shared library's export list, the C API
# programs (neither the shared library nor those programs are built here), and the truth tests
# (they preload the shared library into their target, as the preload tests do), the macOS
# backend's fake-Mach tests (they interpose malloc to count allocations, as the performance tests
# do, which a sanitizer's own allocator does not allow), and the allocation end-to-end and linked
# tests (they load the allocation interposer, which a sanitizer's own malloc replacement would
# fight; the linked program is not built here), the torture suite run with that interposer
# linked (torture_allocations_*: the same reason), the C API rotation program (not built here,
# like c_api_features) and the documentation checks (links, and snippets compiled by the compiler,
# untouched by the sanitizer).
never_here=('e2e_.*' 'consumer_.*' 'preload_.*' 'perf\..*' 'inprof_perf_tests.*' disabled_build
            disabled_build_c 'example_.*' 'transparency_.*' 'launcher_.*' shared_library_exports
            shared_library_dependencies
            c_api_features c_api_rotation 'truth_.*' 'mach\..*' 'mach_backend_tests.*'
            'allocations_.*' 'torture_allocations_.*' 'docs_.*')

# TSan: gcc's.
configure_and_build_tsan() {
  local dir=$1
  cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DINPROF_SANITIZE=thread -DINPROF_BUILD_BENCHMARKS=OFF -DINPROF_BUILD_EXAMPLES=OFF \
    -DINPROF_BUILD_TOOLS=ON -DINPROF_BUILD_TESTS=ON -DCMAKE_UNITY_BUILD=ON >/dev/null
  nice -n 5 cmake --build "$dir" -j"$jobs" --target "${targets[@]}"
}

# ASan + UBSan: clang-14, in the tree the fuzzers share; their targets are built here too.
configure_and_build_asan() {
  local dir=$1
  bash "$root/tools/scripts/configure-asan-tree.sh" "$dir"
  nice -n 5 cmake --build "$dir" -j"$jobs" --target "${targets[@]}" "${fuzzers[@]}"
}

# A ctest regex matching exactly the given test names (ctest regex syntax; `.*` allowed).
exact_names() {
  local IFS='|'
  echo "^($*)\$"
}

# ctest in `dir`; extra arguments select tests (-R/-E). Returns non-zero on any failure.
run_ctest() {
  local dir=$1
  shift
  (cd "$dir" && ctest -j"$jobs" --output-on-failure --timeout 300 "$@")
}

run_asan() {
  local dir="$build_root/build-asan" start=$SECONDS
  # (Undefined behaviour is fatal but for pointer-overflow, for ubsan.supp: configure-asan-tree.sh.)
  configure_and_build_asan "$dir"
  local built=$((SECONDS - start))
  ((build_only)) && return 0
  # abort_on_error: a report is a death by SIGABRT, which every runner counts as a failure.
  export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=0:suppressions=$supp/asan.supp"
  export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp"
  # Left out under ASan:
  #   torture guard_page: ASan's bigger frames overflow the 8 KiB the scenario leaves above the
  #     guard page (it is calibrated for normal frames);
  #   the leak check in torture fork_storm only (run apart below): its children exit from a
  #     copy of a multi-threaded process, where LSan cannot see the other threads' stacks, so
  #     what only they reference looks leaked. Every other test and scenario checks leaks;
  #   three symbolicate tests whose target programs, built by the tree's compiler, must have
  #     GCC's layout: a gap between units (UnitGapTest), .cold parts and nothing but the program
  #     in the walk (LlvmAgreement.ColdSplitProgram: clang links ASan's runtime in, whose
  #     assembly stubs llvm-symbolizer names by their local labels), GCC's location lists
  #     (ReleaseBuildTest.DebugImage...). They run in the native (g++) suite (two under TSan too);
  #     clang-built programs have their own tests (SymbolicateClang.*, LlvmAgreement.ClangPrograms).
  local left_out=("${never_here[@]}" torture_guard_page torture_fork_storm
                  UnitGapTest.StartBorrowsNoFileFromTheUnitBeforeIt LlvmAgreement.ColdSplitProgram
                  ReleaseBuildTest.DebugImageHoldsTheInflatedSectionsAndLeavesOutLocationLists)
  local rc=0
  echo "== asan: ctest (all but: ${left_out[*]})"
  run_ctest "$dir" -E "$(exact_names "${left_out[@]}")" || rc=1
  echo "== asan: torture_fork_storm without the leak check"
  ASAN_OPTIONS="${ASAN_OPTIONS/detect_leaks=1/detect_leaks=0}" \
    run_ctest "$dir" -R '^torture_fork_storm$' || rc=1
  unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS
  echo "== asan: build ${built} s, tests $((SECONDS - start - built)) s, total $((SECONDS - start)) s: $( ((rc)) && echo FAILED || echo all green)"
  return $rc
}

run_tsan() {
  local dir="$build_root/build-tsan" start=$SECONDS
  configure_and_build_tsan "$dir"
  local built=$((SECONDS - start))
  ((build_only)) && return 0
  export TSAN_OPTIONS="halt_on_error=1:abort_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
  # TSan runs a signal handler only when the thread next enters libc (or blocks), so what needs
  # the sampling signal answered promptly by a thread that computes without calling libc, or a
  # handler run at once, cannot pass under TSan; nor can threads started after a fork of a
  # multi-threaded process. Left out (everything else runs):
  #   unit tests: DwarfUnwinderTest.* (stop a thread spinning in uninstrumented code),
  #     CallChainTest.SamplesHoldTheKnownChainInnermostFirst (its thread spins in the chain
  #     without calling libc, so a deferred handler runs only when it leaves the chain),
  #     the ProfilerTest/MarkersTest cases below that compare a sample with where the thread
  #     was (a deferred handler copies a stack that has moved on from its registers), that need
  #     no sleeping call cut short (same reason as blocking_syscalls below) or the sampler's
  #     ticks on time, and MarkersTest.ForkLeavesTheParentProfilingAndTheChildClean (threads
  #     started after fork);
  #   torture: blocking_syscalls (the interrupted call returns before the deferred handler runs,
  #     so the EINTR cannot be attributed to inprof), sigaltstack (the deferred handler runs
  #     off the alternate stack), guard_page (TSan's signal frames need more stack than 8 KiB),
  #     fork_storm and exec_from_busy_threads (children start threads after a multi-threaded
  #     fork), and start_stop_loop
  #     for time, not TSan: its 1,001 sessions take more than the 90 s watchdog under TSan
  #     (stop_during_markers still runs 51 sessions stopped from another thread);
  #   the symbolicate tests that never start a thread (one DWARF reader, its index, line
  #     tables, the incremental dump reader, each driven directly): TSan finds races only
  #     between threads, and these ran 120-300 s each under it (ASan runs them all).
  #     symbolicate's threads are still run: Determinism.*, SymbolCacheRun.*, the CLI and
  #     cache tests, IncrementalReader.SymbolicateKeepsEverySampleOfTheCompleteChunks.
  local left_out=("${never_here[@]}" 'DwarfUnwinderTest\..*' 'dwarf_eh_frame\..*'
                  MarkersTest.CountersBecomeTimeSeries
                  CallChainTest.SamplesHoldTheKnownChainInnermostFirst
                  MarkersTest.ForkLeavesTheParentProfilingAndTheChildClean
                  MarkersTest.LabelsAppearInSamplesInStackOrder
                  ProfilerTest.ThreadThatMovesBetweenWaitsGetsItsNewStack
                  ProfilerTest.CompleteStacksWithoutFramePointers
                  ProfilerTest.SleepingCallsAreNotCutShort
                  torture_blocking_syscalls torture_sigaltstack torture_guard_page
                  torture_fork_storm torture_exec_from_busy_threads torture_start_stop_loop
                  'ModuleIndex\..*' 'LookupOrder\..*' 'LlvmAgreement\..*' 'LineTableTest\..*'
                  'PackedLineTable\..*' IncrementalReader.ReadsAWholeDumpOfManyChunksLikeReadDump
                  IncrementalReader.TruncatedAnywhereDeliversEveryCompleteChunk
                  IncrementalReader.DamagedChunksAreSkippedLikeReadDump
                  IncrementalReader.RefusesWhatIsNotADumpWithReadDumpsMessages)
  local rc=0
  echo "== tsan: ctest (all but: ${left_out[*]})"
  run_ctest "$dir" -E "$(exact_names "${left_out[@]}")" || rc=1
  unset TSAN_OPTIONS
  echo "== tsan: build ${built} s, tests $((SECONDS - start - built)) s, total $((SECONDS - start)) s: $( ((rc)) && echo FAILED || echo all green)"
  return $rc
}

case "$which" in
  asan) run_asan ;;
  tsan) run_tsan ;;
  all) rc=0; run_asan || rc=1; run_tsan || rc=1; exit $rc ;;
  *) echo "usage: run-sanitizers.sh [asan|tsan|all]" >&2; exit 2 ;;
esac
