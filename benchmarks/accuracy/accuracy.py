#!/usr/bin/env python3
"""inprof against `perf record --call-graph dwarf` on real programs nobody here wrote.

Per program (xz -9 on a generated file, Debian's python3.11 running a CPU benchmark, zstd -T2 -19,
cc1plus compiling a large preprocessed file) and per interval (1 ms, 100 us), runs the program
alone, under inprof (LD_PRELOAD) and under perf (a cpu-clock event of the same period per thread,
DWARF call graphs), interleaved repetition by repetition, and prints:

  self %         each top function's share of on-CPU time, inprof (weighted by the CPU time each
                 sample stands for: the profile's sample weights) and perf (by its periods), for
                 the union of both tools' top 10; functions keyed by the .eh_frame FDE that covers
                 the sampled address, so that aliases and unnamed code line up (elf_ranges.py);
                 perf's kernel frames are left out (inprof sees user code only: a sample in the
                 kernel counts for the user function that entered it)
  largest diff   the largest |inprof - perf| among those functions, in percentage points
  noise (2σ)     twice the standard error of the difference between the two tools' shares: per
                 tool, the larger of the binomial error of its on-CPU samples over all
                 repetitions and, with 2+ repetitions, the error its shares' spread from one
                 repetition to the next gives (a program's own run-to-run variation: zstd's
                 two threads, cache effects); a difference within it is what sampling and the
                 program alone produce, and counts as agreement only then; "beyond" counts the
                 top-10 functions outside both 1 pp and 2σ
  root reach     on-CPU samples whose outermost frame is the thread's root (_start, clone3, clone)
  samples/CPU-s  on-CPU samples per second of the program's CPU time (its run without a profiler)
  overhead       wall-time increase over the same repetition's unprofiled run
  bytes/sample   output file size / samples
  marks, losses  inprof's samples marked truncated / without a stack / unwind stopped, unmarked
                 leaf-only samples (must be 0), and its dump's loss counters

Usage: accuracy.py --build-dir BUILD [--reps 1] [--intervals 1ms,100us] [--programs xz,...]
                   [--work DIR] [--keep DIR] [--out results.md] [--from-json results.json]
"""
import argparse
import datetime
import json
import os
import platform
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from elf_ranges import ranges_for  # noqa: E402

CC1PLUS = "/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus"
PYTHON = "/usr/bin/python3.11"
ROOTS = {"_start", "clone3", "__clone3", "clone", "__clone", "__GI___clone", "__GI___clone3"}
# The FDE of each program's entry point (its _start, even where the executable is stripped).
ROOT_KEYS = set()

PY_BENCH = r"""
import json, re
def fib(n): return n if n < 2 else fib(n - 1) + fib(n - 2)
def nbody(steps):
    bodies = [[float(i), float(i * 2), float(i * 3), 0.1 * i, 0.2, 0.3, 1.0 + i] for i in range(5)]
    for _ in range(steps):
        for i, a in enumerate(bodies):
            for b in bodies[i + 1:]:
                dx, dy, dz = a[0] - b[0], a[1] - b[1], a[2] - b[2]
                d = (dx * dx + dy * dy + dz * dz + 0.01) ** -1.5
                a[3] -= dx * b[6] * d; b[3] += dx * a[6] * d
        for b in bodies:
            b[0] += 0.01 * b[3]; b[1] += 0.01 * b[4]; b[2] += 0.01 * b[5]
    return bodies[0][0]
def text(n):
    words = ["w%d" % (i * 7919 % 1000) for i in range(n)]
    counts = {}
    for w in words: counts[w] = counts.get(w, 0) + 1
    s = json.dumps(sorted(counts.items()))
    return len(re.findall(r"w\d+", s)) + len(json.loads(s))
total = 0
for _ in range(12):
    total += fib(24) + int(nbody(20000)) + text(200000)
print(total)
"""

CC_SOURCE = r"""
#include <bits/stdc++.h>
template <int N> struct Unroll { static int run(std::vector<int>& v) { std::sort(v.begin(), v.end()); return v[N % v.size()] + Unroll<N - 1>::run(v); } };
template <> struct Unroll<0> { static int run(std::vector<int>&) { return 0; } };
int use_everything(int argc) {
  std::map<std::string, std::vector<std::pair<int, double>>> m;
  std::unordered_map<std::string, std::set<long>> u;
  std::regex re("([a-z]+)=([0-9]+)");
  std::smatch sm;
  std::string s = "alpha=1 beta=2";
  int r = std::regex_search(s, sm, re);
  std::vector<int> v(argc + 100, 3);
  r += Unroll<120>::run(v);
  std::ostringstream os; os << std::fixed << 3.5 << std::hex << r;
  std::variant<int, std::string, double> var = os.str();
  r += std::visit([](auto&& x) { return (int)sizeof(x); }, var);
  std::function<int(int)> f = [&](int k) { return k ? f(k - 1) + 1 : 0; };
  return r + f(10) + (int)m.size() + (int)u.size();
}
"""


def run(cmd, env=None, timeout=1800, stdout=None):
    return subprocess.run(cmd, env=env, timeout=timeout, stdout=stdout or subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


# --- Programs -------------------------------------------------------------------------------------

def prepare(work):
    """Inputs every program needs, generated once (deterministic)."""
    data = os.path.join(work, "input.txt")
    if not os.path.exists(data):
        rng = random.Random(21)
        vocab = ["%s%d" % (rng.choice(["lorem", "ipsum", "delta", "kappa", "omega"]), i)
                 for i in range(4000)]
        with open(data, "w") as f:
            for _ in range(35000):
                f.write(" ".join(rng.choice(vocab) for _ in range(rng.randint(3, 12))))
                f.write(" %d\n" % rng.randint(0, 10 ** rng.randint(1, 9)))
    source = os.path.join(work, "big.cc")
    pre = os.path.join(work, "big.ii")
    if not os.path.exists(pre):
        open(source, "w").write(CC_SOURCE)
        r = run(["g++", "-std=c++20", "-E", "-o", pre, source])
        if r.returncode != 0:
            raise RuntimeError("g++ -E failed: " + r.stderr[-1000:])
    bench = os.path.join(work, "bench.py")
    open(bench, "w").write(PY_BENCH)
    return {
        "xz": ["xz", "-9", "-T1", "-c", data],
        "python3.11": [PYTHON, bench],
        "zstd": ["zstd", "-T2", "-19", "-q", "-c", data],
        "cc1plus": [CC1PLUS, "-quiet", "-O2", "-std=c++20", pre, "-o", "/dev/null"],
    }


# --- One run --------------------------------------------------------------------------------------

def run_once(tool, cmd, interval_us, out, build):
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = "0"  # python3.11 runs the same dict and set orders under each tool
    if tool == "inprof":
        env.update(LD_PRELOAD=os.path.join(build, "libinprof.so"), INPROF_STARTUP="1",
                   INPROF_OUTPUT=out, INPROF_INTERVAL="%dus" % interval_us)
    elif tool == "perf":
        # The same clock inprof samples busy threads by: per-thread CPU time, one sample per
        # interval of it. --no-bpf-event: perf 6.1's side-band thread adds ~1 s at exit.
        cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-c", str(interval_us * 1000),
               "--call-graph", "dwarf", "--no-bpf-event", "-o", out, "--"] + cmd
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    r = run(cmd, env=env, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise RuntimeError("%s %s failed (%d): %s" % (tool, cmd[0], r.returncode, r.stderr[-1500:]))
    return {"wall_s": wall,
            "cpu_s": after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime,
            "file_bytes": os.path.getsize(out) if tool != "none" and os.path.exists(out) else 0,
            "stderr": r.stderr[-2000:]}


# --- Reading profiles -----------------------------------------------------------------------------

class Tally:
    def __init__(self):
        self.weight = {}   # key -> on-CPU weight
        self.names = {}    # key -> a name
        self.total = 0.0
        self.samples = 0   # on-CPU samples
        self.reached = 0
        self.roots = {}

    def add(self, key, name, weight, root_key, root_name):
        self.weight[key] = self.weight.get(key, 0.0) + weight
        if name and (key not in self.names or self.names[key].startswith("[")):
            self.names[key] = name
        self.total += weight
        self.samples += 1
        self.reached += root_name in ROOTS or root_key in ROOT_KEYS
        root = "%s (%s)" % (root_name, root_key[0])
        self.roots[root] = self.roots.get(root, 0) + 1

    def shares(self):
        return {k: 100.0 * w / self.total for k, w in self.weight.items()} if self.total else {}


def key_of(path, vaddr):
    if not path or not path.startswith("/"):
        return (path or "?", None)
    start = ranges_for(path).function_start(vaddr)
    return (os.path.basename(path), start)


def read_inprof(profile_path):
    p = json.load(open(profile_path))
    meta, sh = p["meta"], p["shared"]
    st, ft, fn, rt = sh["stackTable"], sh["frameTable"], sh["funcTable"], sh["resourceTable"]
    strings, libs = sh["stringArray"], p["libs"]
    idle = {i for i, c in enumerate(meta["categories"]) if c["name"] == "Idle"}
    prefix = [None if o == 0 else i - o for i, o in enumerate(st["prefixOffset"])]
    interval = meta.get("interval", 1.0)
    leaf_memo, root_memo = {}, {}

    def root_of(s):
        if s in root_memo:
            return root_memo[s]
        chain = []
        while s is not None and s not in root_memo:
            chain.append(s)
            s = prefix[s]
        found = root_memo[s] if s is not None else None
        for c in reversed(chain):
            if found is None:
                f = st["frame"][c]
                func = ft["func"][f]
                res = fn["resource"][func]
                path = libs[rt["lib"][res]]["path"] if res is not None and res >= 0 else None
                address = ft["address"][f]
                key = (strings[fn["name"][func]], None)
                if path and address is not None and address >= 0:
                    key = key_of(path, address + ranges_for(path).first_load_page())
                found = (key, strings[fn["name"][func]])
            root_memo[c] = found
        return found

    def leaf_of(s):
        if s not in leaf_memo:
            f = st["frame"][s]
            func = ft["func"][f]
            name = strings[fn["name"][func]]
            res = fn["resource"][func]
            path = libs[rt["lib"][res]]["path"] if res is not None and res >= 0 else None
            # The physical function's name: the depth-0 frame of the leaf's inline chain.
            s0 = s
            while ft["inlineDepth"][st["frame"][s0]] > 0 and prefix[s0] is not None:
                s0 = prefix[s0]
            name = strings[fn["name"][ft["func"][st["frame"][s0]]]]
            address = ft["address"][f]
            if path and address is not None and address >= 0:
                key = key_of(path, address + ranges_for(path).first_load_page())
            else:
                key = (name, None)
            leaf_memo[s] = (key, name, ft["category"][f] in idle)
        return leaf_memo[s]

    t = Tally()
    for th in p["threads"]:
        sm = th["samples"]
        weights = sm.get("weight")
        ms_weights = sm.get("weightType") == "tracing-ms" and weights is not None
        for i in range(sm["length"]):
            s = sm["stack"][i]
            if s is None:
                continue
            key, name, is_idle = leaf_of(s)
            if is_idle:
                continue
            w = weights[i] if ms_weights else (weights[i] if weights else 1) * interval
            t.add(key, name, w, *root_of(s))
    return t


MMAP = re.compile(r"PERF_RECORD_MMAP2? (\d+)/\d+: \[(0x[0-9a-f]+)\((0x[0-9a-f]+)\) @ (\S+) .*\]: "
                  r"(\S+) (/\S+)$")


def read_perf(data):
    r = run(["perf", "script", "-i", data, "--no-inline", "-F", "comm,tid,period,ip,sym,dso"])
    t = Tally()
    kernel_only = 0
    for block in r.stdout.split("\n\n"):
        lines = block.strip().splitlines()
        if not lines:
            continue
        head = lines[0].split()
        try:
            period = int(head[-1])
        except ValueError:
            continue
        frames = []
        for line in lines[1:]:
            m = re.match(r"\s*([0-9a-f]+) (.*) \((.*)\)$", line)
            if not m or m.group(3).startswith("[kernel") or m.group(3) == "[unknown]":
                if m and m.group(3) == "[unknown]":
                    frames.append((None, 0, "[unknown]"))
                continue
            frames.append((m.group(3), int(m.group(1), 16), m.group(2)))
        if not frames:
            kernel_only += 1
            continue
        def perf_key(path, ip):
            if not path:
                return ("[unknown]", None)
            r_ = ranges_for(path)
            # perf prints the file offset of a user address (PIE or not).
            return key_of(path, r_.offset_to_vaddr(ip))
        path, ip, sym = frames[0]
        key = perf_key(path, ip)
        name = re.sub(r"\+0x[0-9a-f]+$", "", sym)
        root_path, root_ip, root_sym = frames[-1]
        # A return address: the call is the byte before it.
        root_key = perf_key(root_path, root_ip - 1 if len(frames) > 1 else root_ip)
        t.add(key, None if name == "[unknown]" else name, period / 1e6, root_key,
              re.sub(r"\+0x[0-9a-f]+$", "", root_sym))
    t.kernel_only = kernel_only
    return t


def dump_facts(build, dump):
    r = run([os.path.join(build, "benchmarks/compare/dump_summary"), dump])
    if r.returncode != 0:
        raise RuntimeError("dump_summary: " + r.stderr)
    return {k: float(v) for k, v in re.findall(r"(\w+)=(\S+)", r.stdout)}


# --- The whole run --------------------------------------------------------------------------------

def measure(args):
    work = args.work
    os.makedirs(work, exist_ok=True)
    programs = prepare(work)
    for cmd in programs.values():
        exe = os.path.realpath(shutil.which(cmd[0]) or cmd[0])
        ROOT_KEYS.add(key_of(exe, ranges_for(exe).entry or 0))
    chosen = args.programs.split(",")
    intervals = [parse_interval(x) for x in args.intervals.split(",")]
    results = []
    for interval_us in intervals:
        for rep in range(args.reps):
            for name in chosen:
                cmd = programs[name]
                row = {"program": name, "interval_us": interval_us, "rep": rep}
                for tool in ("none", "inprof", "perf"):
                    out = os.path.join(work, "%s.%s" % (name, tool))
                    if os.path.exists(out):
                        os.remove(out)
                    print("accuracy: %s %s at %d us, repetition %d" % (tool, name, interval_us, rep + 1),
                          file=sys.stderr)
                    row[tool] = run_once(tool, cmd, interval_us, out, args.build_dir)
                    if tool == "inprof":
                        row["inprof_dump"] = dump_facts(args.build_dir, out)
                        profile = out + ".json"
                        s = run([os.path.join(args.build_dir, "tools/symbolicate/symbolicate"), out,
                                 "-o", profile, "--quiet-modules"])
                        if s.returncode not in (0, 3):
                            raise RuntimeError("symbolicate: " + s.stderr[-1500:])
                        summary = run([os.path.join(args.build_dir, "tools/symbolicate/symbolicate"),
                                       out, "--summary", "--quiet-modules"])
                        row["inprof_summary_marks"] = [l for l in summary.stdout.splitlines()
                                                       if "marked" in l or "weighted" in l][:8]
                        row["inprof_tally"] = tally_json(read_inprof(profile))
                        if args.keep:  # the last profile of each program and interval
                            os.makedirs(args.keep, exist_ok=True)
                            shutil.move(profile, os.path.join(
                                args.keep, "%s-%dus.json" % (name, interval_us)))
                        else:
                            os.remove(profile)
                    elif tool == "perf":
                        row["perf_tally"] = tally_json(read_perf(out))
                        m = re.search(r"Lost (\d+)", row[tool]["stderr"])
                        row["perf_lost"] = int(m.group(1)) if m else 0
                    if os.path.exists(out):
                        os.remove(out)
                results.append(row)
    return {"machine": machine(), "date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
            "command": " ".join(sys.argv), "runs": results}


def tally_json(t):
    return {"weight": [[list(k), w] for k, w in t.weight.items()],
            "names": [[list(k), n] for k, n in t.names.items()],
            "total": t.total, "samples": t.samples, "reached": t.reached,
            "roots": sorted(t.roots.items(), key=lambda x: -x[1])[:5],
            "kernel_only": getattr(t, "kernel_only", 0)}


def parse_interval(text):
    m = re.fullmatch(r"(\d+)(us|ms)", text)
    if not m:
        raise SystemExit("bad interval %r (100us, 1ms)" % text)
    return int(m.group(1)) * (1000 if m.group(2) == "ms" else 1)


def machine():
    cpu = ""
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    perf = run(["perf", "--version"]).stdout.strip()
    return "%s, %d vCPU, kernel %s, %s, load %.1f" % (cpu, os.cpu_count(), platform.release(), perf,
                                                   os.getloadavg()[0])


# --- Tables ---------------------------------------------------------------------------------------

def tabulate(data, top=10):
    out = []
    out.append("Machine: %s. Run: %s, `%s`." % (data["machine"], data["date"], data["command"]))
    out.append("")
    groups = {}
    for r in data["runs"]:
        groups.setdefault((r["interval_us"], r["program"]), []).append(r)
    summary = ["| program | interval | largest self-% difference | top-10 beyond 1 pp and 2σ | "
               "root reach inprof / perf | "
               "samples per CPU-s inprof / perf | wall overhead inprof / perf | bytes/sample "
               "inprof / perf | inprof marked: truncated / no stack / unwind stopped; "
               "unmarked leaf-only | inprof losses: dropped / late / given up |",
               "|---|---|---|---|---|---|---|---|---|---|"]
    details = []
    for (interval_us, program), runs in sorted(groups.items(), key=lambda g: (-g[0][0], g[0][1])):
        label = "%d ms" % (interval_us // 1000) if interval_us >= 1000 else "%d µs" % interval_us
        ip = merge([r["inprof_tally"] for r in runs])
        pf = merge([r["perf_tally"] for r in runs])
        ishare, pshare = share(ip), share(pf)
        ishare_per_run = [share(merge([r["inprof_tally"]])) for r in runs]
        pshare_per_run = [share(merge([r["perf_tally"]])) for r in runs]
        keys = sorted(set(sorted(ishare, key=lambda k: -ishare[k])[:top]) |
                      set(sorted(pshare, key=lambda k: -pshare[k])[:top]),
                      key=lambda k: -max(ishare.get(k, 0), pshare.get(k, 0)))
        names = dict(pf["names"])
        names.update(ip["names"])
        details.append("**%s at %s** (%d repetition%s)" % (program, label, len(runs),
                                                          "" if len(runs) == 1 else "s"))
        details.append("")
        details.append("| function (module) | inprof self % | perf self % | difference (pp) | "
                       "noise 2σ (pp) |")
        details.append("|---|---|---|---|---|")
        largest = (0.0, "")
        beyond = 0
        top_keys = set(sorted(ishare, key=lambda k: -ishare[k])[:top]) | \
            set(sorted(pshare, key=lambda k: -pshare[k])[:top])
        for k in keys:
            a, b = ishare.get(k, 0.0), pshare.get(k, 0.0)
            name = names.get(k)
            if not name or re.fullmatch(r"\S+\+0x[0-9a-f]+", name):  # no symbol: the FDE's start
                name = "fde@%#x" % k[1] if k[1] is not None else (name or "?")
            name = "%s (%s)" % (name, k[0])
            if abs(a - b) > abs(largest[0]):
                largest = (a - b, name)
            sigma2 = 2 * noise_pp(a, ip["samples"], b, pf["samples"],
                                  [run_share.get(k, 0.0) for run_share in ishare_per_run],
                                  [run_share.get(k, 0.0) for run_share in pshare_per_run])
            outside = abs(a - b) > max(1.0, sigma2)
            beyond += outside and k in top_keys
            details.append("| %s | %.2f | %.2f | %+.2f%s | %.2f |" % (
                name.replace("|", "\\|"), a, b, a - b, " **beyond**" if outside else "", sigma2))
        details.append("")
        cpu = statistics.median(r["none"]["cpu_s"] for r in runs)
        def per_cpu(t):
            return t["samples"] / len(runs) / cpu if cpu else 0
        def overhead(tool):
            return statistics.median(100.0 * (r[tool]["wall_s"] / r["none"]["wall_s"] - 1) for r in runs)
        def bps(tool, t):
            n = t["samples_all"] if tool == "inprof" else t["samples"]
            return sum(r[tool]["file_bytes"] for r in runs) / n if n else 0
        dumps = [r["inprof_dump"] for r in runs]
        def dsum(k):
            return int(sum(d.get(k, 0) for d in dumps))
        ip["samples_all"] = sum(d.get("samples", 0) + d.get("repeats", 0) for d in dumps)
        summary.append(
            "| %s | %s | %+.2f pp (%s) | %d | %.1f %% / %.1f %% | %.0f / %.0f | %+.1f %% / %+.1f %% | "
            "%.1f / %.0f | %d / %d / %d; %d | %d / %d / %d |" % (
                program, label, largest[0], largest[1].replace("|", "\\|"), beyond,
                pct(ip["reached"], ip["samples"]), pct(pf["reached"], pf["samples"]),
                per_cpu(ip), per_cpu(pf), overhead("inprof"), overhead("perf"),
                bps("inprof", ip), bps("perf", pf),
                dsum("truncated"), dsum("no_stack"), dsum("incomplete"), dsum("leaf_only_unmarked"),
                dsum("stats_dropped"), dsum("stats_ticks_late"),
                int(sum(r["inprof_dump"].get("stats_given_up", 0) for r in runs))))
    out.extend(summary)
    out.append("")
    out.extend(details)
    return "\n".join(out) + "\n"


def noise_pp(a, n_a, b, n_b, a_per_run=(), b_per_run=()):
    """Standard error (pp) of the difference of two shares a and b (in %) from n_a and n_b samples;
    with the shares of each repetition, a tool's error is at least their spread's (the standard
    error of their mean), which also holds what the program varies from run to run."""
    var = 0.0
    for share_pct, n, per_run in ((a, n_a, a_per_run), (b, n_b, b_per_run)):
        tool_var = 0.0
        if n:
            p = share_pct / 100.0
            tool_var = 1e4 * p * (1 - p) / n
        if len(per_run) >= 2:
            tool_var = max(tool_var, statistics.variance(per_run) / len(per_run))
        var += tool_var
    return var ** 0.5


def pct(a, b):
    return 100.0 * a / b if b else 0.0


def merge(tallies):
    weight, names = {}, {}
    for t in tallies:
        for k, w in t["weight"]:
            weight[tuple(k)] = weight.get(tuple(k), 0.0) + w
        for k, n in t["names"]:
            names[tuple(k)] = n
    return {"weight": weight, "names": names, "total": sum(t["total"] for t in tallies),
            "samples": sum(t["samples"] for t in tallies),
            "reached": sum(t["reached"] for t in tallies)}


def share(t):
    return {k: 100.0 * w / t["total"] for k, w in t["weight"].items()} if t["total"] else {}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--intervals", default="1ms,100us")
    ap.add_argument("--programs", default="xz,python3.11,zstd,cc1plus")
    ap.add_argument("--work", default="/tmp/inprof-accuracy")
    ap.add_argument("--out")
    ap.add_argument("--keep", help="keep the last inprof profile of each program here")
    ap.add_argument("--from-json")
    args = ap.parse_args()
    if args.from_json:
        data = json.load(open(args.from_json))
    else:
        if not args.build_dir:
            raise SystemExit("--build-dir is required")
        args.build_dir = os.path.abspath(args.build_dir)
        data = measure(args)
        if args.out:
            json.dump(data, open(os.path.splitext(args.out)[0] + ".json", "w"), indent=1)
    table = tabulate(data)
    if args.out:
        open(args.out, "w").write(table)
    sys.stdout.write(table)


if __name__ == "__main__":
    main()
