#!/usr/bin/env python3
"""bench_api.py: the end-to-end scheduler benchmark through the session API
(make bench-scheduler with BENCH_VIA=api; bench/scheduler/run.sh starts the
stack: dev-up with devbus, auth, registry, scheduler and gateway, plus
tessera-simagent).

Sets up a keypair resource policy without session limits, BENCH_USERS users
with a keypair each (rate limit BENCH_KEYPAIR_RATE_LIMIT requests a minute,
1,000,000; members of the default project) and registers the demo
image once; then BENCH_CLIENTS threads enqueue BENCH_SESSIONS sessions of the
bus path's mix (same generator as bench_e2e.c) with signed
`POST /session {"enqueueOnly": true}` through the gateway, as fast as it takes
them. Enqueue-to-scheduled latency comes from the registry's status history
(PENDING row, written in the create's transaction -> SCHEDULED row, written
when the registry consumes the scheduler's SessionScheduled). At the end:
Redis reservations = occupancy (bench_e2e's check, BENCH_CHECK_ONLY=1) =
kernels holding slots in PostgreSQL.

Backlog mode (BENCH_API_BACKLOG=1, run.sh's default): the scheduler
(BENCH_SCHEDULER_PID) is held with SIGSTOP while the sessions are enqueued
(the registry still validates them against the agents it knows), then
released with SIGCONT; the scheduler's rate on that backlog is timed from the
release: to the last SessionScheduled it published (the envelope time of the
records on tessera.session.v1, read back with tessera-busctl) and to the last SCHEDULED
the registry recorded. Enqueue-to-scheduled latency then includes the hold,
so release-to-scheduled is printed too. BENCH_API_BACKLOG=0: the scheduler runs
while the creates come in (placements follow the enqueue rate).

BENCH_API_HOLD_REGISTRY=1 (with the backlog, a diagnostic): the registry
(BENCH_REGISTRY_PID) is held too from the release until the scheduler has
published its last SessionScheduled (its scheduled counter on /metrics stops
moving), so that the scheduler drains the backlog without the registry's
(and PostgreSQL's) handling of the placements competing for the CPU; the
registry's SCHEDULED times then include that hold.

Environment (from the stack's env file): BACKEND_ENDPOINT, TESSERA_ADMIN_ACCESS_KEY,
TESSERA_ADMIN_SECRET_KEY, TESSERA_DEMO_IMAGE, PGHOST/PGPORT/PGUSER/PGDATABASE,
TESSERA_REDIS_URL, KAFKA_BOOTSTRAP; BENCH_E2E (the checker), BENCH_BUSCTL (backlog), BENCH_SESSIONS
(20000), BENCH_USERS (20), BENCH_CLIENTS (16), BENCH_GROUP (default),
BENCH_TIMEOUT (seconds, 300), BENCH_API_BACKLOG (0), BENCH_SCHEDULER_PID (with
backlog), BENCH_API_HOLD_REGISTRY (0), BENCH_REGISTRY_PID (with it). --help prints this.
"""
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.parse

if __name__ == "__main__" and any(a in ("-h", "--help") for a in sys.argv[1:]):
    print(__doc__)
    sys.exit(0)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "integration"))
import bai_signer  # noqa: E402

ENDPOINT = os.environ["BACKEND_ENDPOINT"].rstrip("/")
N = int(os.environ.get("BENCH_SESSIONS", "20000"))
NUSERS = int(os.environ.get("BENCH_USERS", "20"))
NCLIENTS = int(os.environ.get("BENCH_CLIENTS", "16"))
# the bench keypairs' rate limit, requests a minute (0: none)
RATE_LIMIT = int(os.environ.get("BENCH_KEYPAIR_RATE_LIMIT", "1000000"))
GROUP = os.environ.get("BENCH_GROUP", "default")
TIMEOUT = int(os.environ.get("BENCH_TIMEOUT", "300"))
TARGET_RATE = 5000  # placements/s, the target for 20,000 sessions
BACKLOG = os.environ.get("BENCH_API_BACKLOG", "0") == "1"
SCHED_PID = int(os.environ.get("BENCH_SCHEDULER_PID", "0") or 0)
HOLD_REG = BACKLOG and os.environ.get("BENCH_API_HOLD_REGISTRY", "0") == "1"
REG_PID = int(os.environ.get("BENCH_REGISTRY_PID", "0") or 0)
RUN = "a%d" % (int(time.time() * 1000) % 100000000)
U = urllib.parse.urlsplit(ENDPOINT)
M64 = (1 << 64) - 1


# ---- workload: bench_e2e.c's generator, bit for bit ------------------------------------------
class Rng:
    def __init__(self):
        self.s = 0x9E3779B97F4A7C15

    def __call__(self, n):
        s = self.s
        s ^= (s << 13) & M64
        s ^= s >> 7
        s ^= (s << 17) & M64
        self.s = s
        return s % n


def workload():
    rnd = Rng()
    small, large, whole = ["0.1", "0.25", "0.5", "0.75"], ["0.75", "1.5", "2.5"], [1, 2, 2, 4]
    out, kinds = [], {"f": 0, "F": 0, "w": 0, "c": 0}
    for _ in range(N):
        p = rnd(100)
        if p < 40:
            r, k = {"cpu": "2", "mem": "8g", "cuda.shares": small[rnd(4)]}, "f"
        elif p < 50:
            r, k = {"cpu": "4", "mem": "16g", "cuda.shares": large[rnd(3)]}, "F"
        elif p < 60:
            n = whole[rnd(4)]
            r, k = {"cpu": str(4 * n), "mem": "%dg" % (16 * n), "cuda.device": str(n)}, "w"
        else:
            cpu = str(1 << rnd(3))
            r, k = {"cpu": cpu, "mem": "%dg" % (2 << rnd(4))}, "c"
        kinds[k] += 1
        out.append(r)
    return out, kinds, rnd


# ---- signed HTTP ------------------------------------------------------------------------------
class Conn:
    def __init__(self, ak, sk):
        self.ak, self.sk, self.c = ak, sk, None

    def call(self, method, path, body=None):
        data = b"" if body is None else json.dumps(body).encode()
        h = bai_signer.signed_headers(self.ak, self.sk, method, ENDPOINT + path, body=data)
        for attempt in range(3):
            try:
                if self.c is None:
                    self.c = http.client.HTTPConnection(U.hostname, U.port, timeout=30)
                self.c.request(method, path, body=data or None, headers=h)
                r = self.c.getresponse()
                payload = r.read()
                return r.status, (json.loads(payload) if payload else None)
            except (http.client.HTTPException, OSError):
                if self.c:
                    self.c.close()
                self.c = None
                if attempt == 2:
                    raise


def ok(res, *codes):
    st, body = res
    if st not in (codes or (200, 201)):
        sys.exit("bench_api: unexpected answer %d: %s" % (st, body))
    return body


def psql(sql):
    out = subprocess.run(["psql", "-X", "-qtA", "-F", " ", "-v", "ON_ERROR_STOP=1", "-c", sql],
                         check=True, capture_output=True, text=True).stdout
    return out.strip()


def setup(admin, image):
    pol = "bench-unlimited"  # 0: no limit (the scheduler checks limits > 0)
    st, _ = admin.call("GET", "/admin/keypair-resource-policies/" + pol)
    if st == 404:
        ok(admin.call("POST", "/admin/keypair-resource-policies",
                      {"name": pol, "total_resource_slots": {}, "max_concurrent_sessions": 0,
                       "max_pending_session_count": 0}), 200, 201)
    projects = ok(admin.call("GET", "/admin/projects?limit=1000"))["items"]
    users = []
    for i in range(NUSERS):
        name = "bench-%s-%02d" % (RUN, i)
        u = ok(admin.call("POST", "/admin/users", {"email": name + "@example.com", "username": name,
                                                   "password": "bench-Passw0rd!", "role": "user"}))
        # the per-keypair rate limit still runs (a Redis count per request),
        # set high enough that BENCH_API_SESSIONS creates from BENCH_USERS
        # keypairs are not refused by it (the default 1,000 a minute refused
        # 287 of 20,000 from 20 users)
        k = ok(admin.call("POST", "/admin/keypairs", {"user_id": u["id"], "resource_policy": pol,
                                                     "rate_limit": RATE_LIMIT}))
        for p in projects:
            if p["name"] == "default" and p["domain_name"] == u["domain_name"]:
                ok(admin.call("POST", "/admin/projects/%s/members" % p["id"],
                              {"user_ids": [u["id"]]}))
        users.append((k["access_key"], k["secret_key"]))
    ok(admin.call("POST", "/admin/images", {"reference": image}), 200, 201)
    return users


def main():
    admin = Conn(os.environ["TESSERA_ADMIN_ACCESS_KEY"], os.environ["TESSERA_ADMIN_SECRET_KEY"])
    image = os.environ["TESSERA_DEMO_IMAGE"]
    reqs, kinds, rnd = workload()
    owner = [rnd(NUSERS) for _ in range(N)]  # as the bus path draws its users after the mix
    users = setup(admin, image)

    # The registry learns the agents from the bus: wait until it accepts a GPU session.
    probe = Conn(*users[0])
    deadline = time.time() + 60
    while True:
        st, b = probe.call("POST", "/session", {
            "image": image, "name": RUN + "probe", "type": "interactive", "enqueueOnly": True,
            "config": {"resources": {"cpu": "1", "mem": "1g", "cuda.device": "8"},
                       "scaling_group": GROUP}})
        if st == 201:
            ok(probe.call("DELETE", "/session/%sprobe" % RUN))
            break
        if time.time() > deadline:
            sys.exit("bench_api: the registry does not accept sessions: %d %s" % (st, b))
        time.sleep(0.5)
    # let the probe's cancellation settle before the clock starts
    time.sleep(1)
    base = 0
    if BACKLOG:
        if SCHED_PID <= 0:
            sys.exit("bench_api: BENCH_API_BACKLOG=1 needs BENCH_SCHEDULER_PID")
        if HOLD_REG and REG_PID <= 0:
            sys.exit("bench_api: BENCH_API_HOLD_REGISTRY=1 needs BENCH_REGISTRY_PID")
        # the counter the registry hold waits on, read while the scheduler answers
        base = sched_metric("tessera_scheduler_scheduled_total") if HOLD_REG else 0
        os.kill(SCHED_PID, signal.SIGSTOP)
        print("backlog mode: tessera-scheduler (pid %d) held with SIGSTOP while the sessions "
              "are enqueued" % SCHED_PID, flush=True)
    try:
        return run(image, reqs, kinds, owner, users, base)
    finally:
        if BACKLOG:
            os.kill(SCHED_PID, signal.SIGCONT)
        if HOLD_REG:
            os.kill(REG_PID, signal.SIGCONT)


def sched_metric(name):
    url = urllib.parse.urlsplit(os.environ["TESSERA_SCHEDULER_URL"])
    c = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    c.request("GET", "/metrics")
    for line in c.getresponse().read().decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def wait_scheduler_drained(base, want):
    """Until the scheduler's scheduled counter reached base + want, or stopped
    moving for 5 s after it moved (or 10 s without moving at all)."""
    last, since, moved = None, time.monotonic(), False
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        n = sched_metric("tessera_scheduler_scheduled_total") - base
        if n >= want:
            return
        if n != last:
            moved = moved or last is not None
            last, since = n, time.monotonic()
        elif time.monotonic() - since > (5 if moved else 10):
            return
        time.sleep(0.05)


def scheduled_events(ids, since_ms):
    """{session id: occurred_at_ms of its first SessionScheduled (stamped by the
    scheduler when it published it)} for the sessions in ids, read back from
    tessera.session.v1 with tessera-busctl (BENCH_BUSCTL)."""
    out = {}
    # --idle: a loaded machine may take seconds to answer the first fetch; a
    # dump that found nothing is tried again
    for attempt in range(3):
        c = subprocess.run([os.environ["BENCH_BUSCTL"], "dump", "-b", os.environ["KAFKA_BOOTSTRAP"],
                            "-t", "tessera.session.v1", "--type", "tessera.v1.SessionScheduled",
                            "--idle", "10", "--timeout", "180"],
                           capture_output=True, text=True, timeout=240)
        for line in c.stdout.splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue
            k, ts = r.get("key"), int(r.get("occurred_at_ms") or 0)
            if k in ids and ts >= since_ms:
                out[k] = min(ts, out.get(k, ts))
        if out:
            break
        print("bench_api: tessera-busctl dump found no SessionScheduled (try %d): %s"
              % (attempt + 1, c.stderr.strip()[-300:]), flush=True)
    return out


def run(image, reqs, kinds, owner, users, base=0):
    def body(i):
        return {"image": image, "name": "%s-%d" % (RUN, i), "type": "interactive",
                "enqueueOnly": True, "config": {"resources": reqs[i], "scaling_group": GROUP}}

    print("end to end: %d sessions (%d fractional <= 1, %d fractional > 1, %d whole-GPU, %d "
          "cpu-only) enqueued via the API (signed POST /session enqueueOnly through the gateway; "
          "%d clients, %d users)" % (N, kinds["f"], kinds["F"], kinds["w"], kinds["c"], NCLIENTS,
                                     NUSERS), flush=True)
    nxt = [0]
    lock = threading.Lock()
    errors, lat_http = [], []
    conns = {}

    def worker():
        mine = []
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= N:
                break
            ak, sk = users[owner[i]]
            c = conns.setdefault((threading.get_ident(), ak), Conn(ak, sk))
            t = time.monotonic()
            st, b = c.call("POST", "/session", body(i))
            mine.append(time.monotonic() - t)
            if st != 201:
                errors.append((i, st, b))
        with lock:
            lat_http.extend(mine)

    t0 = time.monotonic()
    ths = [threading.Thread(target=worker) for _ in range(NCLIENTS)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    enq_s = time.monotonic() - t0
    created = N - len(errors)
    like = RUN + "-%"

    release = None
    if BACKLOG:
        early = int(psql("SELECT count(*) FROM registry.sessions WHERE name LIKE '%s'"
                         " AND status <> 'PENDING'" % like))
        if early:
            sys.exit("bench_api: %d sessions left PENDING while the scheduler was held" % early)
        if HOLD_REG:
            os.kill(REG_PID, signal.SIGSTOP)
        release = time.time()
        os.kill(SCHED_PID, signal.SIGCONT)
        print("backlog mode: %d sessions PENDING, scheduler released (SIGCONT)%s"
              % (created, ", registry held (SIGSTOP)" if HOLD_REG else ""), flush=True)
        if HOLD_REG:
            wait_scheduler_drained(base, created)
            os.kill(REG_PID, signal.SIGCONT)
            print("backlog mode: registry released %.2f s after the scheduler"
                  % (time.time() - release), flush=True)

    # wait: every session scheduled, or nothing moving for 5 s (backlog: 15 s,
    # the scheduler's consumers rejoin their groups after the hold). Polled
    # once a second: the times come from the status history afterwards, and a
    # psql (a process and a PostgreSQL backend, a scan of the run's sessions)
    # every 0.2 s was 4% of the machine's CPU while the stack drained.
    cnt_sql = ("SELECT count(*) FILTER (WHERE status <> 'PENDING'), count(*) FROM registry.sessions"
               " WHERE name LIKE '%s'" % like)
    last, quiet, deadline = None, time.monotonic(), time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        cur = psql(cnt_sql)
        if cur.split()[0] == str(created):
            break
        if cur != last:
            last, quiet = cur, time.monotonic()
        elif time.monotonic() - quiet > (15 if BACKLOG else 5):
            break
        time.sleep(1.0)

    rows = psql(
        "SELECT extract(epoch FROM (sc.at - pe.at)) * 1000,"
        " extract(epoch FROM pe.at), extract(epoch FROM sc.at), s.id"
        " FROM registry.sessions s"
        " JOIN LATERAL (SELECT min(at) AS at FROM registry.session_status_history h"
        "   WHERE h.session_id = s.id AND h.status = 'PENDING') pe ON true"
        " JOIN LATERAL (SELECT min(at) AS at FROM registry.session_status_history h"
        "   WHERE h.session_id = s.id AND h.status = 'SCHEDULED') sc ON true"
        " WHERE s.name LIKE '%s' AND sc.at IS NOT NULL" % like).splitlines()
    lat = sorted(float(r.split()[0]) for r in rows)
    first_pending = float(psql(
        "SELECT extract(epoch FROM min(h.at)) FROM registry.session_status_history h"
        " JOIN registry.sessions s ON s.id = h.session_id WHERE s.name LIKE '%s'" % like) or 0)
    last_sched = max((float(r.split()[2]) for r in rows), default=first_pending)
    ns = len(lat)
    pending = int(psql("SELECT count(*) FROM registry.sessions WHERE name LIKE '%s'"
                       " AND status = 'PENDING'" % like))
    holding = int(psql("SELECT count(*) FROM registry.kernels WHERE holds_slots"))
    holding_run = int(psql("SELECT count(*) FROM registry.kernels k JOIN registry.sessions s ON"
                           " s.id = k.session_id WHERE k.holds_slots AND s.name LIKE '%s'" % like))
    statuses = psql("SELECT status, count(*) FROM registry.sessions WHERE name LIKE '%s'"
                    " GROUP BY 1 ORDER BY 1" % like).replace("\n", ", ")

    chk = subprocess.run([os.environ["BENCH_E2E"]], capture_output=True, text=True,
                         env=dict(os.environ, BENCH_CHECK_ONLY="1",
                                  BENCH_REDIS_URL=os.environ["TESSERA_REDIS_URL"]))
    ck = dict(line.split("=", 1) for line in chk.stdout.split() if "=" in line)
    allocs, sess, inv = int(ck.get("allocs", -1)), int(ck.get("sess", -1)), ck.get("invariant", "?")
    lat_http.sort()
    span = last_sched - first_pending
    if BACKLOG:
        ids = set(psql("SELECT id FROM registry.sessions WHERE name LIKE '%s'" % like).split())
        evmap = scheduled_events(ids, int(release * 1000) - 1000)
        ev = sorted(evmap.values())
        from_release = sorted(float(r.split()[2]) - release for r in rows)
        # registry lag: the registry's SCHEDULED after the scheduler published
        # the session's SessionScheduled (the same machine's clock)
        reg_lag = sorted(float(r.split()[2]) * 1e3 - evmap[r.split()[3]] for r in rows
                         if r.split()[3] in evmap)

    def row(k, v):
        print("%-44s %s" % (k, v))
    print()
    row("metric", "value")
    row("sessions enqueued (201)", "%d of %d (%d refused)" % (created, N, len(errors)))
    row("enqueue time", "%.2f s (%.0f/s)" % (enq_s, created / enq_s)
        + (", scheduler held" if BACKLOG else ""))
    if lat_http:
        row("POST /session latency p50 / p99",
            "%.1f / %.1f ms" % (lat_http[len(lat_http) // 2] * 1e3,
                                lat_http[len(lat_http) * 99 // 100] * 1e3))
    row("scheduled (SCHEDULED in status history)", ns)
    row("still PENDING (no room left)", pending)
    row("statuses", statuses)
    if BACKLOG and ev:
        sspan = ev[-1] / 1e3 - release
        row("release -> first SessionScheduled", "%.2f s" % (ev[0] / 1e3 - release))
        row("release -> last SessionScheduled", "%.2f s (%d published)" % (sspan, len(ev)))
        row("first -> last SessionScheduled", "%.2f s" % ((ev[-1] - ev[0]) / 1e3))
        if ns:
            row("release -> last SCHEDULED (registry)", "%.2f s" % (last_sched - release))
            row("release -> SCHEDULED p50 / p99",
                "%.1f / %.1f ms" % (from_release[ns // 2] * 1e3,
                                    from_release[ns * 99 // 100] * 1e3))
        else:
            row("release -> last SCHEDULED (registry)", "none recorded")
        print()
        row("API enqueue rate (creates/s)", "%.0f" % (created / enq_s))
        row("backlog placements/s, scheduler",
            "%.0f (release -> last SessionScheduled)" % (len(ev) / sspan if sspan > 0 else 0))
        row("backlog placements/s, scheduler drain",
            "%.0f (first -> last SessionScheduled)"
            % (len(ev) * 1e3 / (ev[-1] - ev[0]) if ev[-1] > ev[0] else 0))
        sched_rate = len(ev) / sspan if sspan > 0 else 0
        reg_rate = ns / (last_sched - release) if last_sched > release else 0
        row("backlog placements/s, registry",
            "%.0f (release -> last SCHEDULED recorded)" % reg_rate)
        row("target (>= %d placements/s)" % TARGET_RATE,
            "scheduler %s, registry's record %s"
            % ("met" if sched_rate >= TARGET_RATE else "NOT met",
               "too" if reg_rate >= TARGET_RATE else "NOT (%.0f/s)" % reg_rate))
        if reg_lag:
            row("registry lag p50 / p99 / max",
                "%.0f / %.0f / %.0f ms (SessionScheduled -> SCHEDULED recorded)"
                % (reg_lag[len(reg_lag) // 2], reg_lag[len(reg_lag) * 99 // 100], reg_lag[-1]))
        print()
    elif BACKLOG:
        row("SessionScheduled after the release", "none found on tessera.session.v1")
    elif ns:
        row("first PENDING -> last SCHEDULED", "%.2f s" % span)
        row("placements per second", "%.0f" % (ns / span if span > 0 else 0))
    if lat:
        row("enqueue -> scheduled p50", "%.1f ms" % lat[ns // 2])
        row("enqueue -> scheduled p99", "%.1f ms" % lat[ns * 99 // 100])
        row("enqueue -> scheduled max", "%.1f ms" % lat[-1])
    row("invariant (Redis reservations = occupancy)", inv)
    equal = inv == "ok" and allocs == sess == holding == holding_run == ns and ns > 0
    okall = equal and not errors
    verdict = ("ok" if okall else
               "equal, but %d creates were refused (see 'refused:' below)" % len(errors) if equal
               else "MISMATCH")
    row("reservations = occupancy = PG holds_slots",
        "%d alloc:*, %d sess:*, %d kernels holds_slots (%d of this run), %d scheduled -> %s"
        % (allocs, sess, holding, holding_run, ns, verdict))
    cpu = os.times()
    row("bench client CPU (this process)", "%.1f s" % (cpu.user + cpu.system))
    for e in errors[:5]:
        print("refused:", e)
    if chk.returncode not in (0, 1):
        print(chk.stdout, chk.stderr)
    why = reasons(created, ns, pending, statuses, ev if BACKLOG else None, inv, allocs, sess,
                  holding, holding_run, errors)
    for w in why:
        print("reason:", w)
    if os.environ.get("BENCH_API_RESULT"):
        q = (lambda a, f: a[int(len(a) * f)] if a and int(len(a) * f) < len(a) else
             (a[-1] if a else None))
        res = {"sessions": N, "created": created, "refused": len(errors), "enqueue_s": enq_s,
               "enqueue_rate": created / enq_s if enq_s > 0 else 0, "scheduled": ns,
               "pending": pending, "statuses": statuses, "invariant": inv, "ok": okall,
               "reasons": why, "t_enqueue_start": time.time() - (time.monotonic() - t0),
               "t_enqueue_end": time.time() - (time.monotonic() - t0) + enq_s,
               "release": release, "backlog": BACKLOG,
               "post_p50_ms": q(lat_http, 0.5) and q(lat_http, 0.5) * 1e3,
               "post_p99_ms": q(lat_http, 0.99) and q(lat_http, 0.99) * 1e3}
        if BACKLOG:
            res.update({"published": len(ev),
                        "reg_rate": ns / (last_sched - release) if ns and last_sched > release
                        else 0,
                        "sched_rate": len(ev) / (ev[-1] / 1e3 - release) if ev and
                        ev[-1] / 1e3 > release else 0,
                        "place_p50_ms": q(from_release, 0.5) and q(from_release, 0.5) * 1e3,
                        "place_p99_ms": q(from_release, 0.99) and q(from_release, 0.99) * 1e3,
                        "reg_lag_p50_ms": q(reg_lag, 0.5) if ev else None,
                        "reg_lag_p99_ms": q(reg_lag, 0.99) if ev else None,
                        "reg_lag_max_ms": reg_lag[-1] if ev and reg_lag else None})
        else:
            res.update({"reg_rate": ns / span if span > 0 else 0,
                        "place_p50_ms": q(lat, 0.5), "place_p99_ms": q(lat, 0.99)})
        with open(os.environ["BENCH_API_RESULT"], "w") as f:
            json.dump(res, f)
    return 0 if okall else 1


def reasons(created, ns, pending, statuses, ev, inv, allocs, sess, holding, holding_run, errors):
    """Why the run is not a clean measure, one line each (empty: it is)."""
    out = []
    if errors:
        out.append("%d of %d creates were refused by the API" % (len(errors), N))
    if created and ns == 0:
        out.append("the registry recorded no placement (statuses: %s)%s; see the registry's and "
                   "the scheduler's logs (consumers paused? messages skipped: "
                   "tessera_kafka_offset_resets_total)"
                   % (statuses or "none", "" if ev is None else
                      ", the scheduler published %d SessionScheduled" % len(ev)))
    elif ev is not None and ns < len(ev):
        # sessions left PENDING for want of room are not a gap: the scheduler
        # published no placement for them
        out.append("%d of the %d placements the scheduler published were not recorded by the "
                   "registry within %d s (%d still PENDING; statuses: %s)"
                   % (len(ev) - ns, len(ev), TIMEOUT, pending, statuses))
    if ev is not None and not ev and created:
        out.append("no SessionScheduled published after the release was found on "
                   "tessera.session.v1")
    if inv != "ok":
        out.append("invariant check (Redis reservations = occupancy): %s" % inv)
    if ns and not allocs == sess == holding == holding_run == ns:
        out.append("counts differ: %d alloc:*, %d sess:*, %d kernels holding slots (%d of this "
                   "run), %d scheduled" % (allocs, sess, holding, holding_run, ns))
    return out


if __name__ == "__main__":
    try:
        sys.exit(main())
    except subprocess.CalledProcessError as e:
        sys.exit("bench_api: %s failed (exit %d): %s"
                 % (e.cmd[0], e.returncode, (e.stderr or "").strip()[-500:]))
    except (OSError, http.client.HTTPException, subprocess.TimeoutExpired) as e:
        sys.exit("bench_api: %s: %s" % (type(e).__name__, e))
