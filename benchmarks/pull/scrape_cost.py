#!/usr/bin/env python3
"""What a pull-mode scrape costs the service (issue 42).

The service is tests/pull/pull_service: one thread computing all along, one asleep, for --run
seconds. Configurations, interleaved round by round, medians of --reps rounds:

  bare          no library
  listening     libinprof.so preloaded with INPROF_PULL: the listener waits, no scrape
  scraped       the same, scraped once for --seconds (a session started for the scrape alone)
  continuous    INPROF_PULL with INPROF_STARTUP=1 (a session runs the whole time, writing no
                dump), scraped the same way
  perf          `perf record -F 1000 -g` of the bare service (for scale), when perf works

For each: the service's CPU (user + system of all its threads, from wait4) above bare, in ms and
in % of one CPU over the run; for the scraped ones also the pull thread's own CPU (taking the
request, encoding and gzipping the profile), the answer's size, and how long after the window's
end it came.

Usage: scrape_cost.py --build-dir BUILD [--reps 7] [--run 6] [--seconds 4]
"""
import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def pull_thread_cpu(pid):
    """CPU seconds of the process's inprof-pull thread (schedstat: nanoseconds), or None."""
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                if f.read().strip() != "inprof-pull":
                    continue
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                return int(f.read().split()[0]) / 1e9
        except OSError:
            continue
    return None


def scrape(port, seconds, out):
    start = time.monotonic()
    s = socket.create_connection(("127.0.0.1", port), timeout=seconds + 30)
    s.sendall(b"GET /debug/pprof/profile?seconds=%d HTTP/1.1\r\nHost: x\r\n\r\n" % seconds)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    out["late_ms"] = (time.monotonic() - start - seconds) * 1000
    out["bytes"] = len(data.partition(b"\r\n\r\n")[2])
    out["ok"] = data.startswith(b"HTTP/1.1 200")


def run_once(args, config):
    env = dict(os.environ)
    cmd = [args.service, str(args.run)]
    port = free_port()
    if config != "bare" and config != "perf":
        env.update(LD_PRELOAD=args.library, INPROF_PULL="127.0.0.1:%d" % port)
    if config == "continuous":
        env["INPROF_STARTUP"] = "1"
    if config == "perf":
        cmd = ["perf", "record", "-q", "-F", "1000", "-g", "-o", os.path.join(args.work, "perf.data"),
               "--"] + cmd
    child = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    child.stdout.readline()  # "ready"
    result = {}
    if config in ("scraped", "continuous"):
        time.sleep(0.5)
        scrape(port, args.seconds, result)
        result["pull_cpu_ms"] = (pull_thread_cpu(child.pid) or 0) * 1000
    _, status, usage = os.wait4(child.pid, 0)
    if status != 0:
        raise RuntimeError("%s: service failed (%d)" % (config, status))
    result["cpu"] = usage.ru_utime + usage.ru_stime
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--run", type=float, default=6)
    ap.add_argument("--seconds", type=int, default=4)
    args = ap.parse_args()
    args.library = os.path.join(args.build_dir, "libinprof.so")
    args.service = os.path.join(args.build_dir, "tests", "pull", "pull_service")
    args.work = tempfile.mkdtemp(prefix="scrape-cost-")
    configs = ["bare", "listening", "scraped", "continuous"]
    if shutil.which("perf") and subprocess.run(
            ["perf", "record", "-q", "-o", os.path.join(args.work, "probe.data"), "true"],
            capture_output=True).returncode == 0:
        configs.append("perf")
    results = {c: [] for c in configs}
    for _ in range(args.reps):
        for c in configs:
            results[c].append(run_once(args, c))
    bare = statistics.median(r["cpu"] for r in results["bare"])
    print("Service: %s s, one thread busy; scrape of %d s from 0.5 s; %d rounds, medians\n" %
          (args.run, args.seconds, args.reps))
    print("| configuration | service CPU | vs bare | % of one CPU | pull thread | answer | after the window |")
    print("|---|---|---|---|---|---|---|")
    for c in configs:
        rs = results[c]
        cpu = statistics.median(r["cpu"] for r in rs)
        extra = [(f"{statistics.median(r['pull_cpu_ms'] for r in rs):.1f} ms",
                  f"{statistics.median(r['bytes'] for r in rs) / 1024:.1f} KiB",
                  f"{statistics.median(r['late_ms'] for r in rs):.0f} ms")
                 if "late_ms" in rs[0] else ("–", "–", "–")][0]
        print("| %s | %.0f ms | %+.0f ms | %+.1f %% | %s | %s | %s |" % (
            c, cpu * 1000, (cpu - bare) * 1000, (cpu - bare) / args.run * 100, *extra))
    shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
