#!/usr/bin/python3
"""What the profiler costs for threads that do not run (issue 40): idle_threads (one spinning
thread, N sleeping in pthread_cond_wait, 3 s) unprofiled and under LD_PRELOAD of the library at
1 ms, interleaved, RUNS times each; prints the process's user+sys CPU profiled minus unprofiled,
as % of one CPU (median), and the dump's size.

  cc -O1 -o /tmp/idle_threads benchmarks/idle_threads/idle_threads.c -lpthread
  /usr/bin/python3 benchmarks/idle_threads/idle_cost.py /tmp/idle_threads build/libinprof.so [runs]
"""
import os
import statistics
import subprocess
import sys
import time

SECONDS = 3.0


def cpu_seconds(program, threads, env):
    start = time.monotonic()
    child = subprocess.Popen([program, str(threads), str(SECONDS)], env=env)
    _, _, usage = os.wait4(child.pid, 0)
    return usage.ru_utime + usage.ru_stime, time.monotonic() - start


def main():
    program, library = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    dump = '/tmp/idle_cost.inprof'
    bare = dict(os.environ)
    profiled = dict(bare, LD_PRELOAD=os.path.abspath(library), INPROF_STARTUP='1',
                    INPROF_INTERVAL='1ms', INPROF_OUTPUT=dump)
    for threads in (0, 100, 1000, 2000):
        extra = []
        for _ in range(runs):
            plain, _ = cpu_seconds(program, threads, bare)
            with_profiler, _ = cpu_seconds(program, threads, profiled)
            extra.append((with_profiler - plain) / SECONDS * 100)
        print(f'{threads} idle threads: profiler +{statistics.median(extra):.1f} % of a CPU '
              f'(runs: {" ".join(f"{e:.1f}" for e in extra)}), dump {os.path.getsize(dump) // 1024} KiB')


if __name__ == '__main__':
    main()
