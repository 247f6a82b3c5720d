#!/usr/bin/python3
"""A thread's CPU in the profile against its own clock, by duty cycle and burst length (issue 40):
bursts (one thread spinning, one "waker" running blip() in bursts) runs under LD_PRELOAD of the
library at each interval, on the kernel's rings and on forced timers; symbolicate's summary gives
the waker's on-CPU milliseconds. Prints one row per case: the waker's CPU by its own clock, by
the profile, and the ratio (and how much of it is under [ran between samples]: CPU a timer never
saw, placed above the stack the thread sleeps in); and, on the rings' rows, where `perf` is installed, `perf record -e cpu-clock` at the same
period on the same case, interleaved (the waker's samples x the period).

  cc -O1 -g -o /tmp/bursts benchmarks/duty_cycle/bursts.c -lpthread
  /usr/bin/python3 benchmarks/duty_cycle/duty_cycle.py /tmp/bursts build/libinprof.so \
      build/tools/symbolicate/symbolicate [idle_threads] [seconds]
"""
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

CASES = [(0.2, 20), (0.5, 50), (2, 50), (2, 200), (10, 40), (50, 200), (5, 20)]


def waker_profile_ms(symbolicate, dump):
    """The waker's on-CPU ms in the profile, and how many of them are under [ran between
    samples] (CPU its timer never saw: its thread is found by that frame when blip() is not)."""
    text = subprocess.run([symbolicate, dump, '--format', 'summary'], capture_output=True,
                          text=True, check=True).stdout
    blocks = text.split('\nThread ')[1:]
    # By its own functions first: the main thread's CPU creating the idle threads is under [ran
    # between samples] too (it sleeps after it, without a timer).
    for pattern in (r'\bblip\b', r'\bwaker\b', r'\[ran between samples\]'):
        for block in blocks:
            if re.search(pattern, block):
                on_cpu = float(re.search(r'; ([0-9.]+) ms on CPU', block).group(1))
                unseen = re.search(r'([0-9.]+)\s+[0-9.]+%\s+[0-9.]+\s+[0-9.]+%\s+'
                                   r'\[ran between samples\]', block)
                return on_cpu, float(unseen.group(1)) if unseen else 0.0
    return 0.0, 0.0


def perf_ratio(program, args, period_ns, work):
    data = os.path.join(work, 'perf.data')
    run = subprocess.run(['perf', 'record', '-q', '-e', 'cpu-clock', '-c', str(period_ns), '-o',
                          data, '--', program] + args, capture_output=True, text=True)
    if run.returncode != 0:
        return None
    own = float(re.search(r'waker CPU: ([0-9.]+)', run.stdout).group(1))
    # Samples by thread: the spinning one has the most, the waker the next most (the others
    # sleep); blip() itself spends most of its time in the kernel reading its clock.
    script = subprocess.run(['perf', 'script', '-i', data, '-F', 'tid'], capture_output=True,
                            text=True).stdout
    counts = sorted(collections.Counter(script.split()).values(), reverse=True)
    return (counts[1] if len(counts) > 1 else 0) * period_ns / 1e6 / own


def main():
    program, library, symbolicate = sys.argv[1:4]
    idle = sys.argv[4] if len(sys.argv) > 4 else '0'
    seconds = sys.argv[5] if len(sys.argv) > 5 else '3'
    work = tempfile.mkdtemp(prefix='duty_cycle.')
    dump = os.path.join(work, 'd.inprof')
    print(f'{idle} idle threads, {seconds} s; burst ms / period ms (duty): own clock ms, '
          'profile ms, ratio')
    for interval in ('1ms', '100us'):
        for way in ('rings', 'timers'):
            env = dict(os.environ, LD_PRELOAD=os.path.abspath(library), INPROF_STARTUP='1',
                       INPROF_INTERVAL=interval, INPROF_OUTPUT=dump)
            if way == 'timers':
                env['INPROF_SELF_SAMPLING'] = 'timer'
            cells = []
            for burst, period in CASES:
                args = [str(burst), str(period), seconds, idle]
                out = subprocess.run([program] + args, env=env, capture_output=True, text=True,
                                     check=True).stdout
                own = float(re.search(r'waker CPU: ([0-9.]+)', out).group(1))
                seen, unseen = waker_profile_ms(symbolicate, dump)
                cell = f'{burst}/{period} ({100 * burst / period:.0f}%): {own:.0f} {seen:.0f} ' \
                       f'{seen / own:.2f}'
                if unseen:
                    cell += f' ({unseen:.0f} unseen)'
                if way == 'rings' and shutil.which('perf'):
                    period_ns = 1000000 if interval == '1ms' else 100000
                    ratio = perf_ratio(program, args, period_ns, work)
                    if ratio is not None:
                        cell += f' (perf {ratio:.2f})'
                cells.append(cell)
            print(f'{interval} {way}: ' + '; '.join(cells))


if __name__ == '__main__':
    main()
