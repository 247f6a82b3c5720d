#!/usr/bin/env bash
# Writes the guide's tables of settings anew from lib/options/option_table.cc (the test
# OptionTable.TheGuidesTablesAreMadeFromIt fails until they match). Needs a built build/.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${INPROF_BUILD_DIR:-$root/build}"
cmake --build "$build" --target inprof_unit_tests >/dev/null
INPROF_UPDATE_DOCS=1 "$build/tests/inprof_unit_tests" --gtest_filter='OptionTable.*' >/dev/null
git -C "$root" diff --stat -- docs/guide.md
