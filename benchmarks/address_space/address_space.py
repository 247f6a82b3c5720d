#!/usr/bin/python3
"""The address space a profiling session adds to a process: spin_threads (N spinning threads, no
allocation) runs unprofiled and under LD_PRELOAD of the given library at 1 ms, on the kernel's
rings and on forced timers; prints VmPeak and VmSize minus the unprofiled run's, in MiB, for each
thread count.

  cc -O1 -o /tmp/spin_threads benchmarks/address_space/spin_threads.c -lpthread
  /usr/bin/python3 benchmarks/address_space/address_space.py /tmp/spin_threads build/libinprof.so
"""
import os
import subprocess
import sys


def measure(program, threads, env):
    out = subprocess.run([program, str(threads)], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    return int(out[0]), int(out[1])


def main():
    program, library = sys.argv[1], sys.argv[2]
    bare = dict(os.environ)
    rings = dict(bare, LD_PRELOAD=os.path.abspath(library), INPROF_STARTUP='1',
                 INPROF_INTERVAL='1ms', INPROF_OUTPUT='/tmp/address_space.inprof')
    timers = dict(rings, INPROF_SELF_SAMPLING='timer')
    for threads in (1, 4, 16, 48):
        peak, size = measure(program, threads, bare)
        row = [f'{threads} threads: unprofiled VmPeak {peak / 1024:.1f} MiB']
        for name, env in (('rings', rings), ('timers', timers)):
            p, s = measure(program, threads, env)
            row.append(f'{name} +{(p - peak) / 1024:.1f} (VmSize +{(s - size) / 1024:.1f})')
        print(', '.join(row))


if __name__ == '__main__':
    main()
