#!/usr/bin/env python3
"""What profiling costs a process that lives for milliseconds: the fixed cost per process.

`inprof record` profiles every process a program starts (make, a shell script, a test runner),
and each one loads libinprof.so, starts a session, and writes its dump at exit. For a compiler
driver that runs cc1, as, collect2 and ld per file, that fixed cost is paid four times a file.

Two measurements, each interleaved run by run, medians of --reps rounds:

  true      /bin/true: bare; with libinprof.so preloaded and no session; with a session
            (INPROF_STARTUP=1). Wall and CPU (user + system, all threads) per process.
            --compare-build OTHER adds the same two configurations for another build's library.
  build     compiling and linking --files small C programs one after another (gcc -O1, six
            processes a file): bare, `perf record -g` at 1 kHz (with the same inheritance, for
            scale), and `inprof record` (every process profiled; with --compare-build, also
            with the other build's library, through INPROF_LIBRARY).

Usage: process_cost.py --build-dir BUILD [--reps 30] [--files 12] [--compare-build OTHER]
                       [--only true|build] [--work DIR]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run(cmd, env=None, cwd=None):
    start = time.monotonic()
    child = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - start
    err = child.stderr.read().decode(errors="replace")
    child.stderr.close()
    if status != 0:
        raise RuntimeError("%s failed (status %d): %s" % (" ".join(cmd[:4]), status, err[-600:]))
    return wall, usage.ru_utime + usage.ru_stime


def table(title, results, unit_scale, unit):
    base_wall = statistics.median(w for w, _ in results["bare"])
    base_cpu = statistics.median(c for _, c in results["bare"])
    print("\n%s\n" % title)
    print("| configuration | wall median | vs bare | CPU median | vs bare |")
    print("|---|---|---|---|---|")
    for label, runs in results.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print("| %s | %.2f %s | %+.2f %s | %.2f %s | %+.2f %s |" % (
            label, wall * unit_scale, unit, (wall - base_wall) * unit_scale, unit,
            cpu * unit_scale, unit, (cpu - base_cpu) * unit_scale, unit))
    sys.stdout.flush()


def measure_true(args, libraries, work):
    configs = [("bare", {})]
    for name, lib in libraries:
        configs.append(("%s preloaded, no session" % name, {"LD_PRELOAD": lib}))
        configs.append(("%s session (INPROF_STARTUP=1)" % name,
                        {"LD_PRELOAD": lib, "INPROF_STARTUP": "1",
                         "INPROF_OUTPUT": os.path.join(work, "true.inprof")}))
    results = {label: [] for label, _ in configs}
    for _ in range(args.reps):
        for label, extra in configs:
            dump = os.path.join(work, "true.inprof")
            if os.path.exists(dump):
                os.unlink(dump)
            env = dict(os.environ)
            env.update(extra)
            results[label].append(run(["/bin/true"], env))
    table("/bin/true, %d rounds (per process)" % args.reps, results, 1000, "ms")


def measure_build(args, launcher, libraries, work):
    src = os.path.join(work, "src")
    os.makedirs(src, exist_ok=True)
    for i in range(args.files):
        with open(os.path.join(src, "f%d.c" % i), "w") as f:
            f.write('#include <stdio.h>\nint f%d(int x) { return x * %d; }\n'
                    'int main(void) { printf("%%d\\n", f%d(3)); return 0; }\n' % (i, i, i))
    script = os.path.join(work, "build.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\nset -e\nfor c in f*.c; do gcc -O1 -c \"$c\" -o \"${c%.c}.o\"; "
                "gcc \"${c%.c}.o\" -o \"${c%.c}.bin\"; done\n")
    os.chmod(script, 0o755)
    dumps = os.path.join(work, "dumps")
    configs = [("bare", [])]
    if shutil.which("perf"):
        configs.append(("perf record -g, 1 kHz", ["perf", "record", "-q", "-F", "1000", "-g",
                                                  "-o", os.path.join(work, "build.perf"), "--"]))
    record = [launcher, "record", "-o", os.path.join(dumps, "%p.inprof"), "--"]
    for name, lib in libraries:
        configs.append(("%s record (every process)" % name, record, lib))
    configs = [c if len(c) == 3 else c + (None,) for c in configs]
    results = {label: [] for label, _, _ in configs}
    for _ in range(args.reps):
        for label, prefix, lib in configs:
            shutil.rmtree(dumps, ignore_errors=True)
            os.makedirs(dumps)
            env = dict(os.environ)
            if lib:
                env["INPROF_LIBRARY"] = lib  # the launcher preloads this build's library
            results[label].append(run(prefix + [script], env, cwd=src))
    count = len(os.listdir(dumps))
    table("compiling and linking %d small C files (%d processes profiled by inprof), %d rounds" % (
        args.files, count, args.reps), results, 1, "s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--files", type=int, default=12)
    parser.add_argument("--compare-build")
    parser.add_argument("--only", choices=["true", "build"])
    parser.add_argument("--work")
    args = parser.parse_args()
    build = os.path.abspath(args.build_dir)
    library = os.path.join(build, "libinprof.so")
    launcher = os.path.join(build, "tools", "inprof", "inprof")
    for path in (library, launcher):
        if not os.path.exists(path):
            sys.exit("process_cost.py: no %s (build the targets inprof_shared and inprof)" % path)
    libraries = [("inprof", library)]
    if args.compare_build:
        other = os.path.join(os.path.abspath(args.compare_build), "libinprof.so")
        if not os.path.exists(other):
            sys.exit("process_cost.py: no %s" % other)
        libraries.append(("inprof (%s)" % os.path.basename(args.compare_build.rstrip("/")), other))
    work = args.work or tempfile.mkdtemp(prefix="inprof-process-cost-")
    print("# %s, load average %.2f at the start" % (
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.getloadavg()[0]))
    if args.only in (None, "true"):
        measure_true(args, libraries, work)
    if args.only in (None, "build"):
        measure_build(args, launcher, libraries, work)
    print("\n# load average %.2f at the end" % os.getloadavg()[0])
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
