#!/usr/bin/env python3
"""Runs the benchmarks listed in bench/benchmarks.json and writes bench/results/.

    bench/run.py [--build build] [--only REGEX] [--reps N] [--scale S] [--no-report]

The list is run `passes` times in turn; in each pass the programs repeat every
measurement `reps` times and print the median (ucx_perftest entries repeat each
line of their batch file `reps` times and the median is taken here).  The value
reported is the median over passes.  A run that fails, times out or
prints a SKIP line is recorded as skipped with its reason and the rest go on.

Writes results/latest.json (the issue's schema: machine, date, results),
results/latest-notes.json (how each entry ran: command, status, reason,
seconds, transports) and, unless --no-report, latest.md and latest.png
through report.py.  Only the standard library is needed here.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LAT_SIZES = [8, 32, 128, 512, 2048, 8192, 32768, 65536]
BW_SIZES = [4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]


def log(msg):
    print(msg, flush=True)


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            mem = ", %.0f GiB" % (kb / 1048576)
    except (OSError, ValueError, IndexError):
        pass
    return "%s, %d cores%s, Linux %s (%s)" % (model, os.cpu_count() or 0, mem, platform.release(), socket.gethostname())


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def lat_iters(size, scale):
    return int(min(10000, max(200, 4e6 / (size + 200.0) * scale)))


def parse_lines(text, library):
    """RESULT/SKIP lines of our programs -> (results, skip reasons)."""
    results, skips = [], []
    for line in text.splitlines():
        p = line.split()
        if len(p) == 6 and p[0] == "RESULT":
            try:
                results.append({"library": p[1], "benchmark": p[2], "size": int(p[3]), "metric": p[4], "value": float(p[5])})
            except ValueError:
                pass
        elif len(p) >= 3 and p[0] == "SKIP":
            skips.append(line.split(None, 3)[3] if len(p) > 3 else "skipped")
    return results, skips


def tail(text, n=3):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return " | ".join(lines[-n:])[-400:]


# Slow spells.  On a shared VM the two cores the ranks run on are at times far apart (the
# hypervisor moved a vCPU, or a neighbour shares its core): a cache line then crosses
# between them several times slower, for seconds to minutes, and every ping-pong measured
# meanwhile reads 4-6x slower, ours and the peers' alike (2026-11-28: the floor's own 8 B
# half round trip read 0.03-0.06 us, and 0.2 us in such spells).  A ratio of two values
# measured minutes apart then says more about the moment than about the software.  So
# the floor's 8 B ping-pong (0.2 s) probes the machine before and after every entry: an
# entry starts only once a probe reads at most SPELL_FACTOR x the best probe of the run,
# waiting up to SPELL_WAIT_S (3: calm probes spread over 1-2x the best, a spell's read
# 4-7x), and an entry after which the probe reads more is run once more (after the same
# wait), its first results dropped.  The choice depends on the probe,
# never on the entry's own values, and is the same for ours and the peers'; the notes
# record every wait and rerun, and the report counts them.
SPELL_FACTOR = 3.0
SPELL_WAIT_S = 30


class Spells:
    def __init__(self, args):
        self.exe = os.path.join(args.build, "bench", "floor_bench")
        self.best = None
        self.log = []
        self.slow = 0

    def probe(self):
        """The floor's 8 B half round trip now, in ns (None when it cannot be had)."""
        if not os.path.exists(self.exe):
            return None
        env = dict(os.environ, BENCH_SIZES="8", BENCH_SCALE="0.05", BENCH_REPS="3")
        try:
            out = subprocess.run([self.exe, "pingpong"], env=env, capture_output=True, text=True, timeout=20).stdout
        except subprocess.TimeoutExpired:
            return None
        for line in out.splitlines():
            p = line.split()
            if len(p) >= 6 and p[0] == "RESULT" and p[3] == "8":
                try:
                    v = float(p[5]) * 1e3
                except ValueError:
                    return None
                self.best = v if self.best is None else min(self.best, v)
                return v
        return None

    def calm(self, v):
        return v is None or self.best is None or v <= SPELL_FACTOR * self.best

    def calm_now(self):
        """A probe, and whether it is calm (slow ones counted)."""
        v = self.probe()
        ok = self.calm(v)
        self.slow += not ok
        return v, ok

    def settle(self):
        """Probes until the machine is calm or SPELL_WAIT_S went by; (last probe, seconds waited)."""
        t0 = time.time()
        v, ok = self.calm_now()
        while not ok and time.time() - t0 < SPELL_WAIT_S:
            time.sleep(1)
            v, ok = self.calm_now()
        return v, time.time() - t0

    def note(self, pas, label, before, waited, after, slow_after, rerun):
        r = lambda v: v and round(v, 1)
        self.log.append({"pass": pas + 1, "run": label, "probe_before_ns": r(before), "waited_s": round(waited, 1),
                         "probe_after_ns": r(after), "slow_probe_after_ns": r(slow_after), "rerun": rerun})


def run_entry(run, args, env, notes):
    if run["launcher"] == "ucx_perftest":
        return run_ucx(run, args, env, notes)
    if run["launcher"] == "fi_pingpong":
        return run_fi_pingpong(run, args, env)
    return run_program(run, args, env)


def run_program(run, args, env):
    bench_dir = os.path.join(args.build, "bench")
    cmd = [c.replace("{bench}", bench_dir) for c in run["cmd"]]
    pin = os.path.join(HERE, "pin.sh")
    launcher = run["launcher"]
    if launcher == "snrun":
        cmd = [os.path.join(args.build, "bin", "snrun"), "-n", "2", "--timeout", str(args.timeout), pin] + cmd
    elif launcher == "mpiexec":
        if not shutil.which("mpiexec"):
            return [], "mpiexec not found (MPICH not installed)", ""
        cmd = ["mpiexec", "-n", "2", pin] + cmd
    elif launcher == "vhosts":
        # Two virtual hosts (build/bin/sn-vhost) under mpiexec: the ranks reach each
        # other only through the network engine, over loopback.
        if not shutil.which("mpiexec"):
            return [], "mpiexec not found (MPICH not installed)", ""
        cmd = [os.path.join(HERE, "..", "c-tests", "tools", "vhrun"), "2", "2", pin] + cmd
        env = dict(env, BUILD=args.build)
    prog = cmd[-2]          # every entry is [program, benchmark]
    if not os.path.exists(prog):
        return [], "%s was not built" % os.path.relpath(prog), " ".join(cmd)
    shown = " ".join(os.path.relpath(c) if c.startswith("/") and os.path.exists(c) else c for c in cmd)
    # A crash or a hang (not a SKIP) is retried once: the machine is shared, and a
    # library restaged under a running job takes it down.
    for attempt in (1, 2):
        out, err, rc = run_group(cmd, env, args.timeout + 15)
        res, skips = parse_lines(out, run["library"])
        reason = None
        if skips:
            reason = skips[0]
        elif rc is None:
            reason = "timed out after %d s: %s" % (args.timeout + 15, tail(err or out))
        elif rc != 0:
            reason = "exit status %d: %s" % (rc, tail(err or out))
        elif not res:
            reason = "no results printed: %s" % tail(err or out)
        if reason is None or skips or attempt == 2:
            break
        log("  %s failed (%s); retrying once" % (" ".join(run["cmd"][-1:]), reason))
    if attempt == 2:
        shown += "  (second attempt)"
    return res, reason, shown


def run_group(cmd, env, timeout):
    """Runs cmd in its own process group; on timeout kills the whole group.
    Returns (stdout, stderr, exit status or None on timeout)."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        return out, err, p.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, 9)
        except OSError:
            pass
        out, err = p.communicate()
        return out or "", err or "", None


def run_fi_pingpong(run, args, env):
    """fabtests' fi_pingpong (server on core 0, client on core 1, loopback): one
    half-RTT value per size from its `usec/xfer` column, median of `reps` runs."""
    exe = shutil.which("fi_pingpong")
    if not exe:
        return [], "fi_pingpong not found (libfabric-bin not installed)", ""
    sizes = [s for s in LAT_SIZES if not args.sizes or s in args.sizes]
    prov = env.get("FI_PROVIDER", "tcp;ofi_rxm")
    vals = {}
    reason = None
    for s in sizes:
        n = lat_iters(s, args.scale)
        for r in range(args.reps):
            port = str(free_port())
            base = [exe, "-p", prov, "-e", "rdm", "-S", str(s), "-I", str(n), "-B", port]
            server = subprocess.Popen(["taskset", "-c", "0"] + base, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
            time.sleep(0.3)
            try:
                c = subprocess.run(["taskset", "-c", "1", exe, "-p", prov, "-e", "rdm", "-S", str(s), "-I", str(n), "-P", port, "127.0.0.1"],
                                   env=env, capture_output=True, text=True, timeout=args.timeout)
                out = c.stdout + c.stderr
            except subprocess.TimeoutExpired:
                out = ""
                reason = "timed out after %d s" % args.timeout
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            for line in out.splitlines():
                p = line.split()
                if len(p) >= 8 and p[0] == str(s):
                    try:
                        vals.setdefault(s, []).append(float(p[6]))
                    except ValueError:
                        pass
            if s not in vals and reason is None:
                reason = "no result: %s" % tail(out)
    res = [{"library": run["library"], "benchmark": "fi_pingpong", "size": s, "metric": "half_rtt_us",
            "value": statistics.median(v)} for s, v in sorted(vals.items())]
    shown = "FI_PROVIDER=%s taskset -c 0 fi_pingpong -e rdm -S SIZE -I N & taskset -c 1 fi_pingpong ... 127.0.0.1" % prov
    return res, (None if res else reason or "no results"), shown


def run_ucx(run, args, env, notes):
    exe = shutil.which("ucx_perftest")
    if not exe:
        return [], "ucx_perftest not found (ucx-utils not installed)", ""
    sizes = run["sizes"]
    sizes = LAT_SIZES if sizes == "lat" else BW_SIZES if sizes == "bw" else sizes
    sizes = [s for s in sizes if not args.sizes or s in args.sizes]
    lines = []
    for s in sizes:
        if run["metric"] == "half_rtt_us":
            n = lat_iters(s, args.scale)
        elif run["metric"] == "Mmsgps":
            n = int(max(1000, 200000 * args.scale))
        else:
            n = int(max(16, (256 << 20) / s * args.scale))
        w = max(10, n // 10)
        for r in range(args.reps):
            lines.append("%s:%d:%d -t %s -s %d -n %d -w %d" % (run["benchmark"], s, r, run["test"], s, n, w))
    fd, batch = tempfile.mkstemp(prefix="ucx-batch-", suffix=".txt")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    env = dict(env, UCX_WARN_UNUSED_ENV_VARS="n")
    shown = "UCX_TLS=%s taskset -c 0 ucx_perftest -p PORT -b BATCH & taskset -c 1 ucx_perftest localhost -p PORT -b BATCH -f -v  (%s, sizes %s)" % (
        env.get("UCX_TLS", "(default)"), run["test"], ",".join(map(str, sizes)))
    out = ""
    reason = None
    try:
        for attempt in range(3):
            port = free_port()
            server = subprocess.Popen(["taskset", "-c", "0", exe, "-p", str(port), "-b", batch],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            time.sleep(0.5)
            try:
                c = subprocess.run(["taskset", "-c", "1", exe, "localhost", "-p", str(port), "-b", batch, "-f", "-v"],
                                   env=dict(env, UCX_LOG_LEVEL="info"), capture_output=True, text=True, timeout=args.timeout)
                out = c.stdout + c.stderr
                rc = c.returncode
            except subprocess.TimeoutExpired:
                out, rc = "", -1
                reason = "timed out after %d s" % args.timeout
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            if rc == 0 or "connect" not in out.lower():
                if rc != 0 and reason is None:
                    reason = "ucx_perftest exit status %d: %s" % (rc, tail(out))
                break
    finally:
        os.unlink(batch)
    for m in re.finditer(r"ep_cfg\[\d+\]: (.*)", out):
        notes.setdefault("ucx_lanes", {}).setdefault(run["benchmark"], sorted(set(
            notes.get("ucx_lanes", {}).get(run["benchmark"], []) + [m.group(1).strip()])))
    vals = {}
    for line in out.splitlines():
        p = [x.strip() for x in line.split(",")]
        if len(p) != 9 or ":" not in p[0]:
            continue
        try:
            bench, size, _ = p[0].split(":")
            avg_lat, avg_bw, avg_mr = float(p[3]), float(p[5]), float(p[7])
        except ValueError:
            continue
        v = {"half_rtt_us": avg_lat, "GBps": avg_bw * 1048576 / 1e9, "Mmsgps": avg_mr / 1e6}[run["metric"]]
        vals.setdefault(int(size), []).append(v)
    res = [{"library": run["library"], "benchmark": run["benchmark"], "size": s, "metric": run["metric"],
            "value": statistics.median(v)} for s, v in sorted(vals.items())]
    if not res and reason is None:
        reason = "no results: %s" % tail(out)
    return res, reason, shown


def tool_versions():
    v = {}
    def first(cmd, pat=None):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.TimeoutExpired):
            return None
        for line in out.splitlines():
            if pat is None or re.search(pat, line):
                return re.sub(r"\s+", " ", line).strip()
        return None
    v["mpich"] = ", ".join(x.split(":", 1)[1].strip() for x in [first(["mpichversion"], "Version"),
                                                                 first(["mpichversion"], "Device")] if x)
    v["ucx"] = (first(["ucx_info", "-v"], "Version") or "").lstrip("# ").replace("Version ", "")
    v["libfabric"] = (first(["fi_info", "--version"], "libfabric") or "").replace("libfabric:", "").strip()
    return {k: x for k, x in v.items() if x}


# Entries issue 5 requires in latest.json.
REQUIRED = [("softnic-ugni", "fma_put_pingpong", 8, "half_rtt_us"), ("softnic-ugni", "smsg_pingpong", 8, "half_rtt_us"),
            ("softnic-ugni", "amo_fadd_lat", 8, "us"), ("softnic-ugni", "rdma_put_bw", 1048576, "GBps"),
            ("softnic-dmapp", "put_lat", 8, "us"), ("mpich", "pingpong", 8, "half_rtt_us"),
            ("mpich", "put_flush", 8, "us"), ("ucx", "put_bw", 1048576, "GBps")]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--config", default=os.path.join(HERE, "benchmarks.json"))
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--only", help="regex on 'library benchmark-or-args'")
    ap.add_argument("--reps", type=int)
    ap.add_argument("--passes", type=int)
    ap.add_argument("--scale", type=float, default=float(os.environ.get("BENCH_SCALE", "1")))
    ap.add_argument("--sizes", help="comma list of sizes to run (default all)")
    ap.add_argument("--no-report", action="store_true")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    args.sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else None
    with open(args.config) as f:
        cfg = json.load(f)
    args.reps = args.reps or cfg.get("reps", 5)
    args.passes = args.passes or cfg.get("passes", 1)
    args.timeout = cfg.get("timeout_s", 150)
    os.makedirs(args.out, exist_ok=True)

    base_env = dict(os.environ, BENCH_REPS=str(args.reps), BENCH_SCALE=str(args.scale))
    if args.sizes:
        base_env["BENCH_SIZES"] = ",".join(map(str, args.sizes))
    notes = {"runs": [], "reps": args.reps, "scale": args.scale, "versions": tool_versions()}
    t_start = time.time()
    # The whole list runs `passes` times in turn (so every library is sampled at
    # several moments of a shared machine's life); a value is the median over passes.
    collected, status, by_pass = {}, {}, {}
    # A run that timed out without a result in one pass is not run again: it would cost
    # the timeout every pass (UCX's tcp put_bw hangs this way on some machines).
    hung = set()
    spells = Spells(args)
    for _ in range(3):
        spells.probe()
    for pas in range(args.passes):
        for run in cfg["runs"]:
            label = "%s %s" % (run["library"], run.get("benchmark") or " ".join(run.get("cmd", ["fi_pingpong"])[1:]) or run["launcher"])
            if args.only and not re.search(args.only, label):
                continue
            if label in hung:
                log("[%d/%d] %-40s not run again (timed out in an earlier pass)" % (pas + 1, args.passes, label))
                continue
            env = dict(base_env, **run.get("env", {}))
            before, waited = spells.settle()
            t0 = time.time()
            res, reason, shown = run_entry(run, args, env, notes)
            dt = time.time() - t0
            after, calm = spells.calm_now()
            rerun, slow_after = False, None
            if res and not reason and not calm:
                # Measured in a slow spell, or one began meanwhile: once more, when calm.
                slow_after = after
                before, w = spells.settle()
                waited += w
                t0 = time.time()
                res, reason, shown = run_entry(run, args, env, notes)
                dt += time.time() - t0
                (after, _), rerun = spells.calm_now(), True
            if waited >= 1 or rerun or not spells.calm(before) or not spells.calm(after):
                spells.note(pas, label, before, waited, after, slow_after, rerun)
            for r in res:
                collected.setdefault((r["library"], r["benchmark"], r["size"], r["metric"]), []).append(r["value"])
                by_pass.setdefault((r["library"], r["benchmark"], r["size"], r["metric"]), {})[pas] = r["value"]
            st = status.setdefault(label, {"run": label, "command": shown, "env": run.get("env", {}), "seconds": 0.0,
                                           "passes_ok": 0, "reason": None, "results": 0})
            st["seconds"] = round(st["seconds"] + dt, 1)
            st["results"] = max(st["results"], len(res))
            if res and not reason:
                st["passes_ok"] += 1
            if reason:
                st["reason"] = "pass %d: %s" % (pas + 1, reason)
                if not res and "timed out" in reason:
                    hung.add(label)
            log("[%d/%d] %-40s %6.1f s  %s" % (pas + 1, args.passes, label, dt,
                                               ("%d results" % len(res)) + ("; SKIPPED: " + reason if reason else "")))
    for st in status.values():
        st["status"] = "ok" if st["passes_ok"] == args.passes else "skipped" if st["results"] == 0 else "partial"
        if st["status"] == "ok":
            st["reason"] = None
    notes["runs"] = list(status.values())
    notes["passes"] = args.passes
    notes["spells"] = {"factor": SPELL_FACTOR, "wait_s": SPELL_WAIT_S, "best_probe_ns": spells.best and round(spells.best, 1),
                       "slow_probes": spells.slow, "events": spells.log}
    results = [{"library": k[0], "benchmark": k[1], "size": k[2], "metric": k[3], "value": statistics.median(v)}
               for k, v in collected.items()]
    notes["seconds"] = round(time.time() - t_start, 1)
    have = {(r["library"], r["benchmark"], r["size"], r["metric"]) for r in results}
    notes["missing_required"] = [] if args.only else ["%s %s %d %s" % m for m in REQUIRED if m not in have]
    if notes["missing_required"]:
        log("MISSING required entries: " + "; ".join(notes["missing_required"]))
    for r in results:
        r["value"] = float("%.4g" % r["value"])
    # Every pass's own value (None where a pass gave none), so the report can pair ours
    # and a peer's from the same pass and state the spread of the goals' ratios.
    if args.passes > 1:
        notes["per_pass"] = {"|".join(map(str, k)): [float("%.4g" % v[i]) if i in v else None for i in range(args.passes)]
                             for k, v in by_pass.items()}
    doc = {"machine": machine(), "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "results": results}
    with open(os.path.join(args.out, "latest.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    with open(os.path.join(args.out, "latest-notes.json"), "w") as f:
        json.dump(notes, f, indent=1)
        f.write("\n")
    log("wrote %s (%d results, %.0f s)" % (os.path.relpath(os.path.join(args.out, "latest.json")), len(results), notes["seconds"]))
    if not args.no_report:
        sys.path.insert(0, HERE)
        sys.dont_write_bytecode = True
        import report
        report.write(args.out)


if __name__ == "__main__":
    main()
