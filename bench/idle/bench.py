"""bench/idle/bench.py SERVICES_FILE: the CPU an idle stack uses, per process
(bench/idle/run.sh says what and how; docs/benchmarks.md "Idle stack").

Reads <state>/services ("name pid url" per process, deploy/dev/dev-up.sh),
sleeps BENCH_IDLE_SETTLE seconds, then takes each process tree's CPU time
(utime + stime + cutime + cstime of every live process under the listed pid,
/proc/<pid>/stat) and voluntary context switches (every thread,
/proc/<pid>/task/*/status) at both ends of a BENCH_IDLE_SECONDS window, and
prints a table. BENCH_IDLE_THREADS=N also lists each process's N busiest
thread names, the threads of one name together (librdkafka's rdk:main, one
per client handle; rdk:broker<n>, ...), with their count and wake-ups.
BENCH_IDLE_JSON=FILE writes the figures as JSON too. Standard library only."""

import json
import os
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")
# the platform's own services, in the order of the table
TESSERA = ("gateway", "auth", "registry", "scheduler", "agent", "vfolder", "wsproxy")
# the rest of the development stack, reported apart (production runs Kafka,
# and PostgreSQL and Redis are not Tessera's to tune)
OTHERS = {"devbus": "devbus (dev bus)", "postgres": "PostgreSQL", "redis": "Redis",
          "oci-registry": "OCI registry"}
TARGET_PCT = 1.0


def env_float(name, default):
    raw = os.environ.get(name, "")
    try:
        value = float(raw) if raw else default
    except ValueError:
        sys.exit(f"bench-idle: {name}={raw!r} is not a number")
    if value < 0:
        sys.exit(f"bench-idle: {name} must not be negative")
    return value


def read_services(path):
    procs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                procs.append((parts[0], int(parts[1])))
    return procs


def stat_fields(pid):
    """(ppid, cpu ticks incl. reaped children) of pid, or None if gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            raw = f.read()
    except OSError:
        return None
    rest = raw[raw.rindex(")") + 2:].split()
    # rest[0] is field 3 (state): utime, stime, cutime, cstime are 14..17
    return int(rest[1]), sum(int(x) for x in rest[11:15])


def all_parents():
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = stat_fields(int(entry))
            if st:
                parents[int(entry)] = st[0]
    return parents


def tree(root, parents):
    children = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def wakeups_of_task(pid, tid):
    try:
        with open(f"/proc/{pid}/task/{tid}/status", encoding="utf-8") as f:
            for line in f:
                if line.startswith("voluntary_ctxt_switches:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def wakeups(pid):
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    return sum(wakeups_of_task(pid, tid) for tid in tids)


def threads(pid):
    """{(tid, name): ticks} of one process's threads."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", encoding="utf-8") as f:
                raw = f.read()
        except OSError:
            continue
        name = raw[raw.index("(") + 1:raw.rindex(")")]
        rest = raw[raw.rindex(")") + 2:].split()
        out[(tid, name)] = (int(rest[11]) + int(rest[12]), wakeups_of_task(pid, tid))
    return out


def snapshot(procs, with_threads):
    parents = all_parents()
    snap = {}
    for name, pid in procs:
        if pid not in parents:
            snap[name] = None
            continue
        ticks = wake = 0
        for p in tree(pid, parents):
            st = stat_fields(p)
            if st:
                ticks += st[1]
                wake += wakeups(p)
        snap[name] = {"ticks": ticks, "wakeups": wake,
                      "threads": threads(pid) if with_threads else {}}
    return snap


def base(name):
    return name.split("@", 1)[0]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: bench.py SERVICES_FILE")
    window = env_float("BENCH_IDLE_SECONDS", 60.0)
    settle = env_float("BENCH_IDLE_SETTLE", 20.0)
    nthreads = int(env_float("BENCH_IDLE_THREADS", 0))
    if window < 1:
        sys.exit("bench-idle: BENCH_IDLE_SECONDS must be at least 1")
    procs = [p for p in read_services(sys.argv[1]) if base(p[0]) in TESSERA or base(p[0]) in OTHERS]
    missing = [s for s in TESSERA if not any(base(n) == s for n, _ in procs)]
    if missing:
        sys.exit(f"bench-idle: no {', '.join(missing)} in {sys.argv[1]}")
    print(f"bench-idle: settling {settle:g} s, then a window of {window:g} s", flush=True)
    time.sleep(settle)
    t0 = time.monotonic()
    before = snapshot(procs, nthreads > 0)
    time.sleep(window)
    after = snapshot(procs, nthreads > 0)
    secs = time.monotonic() - t0

    rows, gone = [], []
    for name, pid in procs:
        a, b = before.get(name), after.get(name)
        if a is None or b is None:
            gone.append(name)
            continue
        cpu = (b["ticks"] - a["ticks"]) / TICK
        busiest = {}  # threads of one name (librdkafka's rdk:main, ...) together
        for k, (ticks, wake) in b["threads"].items():
            t0, w0 = a["threads"].get(k, (0, 0))
            n = busiest.setdefault(k[1], [0, 0, 0])
            n[0] += ticks - t0
            n[1] += wake - w0
            n[2] += 1
        busiest = sorted(((t, w, c, n) for n, (t, w, c) in busiest.items()), reverse=True)
        rows.append({"name": name, "pid": pid, "cpu_s": cpu, "core_pct": 100.0 * cpu / secs,
                     "wakeups_per_s": (b["wakeups"] - a["wakeups"]) / secs,
                     "tessera": base(name) in TESSERA,
                     "threads": [{"name": n, "count": c, "cpu_s": t / TICK,
                                  "wakeups_per_s": w / secs}
                                 for t, w, c, n in busiest[:nthreads]]})
    order = {s: i for i, s in enumerate(TESSERA + tuple(OTHERS))}
    rows.sort(key=lambda r: (order[base(r["name"])], r["name"]))

    def line(label, cpu, pct, wake):
        print(f"{label:<28} {cpu:>9.2f} {pct:>11.2f} {wake:>12.1f}")

    print(f"\nidle stack, CPU over {secs:.1f} s (CPU time from /proc; % of one core)")
    print(f"{'process':<28} {'cpu s':>9} {'% of core':>11} {'wake-ups/s':>12}")
    tessera = [r for r in rows if r["tessera"]]
    for r in tessera:
        line(r["name"], r["cpu_s"], r["core_pct"], r["wakeups_per_s"])
    total = {"cpu_s": sum(r["cpu_s"] for r in tessera),
             "core_pct": sum(r["core_pct"] for r in tessera),
             "wakeups_per_s": sum(r["wakeups_per_s"] for r in tessera)}
    print("-" * 63)
    line("Tessera's services, total", total["cpu_s"], total["core_pct"], total["wakeups_per_s"])
    met = "met" if total["core_pct"] < TARGET_PCT else "NOT met"
    print(f"{'target':<28} {'':>9} {'< ' + format(TARGET_PCT, 'g'):>11}   {met}")
    print("-" * 63)
    for r in rows:
        if not r["tessera"]:
            line(OTHERS[base(r["name"])] + (r["name"][len(base(r["name"])):]), r["cpu_s"],
                 r["core_pct"], r["wakeups_per_s"])
    if nthreads:
        print(f"\nbusiest threads by name (count x name: cpu s over the window, wake-ups/s;"
              f" top {nthreads})")
        for r in rows:
            shown = ", ".join(f"{t['count']}x{t['name']}: {t['cpu_s']:.2f} {t['wakeups_per_s']:.0f}/s"
                              for t in r["threads"])
            print(f"  {r['name']:<14} {shown}")
    if os.environ.get("BENCH_IDLE_JSON"):
        with open(os.environ["BENCH_IDLE_JSON"], "w", encoding="utf-8") as f:
            json.dump({"window_s": secs, "settle_s": settle, "processes": rows,
                       "tessera_total": total, "target_core_pct": TARGET_PCT, "gone": gone}, f,
                      indent=1)
    if gone:
        sys.exit(f"bench-idle: {', '.join(gone)} exited during the window")


if __name__ == "__main__":
    main()
