#!/usr/bin/python3
"""What sampling costs for threads that do not run, and for those that do (issue 40):
idle_threads (BUSY spinning threads, N sleeping in pthread_cond_wait, 3 s) unprofiled, under
LD_PRELOAD of the library at 1 ms, and under `perf record -e cpu-clock -F 1000 -g` (the same
rate), interleaved, RUNS times each. Prints the extra user+sys CPU of the whole run (program,
profiler, and perf's own process) over the unprofiled one, as % of one CPU (median), and the
profile's size. With busy threads on every CPU the extra CPU is taken from the program instead
of added: there the profiler's own threads' CPU (the dump's statistics) is printed too.

  cc -O1 -o /tmp/idle_threads benchmarks/idle_threads/idle_threads.c -lpthread
  /usr/bin/python3 benchmarks/idle_threads/idle_cost.py /tmp/idle_threads build/libinprof.so \
      build/tools/symbolicate/symbolicate [runs] [baseline-libinprof.so]

A baseline library (an older build kept aside) gets a column of its own, in the same runs.
"""
import os
import re
import shutil
import statistics
import subprocess
import sys

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


def main():
    program, library, symbolicate = sys.argv[1], sys.argv[2], sys.argv[3]
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    baseline = sys.argv[5] if len(sys.argv) > 5 else None
    dump, perf_data = '/tmp/idle_cost.inprof', '/tmp/idle_cost.perf'
    bare = dict(os.environ)
    profiled = dict(bare, LD_PRELOAD=os.path.abspath(library), INPROF_STARTUP='1',
                    INPROF_INTERVAL='1ms', INPROF_OUTPUT=dump)
    perf = shutil.which('perf')
    before = dict(profiled, LD_PRELOAD=os.path.abspath(baseline)) if baseline else None
    configs = [(n, 1) for n in IDLE] + [(0, b) for b in BUSY]
    print('idle busy | inprof extra %CPU (its threads ms) dump KiB | perf record extra %CPU data KiB'
          + (' | baseline extra %CPU' if baseline else ''))
    for idle, busy in configs:
        args = [program, str(idle), str(SECONDS), str(busy)]
        ours, theirs, own_ms, old = [], [], [], []
        for _ in range(runs):
            plain = cpu_seconds(args, bare)
            ours.append((cpu_seconds(args, profiled) - plain) / SECONDS * 100)
            own_ms.append(profiler_cpu_ms(symbolicate, dump))
            if before:
                old.append((cpu_seconds(args, before) - plain) / SECONDS * 100)
            if perf:
                command = [perf, 'record', '-q', '-e', 'cpu-clock', '-F', '1000', '-g', '-o',
                           perf_data, '--'] + args
                theirs.append((cpu_seconds(command, bare) - plain) / SECONDS * 100)
        perf_text = (f'+{statistics.median(theirs):.1f} ({" ".join(f"{e:.1f}" for e in theirs)}) '
                     f'{os.path.getsize(perf_data) // 1024}' if perf else 'no perf')
        print(f'{idle} {busy} | +{statistics.median(ours):.1f} '
              f'({" ".join(f"{e:.1f}" for e in ours)}) ({statistics.median(own_ms):.0f} ms) '
              f'{os.path.getsize(dump) // 1024} | {perf_text}'
              + (f' | baseline +{statistics.median(old):.1f}' if before else ''), flush=True)


if __name__ == '__main__':
    main()
