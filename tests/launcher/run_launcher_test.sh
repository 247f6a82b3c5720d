#!/usr/bin/env bash
# `inprof record` as a user meets it: every bad flag is a usage error (exit 2, one line on
# stderr that names the flag as typed, the program not run); flight-recorder flags imply --ring;
# a relative -o holds for a child that changes directory; a statically linked program is refused
# before it runs; silent outcomes (-t matching no thread, a missing --debug-dir) say so once.
set -uo pipefail
launcher="$1"; library="$2"; symbolicate="$3"; static_program="$4"; static_pie="$5"; work="$6"
rm -rf "$work"; mkdir -p "$work"; cd "$work" || exit 1

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# usage_error EXPECTED-TEXT ARGS...: `inprof record ARGS -- touch ran` must exit 2 with one line
# on stderr containing EXPECTED-TEXT, and must not run the program.
usage_error() {
  local expected="$1"; shift
  rm -f ran
  "$launcher" record "$@" -- touch ran >out.txt 2>err.txt
  local rc=$? lines
  lines=$(wc -l <err.txt)
  [ "$rc" -eq 2 ] || fail "record $*: exit $rc, expected 2 ($(cat err.txt))"
  [ "$lines" -eq 1 ] || fail "record $*: $lines lines on stderr, expected 1: $(cat err.txt)"
  grep -qF -- "inprof: $expected" err.txt || fail "record $*: expected 'inprof: $expected', got: $(cat err.txt)"
  [ ! -e ran ] || fail "record $*: the program ran"
}

echo "== bad values are usage errors that name the flag"
usage_error "-i fast: expected a duration" -i fast
usage_error "-i 10us: must be from 100us to 1s" -i 10us
usage_error "--interval=2s: must be from 100us to 1s" --interval=2s
usage_error "-u magic: expected auto, dwarf or fp" -u magic
usage_error "-d forever: expected a duration" -d forever
usage_error "--duration 0s: must be more than 0" --duration 0s
usage_error "--dump-signal SIGFOO: expected a signal" --dump-signal SIGFOO
usage_error "--capture-signal NOPE: expected a signal" --capture-signal NOPE
usage_error "--ring-seconds ten: expected a whole number of seconds" --ring-seconds ten
usage_error "--rotate 60: give a unit" --rotate 60
usage_error "--rotate 10ms: must be from 100ms to a year" --rotate 10ms
usage_error "--keep all: expected a number of files" --keep all
usage_error "-t ,: expected thread names" -t ,
usage_error "-o /nonexistent/x.json: no such directory: /nonexistent" -o /nonexistent/x.json
usage_error "-o /nonexistent/x.inprof: no such directory: /nonexistent" -o /nonexistent/x.inprof
usage_error "-o $work: is a directory" -o "$work"
usage_error "-o '': empty value" -o ""
usage_error "unknown option '--bogus'" --bogus
usage_error "-o needs a value" -o

echo "== a number without a unit is refused, with a hint"
usage_error "-d 5: give a unit: 5s, 5ms" -d 5
usage_error "-i 5: give a unit: 5ms, 5us" -i 5

echo "== a bad INPROF_* variable in the environment is refused too, named"
rm -f ran
INPROF_INTERVAL=bogus "$launcher" record -- touch ran 2>err.txt
rc=$?
[ "$rc" -eq 2 ] || fail "INPROF_INTERVAL=bogus: exit $rc, expected 2"
grep -q "^inprof: in the environment: INPROF_INTERVAL='bogus'" err.txt || fail "no INPROF_INTERVAL line: $(cat err.txt)"
[ ! -e ran ] || fail "INPROF_INTERVAL=bogus: the program ran"

echo "== settings valid alone that do not go together: exit 2 in the CLI's terms, nothing left"
usage_error "--keep 3 goes with --rotate" --keep 3
usage_error "--rotate 1s cannot go with --ring-seconds 5" --ring-seconds 5 --rotate 1s
usage_error "--no-cpu without --allocations records nothing" --no-cpu
usage_error "-o out.txt: a profile is NAME.json or NAME.json.gz" -o out.txt
usage_error "-o out.json.gz: --rotate 1s writes raw dumps" -o out.json.gz --rotate 1s
usage_error "--port 0: expected a port" --port 0
rm -f ran
INPROF_KEEP_FILES=3 "$launcher" record touch ran 2>err.txt
rc=$?
[ "$rc" -eq 2 ] || fail "INPROF_KEEP_FILES=3: exit $rc"
grep -qF "inprof: INPROF_KEEP_FILES=3 (from the environment) goes with --rotate" err.txt || fail "INPROF_KEEP_FILES=3: $(cat err.txt)"
[ ! -e ran ] || fail "INPROF_KEEP_FILES=3: the program ran"
[ -z "$(ls -d inprof-* /tmp/inprof-$$ 2>/dev/null)" ] || fail "a usage error left $(ls -d inprof-*)"

echo "== PROGRAM as the first word that is not an option (samply record ls, perf record ls)"
rm -f ran x.inprof
"$launcher" record -o x.inprof touch ran 2>err.txt || fail "no '--': exit $? ($(cat err.txt))"
[ -e ran ] && [ -s x.inprof ] || fail "no '--': the program did not run, or no dump"

echo "== a program that cannot run: the shell's status, one line, nothing left behind"
mkdir -p empty && cd empty || exit 1
"$launcher" record ./missing 2>err.txt
rc=$?
[ "$rc" -eq 127 ] || fail "missing: exit $rc"
[ "$(cat err.txt)" = "inprof: cannot run './missing': not found" ] || fail "missing: $(cat err.txt)"
touch not-executable
"$launcher" record ./not-executable 2>err.txt
rc=$?
[ "$rc" -eq 126 ] || fail "not executable: exit $rc"
[ "$(ls -A | tr '\n' ' ')" = "err.txt not-executable " ] || fail "left behind: $(ls -A)"
cd .. || exit 1

echo "== the output said when it was not named; a dump signal said"
rm -f inprof-*.inprof
"$launcher" record --no-children --raw true 2>err.txt || fail "--raw: exit $?"
grep -qx "inprof: the dump goes to inprof-[0-9]*\.inprof" err.txt || fail "--raw --no-children: $(cat err.txt)"
"$launcher" record -o sig.inprof --dump-signal SIGUSR2 true 2>err.txt || fail "--dump-signal: exit $?"
grep -qx "inprof: on SIGUSR2 a process stops profiling and writes its dump" err.txt || fail "--dump-signal: $(cat err.txt)"

echo "== killed by a signal: the launcher ends by the same signal"
sh -c "\"$launcher\" record -q -o killed.json sh -c 'kill -TERM \$\$'; echo \"rc=\$?\"" >out.txt 2>err.txt
grep -qx "rc=143" out.txt || fail "killed: $(cat out.txt err.txt)"

echo "== --crash, --ring-seconds and --capture-signal imply --ring"
for flags in "--crash" "--ring-seconds 5" "--capture-signal SIGUSR1"; do
  rm -f ring.inprof ran
  # shellcheck disable=SC2086
  "$launcher" record $flags -o ring.inprof -- touch ran 2>err.txt
  rc=$?
  [ "$rc" -eq 0 ] || fail "$flags: exit $rc ($(cat err.txt))"
  [ ! -s err.txt ] || fail "$flags: $(cat err.txt)"
  [ -s ring.inprof ] || fail "$flags: no ring written at exit"
  [ -e ran ] || fail "$flags: the program did not run"
done

echo "== --rotate: a complete dump per window, each symbolicated alone"
rm -f rot-*.inprof
"$launcher" record --no-children --rotate 200ms -o rot-%n.inprof -- sleep 1.2 2>err.txt
rc=$?
[ "$rc" -eq 0 ] || fail "--rotate: exit $rc ($(cat err.txt))"
windows=$(ls rot-*.inprof 2>/dev/null | wc -l)
[ "$windows" -ge 3 ] || fail "--rotate 200ms over 1.2 s: $windows windows"
for dump in rot-*.inprof; do
  "$symbolicate" "$dump" --summary -o /dev/null 2>err.txt ||
    fail "--rotate: $dump does not symbolicate alone: $(cat err.txt)"
done

echo "== a relative -o holds in a child that changes directory"
mkdir -p out elsewhere
"$launcher" record -o out/p-%p.inprof -- bash -c 'cd elsewhere && touch child-ran; true' 2>err.txt
rc=$?
[ "$rc" -eq 0 ] || fail "relative -o: exit $rc"
[ -e elsewhere/child-ran ] || fail "relative -o: the child did not run"
[ ! -s err.txt ] || fail "relative -o: $(cat err.txt)"
[ -z "$(ls -A elsewhere/out 2>/dev/null)" ] || fail "relative -o: a dump went under the child's directory"
[ -n "$(ls out)" ] || fail "relative -o: no dump in out/"

echo "== a statically linked program is refused before it runs"
for program in "$static_program" "$static_pie"; do
  rm -f ran
  "$launcher" record -o static.inprof -- "$program" ran 2>err.txt
  rc=$?
  [ "$rc" -eq 2 ] || fail "$program: exit $rc, expected 2"
  [ "$(wc -l <err.txt)" -eq 1 ] || fail "$program: not one line: $(cat err.txt)"
  grep -q "^inprof: cannot profile '.*': it is statically linked" err.txt || fail "$program: $(cat err.txt)"
  [ ! -e ran ] || fail "$program: it ran"
done

echo "== the dynamic loader run as a program is not mistaken for a static one"
loader=$(readlink -f "$(ldd /bin/true | awk '/ld-linux|ld\.so/ { print ($3 != "" ? $3 : $1) }' | head -n 1)")
if [ -x "$loader" ]; then
  "$launcher" record -o loader.inprof -- "$loader" /bin/true 2>err.txt || fail "ld.so: exit $? ($(cat err.txt))"
  [ -s loader.inprof ] || fail "ld.so: no dump"
fi

echo "== -t matching no thread: symbolicate says the profile has no thread, once"
"$launcher" record -t no-such-thread -o nomatch.inprof -- sleep 0.2 2>err.txt || fail "-t nomatch: exit $?"
"$symbolicate" nomatch.inprof -o nomatch.json 2>err.txt || fail "symbolicate nomatch: exit $?"
[ "$(grep -c 'warning: the profile has no thread' err.txt)" -eq 1 ] || fail "-t nomatch: $(cat err.txt)"

echo "== symbolicate --debug-dir /nonexistent says so, once"
"$symbolicate" nomatch.inprof -o nomatch.json --debug-dir /nonexistent 2>err.txt || fail "exit $?"
[ "$(grep -c 'warning: --debug-dir /nonexistent: no such directory' err.txt)" -eq 1 ] || fail "--debug-dir: $(cat err.txt)"

echo "== preloaded by hand, a bad variable leaves the program unprofiled, and running"
out=$(LD_PRELOAD="$library" INPROF_STARTUP=1 INPROF_INTERVAL=bogus INPROF_OUTPUT="$work/bad.inprof" \
      bash -c 'echo ran' 2>&1)
[[ "$out" == *"ran"* ]] || fail "the program did not run: $out"
[[ "$out" == *"INPROF_INTERVAL"* ]] || fail "no message about the bad setting: $out"

[ "$failures" -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "launcher: ok"
