#!/usr/bin/python3
"""A thread's CPU in the profile against its own clock, by duty cycle and burst length (issue 40):
bursts (one thread spinning, one "waker" running blip() in bursts) runs under LD_PRELOAD of the
library at each interval, on the kernel's rings and on forced timers; symbolicate's summary gives
the waker's on-CPU milliseconds. Prints one row per case: the waker's CPU by its own clock, by
the profile, and the ratio.

  cc -O1 -g -o /tmp/bursts benchmarks/duty_cycle/bursts.c -lpthread
  /usr/bin/python3 benchmarks/duty_cycle/duty_cycle.py /tmp/bursts build/libinprof.so \
      build/tools/symbolicate/symbolicate [idle_threads] [seconds]
"""
import os
import re
import subprocess
import sys
import tempfile

CASES = [(0.2, 20), (0.5, 50), (2, 50), (2, 200), (10, 40), (50, 200), (5, 20)]


def waker_profile_ms(symbolicate, dump):
    text = subprocess.run([symbolicate, dump, '--format', 'summary'], capture_output=True,
                          text=True, check=True).stdout
    for block in text.split('\nThread ')[1:]:
        if re.search(r'\bblip\b', block):
            return float(re.search(r'; ([0-9.]+) ms on CPU', block).group(1))
    return 0.0


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
                out = subprocess.run([program, str(burst), str(period), seconds, idle], env=env,
                                     capture_output=True, text=True, check=True).stdout
                own = float(re.search(r'waker CPU: ([0-9.]+)', out).group(1))
                seen = waker_profile_ms(symbolicate, dump)
                cells.append(f'{burst}/{period} ({100 * burst / period:.0f}%): {own:.0f} '
                             f'{seen:.0f} {seen / own:.2f}')
            print(f'{interval} {way}: ' + '; '.join(cells))


if __name__ == '__main__':
    main()
