#!/usr/bin/env bash
# `inprof record` profiles PROGRAM and the processes it starts into one profile (issue 23, item
# 1): a shell script that runs sort and gzip gives a dump per process in the run's directory,
# which symbolicate merges into one Firefox profile with three processes, checked with the
# Firefox Profiler's own code (check_processes.mjs, through profiler-cli). --no-children profiles
# the script alone; -o PATH gives the children PATH-PID.
#
#   run_children_test.sh LAUNCHER SYMBOLICATE PROFILE_CHECK RUN_E2E CLI_PACKAGE_DIR CLI_DIR WORK_DIR
set -uo pipefail
launcher="$1"; symbolicate="$2"; check="$3"; run_e2e="$4"; package_dir="$5"; cli_dir="$6"
work="$7"
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"; mkdir -p "$work"; cd "$work" || exit 1

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# The number of processes in a (gzipped) profile.
symbolicate_processes() {
  python3 -c 'import gzip, json, sys; d = open(sys.argv[1], "rb").read(); d = gzip.decompress(d) if d[:2] == b"\x1f\x8b" else d; print(len({t["pid"] for t in json.loads(d)["threads"]}))' "$1"
}

seq 200000 | sort -R > numbers
cat > children.sh <<'SCRIPT'
sort -n numbers > sorted
gzip -c sorted > sorted.gz
echo done
SCRIPT

echo "== --raw: a dump per process in inprof-PID/, where the launcher says"
"$launcher" record --raw -- sh children.sh >out.txt 2>err.txt
rc=$?
[ "$rc" -eq 0 ] || fail "exit $rc: $(cat err.txt)"
grep -q '^done$' out.txt || fail "the script did not finish: $(cat out.txt)"
[ "$(wc -l <err.txt)" -eq 1 ] || fail "stderr is not one line: $(cat err.txt)"
dir=$(sed -n 's|^inprof: a dump per process goes to \(inprof-[0-9]*\)/ (then: symbolicate \1 -o profile.json)$|\1|p' err.txt)
[ -n "$dir" ] && [ -d "$dir" ] || fail "no directory named on stderr: $(cat err.txt)"
count=$(ls "$dir" 2>/dev/null | grep -c '\.inprof$')
[ "$count" -eq 3 ] || fail "$count dumps in $dir, expected 3 (sh, sort, gzip): $(ls "$dir")"
cmp -s sorted <(sort -n numbers) || fail "sort's output changed under the profiler"

echo "== symbolicate DIR: one profile, three processes, checked with the Firefox Profiler's code"
"$symbolicate" "$dir" -o merged.json 2>sym.txt || fail "symbolicate exit $?: $(cat sym.txt)"
grep -q "3 processes" sym.txt || fail "symbolicate does not count 3 processes: $(cat sym.txt)"
"$run_e2e" --package-dir "$package_dir" --cli-dir "$cli_dir" \
  --checker "$here/check_processes.mjs" --profile-check "$check" --json merged.json ||
  fail "check_processes failed"

echo "== --no-children: the script alone"
"$launcher" record --no-children -o alone.inprof -- sh children.sh >/dev/null 2>err.txt ||
  fail "--no-children: exit $?: $(cat err.txt)"
[ ! -s err.txt ] || fail "--no-children: $(cat err.txt)"
[ -s alone.inprof ] || fail "--no-children: no dump"
[ -z "$(ls alone-* 2>/dev/null)" ] || fail "--no-children: children wrote $(ls alone-*)"

echo "== -o PATH: PROGRAM's dump is PATH, each child's PATH-PID; symbolicate takes them all"
"$launcher" record -o app.inprof -- sh children.sh >/dev/null 2>err.txt || fail "-o: exit $?"
[ ! -s err.txt ] || fail "-o: $(cat err.txt)"
[ -s app.inprof ] || fail "-o: no app.inprof"
[ "$(ls app-*.inprof 2>/dev/null | wc -l)" -eq 2 ] || fail "-o: children's dumps: $(ls app*)"
"$symbolicate" app.inprof app-*.inprof -o app.json 2>sym.txt || fail "symbolicate files: $(cat sym.txt)"
grep -q "3 processes" sym.txt || fail "symbolicate files: $(cat sym.txt)"

echo "== by default: profile.json.gz, symbolicated at the end, loaded by the Firefox Profiler's code"
mkdir -p plain && cp numbers children.sh plain/ && cd plain || exit 1
"$launcher" record sh children.sh >out.txt 2>err.txt || fail "default: exit $?: $(cat err.txt)"
grep -q '^done$' out.txt || fail "default: the script did not finish"
grep -qx "inprof: wrote profile.json.gz (inprof load profile.json.gz opens it in the Firefox Profiler)" err.txt ||
  fail "default: stderr: $(cat err.txt)"
[ "$(ls -A | sort | tr '\n' ' ')" = "children.sh err.txt numbers out.txt profile.json.gz sorted sorted.gz " ] ||
  fail "default: left $(ls -A) (the dumps are temporary)"
cd .. || exit 1
gzip -dc plain/profile.json.gz > plain.json || fail "default: not gzip"
"$run_e2e" --package-dir "$package_dir" --cli-dir "$cli_dir" \
  --checker "$here/check_processes.mjs" --profile-check "$check" --json plain.json \
  --checker-flag complete ||
  fail "check_processes failed on the default profile"

echo "== -o NAME.json: that profile, quietly with -q: nothing on stderr, though dash leaves by _exit"
"$launcher" record -q -o named.json sh children.sh >/dev/null 2>err.txt || fail "-o named.json: exit $?"
[ ! -s err.txt ] || fail "-q: $(cat err.txt)"
head -c 1 named.json | grep -q '{' || fail "-o named.json: not JSON"

echo "== --open: record, symbolicate the run's dumps, serve the profile; PROGRAM's status"
rm -rf inprof-* profile.json.gz
"$launcher" record --open --no-browser -o opened.json.gz -- sh children.sh >open.out 2>open.err &
launcher_pid=$!
url=
for _ in $(seq 120); do
  url=$(grep -o 'http://127\.0\.0\.1:[0-9]*/[0-9a-f]*/[^ ]*' open.out open.err 2>/dev/null | head -n 1 | cut -d: -f2-)
  [ -n "$url" ] && break
  sleep 0.5
done
if [ -z "$url" ]; then
  fail "--open: no address printed: $(cat open.out open.err)"
else
  python3 - "$url" <<'PY' || fail "--open: the served profile does not have 3 processes"
import gzip, json, sys, urllib.request
data = urllib.request.urlopen(sys.argv[1], timeout=30).read()
if data[:2] == b"\x1f\x8b":
    data = gzip.decompress(data)
pids = {t["pid"] for t in json.loads(data)["threads"]}
print(f"--open: served a profile with {len(pids)} processes")
sys.exit(0 if len(pids) == 3 else 1)
PY
fi
server=$(pgrep -P "$launcher_pid" | head -n 1)
[ -n "$server" ] && kill -INT "$server"
wait "$launcher_pid"
rc=$?
[ "$rc" -eq 0 ] || fail "--open: exit $rc: $(cat open.err)"
[ -s opened.json.gz ] || fail "--open: the profile was not kept"
[ -z "$(ls -d inprof-* 2>/dev/null)" ] || fail "--open: dumps left in $(ls -d inprof-*)"
count=$(symbolicate_processes opened.json.gz)
[ "$count" -eq 3 ] || fail "--open: $count processes, expected 3 (symbolicate must not be profiled)"

echo "== inprof load: a saved profile served as it is, on the port asked for"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$launcher" load opened.json.gz --no-browser --port "$port" >load.out 2>load.err &
load_pid=$!
url=
for _ in $(seq 60); do
  url=$(grep -ho "http://127\.0\.0\.1:$port/[0-9a-f]*/profile.json" load.out load.err 2>/dev/null | head -n 1)
  [ -n "$url" ] && break
  sleep 0.25
done
[ -n "$url" ] || fail "load: no address on port $port: $(cat load.out load.err)"
[ -z "$url" ] || python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=30).read()' "$url" ||
  fail "load: $url does not answer"
kill -INT "$load_pid"; wait "$load_pid" || fail "load: exit $? after Ctrl-C"

[ "$failures" -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "launcher_children: ok"
