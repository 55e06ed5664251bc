"""A replicated control plane: a stack of its own with two instances of each
of gateway, registry, scheduler and wsproxy (TESSERA_DEV_REPLICAS=2:
gateway@1, gateway@2, ...), each on a port of its own and all on their
service's one address (SO_REUSEPORT; docs/operations.md, "Replicas").

- both instances serve: fresh connections to a service's address reach
  each instance (its own /metrics counts them); both schedulers hold
  partitions of tessera.session.v1, both registries' consumers joined;
- idle reclamation with two registries ends an idle session once;
- a create that waits for RUNNING (maxWaitSeconds) is answered once the
  session runs, whichever registry committed RUNNING (the other instance's
  commit reaches the waiting one through the status stream);
- the scheduler's failover: sessions pending in one scheduler's queue (no
  room: a hog holds the CPUs) are placed by the other while the first is
  dead (its partitions, and their pending records, move over), and the
  first rejoins when restarted;
- kill -9 of one instance of each of gateway, registry, scheduler and
  wsproxy at once, during a stream of creates (some waiting for RUNNING),
  reads, destroys, app requests through wsproxy (with a cookie and with a
  link token issued before the kill) and console requests (a login's
  cookie): they stay down until the group moved their partitions to the
  survivors (the bus's session timeout, about 10 s on the development bus)
  and DOWN_AFTER_TAKEOVER_S more, then restart.sh starts them again. Nothing is lost beyond the requests in flight:
    * a request is *in flight* at a kill when it was sent before the kill
      (or within KILL_GRACE_S after it: the time the kernel takes to close
      the killed process's sockets) and not answered before it; such a
      request may have been carried by the killed process (its connection,
      or the gateway's to the killed registry or wsproxy) and may end
      without an answer (connection reset) or with 502/503/504;
    * every other request gets its normal answer (no connection error, no
      5xx), on the surviving instances while the others are down;
    * every create answered 201 reaches RUNNING, or CANCELLED when it was
      destroyed before it ran; none ends in ERROR or is unknown; no session
      (those created by requests in flight included) stays PENDING,
      PREPARING or in any other transient status once its destroy is
      answered; Redis occupancy and PostgreSQL agree, no stray container;
    * the app answers with the same cookie and token on the surviving
      wsproxy, the console's login (Redis) on the surviving gateway;
- the restarted instances rejoin: each serves again on the shared address,
  its consumers joined, the scheduler holds partitions again.

About two and a half minutes on the 2-core VM with the stack's start."""
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest
import requests

import bai_signer
import suitekit
from conftest import REPO, dev_stack, parse_env_file, wait_until

# after tests/integration (tests/faults has a conftest.py of its own)
sys.path.append(os.path.join(REPO, "tests", "faults"))
import faultlib  # noqa: E402

TAG = uuid.uuid4().hex[:6]
RESTART = os.path.join(REPO, "deploy", "dev", "restart.sh")
REPLICATED = ("gateway", "registry", "scheduler", "wsproxy")
SMALL = {"cpu": "0.1", "mem": "32m"}
WAIT_BOUND_S = 12      # a waiting create on a quiet stack: answered RUNNING within this
TAKEOVER_S = 40        # bus session timeout (6 s) + rebalance + a sweep + the start
PARTITIONS = 3         # of each topic on the development bus (devbus.partitions)
WARM_S = 4
DOWN_AFTER_TAKEOVER_S = 4  # down that long once the survivors have the dead ones' partitions
AFTER_S = 6
KILL_GRACE_S = 0.5
REQUEST_TIMEOUT_S = 20
TRANSIENT_FAILURES = {"noanswer", 502, 503, 504}


@pytest.fixture(scope="module")
def stack():
    with dev_stack("tessera-rp-", TESSERA_DEV_REPLICAS="2") as env:
        yield env


@pytest.fixture(scope="module")
def admin(stack):
    env = dict(stack)
    env.update(parse_env_file(os.path.join(stack["TESSERA_STATE_DIR"], "auth", "admin-credentials")))
    return faultlib.Client(stack["TESSERA_GATEWAY_URL"], env["TESSERA_ADMIN_ACCESS_KEY"],
                           env["TESSERA_ADMIN_SECRET_KEY"], faultlib.Recorder())


@pytest.fixture(scope="module")
def image(stack, admin):
    try:
        ref = suitekit.push_busybox_image(stack, os.path.join(stack["TESSERA_STATE_DIR"], "rp-image"),
                                          "tessera/replicas", TAG, "replicas")
    except RuntimeError as e:
        pytest.fail(str(e), pytrace=False)
    faultlib.okj(admin.post("/admin/images", {"reference": ref}), 200, 201)
    return ref


@pytest.fixture(scope="module")
def tenant(stack, admin):
    """A user of the default project with a keypair: (signed client, e-mail)."""
    c = faultlib.new_tenant(admin, None, "rp", make_client=Recording)
    return c, c.email


# ---- helpers ------------------------------------------------------------------------------------

def url_of(stack, name):
    """An instance's own URL (gateway@1 -> TESSERA_GATEWAY_1_URL)."""
    svc, k = name.split("@")
    return stack[f"TESSERA_{svc.upper()}_{k}_URL"]


def metric(url, name, labels=""):
    """The value of one sample of an instance's /metrics (0 when absent)."""
    text = requests.get(url + "/metrics", timeout=10).text
    want = name + (f"{{{labels}}}" if labels else "")
    for line in text.splitlines():
        if line.startswith(want + " "):
            return float(line.split()[-1])
    return 0.0


def served(stack, name):
    return metric(url_of(stack, name), "tessera_http_requests_total", 'code="2xx"')


def pid_of(stack, name):
    with open(os.path.join(stack["TESSERA_STATE_DIR"], "run", f"{name}.pid"), encoding="utf-8") as f:
        return int(f.read().split()[0])


def kill9(stack, name):
    """SIGKILL the instance; the monotonic time of the kill, once it is gone."""
    pid = pid_of(stack, name)
    t = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not os.path.exists(f"/proc/{pid}") or
               open(f"/proc/{pid}/stat", encoding="utf-8").read().rsplit(")", 1)[1].split()[0] == "Z",
               20, message=f"{name} ({pid}) to die")
    return t


def restart(stack, name):
    """deploy/dev/restart.sh NAME: a dead instance is started again as
    dev-up started it, and waited for (/readyz 200)."""
    env = dict(os.environ, TESSERA_STATE_DIR=stack["TESSERA_STATE_DIR"])
    r = subprocess.run(["sh", RESTART, name], env=env, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr


def fresh_gets(url, n=24):
    """n requests on n new connections (the kernel picks an instance for each)."""
    for _ in range(n):
        assert requests.get(url, timeout=10).status_code == 200


def statuses(stack, ids):
    """session id -> status (PostgreSQL)."""
    rows = faultlib.pg_json(stack, "SELECT id::text AS id, status FROM registry.sessions WHERE id IN ("
                                   + ",".join(f"'{i}'" for i in ids) + ")")
    return {r["id"]: r["status"] for r in rows}


def destroy_all(stack, client, access_key):
    """Destroy every live session of the keypair and wait until none is transient."""
    deadline = time.monotonic() + 60
    while True:
        rows = faultlib.pg_json(stack, "SELECT name, status FROM registry.sessions WHERE access_key = "
                                       f"'{access_key}' AND status NOT IN "
                                       "('TERMINATED', 'CANCELLED', 'ERROR', 'TERMINATING')")
        if not rows:
            break
        for r in rows:
            client.delete(f"/session/{r['name']}")
        assert time.monotonic() < deadline, f"sessions not destroyed: {rows}"
        time.sleep(1)
    left = faultlib.settle(stack, 90)
    assert not left, f"sessions stuck in a transient status: {left}"


class Recording(bai_signer.Client):
    """A signed client (a new connection per request) whose every request is
    recorded with its start and end (monotonic), while self.rows is a list."""

    rows = None
    lock = threading.Lock()

    def request(self, method, path, json=None, params=None, headers=None, timeout=None):
        t0 = time.monotonic()
        try:
            r = super().request(method, path, json=json, params=params, headers=headers,
                                timeout=timeout or REQUEST_TIMEOUT_S)
            status = r.status_code
        except requests.exceptions.RequestException:
            r, status = None, "noanswer"
        record(self.rows, self.lock, f"{method} {path.split('?')[0]}", t0, status)
        return r


def record(rows, lock, what, t0, status):
    if rows is not None:
        with lock:
            rows.append({"what": what, "t0": t0, "t1": time.monotonic(), "status": status})


# ---- the tests ------------------------------------------------------------------------------------

def test_both_instances_serve(stack):
    for svc in REPLICATED:
        names = [f"{svc}@1", f"{svc}@2"]
        for n in names:
            r = requests.get(url_of(stack, n) + "/readyz", timeout=10)
            assert r.status_code == 200, f"{n}: {r.text}"
        before = {n: served(stack, n) for n in names}
        fresh_gets(stack[f"TESSERA_{svc.upper()}_URL"] + "/healthz")
        for n in names:
            assert served(stack, n) > before[n] + 1, f"no request of the shared address reached {n}"
    # the sessions group shares its partitions out (a rebalance after each join)
    for n in ("scheduler@1", "scheduler@2"):
        wait_until(lambda: metric(url_of(stack, n), "tessera_scheduler_sessions_partitions_assigned") == 1,
                   30, message=f"{n} to hold partitions of tessera.session.v1")


def test_a_waiting_create_is_answered_when_the_session_runs(stack, tenant, image):
    client, _ = tenant
    # the first create pulls the image: not timed
    r = client.post("/session", {"image": image, "name": f"rp-warm-{TAG}", "maxWaitSeconds": 60,
                                 "config": {"resources": SMALL}}, timeout=90)
    assert r.status_code == 201 and r.json()["status"] == "RUNNING", r.text
    slow = []
    for i in range(8):
        t0 = time.monotonic()
        r = client.post("/session", {"image": image, "name": f"rp-wait-{TAG}-{i}", "maxWaitSeconds": 30,
                                     "config": {"resources": SMALL}}, timeout=60)
        took = time.monotonic() - t0
        assert r.status_code == 201, r.text
        if r.json()["status"] != "RUNNING" or took > WAIT_BOUND_S:
            slow.append(f"{r.json()['sessionId'] if 'sessionId' in r.json() else i}: "
                        f"{r.json()['status']} after {took:.1f} s")
    assert not slow, f"waiting creates not answered when RUNNING (bound {WAIT_BOUND_S} s): {slow}"
    destroy_all(stack, client, client.access_key)


def test_idle_reclamation_ends_a_session_once(stack, admin, image):
    """Both registries sweep the idle deadlines (docs/sessions.md, "Idle
    reclamation"): an idle session is terminated once (one TERMINATING in
    its history, one reclaim counted over both instances), with its reason."""
    client = faultlib.new_tenant(admin, None, "rp-idle", make_client=bai_signer.Client)
    uname = f"rp-idle-{TAG}"
    faultlib.okj(admin.post("/admin/keypair-resource-policies",
                            {"name": uname, "idle_timeout": 5}), 200, 201)
    faultlib.okj(admin.patch(f"/admin/keypairs/{client.access_key}", {"resource_policy": uname}))
    urls = [url_of(stack, "registry@1"), url_of(stack, "registry@2")]
    before = sum(metric(url, "tessera_registry_idle_reclaimed_total", 'checker="network_timeout"')
                 for url in urls)
    r = client.post("/session", {"image": image, "name": uname, "maxWaitSeconds": 60,
                                 "config": {"resources": SMALL}}, timeout=90)
    assert r.status_code == 201 and r.json()["status"] == "RUNNING", r.text
    sid = r.json()["sessionUuid"]
    wait_until(lambda: client.get(f"/session/{sid}").json()["status"] == "TERMINATED", timeout=60,
               message="the idle session to be reclaimed")
    info = client.get(f"/session/{sid}").json()
    assert "idle: no app traffic or exec for 5 s" in info["statusInfo"], info
    rows = client.get(f"/session/{sid}/history").json()["items"]
    assert [r["status"] for r in rows].count("TERMINATING") == 1, rows
    after = sum(metric(url, "tessera_registry_idle_reclaimed_total", 'checker="network_timeout"')
                for url in urls)
    assert after == before + 1


def test_pending_sessions_move_to_the_surviving_scheduler(stack, tenant, image):
    client, _ = tenant
    redis = faultlib.Redis(stack["TESSERA_REDIS_URL"])
    agent = redis.hgetall("agent:" + faultlib.pg_json(stack, "SELECT id FROM registry.agents")[0]["id"])
    free_cpu = (int(agent["cap:cpu"]) - int(agent.get("used:cpu", 0))) / 1000
    r = client.post("/session", {"image": image, "name": f"rp-hog-{TAG}", "maxWaitSeconds": 60,
                                 "config": {"resources": {"cpu": f"{free_cpu:g}", "mem": "32m"}}},
                    timeout=90)
    assert r.status_code == 201 and r.json()["status"] == "RUNNING", r.text
    s1, s2 = url_of(stack, "scheduler@1"), url_of(stack, "scheduler@2")
    pending = {}
    for i in range(16):  # until each scheduler has some in its queue
        name = f"rp-pend-{TAG}-{i}"
        r = client.post("/session", {"image": image, "name": name, "enqueueOnly": True,
                                     "config": {"resources": SMALL}})
        assert r.status_code == 201, r.text
        pending[name] = r.json()["sessionUuid"]
        time.sleep(0.3)
        if (i >= 3 and metric(s1, "tessera_scheduler_pending_sessions") >= 1
                and metric(s2, "tessera_scheduler_pending_sessions") >= 1):
            break
    on_1 = metric(s1, "tessera_scheduler_pending_sessions")
    assert on_1 >= 1 and metric(s2, "tessera_scheduler_pending_sessions") >= 1
    assert set(statuses(stack, pending.values()).values()) == {"PENDING"}
    taken_before = metric(s2, "tessera_scheduler_taken_over_total")
    # their offsets committed (auto commit, every second): scheduler@2 is not
    # handed their SessionEnqueued again, it must take them from Redis
    time.sleep(2.5)
    kill9(stack, "scheduler@1")
    try:
        assert client.delete(f"/session/rp-hog-{TAG}").status_code in (200, 204)
        # scheduler@1 stays dead: scheduler@2 must place every one of them
        wait_until(lambda: set(statuses(stack, pending.values()).values()) == {"RUNNING"},
                   TAKEOVER_S, interval=0.5,
                   message="the pending sessions to run with scheduler@1 dead")
        assert metric(s2, "tessera_scheduler_taken_over_total") >= taken_before + on_1
    finally:
        restart(stack, "scheduler@1")
    # it rejoins: partitions again, and it takes new sessions' events
    wait_until(lambda: metric(s1, "tessera_scheduler_sessions_partitions_assigned") == 1, 30,
               message="the restarted scheduler@1 to get partitions")
    wait_until(lambda: "sessions partitions assigned" in open(
        os.path.join(stack["TESSERA_STATE_DIR"], "logs", "scheduler@1.log"), encoding="utf-8").read()
        .rsplit("restarting (deploy/dev/restart.sh)", 1)[-1], 10)
    destroy_all(stack, client, client.access_key)
    problems = faultlib.converge(lambda: faultlib.check_drift(stack))
    assert not problems, problems


@pytest.fixture(scope="module")
def resident(stack, tenant, image):
    """A session whose app (busybox httpd on the image's echo port) was opened
    through wsproxy: its link (with the token), the app's address without
    it, and the cookie the token got."""
    client, _ = tenant
    try:
        res = faultlib.Resident(client, image, f"rp-resident-{TAG}")
    except faultlib.SetupError as e:
        pytest.fail(str(e), pytrace=False)
    r = requests.get(res.url, timeout=10, allow_redirects=False)
    cookie = r.headers["Set-Cookie"].split(";", 1)[0]
    name, value = cookie.split("=", 1)
    assert name.startswith("tessera_app_"), r.headers
    return {"link": res.url, "base": res.url.split("?", 1)[0], "cookie": {name: value}, "res": res}


@pytest.fixture(scope="module")
def console(stack, tenant):
    """The tenant logged in to the console: its cookie and CSRF token."""
    r = requests.post(stack["TESSERA_GATEWAY_URL"] + "/server/login",
                      json={"username": tenant[1], "password": faultlib.TENANT_PASSWORD}, timeout=10)
    assert r.status_code == 200, r.text
    return {"cookies": {"tessera_sid": r.cookies["tessera_sid"]},
            "headers": {"X-CSRF-Token": r.json()["csrf_token"]}}


class Load:
    """Two threads creating sessions (every other one waiting for RUNNING),
    reading each a few times and destroying it; one opening the app (by
    cookie, every fourth time by the link's token), one using the console's
    login; each request on a new connection, recorded."""

    def __init__(self, stack, client, image, resident, console):
        self.stack, self.client, self.image = stack, client, image
        self.resident, self.console = resident, console
        self.rows, self.lock = [], threading.Lock()
        client.rows, client.lock = self.rows, self.lock
        self.stop_ev = threading.Event()
        self.created, self.destroyed, self.n = {}, set(), 0
        self.threads = [threading.Thread(target=self._creates, args=(i,), daemon=True) for i in range(2)]
        self.threads += [threading.Thread(target=self._apps, daemon=True),
                         threading.Thread(target=self._console, daemon=True)]

    def start(self):
        for t in self.threads:
            t.start()

    def stop(self):
        self.stop_ev.set()
        for t in self.threads:
            t.join(REQUEST_TIMEOUT_S * 3)
        self.client.rows = None

    def _creates(self, seed):
        c = self.client
        while not self.stop_ev.is_set():
            with self.lock:
                self.n += 1
                n = self.n
            name = f"rp-load-{TAG}-{n}"
            body = {"image": self.image, "name": name, "config": {"resources": SMALL}}
            if n % 2:
                body["maxWaitSeconds"] = 15
            else:
                body["enqueueOnly"] = True
            r = c.post("/session", body)
            if r is None or r.status_code != 201:
                self.stop_ev.wait(0.5)
                continue
            with self.lock:
                self.created[name] = r.json()["sessionUuid"]
            end = time.monotonic() + 1.5 + (n + seed) % 3 * 0.7
            while time.monotonic() < end and not self.stop_ev.is_set():
                c.get(f"/session/{name}")
                self.stop_ev.wait(0.7)
            self.destroy(name)

    def destroy(self, name):
        r = self.client.delete(f"/session/{name}")
        if r is not None and (200 <= r.status_code < 300 or r.status_code == 404):
            with self.lock:
                self.destroyed.add(name)

    def _apps(self):
        i = 0
        while not self.stop_ev.is_set():
            i += 1
            t0 = time.monotonic()
            by_token = i % 4 == 0
            try:
                if by_token:
                    r = requests.get(self.resident["link"], timeout=REQUEST_TIMEOUT_S)
                else:
                    r = requests.get(self.resident["base"], cookies=self.resident["cookie"],
                                     timeout=REQUEST_TIMEOUT_S)
                status = r.status_code if faultlib.PAGE in r.text else f"{r.status_code} (not the app)"
            except requests.exceptions.RequestException:
                status = "noanswer"
            record(self.rows, self.lock, "app by token" if by_token else "app by cookie", t0, status)
            self.stop_ev.wait(0.25)

    def _console(self):
        url = self.stack["TESSERA_GATEWAY_URL"] + "/func/folders"
        while not self.stop_ev.is_set():
            t0 = time.monotonic()
            try:
                r = requests.get(url, timeout=REQUEST_TIMEOUT_S, **self.console)
                status = r.status_code
            except requests.exceptions.RequestException:
                status = "noanswer"
            record(self.rows, self.lock, "console GET /func/folders", t0, status)
            self.stop_ev.wait(0.5)

    def destroy_rest(self):
        deadline = time.monotonic() + 60
        while True:
            rest = [n for n in self.created if n not in self.destroyed]
            for n in rest:
                self.destroy(n)
            if all(n in self.destroyed for n in rest) or time.monotonic() >= deadline:
                return [n for n in rest if n not in self.destroyed]
            time.sleep(1)


def expected(row):
    what = row["what"]
    if what == "POST /session":
        return {201}
    if what.startswith("DELETE"):
        return {200, 204, 404}
    return {200}


def test_kill_one_instance_of_each_during_load(stack, tenant, image, resident, console):
    client, _ = tenant
    load = Load(stack, client, image, resident, console)
    load.start()
    kills, restarted = [], {}
    try:
        time.sleep(WARM_S)
        for svc in REPLICATED:
            kills.append(kill9(stack, f"{svc}@1"))
        # the group evicts the dead members (the bus's session timeout) and
        # the survivors take their partitions: scheduler@2 all of them
        wait_until(lambda: metric(url_of(stack, "scheduler@2"), "tessera_scheduler_sessions_partitions")
                   == PARTITIONS, TAKEOVER_S, interval=0.5,
                   message="scheduler@2 to take every partition")
        time.sleep(DOWN_AFTER_TAKEOVER_S)
        t_restart = time.monotonic()

        def start(name):
            try:
                restart(stack, name)
                restarted[name] = True
            except AssertionError as e:
                restarted[name] = str(e)
        ts = [threading.Thread(target=start, args=(f"{svc}@1",)) for svc in REPLICATED]
        for t in ts:
            t.start()
        for t in ts:
            t.join(200)
        time.sleep(AFTER_S)
    finally:
        load.stop()
    assert all(v is True for v in restarted.values()) and len(restarted) == 4, restarted

    # the requests: only those in flight at a kill may have failed
    bad, in_flight_failed = [], []
    for r in load.rows:
        if r["status"] in expected(r):
            continue
        if any(r["t0"] <= tk + KILL_GRACE_S and r["t1"] >= tk for tk in kills) \
                and r["status"] in TRANSIENT_FAILURES:
            in_flight_failed.append(r)
            continue
        bad.append(f"{r['what']} -> {r['status']} (sent {r['t0'] - kills[0]:+.1f} s from the kill, "
                   f"took {r['t1'] - r['t0']:.1f} s)")
    assert not bad, f"{len(bad)} requests failed that were not in flight at a kill: " + "; ".join(bad[:8])
    down = [r for r in load.rows if kills[-1] + 1 < r["t0"] < t_restart]
    for kind in ("app by cookie", "app by token", "console GET /func/folders", "POST /session"):
        n_ok = sum(1 for r in down if r["what"] == kind and r["status"] in expected(r))
        assert n_ok >= 2, f"{kind}: {n_ok} answered while the killed instances were down"
    assert len(load.created) >= 6, f"only {len(load.created)} sessions created"

    # the sessions: every one answered 201 runs or was cancelled before it ran;
    # those of requests in flight (created but unanswered) are destroyed too
    left = load.destroy_rest()
    assert not left, f"destroys never answered: {left}"
    rows = faultlib.pg_json(stack, "SELECT id::text AS id, name, status, status_info FROM "
                                   f"registry.sessions WHERE access_key = '{client.access_key}'")
    for r in rows:
        if r["name"] not in load.created and r["name"] != resident["res"].name and \
                r["status"] not in faultlib.ENDED:
            client.delete(f"/session/{r['name']}")
    stuck = faultlib.settle(stack, 90)
    assert not stuck, f"sessions stuck in a transient status: {stuck}"
    ran = {x["id"] for x in faultlib.pg_json(
        stack, "SELECT DISTINCT session_id::text AS id FROM registry.session_status_history "
               "WHERE status = 'RUNNING'")}
    by_id = {r["id"]: r for r in faultlib.pg_json(
        stack, "SELECT id::text AS id, status, status_info FROM registry.sessions "
               f"WHERE access_key = '{client.access_key}'")}
    lost = []
    for name, sid in load.created.items():
        r = by_id.get(sid)
        if r is None:
            lost.append(f"{name}: created (201), unknown to PostgreSQL")
        elif r["status"] == "ERROR" or (sid not in ran and r["status"] != "CANCELLED" and not (
                # destroyed by the load before it ran (a busy machine: still PREPARING)
                name in load.destroyed and r["status"] == "TERMINATED"
                and r["status_info"] == "user-requested")):
            lost.append(f"{name}: {r['status']} ({r['status_info']})")
    assert not lost, lost
    assert sum(1 for sid in load.created.values() if sid in ran) >= 3
    problems = faultlib.check_lost(stack, client.access_key, {}, [resident["res"]])
    assert not problems, problems
    drift = faultlib.converge(lambda: faultlib.check_drift(stack))
    assert not drift, drift
    bad_c, missing = faultlib.converge(lambda: faultlib.check_containers(stack))
    assert not bad_c and not missing, (bad_c, missing)
    n_in_flight = sum(1 for r in load.rows if any(r["t0"] <= tk + KILL_GRACE_S and r["t1"] >= tk for tk in kills))
    print(f"\nreplicas: {len(load.rows)} requests, {n_in_flight} in flight at a kill, "
          f"{len(in_flight_failed)} of them failed, "
          f"{len(load.created)} sessions created")


def test_restarted_instances_rejoin(stack, tenant, resident):
    for svc in REPLICATED:
        n = f"{svc}@1"
        assert requests.get(url_of(stack, n) + "/readyz", timeout=10).status_code == 200, n
        before = served(stack, n)
        fresh_gets(stack[f"TESSERA_{svc.upper()}_URL"] + "/healthz")
        assert served(stack, n) > before + 1, f"the restarted {n} gets no share of its address"
    for n in ("scheduler@1", "scheduler@2"):
        assert metric(url_of(stack, n), "tessera_scheduler_sessions_partitions_assigned") == 1, n
    # the app, with the cookie from before the kill, through both wsproxies
    counts = {n: metric(url_of(stack, n), "tessera_wsproxy_requests_total")
              for n in ("wsproxy@1", "wsproxy@2")}
    for _ in range(24):
        r = requests.get(resident["base"], cookies=resident["cookie"], timeout=10)
        assert r.status_code == 200 and faultlib.PAGE in r.text, r.text
    for n, c in counts.items():
        assert metric(url_of(stack, n), "tessera_wsproxy_requests_total") > c, n
    client, _ = tenant
    destroy_all(stack, client, client.access_key)
