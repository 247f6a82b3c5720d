#!/usr/bin/env python3
"""Issue 40, end to end: a thread that runs in short bursts (bursts.c: blip() for BURST ms of
its own CPU every PERIOD ms, beside a spinning thread and IDLE sleeping ones) keeps its CPU in the
profile: the on-CPU milliseconds symbolicate's summary gives the thread within 10 % of what its
own clock measured, whatever the other threads do.
Usage: check_bursts.py --target T --library LIB --symbolicate S --mode auto|timer
                       --interval 1ms --burst MS --period MS --idle N --work DIR
"""
import argparse
import os
import re
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    for flag in ("--target", "--library", "--symbolicate", "--mode", "--interval", "--burst",
                 "--period", "--idle", "--work"):
        ap.add_argument(flag, required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    dump = os.path.join(args.work, "bursts.inprof")
    env = dict(os.environ, LD_PRELOAD=args.library, INPROF_STARTUP="1", INPROF_OUTPUT=dump,
               INPROF_INTERVAL=args.interval, INPROF_SELF_SAMPLING=args.mode)
    run = subprocess.run([args.target, args.burst, args.period, "3", args.idle], env=env,
                         capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        sys.exit("target failed (%d): %s" % (run.returncode, run.stderr))
    own = float(re.search(r"waker CPU: ([0-9.]+)", run.stdout).group(1))
    summary = subprocess.run([args.symbolicate, dump, "--format", "summary", "--quiet-modules"],
                             capture_output=True, text=True, timeout=120)
    if summary.returncode != 0:
        sys.exit("symbolicate failed: " + summary.stderr)
    seen = None
    for block in summary.stdout.split("\nThread ")[1:]:
        if re.search(r"\bblip\b", block):
            seen = float(re.search(r"; ([0-9.]+) ms on CPU", block).group(1))
    if seen is None:
        sys.exit("FAIL: blip() is not in the profile (the waker used %.1f ms)" % own)
    print("waker: %.1f ms by its own clock, %.1f ms on CPU in the profile (%.2f)"
          % (own, seen, seen / own))
    if abs(seen - own) > 0.10 * own:
        sys.exit("FAIL: the waker's CPU in the profile is off by more than 10 %")


if __name__ == "__main__":
    main()
