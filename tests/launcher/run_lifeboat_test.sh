#!/usr/bin/env bash
# A process `inprof record` starts that leaves without running any exit code of the profiler
# (_exit, SIGKILL, an exec, a forked child's _exit; the shell of `sh -c 'a; b'`) still has a
# complete dump: the launcher finishes it from the lifeboat the process handed it
# (lib/session/lifeboat.h). For each way out: the program's output and exit status as
# unprofiled, no descriptor of the profiler's left in the program, the run's profile complete,
# each process's CPU in the profile at least 90 % of what its own clock said (the writer's last
# half second was lost before), and nothing on stderr about a dump that could not be finished.
#
#   run_lifeboat_test.sh LAUNCHER PROGRAM WORK_DIR
set -uo pipefail
launcher="$1"; program="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"; cd "$work" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# check PROFILE MS N: N images of PROGRAM (a process, or the image an exec replaced) each with
# >= 90 % of MS ms of CPU; the run is complete.
check() {
  /usr/bin/python3 - "$@" <<'PY'
import gzip, json, sys
path, ms, processes, name = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
data = open(path, "rb").read()
profile = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
unit = profile["meta"].get("sampleUnits", {}).get("threadCPUDelta", "µs")
scale = {"µs": 1e-3, "ns": 1e-6, "variable CPU cycles": None}[unit]
cpu = {}
for t in profile["threads"]:
    if not t.get("processName", "").startswith(name):
        continue  # the shell
    deltas = t["samples"].get("threadCPUDelta") or []
    image = (t["pid"], t["name"])  # an exec: the same process, its thread named anew
    cpu[image] = cpu.get(image, 0) + sum(d or 0 for d in deltas) * scale
complete = [e["value"] for g in profile["meta"].get("extra", []) for e in g["entries"]
            if e["label"] == "Dump complete"]
ok = True
if len(cpu) != processes:
    print(f"  {len(cpu)} images of the program in the profile, expected {processes}"); ok = False
for (pid, thread), ms_seen in sorted(cpu.items()):
    print(f"  process {pid} ({thread}): {ms_seen:.1f} ms of CPU in the profile, its clock {ms:.0f}")
    if ms_seen < 0.9 * ms:
        ok = False
if complete != ["yes"]:
    print(f"  Dump complete: {complete}"); ok = False
sys.exit(0 if ok else 1)
PY
}

ms=800
plain_fds=$("$program" 1 _exit | sed -n 's/^descriptors //p')
for how in _exit kill fork exec shell; do
  echo "== $how"
  if [[ $how == shell ]]; then
    cmd=(sh -c "$program $ms _exit; $program $ms _exit")
    processes=2
  else
    cmd=("$program" "$ms" "$how")
    # A child made by fork() alone is not profiled (it starts no session of its own): what is
    # checked there is that its end leaves the parent's dump whole. An exec: two images.
    processes=1; [[ $how == exec ]] && processes=2
  fi
  "${cmd[@]}" >"plain-$how.out" 2>/dev/null; echo $? >"plain-$how.status"
  "$launcher" record -o "$how.json" -- "${cmd[@]}" >"$how.out" 2>"$how.err"
  echo $? >"$how.status"
  sed 's/^/   stderr: /' "$how.err"
  cmp -s "plain-$how.status" "$how.status" ||
    fail "$how: exit $(cat "$how.status"), unprofiled $(cat "plain-$how.status")"
  [[ $(grep -c '^cpu_us' "$how.out") == $(grep -c '^cpu_us' "plain-$how.out") ]] ||
    fail "$how: output differs: $(cat "$how.out")"
  fds=$(sed -n 's/^descriptors //p' "$how.out" | sort -u)
  [[ $fds == "$plain_fds" ]] || fail "$how: descriptors open in the program: $fds, unprofiled $plain_fds"
  grep -qE "could not finish|no end record" "$how.err" && fail "$how: a dump left unfinished"
  [[ -s $how.json ]] || { fail "$how: no profile"; continue; }
  check "$how.json" "$ms" "$processes" "$(basename "$program")" || fail "$how: the profile misses the end of the run"
done

[ "$failures" -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "launcher_lifeboat: ok"
