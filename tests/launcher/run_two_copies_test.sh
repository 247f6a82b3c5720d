#!/usr/bin/env bash
# Two copies of inprof in one process cooperate (issue 23, item 4): a program with the static
# library linked in, run under `inprof record` (which preloads the shared one). Its own
# ProfileScope succeeds and joins the session that runs; its markers, category, label, counter
# and thread name are in the launcher's dump. Alone, it profiles itself as before.
#
#   run_two_copies_test.sh LAUNCHER SYMBOLICATE PROGRAM WORK_DIR
set -uo pipefail
launcher="$1"; symbolicate="$2"; program="$3"; work="$4"
rm -rf "$work"; mkdir -p "$work"; cd "$work" || exit 1

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# has JSON TEXT...: every TEXT is among the profile's strings (names, marker fields, counters).
has() {
  local json="$1"; shift
  python3 - "$json" "$@" <<'PY'
import json, sys
profile = json.load(open(sys.argv[1]))
text = json.dumps(profile)
missing = [t for t in sys.argv[2:] if t not in text]
if missing:
    print("missing: " + ", ".join(missing))
    sys.exit(1)
PY
}

echo "== alone: the program profiles itself"
"$program" own.inprof >out.txt 2>err.txt || fail "alone: exit $?: $(cat err.txt)"
[ ! -s err.txt ] || fail "alone: $(cat err.txt)"
"$symbolicate" own.inprof -o own.json 2>/dev/null || fail "alone: symbolicate exit $?"
has own.json two-copies-marker two-copies-text Mine two-copies-items two-copies-label two-copies-main ||
  fail "alone: the program's instrumentation is not in its profile"

echo "== under inprof record: one session, the program's instrumentation in it"
"$launcher" record --no-children -o rec.inprof -- "$program" joined.inprof >out.txt 2>err.txt
rc=$?
[ "$rc" -eq 0 ] || fail "under the launcher: exit $rc: $(cat err.txt)"
[ ! -s err.txt ] || fail "under the launcher, stderr: $(cat err.txt)"
grep -q "two_copies_program: done" out.txt || fail "the program did not finish"
[ ! -e joined.inprof ] || fail "the program's own copy started a second session"
"$symbolicate" rec.inprof -o rec.json 2>sym.txt || fail "symbolicate exit $?: $(cat sym.txt)"
has rec.json two-copies-marker two-copies-text Mine two-copies-items two-copies-label two-copies-main ||
  fail "the program's instrumentation is not in the launcher's profile"

[ "$failures" -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "launcher_two_copies: ok"
