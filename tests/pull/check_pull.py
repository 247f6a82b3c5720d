#!/usr/bin/env python3
"""Pull mode (issue 42), end to end, against pull_service (one thread in hot_spin(), one asleep):

- `go tool pprof -top http://127.0.0.1:PORT/debug/pprof/profile?seconds=2` names hot_spin on
  top (through the service's /debug/pprof/symbol), with the share symbolicate's summary gives it
  in the dump the same run streams;
- many concurrent scrapes each get a whole, valid profile of their own window;
- slow and malformed clients (silent, half a head, garbage, gone before the answer, a profile
  never read) get an error or are dropped, and the service runs on to its own exit status;
- a scrape with no session of the program's starts one for its window and stops it after;
- the heap, with the allocation interposer and a session that records allocations (which,
  with INPROF_PULL and no INPROF_OUTPUT, writes no dump): the retained blocks under the function
  that keeps them, the churned ones in the allocated space only;
- a service that never asks for pull mode has no socket and no thread of it; a refused address
  leaves the program running, said in one line.
Usage: check_pull.py --service S --library LIB --symbolicate SYM --work DIR
                     [--allocations-library A] [--sanitized]
--sanitized (a sanitizer build): no `go tool pprof` check (built with -g1, the service has line
tables without function entries, which Go's pprof reads as lines without names, and then asks
the service for none), no program closing descriptors (ThreadSanitizer reports that as the
program's race with the thread that uses them, which is what the check is about), and no check of
which function the label's and the marker's CPU went to (ThreadSanitizer runs a signal handler
only when the thread next calls libc, and slows the marker's own code: under it, the marker
'cold' had 22 % of its CPU in TSan's runtime once in CI, and 36-41 % in hot_spin twice in 14
runs beside a busy loop; natively 10 of 10 pass beside it).
"""
import argparse
import gzip
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time

FAILURES = []


def fail(message):
    FAILURES.append(message)
    print("FAIL: " + message)


# --- HTTP over TCP or a UNIX socket -------------------------------------------------------------
def connect(address, timeout=30):
    if address.startswith("unix:"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(address[5:])
    else:
        host, port = address.rsplit(":", 1)
        s = socket.create_connection((host, int(port)), timeout=timeout)
    return s


def request(address, raw, timeout=30):
    """Sends raw bytes, reads to the end: (status, headers, body); status 0 if none came."""
    s = connect(address, timeout)
    try:
        s.sendall(raw)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    m = re.match(rb"HTTP/1\.1 (\d+)", head)
    return (int(m.group(1)) if m else 0), head.decode("latin-1"), body


def get(address, path, timeout=30):
    return request(address, b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n", timeout)


# --- pprof, as far as the checks need it ---------------------------------------------------------
def fields(buf):
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(buf, i)
        elif wire == 2:
            n, i = varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wire)
        yield field, value


def varint(buf, i):
    value = shift = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def packed(value):
    if isinstance(value, int):
        return [value]
    out, i = [], 0
    while i < len(value):
        v, i = varint(value, i)
        out.append(v)
    return out


def parse_profile(gz):
    """{'types': [...], 'samples': [(values, label dict)], 'mappings': n, 'locations': n}."""
    raw = gzip.decompress(gz)
    strings, types, samples, mappings, locations = [], [], [], 0, {}
    parts = list(fields(raw))
    for f, v in parts:
        if f == 6:
            strings.append(v.decode())
    for f, v in parts:
        if f == 1:
            t = dict(fields(v))
            types.append(strings[t.get(1, 0)])
        elif f == 2:
            values, labels, stack = [], {}, []
            for sf, sv in fields(v):
                if sf == 1:
                    stack += packed(sv)
                elif sf == 2:
                    values += packed(sv)
                elif sf == 3:
                    lab = dict(fields(sv))
                    labels[strings[lab.get(1, 0)]] = strings[lab.get(2, 0)] if lab.get(2) else lab.get(3, 0)
            samples.append((values, labels, stack))
        elif f == 3:
            mappings += 1
        elif f == 4:
            loc = dict(fields(v))
            locations[loc.get(1, 0)] = loc.get(3, 0)
    return {"types": types, "samples": samples, "mappings": mappings, "locations": locations}


def cpu_ms(profile):
    i = profile["types"].index("cpu")
    return sum(s[0][i] for s in profile["samples"]) / 1e6


# --- the service ------------------------------------------------------------------------------
class Service:
    """pull_service, which links the library (so its INPROF_* variables are read at load, as a
    preloaded library's are; and under a sanitizer, which cannot be preloaded)."""
    def __init__(self, args, seconds, env_extra, argv_extra=()):
        env = dict(os.environ)
        env.pop("INPROF_STARTUP", None)
        env.update(env_extra)
        self.proc = subprocess.Popen([args.service, str(seconds), *argv_extra], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()  # "ready": main() runs, the listener is up before it
        if line.strip() != "ready":
            out, err = self.proc.communicate(timeout=60)
            raise RuntimeError("service did not start: %r %s" % (line, err))

    def wait_for(self, expected):
        """Reads the service's output up to the line `expected` (what it prints once done)."""
        for line in self.proc.stdout:
            if line.strip() == expected:
                return
        raise RuntimeError("service ended before printing %r" % expected)

    def thread_names(self):
        names = []
        for tid in os.listdir("/proc/%d/task" % self.proc.pid):
            try:
                with open("/proc/%d/task/%s/comm" % (self.proc.pid, tid)) as f:
                    names.append(f.read().strip())
            except OSError:
                pass
        return names

    def sockets(self):
        n = 0
        for fd in os.listdir("/proc/%d/fd" % self.proc.pid):
            try:
                n += os.readlink("/proc/%d/fd/%s" % (self.proc.pid, fd)).startswith("socket:")
            except OSError:
                pass
        return n

    def finish(self):
        out, err = self.proc.communicate(timeout=120)
        return self.proc.returncode, out, err


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# --- the checks ---------------------------------------------------------------------------------
def check_go_tool_pprof(args):
    go = shutil.which("go")
    if not go:
        fail("`go` is not installed (tools/scripts/install-deps.sh installs golang-go)")
        return
    dump = os.path.join(args.work, "service.inprof")
    for attempt in range(3):  # a port another program took between our choice and its bind
        port = free_port()
        service = Service(args, 6, {"INPROF_PULL": "127.0.0.1:%d" % port, "INPROF_STARTUP": "1",
                                    "INPROF_OUTPUT": dump})
        if "inprof-pull" in service.thread_names():
            break
        service.finish()
    else:
        fail("the listener never started")
        return
    home = os.path.join(args.work, "gohome")
    os.makedirs(home, exist_ok=True)
    top = subprocess.run([go, "tool", "pprof", "-top",
                          "http://127.0.0.1:%d/debug/pprof/profile?seconds=2" % port],
                         env=dict(os.environ, HOME=home, PPROF_TMPDIR=home),
                         capture_output=True, text=True, timeout=120)
    status, out, err = service.finish()
    if status != 0:
        fail("service exit status %d with a dump streaming: %s" % (status, err))
    rows = re.findall(r"^\s*[\d.]+m?s\s+([\d.]+)%\s+[\d.]+%\s+[\d.]+m?s\s+[\d.]+%\s+(\S+)",
                      top.stdout, re.M)
    if not rows or rows[0][1] != "hot_spin":
        fail("go tool pprof -top: hot_spin not on top:\n" + top.stdout + top.stderr)
        return
    pprof_share = float(rows[0][0])
    summary = subprocess.run([args.symbolicate, dump, "--format", "summary", "--quiet-modules"],
                             capture_output=True, text=True, timeout=120)
    m = re.search(r"^\s*[\d.]+\s+([\d.]+)%\s+[\d.]+\s+[\d.]+%\s+hot_spin\(\)", summary.stdout, re.M)
    if not m:
        fail("symbolicate --summary has no hot_spin():\n" + summary.stdout[-3000:])
        return
    # The whole run's share against a 2 s window's: the program does the same all along.
    if abs(float(m.group(1)) - pprof_share) > 3.0:
        fail("hot_spin: %.1f %% in the scrape, %s %% in the dump's summary" %
             (pprof_share, m.group(1)))
    print("go tool pprof: hot_spin %.1f %% (symbolicate --summary of the dump: %s %%)" %
          (pprof_share, m.group(1)))


def check_concurrent_and_rude_clients(args):
    address = "unix:" + os.path.join(args.work, "pprof.sock")
    service = Service(args, 8, {"INPROF_PULL": address})
    if "inprof-sampler" in service.thread_names():
        fail("a sampler runs before any scrape")
    rude = []
    # Silent: connects and says nothing. Half a head, then silence. One that asks for a profile
    # and is gone before it is ready. Garbage.
    for raw in (b"", b"GET /debug/pprof/profile?sec"):
        s = connect(address)
        if raw:
            s.sendall(raw)
        rude.append(s)
    gone = connect(address)
    gone.sendall(b"GET /debug/pprof/profile?seconds=1 HTTP/1.1\r\n\r\n")
    gone.close()
    status, _, body = request(address, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n")
    if status != 400:
        fail("garbage: status %d, want 400" % status)
    for path, want in (("/debug/pprof/profile?seconds=0", 400), ("/debug/pprof/profile?seconds=x", 400),
                       ("/debug/pprof/profile?seconds=100000", 400), ("/nothing", 404),
                       ("/debug/pprof/", 200)):
        status, head, body = get(address, path)
        if status != want:
            fail("%s: status %d, want %d (%s)" % (path, status, want, body[:200]))
    results = [None] * 8

    def scrape(i):
        try:
            results[i] = get(address, "/debug/pprof/profile?seconds=1", timeout=60)
        except OSError as e:
            results[i] = (0, str(e), b"")

    threads = [threading.Thread(target=scrape, args=(i,)) for i in range(len(results))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, (status, head, body) in enumerate(results):
        if status != 200:
            fail("concurrent scrape %d: status %d %s" % (i, status, head))
            continue
        p = parse_profile(body)
        if p["types"] != ["samples", "cpu", "wall"] or cpu_ms(p) < 100 or p["mappings"] < 2:
            fail("concurrent scrape %d: %s, %.0f ms of CPU, %d mappings" %
                 (i, p["types"], cpu_ms(p), p["mappings"]))
    if not args.sanitized:
        check_labels(address, parse_profile(results[0][2]) if results[0][0] == 200 else None)
    # Symbols: a GET says they are served; garbage addresses are named nothing.
    status, _, body = get(address, "/debug/pprof/symbol")
    if status != 200 or b"num_symbols: 1" not in body:
        fail("GET /debug/pprof/symbol: %d %r" % (status, body))
    status, _, body = request(address, b"POST /debug/pprof/symbol HTTP/1.1\r\nContent-Length: 9\r\n\r\n0x0+0x1+z")
    if status != 200 or body:
        fail("POST /debug/pprof/symbol of nothing: %d %r" % (status, body))
    # Between scrapes nothing samples: the session the scrapes started stops (its threads gone
    # within seconds, however busy the machine).
    deadline = time.monotonic() + 20
    while "inprof-sampler" in service.thread_names() and time.monotonic() < deadline:
        time.sleep(0.05)
    if "inprof-sampler" in service.thread_names():
        fail("the scrapes' session still runs 20 s after the last scrape")
    for s in rude:
        s.close()
    status, out, err = service.finish()
    if status != 0 or err:
        fail("service after rude clients: status %d, stderr %r" % (status, err))
    if os.path.exists(address[5:]):
        fail("the UNIX socket's file is left behind")


def name_addresses(address, addresses):
    query = b"+".join(b"%#x" % a for a in addresses)
    status, _, body = request(address, b"POST /debug/pprof/symbol HTTP/1.1\r\nContent-Length: %d"
                              b"\r\n\r\n%s" % (len(query), query))
    names = {}
    for line in body.decode().splitlines():
        a, _, name = line.partition(" ")
        names[int(a, 16)] = name
    return names


def check_labels(address, p):
    """The service's label scope `hot` and interval marker `cold`: each on the CPU of its own
    function (the leaves named by the service)."""
    if p is None:
        return
    leaves = {p["locations"][s[2][0]] for s in p["samples"] if s[2]}
    names = name_addresses(address, sorted(leaves))
    cpu = p["types"].index("cpu")
    for key, value, function in (("label", "hot", "hot_spin"), ("marker", "cold", "cold_spin")):
        by_leaf = {}
        for values, labels, stack in p["samples"]:
            if labels.get(key) == value and stack:
                leaf = names.get(p["locations"][stack[0]], "?")
                by_leaf[leaf] = by_leaf.get(leaf, 0) + values[cpu]
        total = sum(by_leaf.values())
        # The symbol table's names are mangled (_Z8hot_spinv).
        if not total or sum(v for k, v in by_leaf.items() if function in k) < 0.8 * total:
            fail("%s=%s: CPU by leaf %s, want mostly %s" % (key, value, by_leaf, function))


def check_heap(args):
    if not args.allocations_library:
        return
    address = "unix:" + os.path.join(args.work, "heap.sock")
    workdir = os.path.join(args.work, "heap-cwd")
    os.makedirs(workdir)
    env = {"INPROF_PULL": address, "INPROF_STARTUP": "1", "INPROF_ALLOCATIONS": "64K",
           "LD_PRELOAD": args.allocations_library}
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        service = Service(args, 4, env, ("--allocate",))
    finally:
        os.chdir(cwd)
    service.wait_for("kept")  # keep_blocks() is done (a busy machine may take a while)
    time.sleep(1.5)  # churn_blocks() goes on meanwhile: the allocated space grows past 64 MiB
    status, head, body = get(address, "/debug/pprof/heap")
    if status != 200:
        fail("heap: status %d %s" % (status, body[:300]))
        service.finish()
        return
    p = parse_profile(body)
    if p["types"] != ["alloc_objects", "alloc_space", "inuse_objects", "inuse_space"]:
        fail("heap: sample types %s" % p["types"])
        service.finish()
        return
    inuse = sum(values[3] for values, _, _ in p["samples"]) / 2**20
    alloc = sum(values[1] for values, _, _ in p["samples"]) / 2**20
    # The leaf of the stack that retains most: the call in keep_blocks(), named by the service.
    top = max(p["samples"], key=lambda s: s[0][3])
    leaf = p["locations"][top[2][0]]
    names = name_addresses(address, [leaf]).get(leaf, "")
    code, _, err = service.finish()
    # keep_blocks() keeps 8 MiB (2,048 blocks of 4 KiB); sampled every 64 KiB on average.
    if not 6 <= inuse <= 11 or "keep_blocks" not in names:
        fail("heap: %.1f MiB in use (8 kept), retained most by %r" % (inuse, names))
    if alloc < inuse + 64:
        fail("heap: %.1f MiB allocated, %.1f in use: the churned blocks are missing" % (alloc, inuse))
    if code != 0 or os.listdir(workdir):
        fail("heap service: status %d, left %s in its directory" % (code, os.listdir(workdir)))
    print("heap: %.1f MiB in use under keep_blocks, %.0f MiB allocated" % (inuse, alloc))
    # The interposer preloaded and INPROF_PULL alone: pull mode starts the session itself.
    address = "unix:" + os.path.join(args.work, "heap2.sock")
    service = Service(args, 4, {"INPROF_PULL": address, "LD_PRELOAD": args.allocations_library},
                      ("--allocate",))
    service.wait_for("kept")
    # The heap is what the writer has drained (every few hundred ms, later on a busy machine):
    # asked again until the kept blocks are in it.
    deadline = time.monotonic() + 20
    while True:
        status, _, body = get(address, "/debug/pprof/heap")
        in_use = sum(s[0][3] for s in parse_profile(body)["samples"]) if status == 200 else 0
        if status != 200 or in_use > 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    code, _, err = service.finish()
    if status != 200 or in_use <= 0 or code != 0:
        fail("heap with the interposer alone: status %d, service %d %s" % (status, code, err))


def check_descriptors_closed_by_the_program(args):
    """A program that closes every descriptor (a daemon) and opens files that get the numbers of
    the listener and of a connection: the server gives them up, never using or closing them, and
    does not spin on them."""
    address = "unix:" + os.path.join(args.work, "closed.sock")
    service = Service(args, 2.5, {"INPROF_PULL": address}, ("--close-descriptors",))
    silent = connect(address)  # a connection open when the program closes everything
    time.sleep(2)
    pull_cpu = None
    for tid in os.listdir("/proc/%d/task" % service.proc.pid):
        try:
            with open("/proc/%d/task/%s/stat" % (service.proc.pid, tid)) as f:
                stat = f.read()
        except OSError:
            continue
        if "(inprof-pull)" in stat:
            fields = stat.rsplit(")", 1)[1].split()
            pull_cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    fds = set(os.listdir("/proc/%d/fd" % service.proc.pid))
    silent.close()
    status, _, err = service.finish()
    if status != 0 or err:
        fail("descriptors closed by the program: status %d, stderr %r" % (status, err))
    if pull_cpu is None or pull_cpu > 0.5:
        fail("descriptors closed by the program: the pull thread used %s s of CPU" % pull_cpu)
    if not {"3", "4", "5", "6"} <= fds:
        fail("descriptors closed by the program: its own files were closed (%s)" % sorted(fds))


def check_never_enabled(args):
    service = Service(args, 1, {"INPROF_STARTUP": "1",
                                "INPROF_OUTPUT": os.path.join(args.work, "plain.inprof")})
    names, sockets = service.thread_names(), service.sockets()
    status, _, err = service.finish()
    if "inprof-pull" in names or sockets:
        fail("without INPROF_PULL: threads %s, %d sockets" % (names, sockets))
    if status != 0:
        fail("plain profiled run: status %d %s" % (status, err))


def check_refused_address(args):
    service = Service(args, 0.2, {"INPROF_PULL": "10.1.2.3:6060"})
    status, out, err = service.finish()
    lines = [l for l in err.splitlines() if l]
    if status != 0 or len(lines) != 1 or "loopback" not in lines[0]:
        fail("a non-loopback address: status %d, stderr %r" % (status, err))


def check_api(args):
    address = "unix:" + os.path.join(args.work, "api.sock")
    service = Service(args, 3, {}, ("--serve", address))
    status, _, body = get(address, "/debug/pprof/profile?seconds=1")
    if status != 200 or cpu_ms(parse_profile(body)) < 100:
        fail("serve_pprof(): status %d" % status)
    code, _, err = service.finish()
    if code != 0:
        fail("serve_pprof() service: status %d %s" % (code, err))


def main():
    ap = argparse.ArgumentParser()
    for flag in ("--service", "--library", "--symbolicate", "--work"):
        ap.add_argument(flag, required=True)
    ap.add_argument("--allocations-library")
    ap.add_argument("--sanitized", action="store_true")
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    checks = [check_concurrent_and_rude_clients, check_heap, check_never_enabled,
              check_refused_address, check_api]
    if not args.sanitized:
        checks += [check_go_tool_pprof, check_descriptors_closed_by_the_program]
    for check in checks:
        check(args)
    if FAILURES:
        sys.exit("%d failure(s)" % len(FAILURES))
    print("pull mode: all checks passed")


if __name__ == "__main__":
    main()
