#!/usr/bin/python3
"""What sampling costs for threads that do not run, and for those that do (issue 40):
idle_threads (BUSY spinning threads, N sleeping in pthread_cond_wait, 3 s) unprofiled, under
LD_PRELOAD of the library at 1 ms, and under `perf record -e cpu-clock -F 1000 -g` (the same
rate), interleaved, RUNS times each. Prints the extra user+sys CPU of the whole run (program,
profiler, and perf's own process) over the unprofiled one, as % of one CPU (median), and the
profile's size. With busy threads on every CPU the extra CPU is taken from the program instead
of added: there the profiler's own threads' CPU (the dump's statistics) is printed too.

A second table gives the steady state, without the threads' creation: the sampler thread's CPU
per second between 2 s and 4 s of a 5 s run (its /proc schedstat), same libraries, interleaved.

  cc -O1 -o /tmp/idle_threads benchmarks/idle_threads/idle_threads.c -lpthread
  /usr/bin/python3 benchmarks/idle_threads/idle_cost.py /tmp/idle_threads build/libinprof.so \
      build/tools/symbolicate/symbolicate [runs] [baseline-libinprof.so] [--idle=N,N...]

A baseline library (an older build kept aside) gets a column of its own, in the same runs.
With --idle, only those idle rows (beside one busy thread) and their steady state are measured.
With --hog=build/tests/truth/ring_hog, that program holds the user's perf ring allowance
throughout, as another perf user would: the library samples without the kernel's records (its
fallback: CPU-clock timers, sleeping threads asked by their clocks); perf record is left out.
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

SECONDS = 3.0
IDLE = (0, 100, 1000, 2000, 10000)  # beside one busy thread
BUSY = (2, 8, 32, 64)               # without idle threads


def cpu_seconds(command, env):
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(child.pid, 0)
    return usage.ru_utime + usage.ru_stime


def profiler_cpu_ms(symbolicate, dump):
    out = subprocess.run([symbolicate, dump, '--summary', '-o', os.devnull], capture_output=True,
                         text=True).stderr
    m = re.search(r"own threads used ([\d.]+) ms", out)
    return float(m.group(1)) if m else float('nan')


def sampler_ms_per_second(args, env):
    """The inprof-sampler thread's CPU (ms per s) between 2 s and 4 s of the run in `args`."""
    child = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    readings = []
    try:
        for wait in (2.0, 2.0):
            time.sleep(wait)
            total = None
            for task in os.listdir(f'/proc/{child.pid}/task'):
                try:
                    with open(f'/proc/{child.pid}/task/{task}/comm') as f:
                        if f.read().strip() != 'inprof-sampler':
                            continue
                    with open(f'/proc/{child.pid}/task/{task}/schedstat') as f:
                        total = int(f.read().split()[0])
                except OSError:
                    continue
            readings.append(total)
    finally:
        child.wait()
    if None in readings:
        return float('nan')
    return (readings[1] - readings[0]) / 2e6


def steady_table(program, profiled, before, runs, idle_counts):
    print('\nsteady state: sampler CPU, ms per second (2 s to 4 s of 5 s), median of runs')
    print('idle | inprof | baseline' if before else 'idle | inprof')
    for idle in idle_counts:
        args = [program, str(idle), '5', '1']
        ours, old = [], []
        for _ in range(runs):
            ours.append(sampler_ms_per_second(args, profiled))
            if before:
                old.append(sampler_ms_per_second(args, before))
        row = f'{idle} | {statistics.median(ours):.0f} ({" ".join(f"{e:.0f}" for e in ours)})'
        if before:
            row += f' | {statistics.median(old):.0f} ({" ".join(f"{e:.0f}" for e in old)})'
        print(row, flush=True)


def main():
    only = [a[len('--idle='):] for a in sys.argv if a.startswith('--idle=')]
    hogs = [a[len('--hog='):] for a in sys.argv if a.startswith('--hog=')]
    argv = [a for a in sys.argv if not a.startswith(('--idle=', '--hog='))]
    hog = None
    if hogs:
        hog = subprocess.Popen([hogs[-1]], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = hog.stdout.readline()
        if not line.startswith('taken'):
            sys.exit(f'the ring hog did not start: {line!r}')
        print(f'ring hog: {line.strip()} KiB of perf rings held', flush=True)
    try:
        measure(argv, only, hog is not None)
    finally:
        if hog:
            hog.stdin.close()
            hog.wait()


def measure(argv, only, hogged):
    program, library, symbolicate = argv[1], argv[2], argv[3]
    runs = int(argv[4]) if len(argv) > 4 else 3
    baseline = argv[5] if len(argv) > 5 else None
    idle_counts = [int(n) for n in only[-1].split(',')] if only else list(IDLE)
    dump, perf_data = '/tmp/idle_cost.inprof', '/tmp/idle_cost.perf'
    bare = dict(os.environ)
    profiled = dict(bare, LD_PRELOAD=os.path.abspath(library), INPROF_STARTUP='1',
                    INPROF_INTERVAL='1ms', INPROF_OUTPUT=dump)
    perf = None if hogged else shutil.which('perf')
    before = dict(profiled, LD_PRELOAD=os.path.abspath(baseline)) if baseline else None
    configs = [(n, 1) for n in idle_counts] + ([] if only else [(0, b) for b in BUSY])
    print('idle busy | inprof extra %CPU (its threads ms) dump KiB | perf record extra %CPU data KiB'
          + (' | baseline extra %CPU' if baseline else ''))
    for idle, busy in configs:
        args = [program, str(idle), str(SECONDS), str(busy)]
        ours, theirs, own_ms, old, old_ms = [], [], [], [], []
        for _ in range(runs):
            plain = cpu_seconds(args, bare)
            ours.append((cpu_seconds(args, profiled) - plain) / SECONDS * 100)
            own_ms.append(profiler_cpu_ms(symbolicate, dump))
            if before:
                old.append((cpu_seconds(args, before) - plain) / SECONDS * 100)
                old_ms.append(profiler_cpu_ms(symbolicate, dump))
            if perf:
                command = [perf, 'record', '-q', '-e', 'cpu-clock', '-F', '1000', '-g', '-o',
                           perf_data, '--'] + args
                theirs.append((cpu_seconds(command, bare) - plain) / SECONDS * 100)
        perf_text = (f'+{statistics.median(theirs):.1f} ({" ".join(f"{e:.1f}" for e in theirs)}) '
                     f'{os.path.getsize(perf_data) // 1024}' if perf else 'no perf')
        print(f'{idle} {busy} | +{statistics.median(ours):.1f} '
              f'({" ".join(f"{e:.1f}" for e in ours)}) ({statistics.median(own_ms):.0f} ms) '
              f'{os.path.getsize(dump) // 1024} | {perf_text}'
              + (f' | baseline +{statistics.median(old):.1f} ({statistics.median(old_ms):.0f} ms)'
                 if before else ''), flush=True)

    steady_table(program, profiled, before, runs, idle_counts)


if __name__ == '__main__':
    main()
