#!/usr/bin/env python3
"""inprof side by side with gperftools and perf, in one interleaved run.

Runs the deterministic workload (compare_workload_fp / _nofp: 2 busy threads, a fixed amount of
work 21 calls below the thread function) under each tool at the same rate, repetition by
repetition (A B C D E, A B C D E, ...), and writes a markdown table (and the raw figures as JSON).

Per run, the workload itself reports its worker threads' CPU time, its process CPU time and its
peak RSS; the CPU of the whole command (perf's own included) comes from the children's rusage.
Per repetition and binary, each tool is compared with that repetition's no-profiler run:

  target us/sample   extra worker-thread CPU / samples that interrupted a thread: what the
                     profiled threads pay (the issue's "cost to the target thread")
  process us/sample  extra CPU of the whole profiled process (adds inprof's sampler and writer
                     threads; gperftools works inside its handler)
  total us/sample    extra CPU of everything that ran (adds perf's own process)
  samples/CPU-s      samples per second of worker CPU
  reach start        share of samples through the workload's code whose stack ends at the thread
                     start in libc (start_thread/clone3, or __libc_start_call_main)
  bytes/sample       output file size / samples
  extra RSS          workload peak RSS minus the baseline's

Reference rows (not profilers): bare-signal (a thread of the workload interrupts each worker
with an empty handler and waits, as inprof's sampler does), bare-signal-batch (signals all, then
waits; not run by default) and timer-signal (a per-thread kernel timer sends the empty signal).

Usage: compare.py --build-dir BUILD [--reps 5] [--rate 10000] [--quick] [--out results.md]
       compare.py --from-json results.json --out results.md   (re-tabulate a previous run)
"""
import argparse
import datetime
import json
import os
import platform
import re
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile

LIBPROFILER = "/usr/lib/x86_64-linux-gnu/libprofiler.so.0"


def run(cmd, env=None, cwd=None, timeout=600):
    return subprocess.run(cmd, env=env, cwd=cwd, timeout=timeout, capture_output=True, text=True)


def parse_pairs(text):
    return {k: v for k, v in re.findall(r"(\w+)=(\S+)", text)}


# --- Per-tool output readers -------------------------------------------------------------------

def inprof_facts(summary_tool, dump):
    r = run([summary_tool, dump])
    if r.returncode != 0:
        raise RuntimeError("dump_summary failed: " + r.stderr.strip())
    p = parse_pairs(r.stdout)
    return {
        "samples": int(p["samples"]),
        "repeats": int(p["repeats"]),
        "in_program": int(p["in_program"]),
        "reached": int(p["reached_start"]),
        "frames_median": int(p["frames_median"]),
        "dropped": int(p["stats_dropped"]),
        "timed_out": int(p["stats_timed_out"]),
        "ticks_late": int(p["stats_ticks_late"]),
        # What the samples would take in a denser encoding (dump_summary explains).
        "samples_only_bps": float(p.get("samples_only_bytes_per_sample", 0)),
        "compact_ns_bps": float(p.get("compact_ns_bytes_per_sample", 0)),
        "compact_us_bps": float(p.get("compact_us_bytes_per_sample", 0)),
    }


def parse_maps(lines):
    maps = []
    for line in lines:
        parts = line.split()
        if len(parts) < 6 or "-" not in parts[0]:
            continue
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        maps.append((lo, hi, parts[5]))
    return maps


def module_of(maps, address):
    for lo, hi, path in maps:
        if lo <= address < hi:
            return path
    return None


def gperftools_facts(profile, program):
    """The legacy CPU profile: header words, (count, depth, pcs...) records, a (0, 1, 0) trailer,
    then the process's /proc/self/maps as text."""
    data = open(profile, "rb").read()
    words = len(data) // 8
    w = struct.unpack("<%dQ" % words, data[: words * 8])
    header_words = w[1] + 2
    i = header_words
    stacks = []
    while i + 2 < words:
        count, depth = w[i], w[i + 1]
        if count == 0 and depth == 1 and w[i + 2] == 0:
            i += 3
            break
        stacks.append((count, w[i + 2 : i + 2 + depth]))
        i += 2 + depth
    maps = parse_maps(data[i * 8 :].decode("latin-1").splitlines())
    samples = in_program = reached = 0
    depths = []
    for count, pcs in stacks:
        samples += count
        depths.extend([len(pcs)] * min(count, 1000))
        modules = [module_of(maps, pc) for pc in pcs]
        if not any(m == program for m in modules):
            continue
        in_program += count
        if modules and modules[-1] and "/libc.so" in modules[-1]:
            reached += count
    depths.sort()
    return {
        "samples": samples,
        "in_program": in_program,
        "reached": reached,
        "frames_median": depths[len(depths) // 2] if depths else 0,
    }


def perf_facts(perf_data, program, stderr_text):
    m = re.search(r"\((\d+) samples\)", stderr_text)
    captured = int(m.group(1)) if m else 0
    lost = re.search(r"Lost (\d+)", stderr_text)
    r = run(["perf", "script", "-i", perf_data, "-F", "tid,ip,dso"], timeout=900)
    samples = in_program = reached = 0
    depths = []
    for block in r.stdout.split("\n\n"):
        lines = [l for l in block.strip().splitlines()[1:] if "[kernel.kallsyms]" not in l]
        if not block.strip():
            continue
        samples += 1
        dsos = [l[l.rfind("(") + 1 : -1] for l in lines if l.rstrip().endswith(")")]
        depths.append(len(dsos))
        if program not in dsos:
            continue
        in_program += 1
        if dsos and "/libc.so" in dsos[-1]:
            reached += 1
    depths.sort()
    return {
        "samples": captured or samples,
        "in_program": in_program,
        "reached": reached,
        "frames_median": depths[len(depths) // 2] if depths else 0,
        "lost": int(lost.group(1)) if lost else 0,
    }


# --- One run -------------------------------------------------------------------------------------

def run_once(tool, binary, args, work, build):
    """Runs the workload under `tool`; returns a dict of facts."""
    report = os.path.join(work, "report.txt")
    out = os.path.join(work, "out." + tool)
    for path in (report, out):
        if os.path.exists(path):
            os.remove(path)
    workload = [binary, "--units", str(args.units), "--report", report]
    env = dict(os.environ)
    interval_us = 1e6 / args.rate
    if tool == "none":
        cmd = workload
    elif tool == "bare-signal":
        cmd = workload + ["--bare-signal-hz", str(args.rate)]
    elif tool == "bare-signal-batch":
        cmd = workload + ["--bare-signal-hz", str(args.rate), "--batch"]
    elif tool == "timer-signal":
        cmd = workload + ["--timer-signal-hz", str(args.rate)]
    elif tool == "inprof":
        env.update(LD_PRELOAD=os.path.join(build, "libinprof.so"), INPROF_STARTUP="1",
                   INPROF_OUTPUT=out, INPROF_INTERVAL="%gus" % interval_us)
        cmd = workload
    elif tool == "inprof-timer":
        env.update(LD_PRELOAD=os.path.join(build, "libinprof.so"), INPROF_STARTUP="1",
                   INPROF_OUTPUT=out, INPROF_INTERVAL="%gus" % interval_us,
                   INPROF_SELF_SAMPLING="timer")
        cmd = workload
    elif tool == "inprof-fp":
        env.update(LD_PRELOAD=os.path.join(build, "libinprof.so"), INPROF_STARTUP="1",
                   INPROF_OUTPUT=out, INPROF_INTERVAL="%gus" % interval_us, INPROF_UNWINDER="fp")
        cmd = workload
    elif tool == "gperftools":
        env.update(LD_PRELOAD=LIBPROFILER, CPUPROFILE=out, CPUPROFILE_FREQUENCY=str(args.rate))
        cmd = workload
    elif tool in ("perf-g", "perf-dwarf"):
        ensure_perf_rate(args.rate)
        graph = ["-g"] if tool == "perf-g" else ["--call-graph", "dwarf"]
        # --no-bpf-event: perf 6.1's side-band thread otherwise adds ~1 s at exit.
        cmd = ["perf", "record", "-F", str(args.rate), *graph, "--no-bpf-event", "-o", out, "--"]
        cmd += workload
    else:
        raise ValueError(tool)
    # The tool's variables reach the workload through env(1) (not perf: it must not be profiled).
    extra = ["%s=%s" % (k, v) for k, v in env.items() if os.environ.get(k) != v]
    if extra:
        cmd = ["env"] + extra + cmd
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = run(cmd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0 or not os.path.exists(report):
        raise RuntimeError("%s on %s failed (%d): %s" % (tool, binary, r.returncode, r.stderr[-2000:]))
    facts = {k: v for k, v in parse_pairs(open(report).read()).items()}
    result = {
        "worker_cpu_ns": int(facts["worker_cpu_ns"]),
        "process_cpu_ns": int(facts["process_cpu_ns"]),
        # Everything the command ran (perf and the workload), as the kernel accounted it.
        "total_cpu_ns": int((after.ru_utime - before.ru_utime + after.ru_stime -
                             before.ru_stime) * 1e9),
        "maxrss_kb": int(facts["maxrss_kb"]),
        "checksum": facts["checksum"],
        "wall_ns": int(facts["wall_ns"]),
    }
    if tool.startswith("bare-signal") or tool == "timer-signal":
        result.update(samples=int(facts["signals"]))
    elif tool.startswith("inprof"):
        result.update(inprof_facts(os.path.join(build, "benchmarks/compare/dump_summary"), out))
    elif tool == "gperftools":
        result.update(gperftools_facts(out, binary))
    elif tool.startswith("perf"):
        result.update(perf_facts(out, binary, r.stderr))
    if os.path.exists(out):
        result["file_bytes"] = os.path.getsize(out)
        os.remove(out)
    return result


def ensure_perf_rate(rate):
    """perf refuses -F above kernel.perf_event_max_sample_rate, which the kernel lowers by
    itself when sampling interrupts run long (a busy VM): raise it back if we may."""
    path = "/proc/sys/kernel/perf_event_max_sample_rate"
    try:
        if int(open(path).read()) < rate and os.geteuid() == 0:
            open(path, "w").write(str(rate * 2))
    except OSError:
        pass


# --- Summary -------------------------------------------------------------------------------------

def spread(values, fmt):
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    med = statistics.median(values)
    if len(values) == 1:
        return fmt.format(med)
    return (fmt + " [" + fmt + "–" + fmt + "]").format(med, min(values), max(values))


def summarise(runs, tools, binaries):
    rows = []
    for binary in binaries:
        for tool in tools:
            if tool == "none":
                continue
            per = {k: [] for k in ("target", "process", "total", "rate", "reach", "bytes", "rss",
                                   "samples", "frames", "slowdown")}
            for rep in sorted({r["rep"] for r in runs}):
                base = next((r for r in runs if r["rep"] == rep and r["binary"] == binary and
                             r["tool"] == "none"), None)
                cur = next((r for r in runs if r["rep"] == rep and r["binary"] == binary and
                            r["tool"] == tool), None)
                if not base or not cur:
                    continue
                f = cur["facts"]
                b = base["facts"]
                n = f.get("samples", 0)
                per["samples"].append(n)
                per["slowdown"].append(100.0 * (f["worker_cpu_ns"] / b["worker_cpu_ns"] - 1))
                if n:
                    per["target"].append((f["worker_cpu_ns"] - b["worker_cpu_ns"]) / n / 1000)
                    per["process"].append((f["process_cpu_ns"] - b["process_cpu_ns"]) / n / 1000)
                    per["total"].append((f["total_cpu_ns"] - b["total_cpu_ns"]) / n / 1000)
                    if "file_bytes" in f:
                        per["bytes"].append(f["file_bytes"] / n)
                per["rate"].append(n / (f["worker_cpu_ns"] / 1e9))
                if f.get("in_program"):
                    per["reach"].append(100.0 * f["reached"] / f["in_program"])
                if "frames_median" in f:
                    per["frames"].append(f["frames_median"])
                per["rss"].append((f["maxrss_kb"] - b["maxrss_kb"]) / 1024)
            rows.append((tool, binary, per))
    return rows


TOOL_LABEL = {
    "bare-signal": "bare signal (floor: empty handler, no copy)",
    "bare-signal-batch": "bare signal, all threads signalled then awaited together",
    "timer-signal": "bare signal from a per-thread kernel timer (no sampler thread)",
    "inprof": "**inprof** (DWARF unwinder, LD_PRELOAD; busy threads sampled by the kernel)",
    "inprof-timer": "inprof with CPU-time timers' signals (INPROF_SELF_SAMPLING=timer)",
    "inprof-fp": "inprof, frame-pointer unwinder",
    "gperftools": "gperftools 2.10 (libprofiler, ITIMER_PROF)",
    "perf-g": "`perf record -g`",
    "perf-dwarf": "`perf record --call-graph dwarf`",
}


def markdown(rows, meta):
    out = []
    out.append("| tool | build | samples per run | samples / worker CPU-s | worker CPU +% "
               "| target µs/sample | process µs/sample | total µs/sample | reach thread start "
               "| frames (median) | bytes/sample on disk | extra RSS MiB |")
    out.append("|" + "---|" * 12)
    for tool, binary, p in rows:
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            TOOL_LABEL.get(tool, tool), binary,
            spread(p["samples"], "{:.0f}"), spread(p["rate"], "{:.0f}"),
            spread(p["slowdown"], "{:+.1f}"),
            spread(p["target"], "{:.1f}"), spread(p["process"], "{:.1f}"),
            spread(p["total"], "{:.1f}"), spread(p["reach"], "{:.1f} %"),
            spread(p["frames"], "{:.0f}"), spread(p["bytes"], "{:.1f}"),
            spread(p["rss"], "{:.1f}")))
    return "\n".join(out)


def machine_description():
    cpu = "?"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    versions = []
    for cmd in (["perf", "--version"],):
        if shutil.which(cmd[0]):
            versions.append(run(cmd).stdout.strip())
    r = run(["dpkg-query", "-W", "-f", "${Version}", "libgoogle-perftools4"])
    if r.returncode == 0:
        versions.append("gperftools " + r.stdout.strip())
    return "%d vCPU %s, kernel %s, %s" % (os.cpu_count(), cpu, platform.release(),
                                          ", ".join(versions))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build-dir")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rate", type=int, default=10000, help="samples per second (Hz)")
    ap.add_argument("--units", type=int, default=30000,
                    help="work units per thread (30000: about 1 s of CPU each here)")
    ap.add_argument("--tools",
                    default="none,bare-signal,timer-signal,inprof,gperftools,perf-g,perf-dwarf")
    ap.add_argument("--binaries", default="fp,nofp")
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: 1 repetition, a tenth of the work, frame-pointer build only")
    ap.add_argument("--out", default=None, help="markdown results (default: stdout only)")
    ap.add_argument("--from-json", default=None,
                    help="rewrite the table from a previous run's .json, without running")
    args = ap.parse_args()
    if args.from_json:
        saved = json.load(open(args.from_json))
        settings = saved.get("args") or {
            "units": args.units, "rate": args.rate,
            "reps": 1 + max(r["rep"] for r in saved["runs"])}
        write_results(saved["runs"], saved["meta"], settings, args.out)
        return
    if not args.build_dir:
        ap.error("--build-dir is required")
    if args.quick:
        args.reps, args.units, args.binaries = 1, args.units // 10, "fp"
    build = os.path.abspath(args.build_dir)
    tools = args.tools.split(",")
    if "none" not in tools:
        tools.insert(0, "none")
    if "gperftools" in tools and not os.path.exists(LIBPROFILER):
        print("compare: gperftools not installed, skipped", file=sys.stderr)
        tools.remove("gperftools")
    for t in ("perf-g", "perf-dwarf"):
        if t in tools and not shutil.which("perf"):
            print("compare: perf not installed, skipped", file=sys.stderr)
            tools.remove(t)
    binaries = {b: os.path.join(build, "benchmarks/compare/compare_workload_" + b)
                for b in args.binaries.split(",")}
    for path in binaries.values():
        if not os.access(path, os.X_OK):
            sys.exit("compare: %s not built (cmake --build %s)" % (path, build))

    started = datetime.datetime.now(datetime.timezone.utc)
    load_before = os.getloadavg()
    work = tempfile.mkdtemp(prefix="inprof-compare-")
    runs = []
    checksums = set()
    try:
        for rep in range(args.reps):
            for name, binary in binaries.items():
                for tool in tools:
                    facts = run_once(tool, binary, args, work, build)
                    checksums.add(facts["checksum"])
                    runs.append({"rep": rep, "binary": name, "tool": tool, "facts": facts})
                    print("rep %d %-5s %-11s worker %.3f s, samples %s" % (
                        rep + 1, name, tool, facts["worker_cpu_ns"] / 1e9,
                        facts.get("samples", "-")), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if len(checksums) != 1:
        sys.exit("compare: the workload's checksum changed between runs: %s" % checksums)
    finished = datetime.datetime.now(datetime.timezone.utc)
    meta = {
        "machine": machine_description(),
        "started": started.strftime("%Y-%m-%d %H:%M UTC"),
        "minutes": (finished - started).total_seconds() / 60,
        "load": "%.1f before, %.1f after" % (load_before[0], os.getloadavg()[0]),
        "command": " ".join(["compare.py"] + sys.argv[1:]),
    }
    settings = {"units": args.units, "rate": args.rate, "reps": args.reps}
    write_results(runs, meta, settings, args.out)


def write_results(runs, meta, settings, out):
    tools, binaries = [], []
    for r in runs:
        if r["tool"] not in tools:
            tools.append(r["tool"])
        if r["binary"] not in binaries:
            binaries.append(r["binary"])
    rows = summarise(runs, tools, binaries)
    table = markdown(rows, meta)
    inprof_stats = [r["facts"] for r in runs if r["tool"] == "inprof"]
    per_record = []
    for f in inprof_stats:
        if f.get("file_bytes") and f.get("samples"):
            per_record.append(f["file_bytes"] / (f["samples"] + f.get("repeats", 0)))
    text = "\n".join([
        "# inprof vs gperftools vs perf",
        "",
        "Machine: %s. Load average %s (the machine is shared: noisy)." % (meta["machine"],
                                                                          meta["load"]),
        "Run: %s, %.1f minutes, `%s`." % (meta["started"], meta["minutes"], meta["command"]),
        "",
        "Workload: 2 threads, each %s units of deterministic integer work 21 calls below its "
        "thread function (`descend` ×21, then `mix_table` or `multiply_chain`); identical "
        "checksum on every run. Rate: %s Hz for every tool. %s repetitions, tools interleaved "
        "within each; each figure is the median [min–max] over repetitions of a ratio against "
        "the same repetition's run without a profiler." % (
            settings.get("units", "?"), settings.get("rate", "?"), settings.get("reps", "?")),
        "",
        table,
        "",
        "- *target µs/sample*: extra CPU time of the two worker threads per sample that "
        "interrupted a thread; *process*: of the whole profiled process (inprof's sampler and "
        "writer threads included); *total*: of everything that ran, perf's own process included.",
        "- inprof's busy threads are sampled by the kernel (a perf_event ring per thread; with "
        "`inprof-timer`, or where the kernel refuses, a timer on the thread's CPU clock) and its "
        "sampler thread collects every 1 ms, or sooner when a ring fills. Sample-repeat records "
        "(a sleeping thread that did not run, not interrupted; with timers, expirations merged "
        "at the scheduler's tick): %s per run, not counted as samples above. Per record (samples and "
        "repeats) its dump takes %s bytes. Dropped samples: %s; unanswered requests: %s; late "
        "ticks (the sampler could not keep its rate, or a busy thread's queue was full): %s per "
        "run." % (
            spread([s.get("repeats", 0) for s in inprof_stats], "{:.0f}"),
            spread(per_record, "{:.1f}"),
            sum(s.get("dropped", 0) for s in inprof_stats),
            sum(s.get("timed_out", 0) for s in inprof_stats),
            spread([s.get("ticks_late", 0) for s in inprof_stats], "{:.0f}")),
        "- inprof's samples alone (no metadata), estimated by dump_summary: %s bytes per sample "
        "written whole (dump format 1); %s with stacks deduplicated and times delta-encoded; %s "
        "with times and CPU deltas also rounded to µs, the encoding of format 2, which the "
        "bytes/sample column measures on the real dumps." % (
            spread([s["samples_only_bps"] for s in inprof_stats if s.get("samples_only_bps")],
                   "{:.1f}"),
            spread([s["compact_ns_bps"] for s in inprof_stats if s.get("compact_ns_bps")],
                   "{:.1f}"),
            spread([s["compact_us_bps"] for s in inprof_stats if s.get("compact_us_bps")],
                   "{:.1f}")),
        "- *reach thread start*: samples whose stack passes through the workload and ends in "
        "libc (`start_thread`/`clone3`); perf's stacks read with `perf script`, gperftools' "
        "from its profile file, inprof's from its dump.",
        "",
    ])
    if out:
        open(out, "w").write(text)
        json.dump({"meta": meta, "args": settings, "runs": runs},
                  open(os.path.splitext(out)[0] + ".json", "w"), indent=1)
    print(text)


if __name__ == "__main__":
    main()
