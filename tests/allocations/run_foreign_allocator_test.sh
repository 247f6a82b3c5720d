#!/usr/bin/env bash
# A program linked with jemalloc, through `inprof record --allocations` (issue 24, and the
# transparency contract's allocation exception): the interposer forwards to jemalloc, not to
# glibc, so the program prints what it prints unprofiled (malloc is jemalloc's; blocks cross
# between malloc/free and mallocx/sdallocx) and exits 0; at rate 1 every byte of its known sites
# is in the profile (sampled blocks of a foreign allocator all go in the address set), every free
# is matched, and only the leak is retained.
# Usage: run_foreign_allocator_test.sh LAUNCHER SYMBOLICATE PROGRAM WORKDIR
set -euo pipefail
launcher=$1 symbolicate=$2 program=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
cd "$work"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
"$program" >plain.out || fail "the program fails unprofiled: $(cat plain.out)"
bytes() {  # $1: folded file, $2: function: its bytes, summed over its stacks
  awk -v f="$2" 'index($0, f) { sum += $NF } END { print sum + 0 }' "$1"
}
for rate in 1 4K; do
  "$launcher" record --allocations=$rate --no-children -o fa$rate.inprof -- "$program" \
    >fa$rate.out 2>fa$rate.err || { cat fa$rate.out fa$rate.err; fail "rate $rate: exit $?"; }
  cmp -s plain.out fa$rate.out || { diff plain.out fa$rate.out; fail "rate $rate: output differs"; }
  "$symbolicate" fa$rate.inprof -o fa$rate.summary --summary 2>/dev/null
done
"$symbolicate" fa1.inprof -o alloc.folded --format folded --folded-weight alloc-bytes 2>/dev/null
"$symbolicate" fa1.inprof -o retained.folded --format folded --folded-weight retained-bytes 2>/dev/null
for site in small_site:4000000 large_site:6553600 leak_site:100000; do
  name=${site%%:*} want=${site#*:}
  got=$(bytes alloc.folded "$name")
  [[ $got == "$want" ]] || fail "$name allocated $got bytes in the profile, not $want"
done
for site in small_site:0 large_site:0 leak_site:100000; do
  name=${site%%:*} want=${site#*:}
  got=$(bytes retained.folded "$name")
  [[ $got == "$want" ]] || fail "$name retains $got bytes in the profile, not $want"
done
meta() {  # $1: summary, $2: label
  awk -v label="$2" 'index($0, label ":") { print $NF }' "$1" | head -1
}
[[ $(meta fa1.summary "Allocations whose free is not tracked") == 0 ]] ||
  { cat fa1.summary; fail "allocations whose free is not tracked"; }
[[ $(meta fa1.summary "Frees with no allocation in the profile") == 0 ]] ||
  { cat fa1.summary; fail "frees with no allocation"; }
echo "ok: jemalloc kept; sites exact at rate 1"
