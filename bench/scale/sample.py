#!/usr/bin/env python3
"""sample.py STACK_DIR OUT SIMAGENT_PID [INTERVAL]: bench-scale's sampler.

Every INTERVAL seconds (2) until killed, one JSON line to OUT: the time; VmRSS
and VmHWM (peak) in KiB of each service of the dev stack (STACK_DIR/run/*.pid)
and of tessera-simagent; the scheduler's agents and pending sessions
(/metrics); heartbeats published (simagent) and handled (registry); and the
age of the oldest heartbeat the registry recorded among ALIVE agents
(registry.agents.last_heartbeat, the registry's clock when it handled it).
Reads only /proc, /metrics and one SELECT; environment from STACK_DIR/env.
"""
import json
import os
import subprocess
import sys
import time
import urllib.request

SERVICES = ("scheduler", "registry", "gateway", "auth", "devbus", "postgres", "redis")


def env_file(path):
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("export "):
                line = line[7:]
            if "=" in line and not line.startswith("#"):
                k, v = line.split("=", 1)
                out[k] = v.strip("'\"")
    return out


def proc_kib(pid):
    rss = hwm = 0
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
    except (OSError, ValueError):
        return None
    return rss, hwm


def metrics(url):
    out = {}
    try:
        with urllib.request.urlopen(url + "/metrics", timeout=2) as r:
            for line in r.read().decode().splitlines():
                if line and not line.startswith("#"):
                    name, _, val = line.rpartition(" ")
                    base = name.split("{", 1)[0]
                    try:
                        out[base] = out.get(base, 0.0) + float(val)
                    except ValueError:
                        pass
    except OSError:
        pass
    return out


def main():
    stack, out, sim = sys.argv[1], sys.argv[2], int(sys.argv[3])
    every = float(sys.argv[4]) if len(sys.argv) > 4 else 2.0
    env = env_file(os.path.join(stack, "env"))
    pids = {}
    for n in SERVICES:
        try:
            with open(os.path.join(stack, "run", n + ".pid")) as f:
                pids[n] = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    pids["simagent"] = sim
    with open(out, "a") as o:
        while True:
            t = time.time()
            rec = {"t": t, "rss": {}, "hwm": {}}
            for n, p in pids.items():
                k = proc_kib(p)
                if k:
                    rec["rss"][n], rec["hwm"][n] = k
            sm = metrics(env.get("TESSERA_SCHEDULER_URL", ""))
            rm = metrics(env.get("TESSERA_REGISTRY_URL", ""))
            am = metrics(env.get("BENCH_SIMAGENT_URL", os.environ.get("BENCH_SIMAGENT_URL", "")))
            rec["agents"] = sm.get("tessera_scheduler_agents")
            rec["pending"] = sm.get("tessera_scheduler_pending_sessions")
            rec["scheduled"] = sm.get("tessera_scheduler_scheduled_total")
            rec["hb_handled"] = rm.get("tessera_registry_heartbeats_total")
            rec["hb_published"] = am.get("tessera_simagent_heartbeats_total")
            try:
                age = subprocess.run(
                    ["psql", env["TESSERA_PG_DSN"], "-X", "-qtA", "-c", "SELECT extract(epoch FROM now() - "
                     "min(last_heartbeat)) FROM registry.agents WHERE status = 'ALIVE'"],
                    capture_output=True, text=True, timeout=10).stdout.strip()
                rec["hb_oldest_s"] = float(age) if age else None
            except (OSError, ValueError, subprocess.TimeoutExpired):
                rec["hb_oldest_s"] = None
            o.write(json.dumps(rec) + "\n")
            o.flush()
            time.sleep(max(0.0, every - (time.time() - t)))


if __name__ == "__main__":
    if any(a in ("-h", "--help") for a in sys.argv[1:]) or len(sys.argv) < 4:
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 else 2)
    try:
        main()
    except KeyboardInterrupt:
        pass
