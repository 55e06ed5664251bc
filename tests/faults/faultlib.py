"""faultlib.py: the fault suite's machinery (docs/reliability.md): a steady
load of sessions through the public API, the faults, and the invariants
checked after each one against PostgreSQL, Redis, runc and the access log.

Only the standard library, requests (Debian's python3-requests) and the
integration tests' signers.
"""
import decimal
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

import requests

import bai_signer
import suitekit

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
RESTART = os.path.join(REPO, "deploy", "dev", "restart.sh")

# ---- bounds (docs/reliability.md, "Bounds") -------------------------------------------------

# A request with no answer after this many seconds is a hang.
REQUEST_TIMEOUT_S = 15
# Outages (PostgreSQL stopped, the bus's brokers down, the volume full): the
# full run's, and `make faults-smoke`'s (TESSERA_FAULTS_OUTAGE overrides).
OUTAGE_FULL_S = 30
OUTAGE_SMOKE_S = 10
# A killed service stays down this long before restart.sh starts it again
# (a supervisor's restart delay).
KILL_DOWN_S = 2
# Load before the fault and after it (the fault's own time is between).
WARM_S = 4
AFTER_S = 6
# Load workers (each: create, watch a few seconds, destroy, again).
WORKERS = 3
# How long a load session lives before the worker destroys it.
SESSION_LIFE_S = (2.0, 5.0)
# After the load stopped and every destroy was answered: every session must
# have reached RUNNING or an end within this bound, or it is stuck.
STUCK_BOUND_S = 90
# Once no session is in a transient state, Redis occupancy and the containers
# must agree with PostgreSQL within this bound (reservations and containers
# of sessions that ended during the fault are released by events still on
# their way, or by the registry's reconcile pass: two passes, 20 s).
CONVERGE_S = 30
# The suite keeps asking for destroys that were not answered 2xx/404 for this
# long after the load stopped (a client retrying a 503).
DESTROY_RETRY_S = 60
# Every answered API request is in the access log within this many seconds.
ACCESS_LOG_WAIT_S = 30
# A resident session (created before the fault, expected to survive it)
# reaches RUNNING and its app answers within this bound.
RESIDENT_START_S = 60

LIVE_TRANSIENT = {"PENDING", "SCHEDULED", "PREPARING", "PULLING", "RESTARTING", "TERMINATING"}
ENDED = {"TERMINATED", "CANCELLED", "ERROR"}
TAG = uuid.uuid4().hex[:6]
PAGE = f"fault-app-{TAG}"
RESIDENT_BOOTSTRAP = (f"mkdir -p /tmp/www && echo {PAGE} > /tmp/www/index.html && "
                      "busybox httpd -p 8080 -h /tmp/www")


class SetupError(Exception):
    pass


def log(msg):
    sys.stderr.write(f"[faults {time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


# ---- PostgreSQL, Redis, runc -----------------------------------------------------------------

def pg_env(stack):
    env = dict(os.environ)
    for k in ("PGHOST", "PGPORT", "PGUSER", "PGDATABASE"):
        env[k] = stack[k]
    env["PGCONNECT_TIMEOUT"] = "5"
    return env


def pg_json(stack, sql, timeout=20):
    """Rows of sql as a list of dicts (json_agg), or raises."""
    q = f"SELECT coalesce(json_agg(t), '[]'::json) FROM ({sql}) t"
    r = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-c", q],
                       env=pg_env(stack), capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"psql: {r.stderr.strip()}")
    return json.loads(r.stdout)


class Redis:
    """A minimal RESP client (one connection, commands in turn)."""

    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.addr = (u.hostname, u.port or 6379)

    def cmd(self, *args):
        with socket.create_connection(self.addr, timeout=10) as s:
            out = b"*%d\r\n" % len(args)
            for a in args:
                a = a if isinstance(a, bytes) else str(a).encode()
                out += b"$%d\r\n%s\r\n" % (len(a), a)
            s.sendall(out)
            f = s.makefile("rb")
            return self._read(f)

    def _read(self, f):
        line = f.readline()
        if not line:
            raise ConnectionError("redis closed the connection")
        t, rest = line[:1], line[1:-2]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            raise RuntimeError(f"redis: {rest.decode()}")
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = f.read(n + 2)[:-2]
            return data.decode()
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self._read(f) for _ in range(n)]
        raise RuntimeError(f"redis: unexpected reply {line!r}")

    def keys(self, pattern):
        out, cursor = [], "0"
        while True:
            cursor, batch = self.cmd("SCAN", cursor, "MATCH", pattern, "COUNT", 1000)
            out += batch
            if cursor == "0":
                return sorted(set(out))

    def hgetall(self, key):
        flat = self.cmd("HGETALL", key) or []
        return dict(zip(flat[0::2], flat[1::2]))


def runc_list():
    """runc's containers on this host (every stack's: they share runc's root),
    as `runc list --format json` gives them."""
    for _ in range(20):
        r = subprocess.run(["runc", "list", "--format", "json"], capture_output=True, text=True,
                           timeout=30)
        # a container removed (by any stack) while runc lists them fails the listing
        if r.returncode == 0 or "no such file or directory" not in r.stderr:
            break
        time.sleep(0.05)
    if r.returncode != 0:
        raise RuntimeError(f"runc list: {r.stderr.strip()}")
    return json.loads(r.stdout or "null") or []


def runc_containers(state_dir):
    """{container id: status} of the runc containers whose bundle is under this
    stack's state dir."""
    prefix = state_dir.rstrip("/") + "/"
    return {c["id"]: c.get("status", "") for c in runc_list()
            if (c.get("bundle") or "").startswith(prefix)}


# ---- slots: PostgreSQL's text amounts -> Redis's integer quanta (docs/scheduler.md) ----------

def quanta(slot, amount):
    d = decimal.Decimal(str(amount))
    if slot == "cpu":
        d *= 1000
    elif slot.endswith(".shares"):
        d *= 100
    if d != d.to_integral_value():
        raise ValueError(f"{slot}={amount} is not a whole number of quanta")
    return int(d)


def parse_slots(text):
    """'cpu=1000 mem=1073741824' -> {slot: int}"""
    out = {}
    for word in (text or "").split():
        k, _, v = word.partition("=")
        out[k] = int(v)
    return out


# ---- the public API --------------------------------------------------------------------------

class Recorder:
    """Every API request the suite made during a fault: answered status (or
    'hang' / 'noanswer'), the request id the gateway gave it, its route."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rows = []

    def add(self, method, path, status, request_id, via_gateway=True):
        with self.lock:
            self.rows.append({"method": method, "path": path, "status": status,
                              "request_id": request_id, "gateway": via_gateway,
                              "t": time.time()})


class Client(bai_signer.Client):
    """A signed client whose every request is recorded and bounded by
    REQUEST_TIMEOUT_S; never raises for a transport error (it answers None)."""

    def __init__(self, endpoint, access_key, secret_key, recorder):
        super().__init__(endpoint, access_key, secret_key)
        self.recorder = recorder

    def request(self, method, path, json=None, params=None, headers=None, timeout=None):
        timeout = min(timeout or REQUEST_TIMEOUT_S, REQUEST_TIMEOUT_S)
        try:
            r = super().request(method, path, json=json, params=params, headers=headers,
                                timeout=timeout)
        except requests.exceptions.Timeout:
            self.recorder.add(method, path, "hang", None)
            return None
        except requests.exceptions.RequestException:
            self.recorder.add(method, path, "noanswer", None)
            return None
        self.recorder.add(method, path, r.status_code, r.headers.get("X-Request-ID"))
        return r


def okj(r, *statuses):
    if r is None:
        raise SetupError("no answer")
    if r.status_code not in (statuses or (200,)):
        raise SetupError(f"{r.request.method} {r.request.path_url}: {r.status_code} {r.text[:300]}")
    return r.json()


def admin_keys(stack):
    env = dict(stack)
    creds = os.path.join(stack["TESSERA_STATE_DIR"], "auth", "admin-credentials")
    if "TESSERA_ADMIN_ACCESS_KEY" not in env and os.path.exists(creds):
        from conftest import parse_env_file  # noqa: PLC0415
        env.update(parse_env_file(creds))
    return env["TESSERA_ADMIN_ACCESS_KEY"], env["TESSERA_ADMIN_SECRET_KEY"]


def build_image(stack, workdir):
    """The busybox test image with small minimum slots, pushed to the
    stack's OCI registry (suitekit.push_busybox_image). Its reference."""
    try:
        return suitekit.push_busybox_image(stack, os.path.join(workdir, "faults-image"),
                                           "tessera/faults", TAG, "tessera-faults")
    except RuntimeError as e:
        raise SetupError(str(e)) from e


TENANT_PASSWORD = "faults-Passw0rd"


def new_tenant(admin, recorder, prefix, make_client=None):
    """A user of the default domain and project (password TENANT_PASSWORD)
    with a keypair: its Client, or make_client(endpoint, access key, secret
    key)'s; .email is the user's."""
    uname = f"{prefix}-{TAG}-{uuid.uuid4().hex[:4]}"
    u = okj(admin.post("/admin/users", {"email": f"{uname}@example.com", "username": uname,
                                        "password": TENANT_PASSWORD, "role": "user"}), 200, 201)
    k = okj(admin.post("/admin/keypairs", {"user_id": u["id"]}), 200, 201)
    projects = okj(admin.get("/admin/projects", params={"limit": 1000}))["items"]
    default = [p for p in projects if p["name"] == "default" and p["domain_name"] == u["domain_name"]]
    if not default:
        raise SetupError("no default project")
    okj(admin.post(f"/admin/projects/{default[0]['id']}/members", {"user_ids": [u["id"]]}), 200, 201)
    if make_client:
        c = make_client(admin.endpoint, k["access_key"], k["secret_key"])
    else:
        c = Client(admin.endpoint, k["access_key"], k["secret_key"], recorder)
    c.email = f"{uname}@example.com"
    return c


# ---- the load -------------------------------------------------------------------------------

class Load:
    """WORKERS threads, each: create a session (enqueueOnly), watch it for a
    few seconds, destroy it; plus one thread working in a vfolder (mkdir,
    list, delete). Records every create answered 201 and every destroy
    answered."""

    def __init__(self, client, image, prefix, folder=None):
        self.client, self.image, self.prefix, self.folder = client, image, prefix, folder
        self.stop_ev = threading.Event()
        self.lock = threading.Lock()
        self.created = {}      # name -> session uuid (answered 201)
        self.destroyed = set()  # names whose destroy was answered 2xx or 404
        self.n = 0
        self.threads = []

    def _name(self):
        with self.lock:
            self.n += 1
            return f"{self.prefix}-{self.n}"

    def _worker(self, seed):
        rnd = random.Random(seed)
        c = self.client
        while not self.stop_ev.is_set():
            name = self._name()
            r = c.post("/session", {"image": self.image, "name": name, "enqueueOnly": True,
                                    "config": {"resources": {"cpu": "0.1", "mem": "32m"}}})
            if r is None or r.status_code != 201:
                self.stop_ev.wait(0.5)
                continue
            with self.lock:
                self.created[name] = r.json().get("sessionUuid")
            end = time.monotonic() + rnd.uniform(*SESSION_LIFE_S)
            while time.monotonic() < end and not self.stop_ev.is_set():
                c.get(f"/session/{name}")
                self.stop_ev.wait(0.7)
            self.destroy(name)

    def destroy(self, name):
        r = self.client.delete(f"/session/{name}")
        if r is not None and (200 <= r.status_code < 300 or r.status_code == 404):
            with self.lock:
                self.destroyed.add(name)
            return True
        return False

    def _folder_worker(self):
        c, f = self.client, self.folder
        i = 0
        while not self.stop_ev.is_set():
            i += 1
            d = f"d{i % 5}"
            c.post(f"/folders/{f}/mkdir", {"path": d, "exist_ok": True})
            c.get(f"/folders/{f}/files")
            c.request("DELETE", f"/folders/{f}/delete_files", json={"files": [d], "recursive": True})
            c.get("/folders")
            self.stop_ev.wait(0.8)

    def start(self):
        for i in range(WORKERS):
            t = threading.Thread(target=self._worker, args=(i,), daemon=True)
            t.start()
            self.threads.append(t)
        if self.folder:
            t = threading.Thread(target=self._folder_worker, daemon=True)
            t.start()
            self.threads.append(t)

    def stop(self):
        self.stop_ev.set()
        for t in self.threads:
            t.join(REQUEST_TIMEOUT_S * 3 + 10)

    def destroy_rest(self):
        """Destroy what was created and not yet destroyed, retrying (a 503
        during an outage is a fine answer; the client asks again) for up to
        DESTROY_RETRY_S. Names whose destroy never got an answer."""
        deadline = time.monotonic() + DESTROY_RETRY_S
        while True:
            with self.lock:
                rest = [n for n in self.created if n not in self.destroyed]
            rest = [n for n in rest if not self.destroy(n)]
            if not rest or time.monotonic() >= deadline:
                return rest
            time.sleep(1)


# ---- resident sessions: made before the fault, must survive it ---------------------------------

class Resident:
    def __init__(self, client, image, name):
        self.client, self.name = client, name
        self.url = None
        self.error = None
        r = client.post("/session", {"image": image, "name": name, "enqueueOnly": True,
                                     "bootstrap_script": RESIDENT_BOOTSTRAP,
                                     "config": {"resources": {"cpu": "0.2", "mem": "64m"}}},
                        timeout=REQUEST_TIMEOUT_S)
        if r is None or r.status_code != 201:
            raise SetupError(f"resident {name}: create answered "
                             f"{'nothing' if r is None else r.status_code}")
        self.id = r.json()["sessionUuid"]
        deadline = time.monotonic() + RESIDENT_START_S
        while time.monotonic() < deadline:
            r = client.post(f"/session/{name}/start-service", {"app": "echo"})
            if r is not None and r.status_code == 200:
                self.url = r.json()["url"]
                if self.app_answers():
                    return
            time.sleep(1)
        raise SetupError(f"resident {name}: not RUNNING with its app answering in "
                         f"{RESIDENT_START_S} s")

    def app_answers(self):
        try:
            a = requests.get(self.url, timeout=5, allow_redirects=False)
        except requests.exceptions.RequestException:
            return False
        return a.status_code == 200 and PAGE in a.text


# ---- the faults -----------------------------------------------------------------------------

def restart(stack, *args, timeout=180):
    env = dict(os.environ)
    env["TESSERA_STATE_DIR"] = stack["TESSERA_STATE_DIR"]
    r = subprocess.run(["sh", RESTART, *args], env=env, capture_output=True, text=True,
                       timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"restart.sh {' '.join(args)} failed: {r.stdout}{r.stderr}")
    return r.stdout


def ensure_ready(stack):
    """Before a fault: every process of <state>/services that serves HTTP
    answers /readyz 200 within 60 s; one that does not (a fault before left
    it dead) is restarted. The names restarted; SetupError when that fails."""
    state = stack["TESSERA_STATE_DIR"]
    urls = {}
    with open(os.path.join(state, "services"), encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[2].startswith("http") and parts[0] != "oci-registry":
                urls[parts[0]] = parts[2]
    restarted = []
    deadline = time.monotonic() + 60
    while True:
        down = []
        for name, url in urls.items():
            try:
                ok = requests.get(url + "/readyz", timeout=3).status_code == 200
            except requests.exceptions.RequestException:
                ok = False
            if not ok:
                down.append(name)
        if not down:
            return restarted
        if time.monotonic() >= deadline:
            for name in down:
                if name == "devbus" or name in restarted:
                    raise SetupError(f"{name} is not ready before the fault")
                try:
                    restart(stack, name)
                except RuntimeError as e:
                    raise SetupError(f"{name} is not ready and could not be restarted: {e}") from e
                restarted.append(name)
            deadline = time.monotonic() + 60
        time.sleep(1)


def fill_volume(path):
    """Write zeros into path until the file system is full (ENOSPC)."""
    with open(path, "wb") as f:
        chunk = b"\0" * (1 << 20)
        try:
            while True:
                f.write(chunk)
                f.flush()
        except OSError:
            pass
        try:
            f.close()
        except OSError:
            pass


class Fault:
    """One fault: apply(stack) blocks for the fault's own time (kill and
    restart; or outage then recovery)."""

    def __init__(self, name, apply, describe):
        self.name, self.apply, self.describe = name, apply, describe


def make_faults(outage_s):
    def kill(svc):
        return Fault(f"kill-9 {svc}",
                     lambda st, ctx: restart(st, svc, "--kill", "--down", str(KILL_DOWN_S)),
                     f"SIGKILL tessera-{svc}, {KILL_DOWN_S} s down, restarted by restart.sh")

    def flushall(st, ctx):
        Redis(st["TESSERA_REDIS_URL"]).cmd("FLUSHALL")
        time.sleep(outage_s / 3)

    def pg_stop(st, ctx):
        restart(st, "postgres", "--down", str(outage_s))

    def bus_down(st, ctx):
        restart(st, "bus", "--down", str(outage_s))

    def disk_full(st, ctx):
        vol = ctx["volume"]
        filler = os.path.join(vol, f".fault-filler-{TAG}")
        fill_volume(filler)
        try:
            time.sleep(outage_s)
        finally:
            os.unlink(filler)

    faults = [kill(s) for s in ("gateway", "auth", "registry", "scheduler", "agent", "vfolder",
                                "wsproxy")]
    faults += [
        Fault("redis flushall", flushall, "FLUSHALL on the stack's Redis"),
        Fault(f"postgres stop {outage_s}s", pg_stop,
              f"pg_ctl stop -m fast, {outage_s} s down, started again"),
        Fault(f"bus down {outage_s}s", bus_down,
              f"every devbus mock broker down {outage_s} s (SIGUSR1/SIGUSR2)"),
        Fault(f"vfolder disk full {outage_s}s", disk_full,
              f"the vfolder volume (a 64 MiB tmpfs) filled to ENOSPC for {outage_s} s"),
    ]
    return faults


SMOKE = ["kill-9 registry", "kill-9 agent", "redis flushall", "postgres stop", "bus down"]


# ---- the invariants ---------------------------------------------------------------------------

class Result:
    COLUMNS = ("sessions", "running", "lost", "stuck", "drift", "containers", "5xx", "hangs", "noanswer",
               "alog")

    def __init__(self, fault):
        self.fault = fault
        self.counts = {c: 0 for c in self.COLUMNS}
        self.details = []
        self.seconds = 0.0
        self.error = None  # the fault could not be applied or the run not made

    def bad(self, column, n, detail):
        if n:
            self.counts[column] += n
            self.details.append(f"{column}: {detail}")

    @property
    def passed(self):
        return self.error is None and all(v == 0 for k, v in self.counts.items()
                                          if k not in ("sessions", "running"))


def settle(stack, bound_s):
    """Wait until no session is in a transient state, at most bound_s. The
    sessions still transient then ([{name, status, status_info, age}])."""
    deadline = time.monotonic() + bound_s
    while True:
        try:
            rows = pg_json(stack, "SELECT name, status, status_info, "
                                  "round(extract(epoch FROM now() - status_changed_at)) AS age "
                                  "FROM registry.sessions WHERE status IN ("
                                  + ",".join(f"'{s}'" for s in sorted(LIVE_TRANSIENT)) + ")")
        except Exception as e:  # noqa: BLE001 - PostgreSQL may be starting
            rows = [{"name": "?", "status": "?", "status_info": f"psql: {e}", "age": 0}]
        if not rows or time.monotonic() >= deadline:
            return rows
        time.sleep(1)


def converge(check, bound_s=None):
    """Run check() (a list of problems, or a tuple whose first item is) until
    it finds none or bound_s (CONVERGE_S) passed; its last result."""
    deadline = time.monotonic() + (CONVERGE_S if bound_s is None else bound_s)
    while True:
        got = check()
        problems = got[0] if isinstance(got, tuple) else got
        if not problems or time.monotonic() >= deadline:
            return got
        time.sleep(2)


def check_drift(stack):
    """Redis occupancy against PostgreSQL's kernels that hold slots. A list of
    mismatches (empty: none)."""
    r = Redis(stack["TESSERA_REDIS_URL"])
    out = []
    kernels = pg_json(stack, "SELECT k.id::text AS id, k.agent_id, k.slots, s.status AS sstatus, "
                             "s.name FROM registry.kernels k JOIN registry.sessions s "
                             "ON s.id = k.session_id WHERE k.holds_slots")
    pg = {k["id"]: k for k in kernels}
    for k in kernels:
        if k["sstatus"] in ENDED:
            out.append(f"kernel {k['id']} of {k['name']} holds slots but its session is {k['sstatus']}")
    if r.cmd("EXISTS", "occupancy") != 1:
        out.append("the occupancy marker is missing (not rebuilt after a loss)")
    allocs = {}
    for key in r.keys("alloc:*"):
        allocs[key[len("alloc:"):]] = r.hgetall(key)
    for kid in sorted(set(pg) - set(allocs)):
        out.append(f"kernel {kid} ({pg[kid]['name']}) holds slots in PostgreSQL, no alloc: in Redis")
    for kid in sorted(set(allocs) - set(pg)):
        out.append(f"alloc:{kid} in Redis, no kernel holding slots in PostgreSQL")
    expected = {}  # agent -> slot -> quanta, from PostgreSQL
    for kid, k in pg.items():
        want = {s: quanta(s, a) for s, a in (k["slots"] or {}).items()}
        agent_sum = expected.setdefault(k["agent_id"], {})
        for s, q in want.items():
            agent_sum[s] = agent_sum.get(s, 0) + q
        if kid in allocs:
            got = parse_slots(allocs[kid].get("slots"))
            if {s: q for s, q in got.items() if q} != {s: q for s, q in want.items() if q}:
                out.append(f"alloc:{kid} slots {got} != PostgreSQL's {want}")
    agents = [a["id"] for a in pg_json(stack, "SELECT id FROM registry.agents")]
    for agent in agents:
        h = r.hgetall(f"agent:{agent}")
        if not h:
            out.append(f"agent:{agent} missing in Redis")
            continue
        used = {k[len("used:"):]: int(v) for k, v in h.items() if k.startswith("used:")}
        want = expected.get(agent, {})
        for s in sorted(set(used) | set(want)):
            if used.get(s, 0) != want.get(s, 0):
                out.append(f"agent:{agent} used:{s}={used.get(s, 0)}, live kernels hold {want.get(s, 0)}")
    return out


def check_containers(stack, containers=None):
    """Containers of this stack ({id: status}; default: runc's) against
    PostgreSQL's kernels: (orphans and duplicates, [live kernels of RUNNING
    sessions without a container])."""
    cont = runc_containers(stack["TESSERA_STATE_DIR"]) if containers is None else containers
    rows = pg_json(stack, "SELECT k.id::text AS id, k.status, k.cluster_idx, s.id::text AS sid, "
                          "s.name, s.status AS sstatus FROM registry.kernels k JOIN "
                          "registry.sessions s ON s.id = k.session_id")
    by_id = {r["id"]: r for r in rows}
    bad, missing = [], []
    seen = {}
    for cid, status in sorted(cont.items()):
        k = by_id.get(cid)
        if k is None:
            bad.append(f"container {cid} ({status}) has no kernel")
            continue
        if k["sstatus"] in ENDED:
            bad.append(f"container {cid} ({status}) of {k['name']}, which is {k['sstatus']}")
        seen.setdefault((k["sid"], k["cluster_idx"]), []).append(cid)
    for (sid, idx), cids in seen.items():
        if len(cids) > 1:
            bad.append(f"duplicate containers for kernel {idx} of session {sid}: {cids}")
    for k in rows:
        if k["sstatus"] == "RUNNING" and k["id"] not in cont:
            missing.append(f"{k['name']} is RUNNING, its kernel {k['id']} has no container")
    return bad, missing


def classify_requests(rows, fault_name, t0, t1):
    """(5xx, hangs, no answers) as lists of "METHOD path status". A 503 is a
    fine answer; 507 on a vfolder route while the volume is full too; no
    answer (connection refused or cut) is expected only from a dead gateway."""
    five, hangs, noans = [], [], []
    for r in rows:
        st = r["status"]
        what = f"{r['method']} {r['path']} {st}"
        if st == "hang":
            hangs.append(what)
        elif st == "noanswer":
            if not (fault_name.startswith("kill-9 gateway") and t0 - 1 <= r["t"] <= t1 + 15):
                noans.append(what)
        elif st >= 500 and st != 503:
            if st == 507 and fault_name.startswith("vfolder disk full") and "/folders" in r["path"]:
                continue
            five.append(what)
    return five, hangs, noans


def missing_access_log(stack, access_key, rows):
    """Request ids the gateway answered that are not in auth.access_log,
    after waiting up to ACCESS_LOG_WAIT_S."""
    want = {r["request_id"] for r in rows if r["request_id"] and r["gateway"]}
    deadline = time.monotonic() + ACCESS_LOG_WAIT_S
    missing = want
    while True:
        try:
            got = {x["request_id"] for x in pg_json(
                stack, f"SELECT request_id FROM auth.access_log WHERE access_key = '{access_key}'")}
            missing = want - got
        except Exception:  # noqa: BLE001 - try again
            pass
        if not missing or time.monotonic() >= deadline:
            return sorted(missing)
        time.sleep(1)


def check_lost(stack, access_key, created, residents):
    """Sessions lost: created (name -> uuid, answered 201) but unknown to
    PostgreSQL, ended in ERROR, or a resident (expected to survive) that is
    not RUNNING with its app answering. A list of what is wrong."""
    rows = pg_json(stack, "SELECT id::text AS id, name, status, status_info FROM registry.sessions "
                          f"WHERE access_key = '{access_key}'")
    by_id = {r["id"]: r for r in rows}
    out = []
    for name, sid in sorted(created.items()):
        r = by_id.get(sid)
        if r is None:
            out.append(f"{name} ({sid}) was created (201) and is not in registry.sessions")
        elif r["status"] == "ERROR":
            out.append(f"{name} ended in ERROR ({r['status_info']})")
    for res in residents:
        r = by_id.get(res.id)
        if r is None or r["status"] != "RUNNING":
            out.append(f"resident {res.name} is {r and r['status']} ({r and r['status_info']}), "
                       "not RUNNING")
            continue
        deadline = time.monotonic() + 20
        while not res.app_answers():
            if time.monotonic() >= deadline:
                out.append(f"resident {res.name}: its app ({res.url.split('?')[0]}) no longer "
                           "answers through wsproxy")
                break
            time.sleep(1)
    return out


def reached_running(stack, access_key):
    """How many of the tenant's sessions reached RUNNING at some point."""
    return pg_json(stack, "SELECT count(DISTINCT h.session_id) AS n FROM "
                          "registry.session_status_history h JOIN registry.sessions s "
                          f"ON s.id = h.session_id WHERE s.access_key = '{access_key}' "
                          "AND h.status = 'RUNNING'")[0]["n"]


def first(items, n=3):
    s = "; ".join(items[:n])
    return s + (f" (+{len(items) - n} more)" if len(items) > n else "")
