#!/usr/bin/env bash
# Sampled allocations end to end (issue 24), through `inprof record --allocations`:
#  1. known_sites at rate 1: every site's bytes exact, nothing dropped, every free matched, the
#     leak the top retained site (with the C library's stdout buffer, never freed); the folded
#     stacks by allocated and by retained bytes sum to the same exact bytes;
# 1b. the same with --no-cpu: a memory-only profile, no CPU sample and no signal handler;
#  2. known_sites at the default rate (512 KiB) over 2.5 GB: each site's share within
#     max(3 percentage points, 4 sigma) of the truth (sigma as known_sites computes it);
#  3. allocation_scenarios at rate 1: allocations at thread exit, in a dlopen constructor, in a
#     fork child and in a signal handler; the program ends as it does unprofiled and each site
#     is named in the profile; and its checks of the allocator's contract for sampled (tagged)
#     blocks pass at rate 1 and at 4K (most blocks ordinary);
#  4. a real program preloaded: python3.11 with PYTHONMALLOC=malloc yields allocation sites in
#     python3.11's own code.
# 1 and 2 are also checked with the Firefox Profiler's own code (check_allocations.mjs: the
# "native-allocations" and "native-retained-allocations" strategies of profiler-cli).
# Usage: run_allocations_test.sh LAUNCHER SYMBOLICATE PROFILE_CHECK KNOWN_SITES SCENARIOS
#        DLOPEN_LIBRARY WORKDIR RUN_E2E PROFILER_CLI_PACKAGE_DIR PROFILER_CLI_DIR
set -euo pipefail
launcher=$1 symbolicate=$2 profile_check=$3 known_sites=$4 scenarios=$5 dlopen_library=$6
work=$7 run_e2e=$8 package_dir=$9 cli_dir=${10}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
cd "$work"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# The rows of a ranking in a --summary, as "function bytes" lines. $1: summary file, $2: the
# section's heading prefix, $3: ranking title.
ranking() {
  awk -v section="$2" -v title="$3" '
    index($0, section) == 1 { in_section = 1; next }
    in_section && /^[^ ]/ { in_section = 0 }
    in_section && index($0, title) { in_title = 1; getline; next }
    in_title && /^  [^ ]/ { in_title = 0 }
    in_title && NF >= 5 { name = $5; for (i = 6; i <= NF; i++) name = name " " $i; print name, $1 }
  ' "$1"
}
site_bytes() {  # $1: ranking lines, $2: site name
  awk -v site="$2" 'index($0, "::" site "(") { print $NF; found = 1 } END { if (!found) print 0 }' \
    <<<"$1" | head -1
}
truth() {  # $1: known_sites output, $2: site, $3: field
  awk -v site="$2" -v field="$3" '$1 == "site=" site {
    for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == field) print kv[2] } }' <<<"$1"
}
stat_line() {  # $1: summary, $2: label
  awk -v label="$2" 'index($0, label ": ") == 1 { print substr($0, length(label) + 3) }' "$1"
}

echo "== 1. known_sites, every allocation"
"$launcher" record --allocations=1 --no-children -o ks1.inprof -- "$known_sites" --total-mb 50 \
  >ks1.truth
"$symbolicate" ks1.inprof -o ks1.json 2>ks1.log
"$profile_check" ks1.json >/dev/null || fail "profile_check rejected ks1.json"
"$symbolicate" ks1.inprof -o ks1.summary --summary 2>>ks1.log
truth1=$(cat ks1.truth)
allocated=$(ranking ks1.summary "Top allocation sites" "by allocating function")
retained=$(ranking ks1.summary "Top retained sites" "by allocating function")
for site in site_sixty site_thirty site_ten site_leak; do
  want=$(truth "$truth1" "$site" bytes)
  got=$(site_bytes "$allocated" "$site")
  [[ $got == "$want" ]] || fail "rate 1: $site allocated $got bytes, truth $want"
  echo "  $site: $got bytes (exact)"
done
[[ $(stat_line ks1.summary "Allocation records dropped") == 0 ]] || fail "rate 1: records dropped"
[[ $(stat_line ks1.summary "Allocations whose free is not tracked") == 0 ]] ||
  fail "rate 1: untracked frees"
[[ $(stat_line ks1.summary "Frees with no allocation in the profile") == 0 ]] ||
  fail "rate 1: unmatched frees"
top_retained=$(head -1 <<<"$retained")
[[ $top_retained == *"::site_leak("* ]] || fail "rate 1: top retained site is '$top_retained'"
[[ $(site_bytes "$retained" site_leak) == "$(truth "$truth1" site_leak retained)" ]] ||
  fail "rate 1: site_leak retained $(site_bytes "$retained" site_leak) bytes"
# Folded stacks weighted by bytes (--folded-weight): at rate 1 each site's lines sum to its exact
# bytes, all lines to the summary's totals, and the retained lines to the leak (and stdout's buffer).
"$symbolicate" ks1.inprof -o ks1.alloc.folded --format folded --folded-weight alloc-bytes 2>>ks1.log
"$symbolicate" ks1.inprof -o ks1.retained.folded --format folded --folded-weight retained-bytes \
  2>>ks1.log
folded_bytes() {  # $1: folded file, $2: a frame's name ('' for every line): the sum of its counts
  awk -v site="$2" 'site == "" || index($0, "::" site "(") { sum += $NF } END { print sum + 0 }' "$1"
}
heading_bytes() {  # $1: summary, $2: heading prefix: the "N bytes" at its end
  awk -v h="$2" 'index($0, h) == 1 { print $(NF - 1) }' "$1"
}
for site in site_sixty site_thirty site_ten site_leak; do
  want=$(truth "$truth1" "$site" bytes)
  got=$(folded_bytes ks1.alloc.folded "$site")
  [[ $got == "$want" ]] || fail "folded alloc-bytes: $site sums to $got bytes, truth $want"
done
[[ $(folded_bytes ks1.alloc.folded "") == "$(heading_bytes ks1.summary "Top allocation sites")" ]] ||
  fail "folded alloc-bytes: total $(folded_bytes ks1.alloc.folded "") is not the summary's"
[[ $(folded_bytes ks1.retained.folded "") == "$(heading_bytes ks1.summary "Top retained sites")" ]] ||
  fail "folded retained-bytes: total $(folded_bytes ks1.retained.folded "") is not the summary's"
[[ $(folded_bytes ks1.retained.folded site_leak) == "$(truth "$truth1" site_leak retained)" ]] ||
  fail "folded retained-bytes: site_leak sums to $(folded_bytes ks1.retained.folded site_leak)"
[[ $(folded_bytes ks1.retained.folded site_sixty) == 0 ]] ||
  fail "folded retained-bytes: site_sixty (all freed) sums to non-zero"
echo "  folded alloc-bytes and retained-bytes: each site exact, totals = the summary's"
grep -q '"nativeAllocations"' ks1.json || fail "no nativeAllocations table in ks1.json"
grep -q '"memoryAddress"' ks1.json || fail "no memoryAddress column in ks1.json"
firefox_check() {  # $1: profile, $2: truth, $3: 1 if exact
  INPROF_KNOWN_SITES_TRUTH=$2 INPROF_EXACT=$3 "$run_e2e" --package-dir "$package_dir" \
    --cli-dir "$cli_dir" --checker "$here/check_allocations.mjs" --profile-check "$profile_check" \
    --json "$1" | sed 's/^/  /' || fail "check_allocations.mjs failed on $1"
}
firefox_check "$work/ks1.json" "$work/ks1.truth" 1

echo "== 1b. known_sites, every allocation, no CPU samples (--no-cpu)"
# A memory-only profile: exact bytes per site as in 1, no CPU sample, and no signal handler of
# inprof's in the program (its caught signals as unprofiled). The control that the check can see a
# handler: crash capture (--crash) installs its own. (CPU samples alone need none while the
# kernel's rings sample the busy threads: the sampling handler goes in with the first timer.)
"$known_sites" --total-mb 20 --show-caught-signals 1 >bare.truth
"$launcher" record --allocations=1 --no-cpu --no-children -o ks1b.inprof -- "$known_sites" \
  --total-mb 20 --show-caught-signals 1 >ks1b.truth
"$launcher" record --allocations=1 --crash --no-children -o ks1c.inprof -- "$known_sites" \
  --total-mb 20 --show-caught-signals 1 >ks1c.truth
# Less glibc's own real-time signals 32 and 33 (SIGCANCEL, SIGSETXID), whose handlers its
# pthread_create installs in any program that starts a thread: inprof's threads too.
caught() {
  local mask
  mask=$(awk -F= '$1 == "caught_signals" { print $2 }' "$1")
  [[ -n $mask ]] && printf '%016x\n' $((16#$mask & ~0x180000000))
}
[[ -n $(caught bare.truth) && $(caught ks1b.truth) == "$(caught bare.truth)" ]] ||
  fail "--no-cpu: caught signals $(caught ks1b.truth), unprofiled $(caught bare.truth)"
[[ $(caught ks1c.truth) != "$(caught bare.truth)" ]] ||
  fail "with crash capture the program's caught signals did not change: the check above is blind"
"$symbolicate" ks1b.inprof -o ks1b.summary --summary 2>ks1b.log
"$symbolicate" ks1b.inprof -o ks1b.json 2>>ks1b.log
"$profile_check" ks1b.json >/dev/null || fail "profile_check rejected ks1b.json"
[[ $(stat_line ks1b.summary "Samples in this profile") == 0 ]] ||
  fail "--no-cpu: $(stat_line ks1b.summary "Samples in this profile") CPU samples"
truth1b=$(cat ks1b.truth)
allocated=$(ranking ks1b.summary "Top allocation sites" "by allocating function")
for site in site_sixty site_thirty site_ten site_leak; do
  want=$(truth "$truth1b" "$site" bytes)
  got=$(site_bytes "$allocated" "$site")
  [[ $got == "$want" ]] || fail "--no-cpu: $site allocated $got bytes, truth $want"
done
# The allocations' stacks are symbolized with the samples' (ahead, in parallel, through the cache):
# a dump without samples still reports its addresses.
grep -qE 'wrote .*, [1-9][0-9]* distinct addresses' ks1b.log ||
  fail "--no-cpu: the allocation stacks' addresses were not symbolized ahead: $(grep wrote ks1b.log)"
echo "  no CPU samples, no signal handler ($(caught ks1b.truth) as unprofiled), every site exact"
firefox_check "$work/ks1b.json" "$work/ks1b.truth" 1

echo "== 2. known_sites, default rate, 2.5 GB"
"$launcher" record --allocations --no-children -o ks2.inprof -- "$known_sites" --total-mb 2500 \
  --sample-bytes 524288 >ks2.truth
"$symbolicate" ks2.inprof -o ks2.summary --summary 2>ks2.log
"$symbolicate" ks2.inprof -o ks2.json 2>>ks2.log
firefox_check "$work/ks2.json" "$work/ks2.truth" 0
truth2=$(cat ks2.truth)
allocated=$(ranking ks2.summary "Top allocation sites" "by allocating function")
total=0
for site in site_sixty site_thirty site_ten site_leak; do
  total=$((total + $(site_bytes "$allocated" "$site")))
done
for site in site_sixty site_thirty site_ten; do
  got=$(site_bytes "$allocated" "$site")
  python3 - "$got" "$total" "$(truth "$truth2" "$site" share)" "$(truth "$truth2" "$site" sigma_pp)" \
    "$site" <<'PY' || fail "default rate: $site share out of tolerance"
import sys
got, total, share, sigma, site = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
estimated = got / total if total > 0 else float("nan")
error_pp = abs(estimated - share) * 100
tolerance = max(3.0, 4 * sigma)
print(f"  {site}: share {estimated:.4f}, truth {share:.4f}, error {error_pp:.2f} pp (tolerance {tolerance:.2f})")
sys.exit(0 if total > 0 and error_pp <= tolerance else 1)
PY
done
retained=$(ranking ks2.summary "Top retained sites" "by allocating function")
[[ $(head -1 <<<"$retained") == *"::site_leak("* ]] ||
  fail "default rate: top retained site is '$(head -1 <<<"$retained")'"

echo "== 3. thread exit, dlopen, fork, signal handler (every allocation)"
# Also without CPU samples (--no-cpu), where threads are listed only every 50 ms: a thread that
# allocates and ends in between must still have its allocations in the profile.
for cpu in with-cpu no-cpu; do
  cpu_flag=()
  [[ $cpu == no-cpu ]] && cpu_flag=(--no-cpu)
  echo " $cpu:"
  rm -f sc.inprof sc.inprof-* sc-*.inprof
  "$launcher" record --allocations=1 "${cpu_flag[@]}" -o sc.inprof -- "$scenarios" \
    "$dlopen_library" >sc.out || fail "allocation_scenarios ($cpu) failed under the profiler: $(cat sc.out)"
  grep -q '^ok' sc.out || fail "allocation_scenarios ($cpu): $(cat sc.out)"
  "$symbolicate" sc.inprof -o sc.summary --summary --top 100 2>sc.log
  allocated=$(ranking sc.summary "Top allocation sites" "by allocating function")
  for site in thread_exit_site dlopen_constructor_site signal_handler_site main_loop_site; do
    grep -q "$site" <<<"$allocated" || fail "scenarios ($cpu): no allocation site $site"
    echo "  $site: named"
  done
  retained=$(ranking sc.summary "Top retained sites" "by allocating function")
  grep -q dlopen_constructor_site <<<"$retained" ||
    fail "scenarios ($cpu): the dlopen block is not retained"
  # The fork child writes its own dump (OUTPUT-PID) when the session follows it.
  for child in sc.inprof-* sc-*.inprof; do
    [[ -f $child ]] || continue
    "$symbolicate" "$child" -o child.summary --summary --top 100 2>/dev/null
    if grep -q fork_child_site child.summary; then echo "  fork_child_site: named (child dump)"; fi
  done
done

# At a sampling rate where some blocks are sampled and most are not: sampled reallocs of
# ordinary blocks, unsampled reallocs of sampled ones, frees of both (the block semantics).
"$launcher" record --allocations=4K -o sc4k.inprof -- "$scenarios" "$dlopen_library" >sc4k.out ||
  fail "allocation_scenarios at 4K failed under the profiler: $(cat sc4k.out)"
grep -q '^ok' sc4k.out || fail "allocation_scenarios at 4K: $(cat sc4k.out)"
echo "  at 4K: the program's own checks passed"

echo "== 4. python3.11 preloaded, PYTHONMALLOC=malloc"
if [[ -x /usr/bin/python3.11 ]]; then
  PYTHONMALLOC=malloc "$launcher" record --allocations=64K --no-children -o py.inprof -- \
    /usr/bin/python3.11 -c 'd = {str(i): [i] * 8 for i in range(200000)}; print(len(d))' >py.out
  "$symbolicate" py.inprof -o py.summary --summary --top 100 2>py.log
  allocated=$(ranking py.summary "Top allocation sites" "by allocating function")
  grep -qE '^(_?Py|list_|dict_|unicode|new_keys|PyMem)' <<<"$allocated" ||
    fail "python3.11: no allocation site in python's code: $(head -5 <<<"$allocated")"
  echo "  python sites: $(grep -cE '^(_?Py|list_|dict_|unicode)' <<<"$allocated") named"
else
  echo "  (no /usr/bin/python3.11: skipped)"
fi
echo "all allocation checks passed"
