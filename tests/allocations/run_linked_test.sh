#!/usr/bin/env bash
# inprof::allocations linked, not preloaded (issue 24): the DT_NEEDED survives --as-needed; a
# session at rate 1 records every byte of linked_site; a second session frees blocks the first
# sampled without recording those frees (only its own are matched, none is left unmatched); the
# program built without the interposer is refused with a clear status.
# Usage: run_linked_test.sh LINKED LINKED_WITHOUT SYMBOLICATE WORKDIR
set -euo pipefail
linked=$1 without=$2 symbolicate=$3 work=$4
mkdir -p "$work"
cd "$work"
rm -f linked.inprof linked2.inprof
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
meta() {  # $1: summary, $2: label
  awk -v label="$2" 'index($0, label ":") { print $NF }' "$1" | head -1
}
readelf -d "$linked" | grep -q 'NEEDED.*libinprof_allocations' || fail "no DT_NEEDED for the interposer"
"$linked" linked.inprof linked2.inprof | grep -q '^ok' || fail "linked_allocations did not finish"
"$symbolicate" linked.inprof -o linked.summary --summary 2>/dev/null
grep -qE '^ +624750 .*linked_site' linked.summary || { cat linked.summary; fail "linked_site's bytes"; }
"$symbolicate" linked2.inprof -o linked2.summary --summary 2>/dev/null
# The second session allocated 50 blocks at kept_site and freed 25 of them while it ran.
[[ $(meta linked2.summary "Frees matched to their allocation") == 25 ]] ||
  { cat linked2.summary; fail "second session: its own 25 frees are not all matched"; }
[[ $(meta linked2.summary "Frees with no allocation in the profile") == 0 ]] ||
  { cat linked2.summary; fail "second session recorded frees of the first session's blocks"; }
"$without" without.inprof | grep -q 'inprof::allocations' || fail "no clear refusal without the interposer"
echo ok
