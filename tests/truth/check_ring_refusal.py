#!/usr/bin/env python3
"""Issue 40: where another process of the user holds the perf ring allowance (as `perf record -a`
does on a small machine), the profiled program runs as usual, its samples come from the fallback
(CPU-clock timers, idle threads asked by their clocks), and the profile says why: symbolicate's
statistics name the refused rings and their cause.
Usage: check_ring_refusal.py --hog H --target T --library LIB --symbolicate S --work DIR
Exit 77 (skipped) where perf events are not permitted at all.
"""
import argparse
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    for flag in ("--hog", "--target", "--library", "--symbolicate", "--work"):
        ap.add_argument(flag, required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    dump = os.path.join(args.work, "refused.inprof")
    hog = subprocess.Popen([args.hog], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = hog.stdout.readline()
        if not line.startswith("taken"):
            hog.wait(timeout=10)
            if hog.returncode == 77:
                print("perf events are not permitted here: skipped")
                sys.exit(77)
            sys.exit("the ring hog did not start: %r (exit %s)" % (line, hog.returncode))
        print("hog: " + line.strip() + " KB of perf rings")
        env = dict(os.environ, LD_PRELOAD=args.library, INPROF_STARTUP="1", INPROF_OUTPUT=dump)
        # bursts.c: a waker in 2 ms bursts every 50 ms, a spinning thread, 20 sleeping threads.
        run = subprocess.run([args.target, "2", "50", "1", "20"], env=env, capture_output=True,
                             text=True, timeout=120)
    finally:
        hog.stdin.close()
        hog.wait(timeout=10)
    if run.returncode != 0:
        sys.exit("FAIL: the program exited %d under the profiler: %s" % (run.returncode, run.stderr))
    summary = subprocess.run([args.symbolicate, dump, "--format", "summary", "--quiet-modules"],
                             capture_output=True, text=True, timeout=120)
    if summary.returncode != 0:
        sys.exit("FAIL: symbolicate failed: " + summary.stderr)
    said = [l for l in summary.stderr.splitlines() if "kernel sampling rings refused" in l]
    print("\n".join(said) or "(nothing said of kernel rings)")
    if not said or "over the user's perf allowance" not in said[0]:
        sys.exit("FAIL: the profile does not say that the kernel refused its rings, and why")
    if "given up" not in summary.stderr or "Thread" not in summary.stdout:
        sys.exit("FAIL: no samples in the profile:\n" + summary.stdout[:2000])


if __name__ == "__main__":
    main()
