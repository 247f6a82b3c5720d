#!/usr/bin/python3
"""Each busy thread's CPU in the profile against its own clock (issue 40, the busy side):
busy_share (N threads spinning, named spin-NN, 3 s) under LD_PRELOAD of the library at 1 ms and
under `perf record -e cpu-clock -c 1000000` (the same period), interleaved. Per case: the ratio
profile / own clock over the N threads (least, median, most), the samples the profiler gave up,
and the profiler's own CPU; perf's ratio beside it (its samples by thread x the period).

  cc -O1 -o /tmp/busy_share benchmarks/busy_threads/busy_share.c -lpthread
  /usr/bin/python3 benchmarks/busy_threads/busy_share.py /tmp/busy_share build/libinprof.so \\
      build/tools/symbolicate/symbolicate [runs] [counts, e.g. 1,8,32,64]
"""
import collections
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

SECONDS = '3'
PERIOD_NS = 1000000


def own_clocks(stdout):
    """{tid: (name, cpu ms)} as the program printed them."""
    out = {}
    for line in stdout.splitlines():
        tid, name, ms = line.split()
        out[int(tid)] = (name, float(ms))
    return out


def profile_ms_by_name(symbolicate, dump):
    text = subprocess.run([symbolicate, dump, '--format', 'summary'], capture_output=True,
                          text=True).stdout
    found = {}
    for block in text.split('\nThread ')[1:]:
        name = re.match(r'"?([^"\s(]+)', block)
        cpu = re.search(r'; ([0-9.]+) ms on CPU', block)
        if name and cpu and name.group(1).startswith('spin-'):
            found[name.group(1)] = found.get(name.group(1), 0.0) + float(cpu.group(1))
    stats = subprocess.run([symbolicate, dump, '--format', 'summary', '-o', os.devnull],
                           capture_output=True, text=True).stderr
    given_up = re.search(r'(\d+) given up', stats)
    cpu = re.search(r'own threads used ([\d.]+) ms', stats)
    return found, int(given_up.group(1)) if given_up else -1, float(cpu.group(1)) if cpu else -1


def inprof_case(program, library, symbolicate, count, work):
    dump = os.path.join(work, 'd.inprof')
    env = dict(os.environ, LD_PRELOAD=os.path.abspath(library), INPROF_STARTUP='1',
               INPROF_INTERVAL='1ms', INPROF_OUTPUT=dump)
    run = subprocess.run([program, str(count), SECONDS], env=env, capture_output=True, text=True)
    own = own_clocks(run.stdout)
    found, given_up, cpu = profile_ms_by_name(symbolicate, dump)
    ratios = [found.get(name, 0.0) / ms for name, ms in own.values() if ms > 0]
    return ratios, given_up, cpu


def perf_case(program, count, work):
    data = os.path.join(work, 'perf.data')
    run = subprocess.run(['perf', 'record', '-q', '-e', 'cpu-clock', '-c', str(PERIOD_NS), '-o',
                          data, '--', program, str(count), SECONDS], capture_output=True, text=True)
    if run.returncode != 0:
        return None
    own = own_clocks(run.stdout)
    script = subprocess.run(['perf', 'script', '-i', data, '-F', 'tid'], capture_output=True,
                            text=True).stdout
    samples = collections.Counter(int(t) for t in script.split())
    return [samples.get(tid, 0) * PERIOD_NS / 1e6 / ms for tid, (_, ms) in own.items() if ms > 0]


def spread(values):
    if not values:
        return 'n/a'
    return f'{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}'


def main():
    program, library, symbolicate = sys.argv[1:4]
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    counts = [int(c) for c in (sys.argv[5] if len(sys.argv) > 5 else '1,8,32,64').split(',')]
    work = tempfile.mkdtemp(prefix='busy_share.')
    have_perf = shutil.which('perf') is not None
    print(f'{os.cpu_count()} CPUs, {SECONDS} s at 1 ms; profile / own clock per thread '
          '(least / median / most)')
    print('busy | inprof | given up | profiler CPU ms | perf record')
    for count in counts:
        for _ in range(runs):
            ratios, given_up, cpu = inprof_case(program, library, symbolicate, count, work)
            perf = perf_case(program, count, work) if have_perf else None
            print(f'{count} | {spread(ratios)} | {given_up} | {cpu:.1f} | '
                  f'{spread(perf) if perf is not None else "-"}', flush=True)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
