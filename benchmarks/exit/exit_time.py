#!/usr/bin/python3
"""How long exit() takes: busy_exit (200 spinning threads) runs N times, unprofiled and under
LD_PRELOAD of the given library at 100 us; prints each configuration's times in ms, sorted.

  cc -O1 -o /tmp/busy_exit benchmarks/exit/busy_exit.c -lpthread
  /usr/bin/python3 benchmarks/exit/exit_time.py /tmp/busy_exit build/libinprof.so [runs]
"""
import os
import subprocess
import sys
import time


def run(program, env, runs):
    times = []
    for _ in range(runs):
        p = subprocess.Popen([program], stdout=subprocess.PIPE, env=env)
        line = p.stdout.readline()
        p.wait()
        end = time.clock_gettime(time.CLOCK_MONOTONIC)
        seconds, nanoseconds = line.decode().strip().split('.')
        times.append((end - (int(seconds) + int(nanoseconds) / 1e9)) * 1000)
    return ' '.join('%.1f' % t for t in sorted(times))


def main():
    program, library = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 7
    bare = dict(os.environ)
    profiled = dict(bare, LD_PRELOAD=os.path.abspath(library), INPROF_STARTUP='1',
                    INPROF_INTERVAL='100us', INPROF_OUTPUT='/tmp/busy_exit.inprof')
    timers = dict(profiled, INPROF_SELF_SAMPLING='timer')
    print('unprofiled (ms):', run(program, bare, runs))
    print('profiled, 100 us (ms):', run(program, profiled, runs))
    print('profiled, 100 us, timers (ms):', run(program, timers, runs))


if __name__ == '__main__':
    main()
