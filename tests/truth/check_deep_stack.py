#!/usr/bin/env python3
"""Issue 21, items 1 and 2, end to end: deep_stack_target under the library (LD_PRELOAD), then
symbolicate. Checks that
  - every on-CPU sample of the deep thread reaches the thread's root or says why not: its root is
    a mark ([truncated stack], [no stack], [unwind stopped]); never a silently cut stack;
  - --summary counts exactly the marks the profile shows;
  - the on-CPU samples' weights and the CPU --summary counts as not represented add up to the
    CPU deltas the dump holds (a deep sample that stands for several intervals counts for all of
    them); each phase's weights against the program's own clock are printed.
Usage: check_deep_stack.py --target T --library LIB --symbolicate S --mode auto|timer
                           --interval 1ms|100us --work DIR
"""
import argparse
import json
import os
import re
import subprocess
import sys

MARKS = {"[truncated stack]", "[no stack]", "[unwind stopped]"}
ROOTS = {"clone3", "__clone3", "clone", "__clone"}


def main():
    ap = argparse.ArgumentParser()
    for flag in ("--target", "--library", "--symbolicate", "--mode", "--interval", "--work"):
        ap.add_argument(flag, required=True)
    # Instead of past 8 MB: this many small frames, deep but within what a sample takes by
    # default (stack_copy_size, max_frames): the deep phase's samples must reach the root.
    ap.add_argument("--frames", type=int)
    # Or this many MB of ~1 KiB frames, within the default copy (stack_copy_size).
    ap.add_argument("--megabytes")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    dump = os.path.join(args.work, "deep.inprof")
    profile = os.path.join(args.work, "deep.json")
    env = dict(os.environ, LD_PRELOAD=args.library, INPROF_STARTUP="1", INPROF_OUTPUT=dump,
               INPROF_INTERVAL=args.interval, INPROF_SELF_SAMPLING=args.mode)
    target_args = ([str(args.frames), "frames"] if args.frames else
                   [args.megabytes] if args.megabytes else ["10"])
    run = subprocess.run([args.target] + target_args, env=env, capture_output=True, text=True,
                         timeout=120)
    if run.returncode != 0:
        sys.exit("target failed (%d): %s" % (run.returncode, run.stderr))
    measured = {k: int(v) for k, v in re.findall(r"(\w+)_cpu_ns=(\d+)", run.stdout)}
    conv = subprocess.run([args.symbolicate, dump, "-o", profile, "--quiet-modules"],
                          capture_output=True, text=True, timeout=120)
    if conv.returncode != 0:
        sys.exit("symbolicate failed: " + conv.stderr)
    summary = subprocess.run([args.symbolicate, dump, "--summary", "--quiet-modules"],
                             capture_output=True, text=True, timeout=120).stdout

    p = json.load(open(profile))
    sh = p["shared"]
    st, ft, fn, strings = sh["stackTable"], sh["frameTable"], sh["funcTable"], sh["stringArray"]
    idle = {i for i, c in enumerate(p["meta"]["categories"]) if c["name"] == "Idle"}
    prefix = [None if o == 0 else i - o for i, o in enumerate(st["prefixOffset"])]

    def names(s):
        out = []
        while s is not None:
            out.append(strings[fn["name"][ft["func"][st["frame"][s]]]])
            s = prefix[s]
        return out  # leaf first

    threads = [t for t in p["threads"] if t["name"] == "deep"]
    if len(threads) != 1:
        sys.exit("expected one thread named deep, found %d" % len(threads))
    samples = threads[0]["samples"]
    if samples["weightType"] not in ("tracing-ms", "samples") or samples["weight"] is None:
        sys.exit("samples are not weighted by time: weightType %s" % samples["weightType"])
    # Whole milliseconds at 1 ms and more, whole intervals below (sample_weight.h).
    unit_ms = 1.0 if samples["weightType"] == "tracing-ms" else p["meta"]["interval"]
    weight_ms = [w * unit_ms for w in samples["weight"]]
    # The CPU the dump's own deltas give the thread (what symbolicate has to represent).
    dump_cpu_ms = sum(c or 0 for c in samples["threadCPUDelta"]) / 1e6
    problems, marks = [], {m: 0 for m in MARKS}
    phase_ms = {"shallow": 0.0, "deep": 0.0}
    deep_samples, deep_rooted = 0, 0
    on_cpu_ms = 0.0  # the weights of on-CPU samples
    unknown_ms = 0.0  # samples weighted one interval because their CPU time was unknown
    for i, s in enumerate(samples["stack"]):
        if s is None:
            continue
        frames = names(s)
        root = frames[-1]
        if root in MARKS:
            marks[root] += 1
        if ft["category"][st["frame"][s]] in idle:
            continue
        on_cpu_ms += weight_ms[i]
        if samples["threadCPUDelta"][i] is None:
            unknown_ms += weight_ms[i]
        # CPU after a gap in the sampling (an overloaded machine): under [ran between samples]
        # alone, where it ran is not known.
        gap = frames == ["[ran between samples]"]
        if root not in MARKS and root not in ROOTS and not gap:
            problems.append("sample %d: %s" % (i, " <- ".join(frames[:8])))
        # (shallow_phase's call of spin is a tail call: its samples show body -> spin.)
        if any(f.startswith("(anonymous namespace)::recurse") for f in frames):
            phase_ms["deep"] += weight_ms[i]
            deep_samples += 1
            deep_rooted += root in ROOTS
        elif "(anonymous namespace)::body(void*)" in frames:
            phase_ms["shallow"] += weight_ms[i]
    failed = False
    if problems:
        print("%d on-CPU samples neither reach the thread's root nor say why:" % len(problems))
        print("\n".join(problems[:20]))
        failed = True
    line = next((l for l in summary.split("Thread \"deep\"", 1)[-1].splitlines()
                 if "samples marked:" in l), "")
    counted = re.search(r"(\d+) truncated, (\d+) without a stack, (\d+) unwind stopped", line)
    shown = (marks["[truncated stack]"], marks["[no stack]"], marks["[unwind stopped]"])
    if not counted or tuple(int(x) for x in counted.groups()) != shown:
        print("--summary counts %r, the profile shows %s truncated / no stack / unwind stopped"
              % (line.strip(), shown))
        failed = True
    # CPU time after a gap in the sampling (an overloaded machine) is not laid on one stack but
    # under [ran between samples] (an on-CPU weight), and past its most pieces counted as not
    # represented: the on-CPU weights and that count add up to the CPU deltas the dump gave
    # (what symbolicate is responsible for).
    lost = re.search(r"([0-9.]+) ms not represented", line)
    unrepresented_ms = float(lost.group(1)) if lost else 0.0
    interval_ms = {"1ms": 1.0, "100us": 0.1}.get(args.interval, 1.0)
    total_measured_ms = (measured.get("shallow", 0) + measured.get("deep", 0)) / 1e6
    represented_ms = on_cpu_ms + unrepresented_ms
    print("CPU deltas in the dump %.1f ms; on-CPU weights %.1f ms + not represented %.1f ms; "
          "marks %s" % (dump_cpu_ms, on_cpu_ms, unrepresented_ms, shown))
    if abs(represented_ms - dump_cpu_ms) > 0.01 * dump_cpu_ms + unknown_ms + 2 * interval_ms:
        print("the weights and the counted losses do not add up to the dump's CPU deltas")
        failed = True
    # Every bit of the thread's CPU is in some sample's delta: the copies count it up to the copy,
    # and what a timer's last expirations did not deliver before the thread ended is written as
    # a repeat of its last stack (a quarter of a deep phase was once lost this way beside two
    # busy loops). Its own clock covers the two phases; the deltas also hold its start and end.
    if dump_cpu_ms < 0.97 * total_measured_ms - 2 * interval_ms:
        print("the dump's CPU deltas (%.1f ms) fall short of the thread's CPU (%.1f ms)"
              % (dump_cpu_ms, total_measured_ms))
        failed = True
    # Against the program's own clock, per phase: printed, not asserted. On a machine this
    # overloaded that the scheduler's tick merges many timer expirations, those are written as
    # repeats of the stack of the moment (the library's approximation), and the deltas can fall
    # short of the thread's CPU (README, Known limits).
    for phase in ("shallow", "deep"):
        print("%s phase: %.1f ms of CPU measured, %.1f ms in the profile's weights"
              % (phase, measured.get(phase, 0) / 1e6, phase_ms[phase]))
    if args.frames or args.megabytes:
        # The first samples after the thread went deep may be cut, while its copy grows to fit
        # (marked); after that every one reaches the root.
        print("deep phase: %d of %d samples reach the root" % (deep_rooted, deep_samples))
        if deep_rooted < 0.9 * deep_samples:
            print("a stack within the default copy and frame limit should reach its root")
            failed = True
        # And its samples are there: copies this deep were once lost whole, with their CPU (2 % of
        # it left). On a loaded machine a long tail beyond symbolicate's cap is counted as not
        # represented rather than laid on one stack, so only a loss of most of it fails.
        if phase_ms["deep"] < 0.2 * measured.get("deep", 0) / 1e6:
            print("the deep phase's samples carry less than a fifth of its CPU")
            failed = True
    if not total_measured_ms or not phase_ms["deep"]:
        print("no phase measured (%r) or no deep sample (%r)" % (measured, phase_ms))
        failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
