#!/usr/bin/env bash
# Drives the end-to-end test: installs the pinned profiler-cli (once per build tree), runs
# e2e_target under the profiler, symbolicates the dump and checks the JSON with check_e2e.mjs.
#
#   run_e2e.sh --package-dir SRC --cli-dir DIR --checker check_e2e.mjs --profile-check BIN \
#              --target BIN --symbolicate BIN --work-dir DIR
#   run_e2e.sh ... --json FILE      (checks FILE instead; used to test the checker itself)
#   run_e2e.sh ... --checker-flag F (passes --F to the checker too)
#   run_e2e.sh ... --emulator "CMD" (cross builds: runs the target as CMD TARGET, e.g. qemu-aarch64)
#   run_e2e.sh ... --tool-emulator "CMD" (runs symbolicate as CMD SYMBOLICATE: the Windows build's,
#                                         under wine)
set -euo pipefail

die() {
  echo "run_e2e: $*" >&2
  exit 1
}

package_dir= cli_dir= checker= profile_check= target= symbolicate= work_dir= json= emulator=
tool_emulator=
checker_flags=()
while (($#)); do
  [[ $# -ge 2 ]] || die "option $1 needs a value"
  case "$1" in
    --package-dir) package_dir=$2 ;;
    --cli-dir) cli_dir=$2 ;;
    --checker) checker=$2 ;;
    --profile-check) profile_check=$2 ;;
    --target) target=$2 ;;
    --symbolicate) symbolicate=$2 ;;
    --work-dir) work_dir=$2 ;;
    --json) json=$2 ;;
    --emulator) emulator=$2 ;;
    --tool-emulator) tool_emulator=$2 ;;
    --checker-flag) checker_flags+=("--$2") ;;
    *) die "unknown option $1" ;;
  esac
  shift 2
done
[[ -n $package_dir && -n $cli_dir && -n $checker && -n $profile_check ]] || die "missing options"
[[ -n $json || (-n $target && -n $symbolicate && -n $work_dir) ]] || die "missing options"

# A missing node is a broken setup, not a reason to skip: the project's setup script installs it.
command -v node >/dev/null || die "node is not installed (run the project's setup script)"
command -v npm >/dev/null || die "npm is not installed (run the project's setup script)"

# --- profiler-cli, installed from the lock file into the build tree ---------------------------
package=@firefox-devtools/profiler-cli
mkdir -p "$cli_dir"
installed() {
  local manifest=$cli_dir/node_modules/$package/package.json
  [[ -f $manifest ]] && cmp -s "$package_dir/package-lock.json" "$cli_dir/package-lock.json" &&
    [[ $(node -p "require(process.argv[1]).version" "$manifest") == "$wanted" ]]
}
wanted=$(node -p "require(process.argv[1]).dependencies[process.argv[2]]" \
  "$package_dir/package.json" "$package")
{
  # Tests may run in parallel; one installs while the others wait.
  flock 9
  if ! installed; then
    echo "run_e2e: installing $package@$wanted into $cli_dir"
    cp "$package_dir/package.json" "$package_dir/package-lock.json" "$cli_dir/"
    # The package asks for node >= 24 but runs on 20; engine-strict would refuse it.
    (cd "$cli_dir" && npm ci --no-audit --no-fund --engine-strict=false) ||
      die "npm ci failed in $cli_dir"
    installed || die "$package@$wanted is not in $cli_dir after npm ci"
  fi
} 9>"$cli_dir/.install-lock"
cli=$cli_dir/node_modules/$package/dist/profiler-cli.js
[[ -f $cli ]] || die "$cli is missing"

# --- profile, symbolicate ---------------------------------------------------------------------
if [[ -z $json ]]; then
  mkdir -p "$work_dir"
  dump=$work_dir/e2e.inprof
  json=$work_dir/e2e.json
  rm -f "$dump" "$json"
  run=("$target")
  if [[ -n $emulator ]]; then
    read -ra words <<<"$emulator"
    under_wine=0
    for word in "${words[@]}"; do [[ $(basename "$word") == wine* ]] && under_wine=1; done
    if ((under_wine)); then
      # Wine names the process after the .exe it runs (the emulator may be a script around it).
      run=("${words[@]}" "$target")
    else
      # Natively the process, hence its main thread, is named after the program; under the
      # emulator it would be "qemu-aarch64". Started through a link named like the target, the
      # emulator's process gets the native name.
      launcher=$work_dir/$(basename "$target")
      ln -sfn "$(command -v "${words[0]}")" "$launcher" || die "cannot link $launcher"
      run=("$launcher" "${words[@]:1}" "$target")
    fi
  fi
  symbolicate_run=("$symbolicate")
  if [[ -n $tool_emulator ]]; then
    read -ra words <<<"$tool_emulator"
    symbolicate_run=("${words[@]}" "$symbolicate")
  fi
  echo "run_e2e: ${run[*]} $dump"
  "${run[@]}" "$dump" || die "e2e_target failed (exit status $?)"
  [[ -s $dump ]] || die "e2e_target wrote no dump at $dump"
  echo "run_e2e: ${symbolicate_run[*]} $dump -o $json"
  "${symbolicate_run[@]}" "$dump" -o "$json" || die "symbolicate failed (exit status $?)"
  [[ -s $json ]] || die "symbolicate wrote no JSON at $json"
fi

# --- check --------------------------------------------------------------------------------------
# Under qemu-user a sleeping thread's stack cannot be read without stopping it (README, limits).
[[ -n $emulator ]] && export INPROF_E2E_EMULATED=1
exec node "$checker" --profile "$json" --profile-check "$profile_check" --cli "$cli" \
  "${checker_flags[@]}"
