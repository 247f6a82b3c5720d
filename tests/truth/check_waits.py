#!/usr/bin/env python3
"""Issue 43, end to end: where threads wait, and on what. waits_target's threads each wait the
whole run in one known way; in the Firefox profile symbolicate writes, each thread's idle samples
end in the frame that names its wait (the system call, and the lock by its variable's name or the
descriptor the program printed), and their weights give the time it waited within 10 % of the
program's own measure. Each wait is also one "Wait" marker in its thread's track, as long as the
wait, with the stack it waited in; pprof's wall and off_cpu sample types give the same times.
With --allocations-library (the interposer, preloaded beside the library, recording every
allocation), the lock in the heap is named by the function that allocated its block.
Usage: check_waits.py --target T --library LIB --symbolicate S --profile-check C --work DIR
                      [--allocations-library A]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys


def leaf_weights(profile):
    """{thread name: {leaf function name: weight in ms}} over every sample."""
    sh = profile["shared"]
    st, ft, fn, strings = sh["stackTable"], sh["frameTable"], sh["funcTable"], sh["stringArray"]
    out = {}
    for t in profile["threads"]:
        samples = t["samples"]
        unit_ms = 1.0 if samples["weightType"] == "tracing-ms" else profile["meta"]["interval"]
        leaves = out.setdefault(t["name"], {})
        for i, s in enumerate(samples["stack"]):
            if s is None:
                continue
            name = strings[fn["name"][ft["func"][st["frame"][s]]]]
            weight = samples["weight"][i] if samples["weight"] else 1
            leaves[name] = leaves.get(name, 0.0) + weight * unit_ms
    return out


def main():
    ap = argparse.ArgumentParser()
    for flag in ("--target", "--library", "--symbolicate", "--profile-check", "--work"):
        ap.add_argument(flag, required=True)
    ap.add_argument("--allocations-library")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    dump = os.path.join(args.work, "waits.inprof")
    profile_path = os.path.join(args.work, "waits.json")
    env = dict(os.environ, LD_PRELOAD=args.library, INPROF_STARTUP="1", INPROF_OUTPUT=dump,
               INPROF_INTERVAL="1ms")
    if args.allocations_library:
        env.update(LD_PRELOAD=args.allocations_library + ":" + args.library, INPROF_ALLOCATIONS="1")
    run = subprocess.run([args.target, "2"], env=env, capture_output=True, text=True, timeout=60)
    if run.returncode != 0:
        sys.exit("target failed (%d): %s" % (run.returncode, run.stderr))
    out = run.stdout
    fds = {k: re.search(r"^%s fd (\d+)" % k, out, re.M).group(1) for k in ("socket", "pipe", "epoll")}
    waited_ms = float(re.search(r"^waited ([0-9.]+) ms", out, re.M).group(1))
    conv = subprocess.run([args.symbolicate, dump, "-o", profile_path, "--quiet-modules"],
                          capture_output=True, text=True, timeout=120)
    if conv.returncode != 0:
        sys.exit("symbolicate failed: " + conv.stderr)
    check = subprocess.run([args.profile_check, profile_path], capture_output=True, text=True,
                           timeout=120)
    if check.returncode != 0:
        sys.exit("the profile is not well formed: " + check.stdout + check.stderr)
    profile = json.load(open(profile_path))
    leaves = leaf_weights(profile)

    expected = {
        # The lock by its name in the symbol table; the condition variable's futex word inside
        # it (glibc's is at +0x28), never the object beside it.
        "wait-mutex": ("futex g_contended_mutex",
                       lambda n: n == "[blocked: futex g_contended_mutex]"),
        "wait-condvar": ("futex in g_never_signalled",
                         lambda n: re.fullmatch(r"\[blocked: futex g_never_signalled"
                                                r"(\+0x[0-9a-f]+)?\]", n) is not None),
        "wait-socket": ("recvfrom socket fd " + fds["socket"],
                        lambda n: n == "[blocked: recvfrom socket fd %s]" % fds["socket"]),
        "wait-pipe": ("read pipe fd " + fds["pipe"],
                      lambda n: n == "[blocked: read pipe fd %s]" % fds["pipe"]),
        "wait-sleep": ("a sleep", lambda n: n in ("[blocked: clock_nanosleep]",
                                                  "[blocked: nanosleep]")),
        "wait-epoll": ("epoll fd " + fds["epoll"],
                       lambda n: re.fullmatch(r"\[blocked: epoll_p?wait fd %s\]" % fds["epoll"], n)
                       is not None),
        # Named by the function that allocated its block, 40 bytes in, when allocations are
        # recorded; by its address otherwise.
        "wait-heap-lock": (("futex in make_heap_lock's block" if args.allocations_library
                            else "futex at its address"),
                           (lambda n: n == "[blocked: futex in a block allocated by "
                                           "make_heap_lock, at +0x28]")
                           if args.allocations_library else
                           (lambda n: re.fullmatch(r"\[blocked: futex 0x[0-9a-f]+\]", n)
                            is not None)),
    }
    problems = []
    for thread, (what, match) in expected.items():
        found = leaves.get(thread)
        if found is None:
            problems.append("%s: no such thread in the profile" % thread)
            continue
        ms = sum(w for name, w in found.items() if match(name))
        others = sorted(((w, n) for n, w in found.items() if not match(n)), reverse=True)[:3]
        print("%-13s %-32s %7.1f ms of %.1f (others: %s)" % (thread, what, ms, waited_ms, others))
        if abs(ms - waited_ms) > 0.10 * waited_ms:
            problems.append("%s: %.1f ms waiting on %s, the program waited %.1f ms"
                            % (thread, ms, what, waited_ms))
    problems += check_markers(profile, expected, waited_ms)
    problems += check_summary(args, dump, fds, waited_ms)
    problems += check_pprof(args, dump, expected, waited_ms)
    if problems:
        sys.exit("FAIL:\n  " + "\n  ".join(problems))


def check_markers(profile, expected, waited_ms):
    """Each thread's wait is one "Wait" marker as long as the wait (within 10 %), named by its
    reason, with the stack it waited in as its cause."""
    strings = profile["shared"]["stringArray"]
    problems = []
    for t in profile["threads"]:
        if t["name"] not in expected:
            continue
        what, match = expected[t["name"]]
        m = t["markers"]
        waits = [i for i in range(m["length"])
                 if m["data"][i] and m["data"][i].get("type") == "Wait"
                 and match("[blocked: %s]" % m["data"][i]["reason"])]
        spans = [m["endTime"][i] - m["startTime"][i] for i in waits]
        print("markers: %-14s %d Wait marker(s) on %s: %s ms" % (t["name"], len(waits), what,
                                                               ["%.1f" % s for s in spans]))
        if len(waits) != 1:
            problems.append("%s: %d Wait markers on %s, 1 expected" % (t["name"], len(waits), what))
            continue
        i = waits[0]
        if abs(spans[0] - waited_ms) > 0.10 * waited_ms:
            problems.append("%s: a Wait marker of %.1f ms, the program waited %.1f ms"
                            % (t["name"], spans[0], waited_ms))
        if strings[m["name"][i]] != m["data"][i]["reason"]:
            problems.append("%s: the Wait marker is named %r, not by its reason"
                            % (t["name"], strings[m["name"][i]]))
        if not isinstance(m["data"][i].get("cause", {}).get("stack"), int):
            problems.append("%s: the Wait marker has no stack" % t["name"])
    return problems


def check_summary(args, dump, fds, waited_ms):
    """symbolicate --summary's "Top waits": each wait with the program's function that waited."""
    summary = subprocess.run([args.symbolicate, dump, "--summary", "--quiet-modules"],
                             capture_output=True, text=True, timeout=120)
    if summary.returncode != 0:
        return ["symbolicate --summary failed: " + summary.stderr]
    text = summary.stdout[summary.stdout.find("Top waits"):]
    rows = {}
    for line in text.splitlines()[2:]:
        m = re.match(r"\s+([0-9.]+)  (\[blocked: .*\]) <- (\S+)", line)
        if not m:
            break
        rows[(m.group(2), m.group(3))] = float(m.group(1))
    wanted = [("[blocked: futex g_contended_mutex]", "on_mutex"),
              ("[blocked: recvfrom socket fd %s]" % fds["socket"], "on_socket"),
              ("[blocked: read pipe fd %s]" % fds["pipe"], "on_pipe"),
              ("[blocked: clock_nanosleep]", "on_sleep")]
    problems = []
    for key in wanted:
        ms = rows.get(key)
        print("summary: %s <- %s: %s ms" % (key[0], key[1], ms))
        if ms is None or abs(ms - waited_ms) > 0.10 * waited_ms:
            problems.append("summary: top waits give %s <- %s %s ms, %.1f expected"
                            % (key[0], key[1], ms, waited_ms))
    return problems


def check_pprof(args, dump, expected, waited_ms):
    """The same waits in pprof's wall-clock and off-CPU views: `go tool pprof -sample_index=wall
    -top` (and off_cpu) gives each wait frame the time its thread waited (the sleep twice: main
    sleeps too). Skipped without go."""
    go = shutil.which("go")
    if go is None:
        print("go is not installed: the pprof check is skipped")
        return []
    pprof = os.path.join(args.work, "waits.pb.gz")
    conv = subprocess.run([args.symbolicate, dump, "--format", "pprof", "-o", pprof,
                           "--quiet-modules"], capture_output=True, text=True, timeout=120)
    if conv.returncode != 0:
        return ["symbolicate --format pprof failed: " + conv.stderr]
    home = os.path.join(args.work, "gohome")
    env = dict(os.environ, HOME=home, GOCACHE=os.path.join(home, "cache"), PPROF_TMPDIR=home)
    problems = []
    for index in ("wall", "off_cpu"):
        top = subprocess.run([go, "tool", "pprof", "-symbolize=none", "-sample_index=" + index,
                              "-top", "-unit=ms", "-nodecount=100", pprof], capture_output=True,
                             text=True, timeout=120, env=env)
        if top.returncode != 0:
            return ["go tool pprof failed: " + top.stderr]
        flat = {}  # function -> flat ms
        for line in top.stdout.splitlines():
            m = re.match(r"\s*([0-9.]+)ms\s+[0-9.]+%\s+[0-9.]+%\s+[0-9.]+ms\s+[0-9.]+%\s+(.*)$",
                         line)
            if m:
                flat[m.group(2).strip()] = flat.get(m.group(2).strip(), 0.0) + float(m.group(1))
        for thread, (what, match) in expected.items():
            ms = sum(v for name, v in flat.items() if match(name))
            want = waited_ms * (2 if thread == "wait-sleep" else 1)
            print("pprof %s: %-32s %7.1f ms (%.1f expected)" % (index, what, ms, want))
            if abs(ms - want) > 0.10 * want:
                problems.append("pprof: %.1f ms of %s time waiting on %s, %.1f expected"
                                % (ms, index, what, want))
    return problems


if __name__ == "__main__":
    main()
