#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang-14 + ASan + UBSan, in the tree the sanitizer
# job's ASan tests use (build-asan, configure-asan-tree.sh), replays the committed
# corpus of each and fuzzes each for a while. Any crash, sanitizer report, leak, timeout or
# out-of-memory fails the run; the input that caused it is kept in the work directory.
#
#   run-fuzz.sh [--seconds N] [--target NAME] [--build-dir DIR] [--work-dir DIR] [--merge]
#
#   --seconds N   fuzzing time per target after the replay (default 30; 0: replay only)
#   --target NAME only this target (default: all of them)
#   --merge       afterwards, fold what the run found into tests/fuzz/corpus/<target>
#                 (minimised with -merge=1; for maintainers, not CI)
#   --build-only  install what is missing and build the targets, nothing else (run-tests.sh
#                 builds ahead in the background)
# The per-target execution count ("Done N runs") is printed at the end.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
seconds=30
only=
build="${INPROF_SANITIZER_BUILD_ROOT:-$root}/build-asan"
work=
merge=0
build_only=0
while (($#)); do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --target) only=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    --work-dir) work=$2; shift 2 ;;
    --merge) merge=1; shift ;;
    --build-only) build_only=1; shift ;;
    *) echo "run-fuzz.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
: "${work:=$build/fuzz-work}"
jobs="${INPROF_JOBS:-$(nproc)}"

[[ -n ${INPROF_SKIP_INSTALL:-} ]] || bash "$root/tools/scripts/install-deps.sh"

targets=(fuzz_dump_reader fuzz_dump_records fuzz_symbolicate_profile fuzz_jit_map
         fuzz_macho_file fuzz_dwarf_expression fuzz_eh_frame fuzz_unwinders)
if [[ -n $only ]]; then targets=("$only"); fi

start=$SECONDS
bash "$root/tools/scripts/configure-asan-tree.sh" "$build"
cmake --build "$build" -j"$jobs" --target "${targets[@]}"
echo "== fuzz: build $((SECONDS - start)) s"
((build_only)) && exit 0

export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1:suppressions=$root/tests/sanitizers/ubsan.supp"
# -timeout: one input may take at most this long; -rss_limit_mb: and this much memory.
limits=(-timeout=10 -rss_limit_mb=2048 -max_len=65536)
# One target: replay its corpus, then fuzz it. Its verdict goes to $work/<target>/verdict (a
# summary line, or FAIL), so that targets can run side by side, one per core.
fuzz_one() {
  local target=$1
  local bin="$build/tests/fuzz/$target"
  local corpus="$root/tests/fuzz/corpus/$target"
  local dir="$work/$target"
  rm -rf "$dir"
  mkdir -p "$dir/new" "$dir/artifacts"
  # Replay: every committed input once, as a regression test.
  if ! "$bin" "${limits[@]}" -runs=0 "$corpus" >"$dir/replay.log" 2>&1; then
    { tail -40 "$dir/replay.log"
      echo "== $target: FAIL: an input of the committed corpus fails"; } >"$dir/report"
    echo FAIL >"$dir/verdict"
    return
  fi
  local runs=0
  if ((seconds > 0)); then
    # New inputs go to $dir/new; the committed corpus is read only.
    if ! "$bin" "${limits[@]}" -max_total_time="$seconds" -print_final_stats=1 \
        -artifact_prefix="$dir/artifacts/" "$dir/new" "$corpus" >"$dir/fuzz.log" 2>&1; then
      { tail -60 "$dir/fuzz.log"
        echo "== $target: FAIL: finding kept in $dir/artifacts/"; } >"$dir/report"
      echo FAIL >"$dir/verdict"
      return
    fi
    runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$dir/fuzz.log" | tail -1)
    if ((merge)); then
      "$bin" "${limits[@]}" -merge=1 "$corpus" "$dir/new" >"$dir/merge.log" 2>&1
    fi
  fi
  echo "$target: corpus $(ls "$corpus" | wc -l) inputs replayed, ${runs} runs in ${seconds} s" \
    >"$dir/verdict"
}

running=0
for target in "${targets[@]}"; do
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_one "$target" &
  running=$((running + 1))
done
wait || true
failed=()
summary=()
for target in "${targets[@]}"; do
  verdict=$(cat "$work/$target/verdict" 2>/dev/null || echo FAIL)
  if [[ $verdict == FAIL ]]; then
    cat "$work/$target/report" 2>/dev/null || echo "== $target: FAIL: no verdict"
    failed+=("$target")
  else
    summary+=("$verdict")
  fi
done
printf '== %s\n' "${summary[@]}"
echo "== fuzz: total $((SECONDS - start)) s"
if ((${#failed[@]})); then
  echo "== fuzz: FAILED: ${failed[*]}"
  exit 1
fi
echo "== fuzz: no findings"
