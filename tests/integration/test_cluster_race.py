"""Cluster sessions racing for capacity that fits half of them, on a stack of
three nodes of its own (TESSERA_DEV_NODES=3) whose agents offer little:
TESSERA_DEV_AGENT_CPU limits each agent to PER_AGENT kernels of KCPU
(memory does not bind). SESSIONS multi-node sessions of two kernels
(TESSERA_RACE_SESSIONS, default 30; docs/testing.md for the slow run with
200) are created at once from 16 threads; the three agents hold
3 * PER_AGENT kernels, so FIT = 3 * PER_AGENT // 2 sessions fit, half.
The stack runs two schedulers (TESSERA_RACE_REPLICAS, default 2: two
instances of gateway, registry, scheduler and wsproxy), so the sessions are
spread over two schedulers racing for the same room in Redis.

While they race, three threads look again and again, and at every look:

- Redis (one atomic snapshot by a Lua script): per agent `used:<slot>` <=
  `cap:<slot>` (the capacity the agents were given) and equal to the sum
  of its `alloc:` records; `sess:<id>` equal to the session's `alloc:`
  records, which are all its kernels or none;
- PostgreSQL (one statement): per agent the slots of the kernels holding
  slots there <= its capacity; a session's kernels hold slots all or none
  and have an agent all or none;
- runc (each node's containers by their bundle dir): per node at most
  PER_AGENT.

Once settled: exactly FIT sessions RUNNING with both kernels running in a
container on their agent's node, the others PENDING with no kernel placed or
holding slots, nothing of them in Redis and no container (no partial
reservation), Redis and PostgreSQL agreeing. The running ones are destroyed:
the pending ones take their room, the same checks holding all along (while
sessions end, a session may hold part of its kernels). At the end all are
destroyed: no container, no `alloc:` or `sess:` record, every `used:` zero.
About 45 s with the stack's start at the default size; root."""
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import threading
import time
import uuid

import pytest
import requests

import suitekit
from conftest import REPO, dev_stack, wait_until
from test_sessions_api import admin, gw, okj  # noqa: F401

# after tests/integration (tests/faults has a conftest.py of its own)
sys.path.append(os.path.join(REPO, "tests", "faults"))
import faultlib  # noqa: E402

TAG = uuid.uuid4().hex[:6]
NODES = 3
SESSIONS = int(os.environ.get("TESSERA_RACE_SESSIONS", "30"))
REPLICAS = int(os.environ.get("TESSERA_RACE_REPLICAS", "2"))
PER_AGENT = -(-SESSIONS // NODES)  # kernels an agent holds: 2 * SESSIONS / 2 over 3 agents
FIT = NODES * PER_AGENT // 2
KCPU, KCPU_Q = "0.5", 500  # a kernel's cpu, and in the slot's quantum (0.001 core)
KMEM = 64 << 20
AGENT_CPU_Q = PER_AGENT * KCPU_Q
AGENT_MEM = 4 * PER_AGENT * KMEM  # ample: cpu is what binds
# sessions left transient longer than this fail the test (a loaded 2-core
# machine starts about two kernels a second on each node)
SETTLE_S = 60 + SESSIONS
ENV = {"TESSERA_DEV_NODES": str(NODES),
       "TESSERA_DEV_REPLICAS": str(REPLICAS),
       "TESSERA_DEV_AGENT_CPU": f"{AGENT_CPU_Q / 1000:g}",
       "TESSERA_DEV_AGENT_MEM": str(AGENT_MEM),
       # no per-kernel disk (a loop device and mkfs each): not what is tested
       "TESSERA_AGENT_ROOTFS_SIZE": "0",
       "TESSERA_AGENT_HEARTBEAT_INTERVAL": "2s",
       # another instance's placements and releases are seen within this
       "TESSERA_SCHEDULER_RESYNC_INTERVAL": "2s",
       # the creates of this test arrive at once
       "TESSERA_REGISTRY_MAX_WAITING_CREATES": "64",
       "TESSERA_DEV_TIMEOUT": "120"}
HOLDING = ("SCHEDULED", "PREPARING", "PULLING", "RUNNING", "RESTARTING", "TERMINATING")
ENDED = ("TERMINATED", "CANCELLED", "ERROR")

# One atomic look at Redis's occupancy (docs/scheduler.md, "Redis layout"):
# every agent:<id> hash, every alloc:<kernel> and every sess:<session>.
SNAPSHOT_LUA = """
local function all(pattern, kind)
  local out = {}
  for _, k in ipairs(redis.call('KEYS', pattern)) do
    if redis.call('TYPE', k).ok == kind then
      out[#out + 1] = k
      if kind == 'hash' then out[#out + 1] = redis.call('HGETALL', k)
      else out[#out + 1] = redis.call('GET', k) end
    end
  end
  return out
end
return {all('agent:*', 'hash'), all('alloc:*', 'hash'), all('sess:*', 'string')}
"""


@pytest.fixture(scope="module")
def stack():
    with dev_stack("tessera-race-", **ENV) as env:
        yield env


def wait_agents(stack, admin):  # noqa: F811
    """Until the three agents are ALIVE in the registry with their capacity,
    and Redis has it (the registry learns of an agent from its events, a
    moment after dev-up found it ready)."""
    def ready():
        agents = {a["id"]: a for a in okj(admin.get("/admin/agents"))["items"]}
        redis = redis_look(stack)[0]
        return all(agents.get(f"node{k}", {}).get("status") == "ALIVE"
                   and int(redis.get(f"node{k}", {}).get("cap:cpu", -1)) == AGENT_CPU_Q
                   for k in range(1, NODES + 1))
    wait_until(ready, timeout=30, interval=0.5, message="the three agents ALIVE, their capacity in Redis")


@pytest.fixture(scope="module")
def image(stack, admin):  # noqa: F811
    """The busybox test image (minimum slots below a kernel's), and room
    in the superadmin's policy for every session at once."""
    wait_agents(stack, admin)
    out = os.path.join(stack["TESSERA_STATE_DIR"], "race-image")
    try:
        # no service ports but the terminal's: a node's pool of 100 host
        # ports then holds 100 kernels, not 33 (each app takes one)
        ref = suitekit.push_busybox_image(stack, out, "tessera/race", TAG, "race",
                                          labels=["ai.backend.service-ports="])
    except RuntimeError as e:
        pytest.fail(str(e), pytrace=False)
    okj(admin.post("/admin/images", {"reference": ref}), 200, 201)
    okj(admin.patch("/admin/keypair-resource-policies/default",
                    {"max_containers_per_session": 2, "max_concurrent_sessions": 0,
                     "max_pending_session_count": 1000, "total_resource_slots": {}}))
    return ref


def _pairs(flat):
    return dict(zip(flat[0::2], flat[1::2]))


class Psql:
    """One psql process kept open: a query's rows as dicts in milliseconds
    (a psql per query costs some 50 ms of a 2-core machine's time). Each
    statement runs alone, so it reads one snapshot."""

    def __init__(self, stack):
        self.p = subprocess.Popen(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=0"],
                                  env=faultlib.pg_env(stack), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def rows(self, sql):
        self.p.stdin.write(f"SELECT coalesce(json_agg(t), '[]'::json) FROM ({sql}) t;\n\\echo __end__\n")
        self.p.stdin.flush()
        out = []
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("psql exited: " + "".join(out))
            if line.strip() == "__end__":
                break
            out.append(line)
        text = "".join(out)
        try:
            return json.loads(text)
        except ValueError:
            raise RuntimeError(f"psql: {text.strip()}") from None

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=10)


def redis_look(stack):
    """(agent id -> its hash, kernel -> its alloc: hash, session -> sess:),
    read at once."""
    r = faultlib.Redis(stack["TESSERA_REDIS_URL"])
    agents, allocs, sess = r.cmd("EVAL", SNAPSHOT_LUA, 0)
    return ({k[len("agent:"):]: _pairs(v) for k, v in _pairs(agents).items()},
            {k[len("alloc:"):]: _pairs(v) for k, v in _pairs(allocs).items()},
            {k[len("sess:"):]: int(v) for k, v in _pairs(sess).items()})


KERNELS_SQL = ("SELECT k.id::text AS id, s.id::text AS sid, s.name, s.status AS sstatus, "
               "k.status, k.agent_id, k.slots, k.holds_slots FROM registry.kernels k "
               "JOIN registry.sessions s ON s.id = k.session_id WHERE s.name LIKE 'race-{tag}-%'")
# the kernels and the agents' capacity in one statement: one snapshot
PG_SQL = ("SELECT (SELECT coalesce(json_agg(k), '[]'::json) FROM (" + KERNELS_SQL + ") k) AS kernels, "
          "(SELECT json_object_agg(id, slots) FROM registry.agents) AS agents")


def pg_look(psql):
    row = psql.rows(PG_SQL.format(tag=TAG))[0]
    return row["kernels"], row["agents"] or {}


def kernel_user_keys(uid=100000):
    """Keys charged to the host user kernels run as (/proc/key-users)."""
    with open("/proc/key-users", encoding="ascii") as f:
        for line in f:
            w = line.split()
            if w and w[0] == f"{uid}:":
                return int(w[3].split("/")[0])
    return 0


def node_containers(stack):
    """node k -> {container id: status} of this stack's runc containers
    whose bundle is in node k's agent state dir."""
    out = {k: {} for k in range(1, NODES + 1)}
    for c in faultlib.runc_list():
        for k in out:
            if (c.get("bundle") or "").startswith(os.path.join(stack["TESSERA_STATE_DIR"], f"node{k}") + "/"):
                out[k][c["id"]] = c.get("status", "")
    return out


def redis_violations(look, whole):
    """Over-commit in Redis, used: apart from its alloc: records, sess: apart
    from them, and (whole: while no session ends) a session reserved in part."""
    agents, allocs, sess = look
    bad = []
    for k in range(1, NODES + 1):
        agent = f"node{k}"
        h = agents.get(agent)
        if h is None:
            bad.append(f"agent:{agent} missing in Redis")
            continue
        cap = {s[4:]: int(v) for s, v in h.items() if s.startswith("cap:")}
        used = {s[5:]: int(v) for s, v in h.items() if s.startswith("used:")}
        if cap.get("cpu") != AGENT_CPU_Q or cap.get("mem") != AGENT_MEM:
            bad.append(f"agent:{agent} capacity {cap}, not cpu={AGENT_CPU_Q} mem={AGENT_MEM}")
        for s, v in used.items():
            if v > cap.get(s, 0):
                bad.append(f"Redis: agent:{agent} used:{s}={v} > cap:{s}={cap.get(s, 0)}")
        sums = {}
        for a in allocs.values():
            if a.get("agent") == agent:
                for s, v in faultlib.parse_slots(a.get("slots")).items():
                    sums[s] = sums.get(s, 0) + v
        for s in set(sums) | set(used):
            if sums.get(s, 0) != used.get(s, 0):
                bad.append(f"Redis: agent:{agent} used:{s}={used.get(s, 0)}, its alloc: records {sums.get(s, 0)}")
    per_session = {}
    for kid, a in allocs.items():
        per_session.setdefault(a.get("session"), []).append(kid)
    for sid in set(per_session) | set(sess):
        n = len(per_session.get(sid, []))
        if sess.get(sid, 0) != n:
            bad.append(f"Redis: sess:{sid} = {sess.get(sid, 0)}, alloc: records {n}")
        if whole and n not in (0, 2):
            bad.append(f"Redis: session {sid} has alloc: records for {n} of its 2 kernels")
    return bad


def pg_violations(look, whole):
    """Per agent, the kernels holding slots there hold at most its
    capacity; (whole) a session's kernels hold slots and have an agent all
    or none."""
    kernels, agents = look
    bad = []
    for k in range(1, NODES + 1):
        agent = f"node{k}"
        cap = {s: faultlib.quanta(s, v) for s, v in (agents.get(agent) or {}).items()}
        if cap.get("cpu") != AGENT_CPU_Q:
            bad.append(f"PostgreSQL: agent {agent} offers {cap}, not cpu={AGENT_CPU_Q}")
        held = {}
        for kr in kernels:
            if kr["holds_slots"] and kr["agent_id"] == agent:
                for s, v in (kr["slots"] or {}).items():
                    held[s] = held.get(s, 0) + faultlib.quanta(s, v)
        for s, v in held.items():
            if v > cap.get(s, 0):
                bad.append(f"PostgreSQL: the kernels holding slots on {agent} hold {s}={v} > {cap.get(s, 0)}")
    if whole:
        by_sid = {}
        for kr in kernels:
            by_sid.setdefault(kr["sid"], []).append(kr)
        for rows in by_sid.values():
            holding = sum(1 for r in rows if r["holds_slots"])
            placed = sum(1 for r in rows if r["agent_id"])
            if holding not in (0, len(rows)) or placed not in (0, len(rows)):
                bad.append(f"PostgreSQL: {rows[0]['name']} ({rows[0]['sstatus']}): {holding} of {len(rows)} "
                           f"kernels hold slots, {placed} have an agent")
    return bad


def container_violations(containers):
    return [f"node{k} has {len(c)} containers, room for {PER_AGENT}: {sorted(c)}"
            for k, c in containers.items() if len(c) > PER_AGENT]


class Sampler:
    """Three threads look again and again, each as fast as it can: Redis,
    PostgreSQL, runc; every violation kept. `whole`: no session ends
    meanwhile, so none may hold part of its kernels."""

    def __init__(self, stack):
        self.stack = stack
        self.whole = True
        self.samples = {"redis": 0, "pg": 0, "runc": 0}
        self.bad = []
        self.errors = []
        self.most = {}  # node -> the most kernels Redis had on it
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._loop, args=(w,), daemon=True)
                         for w in self.samples]

    def _note(self, who, bad):
        with self._lock:
            self.samples[who] += 1
            for b in bad:
                if len(self.bad) < 50:
                    self.bad.append(f"{who} sample {self.samples[who]}: {b}")

    def _loop(self, who):
        psql = Psql(self.stack) if who == "pg" else None
        try:
            while not self._stop.is_set():
                whole = self.whole  # read before the look: a session may end after it
                try:
                    if who == "redis":
                        look = redis_look(self.stack)
                        for k in range(1, NODES + 1):
                            used = int(look[0].get(f"node{k}", {}).get("used:cpu", 0)) // KCPU_Q
                            self.most[k] = max(self.most.get(k, 0), used)
                        self._note(who, redis_violations(look, whole))
                    elif who == "pg":
                        self._note(who, pg_violations(pg_look(psql), whole))
                    else:
                        self._note(who, container_violations(node_containers(self.stack)))
                except Exception as e:  # noqa: BLE001 - kept, reported if nothing was sampled
                    self.errors.append(f"{who}: {e!r}")
                    time.sleep(0.2)
                time.sleep(0.005)
        finally:
            if psql:
                psql.close()

    def partial_allowed(self):
        """From now on a session may hold part of its kernels (one that
        ends); returns once each thread has looked with that in mind."""
        self.whole = False
        seen = dict(self.samples)
        wait_until(lambda: all(self.samples[w] >= seen[w] + 2 for w in seen), timeout=30,
                   interval=0.02, message=f"the samplers: {self.errors[-3:]}")

    def __enter__(self):
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        for t in self._threads:
            t.join(timeout=60)

    def check(self, at_least=3):
        assert not self.bad, "\n".join(self.bad)
        assert min(self.samples.values()) >= at_least, (self.samples, self.errors[:3])

    def __str__(self):
        return (", ".join(f"{n} {w}" for w, n in self.samples.items()) + " samples"
                + (f" ({len(self.errors)} failed)" if self.errors else ""))


def scheduler_counts(stack):
    """Per scheduler instance: sessions it reserved, and reservations Redis
    refused it (another instance took the room first)."""
    urls = ([stack[f"TESSERA_SCHEDULER_{k}_URL"] for k in range(1, REPLICAS + 1)] if REPLICAS > 1
            else [stack["TESSERA_SCHEDULER_URL"]])
    out = []
    for url in urls:
        text = requests.get(url + "/metrics", timeout=10).text
        got = {}
        for line in text.splitlines():
            for name in ("scheduled", "reservations_refused"):
                if line.startswith(f"tessera_scheduler_{name}_total "):
                    got[name] = int(float(line.split()[-1]))
        out.append(got)
    return out


def statuses(stack):
    rows = faultlib.pg_json(stack, "SELECT name, status, status_info FROM registry.sessions "
                                   f"WHERE name LIKE 'race-{TAG}-%'")
    return {r["name"]: r for r in rows}


class Settled:
    """Callable for wait_until: the statuses once `running` of names are
    RUNNING and `pending` PENDING, nothing in between; str() says what was
    last seen (and an ended session's reason)."""

    def __init__(self, stack, running, pending, names):
        self.stack, self.names = stack, names
        self.want = {k: v for k, v in (("RUNNING", running), ("PENDING", pending)) if v}
        self.count, self.ended = {}, ""

    def __call__(self):
        st = statuses(self.stack)
        self.count = {}
        for n in self.names:
            s = st[n]["status"]
            self.count[s] = self.count.get(s, 0) + 1
            if s in ENDED and not self.ended:
                self.ended = f"; {n} {s}: {st[n]['status_info']}"
        return st if self.count == self.want else None

    def __str__(self):
        return f"sessions {self.want}, last seen {self.count}{self.ended}"


def create_all(admin, image, names):  # noqa: F811
    def one(name):
        body = {"image": image, "name": name, "enqueueOnly": True,
                "cluster_size": 2, "cluster_mode": "multi-node",
                "config": {"resources": {"cpu": KCPU, "mem": str(KMEM)}}}
        r = admin.post("/session", body, timeout=60)
        return name, r.status_code, r.text
    with cf.ThreadPoolExecutor(16) as ex:
        got = list(ex.map(one, names))
    bad = [g for g in got if g[1] != 201]
    assert not bad, bad[:5]


def destroy_all(admin, names):  # noqa: F811
    def one(name):
        r = admin.delete(f"/session/{name}", timeout=60)
        return name, r.status_code, r.text
    with cf.ThreadPoolExecutor(16) as ex:
        got = list(ex.map(one, names))
    bad = [g for g in got if g[1] not in (200, 204)]
    assert not bad, bad[:5]


def check_settled(stack, names):
    """Each of names RUNNING with both kernels placed, holding slots in
    PostgreSQL and Redis and running in a container on their agent's node,
    or PENDING with nothing anywhere (no agent, no slots held, no alloc: or
    sess: record, no container); Redis and PostgreSQL agree, every
    container is a live kernel's."""
    redis = redis_look(stack)
    psql = Psql(stack)
    try:
        pg = pg_look(psql)
    finally:
        psql.close()
    containers = node_containers(stack)
    bad = redis_violations(redis, True) + pg_violations(pg, True) + container_violations(containers)
    assert not bad, bad
    _, allocs, sess = redis
    where = {cid: k for k, cs in containers.items() for cid in cs}
    by_name = {}
    for r in pg[0]:
        by_name.setdefault(r["name"], []).append(r)
    for name in names:
        rows = by_name.get(name, [])
        assert len(rows) == 2, (name, rows)
        if rows[0]["sstatus"] == "RUNNING":
            for r in rows:
                assert r["holds_slots"] and r["agent_id"] and r["status"] == "RUNNING", r
                assert allocs.get(r["id"], {}).get("agent") == r["agent_id"], (r, allocs.get(r["id"]))
                assert f"node{where.get(r['id'])}" == r["agent_id"], (
                    f"{name}: kernel {r['id']} on {r['agent_id']}, its container on node{where.get(r['id'])}")
        else:
            assert rows[0]["sstatus"] == "PENDING", rows
            for r in rows:
                assert not r["holds_slots"] and not r["agent_id"], f"a pending session's kernel placed: {r}"
                assert r["id"] not in allocs and r["id"] not in where, r
            assert rows[0]["sid"] not in sess, f"sess:{rows[0]['sid']} of pending {name}"
    wait_until(lambda: not faultlib.check_drift(stack), timeout=20, interval=1,
               message=f"Redis and PostgreSQL agree: {faultlib.check_drift(stack)}")
    orphans, missing = faultlib.check_containers(stack, {c: st for cs in node_containers(stack).values()
                                                         for c, st in cs.items()})
    assert not orphans and not missing, (orphans, missing)


def test_the_agents_offer_what_the_stack_was_told(stack, admin):  # noqa: F811
    """TESSERA_DEV_AGENT_CPU / _MEM: every agent's capacity, in the registry
    and in Redis; named in <state>/env and kept in the agents' recorded
    commands (restart.sh replays them)."""
    assert stack["TESSERA_DEV_AGENT_CPU"] == ENV["TESSERA_DEV_AGENT_CPU"]
    assert stack["TESSERA_DEV_AGENT_MEM"] == ENV["TESSERA_DEV_AGENT_MEM"]
    wait_agents(stack, admin)
    look = redis_look(stack)
    for k in range(1, NODES + 1):
        with open(os.path.join(stack["TESSERA_STATE_DIR"], "cmd", f"agent@node{k}"), encoding="utf-8") as f:
            cmd = f.read()
        assert f"TESSERA_AGENT_CPU={ENV['TESSERA_DEV_AGENT_CPU']}" in cmd, cmd
        assert f"TESSERA_AGENT_MEM={AGENT_MEM}" in cmd, cmd
        h = look[0][f"node{k}"]
        assert (int(h["cap:cpu"]), int(h["cap:mem"])) == (AGENT_CPU_Q, AGENT_MEM), h


def test_cluster_sessions_race_for_half_the_room(stack, admin, image):  # noqa: F811
    names = [f"race-{TAG}-{i:03d}" for i in range(SESSIONS)]
    t0 = time.monotonic()
    with Sampler(stack) as sampler:
        create_all(admin, image, names)
        created = time.monotonic() - t0
        first_settled = Settled(stack, FIT, SESSIONS - FIT, names)
        st = wait_until(first_settled, timeout=SETTLE_S, interval=1, message=first_settled)
        placed = time.monotonic() - t0
        time.sleep(2)  # and they stay so
    sampler.check()
    print(f"\n{SESSIONS} sessions of 2 kernels, room for {FIT}: created in {created:.1f} s, "
          f"{FIT} RUNNING after {placed:.1f} s; {sampler}; the most kernels Redis had on each agent "
          f"{sampler.most} (room for {PER_AGENT})")
    assert first_settled(), first_settled
    # kernels get no session keyring each (runc --no-new-keyring): none is
    # charged to the kernels' host user (agent.userns_base, 100000), whose
    # quota (kernel.keys.maxkeys, 200) would otherwise cap a node's kernels
    keys = kernel_user_keys()
    assert keys < 2 * FIT, f"{keys} keys charged to the kernels' user with {2 * FIT} kernels running"
    counts = scheduler_counts(stack)
    print(f"the schedulers: {counts}")
    assert sum(c.get("scheduled", 0) for c in counts) == FIT, counts
    waiting = [n for n in names if st[n]["status"] == "PENDING"]
    first = [n for n in names if st[n]["status"] == "RUNNING"]
    # the pending ones wait for room, saying so
    reasons = {st[n]["status_info"] for n in waiting}
    print(f"the pending sessions' reasons: {sorted(reasons)}")
    assert all(r.startswith("not enough") for r in reasons), reasons
    check_settled(stack, names)

    # the running ones go: the pending ones take their room
    t1 = time.monotonic()
    with Sampler(stack) as sampler:
        sampler.partial_allowed()  # a session ending releases its kernels one by one
        destroy_all(admin, first)
        wait_until(lambda: all(statuses(stack)[n]["status"] in ENDED for n in first), timeout=SETTLE_S,
                   interval=1, message="the first sessions ended")
        sampler.whole = True
        second = Settled(stack, len(waiting), 0, waiting)
        wait_until(second, timeout=SETTLE_S, interval=1, message=second)
    sampler.check()
    print(f"the {len(waiting)} waiting RUNNING {time.monotonic() - t1:.1f} s after the destroys; {sampler}")
    st = statuses(stack)
    assert all(st[n]["status"] == "TERMINATED" for n in first), [st[n] for n in first]
    check_settled(stack, waiting)

    # and everything goes
    with Sampler(stack) as sampler:
        sampler.partial_allowed()
        destroy_all(admin, waiting)
        wait_until(lambda: all(statuses(stack)[n]["status"] in ENDED for n in names), timeout=SETTLE_S,
                   interval=1, message="every session ended")
    sampler.check(at_least=1)

    def left():
        agents, allocs, sess = redis_look(stack)
        out = [f"alloc:{k}" for k in allocs] + [f"sess:{s}" for s in sess]
        out += [f"agent:{a} {s}={v}" for a, h in agents.items()
                for s, v in h.items() if s.startswith("used:") and int(v)]
        out += [f"container {c} on node{k}" for k, cs in node_containers(stack).items() for c in cs]
        return out
    wait_until(lambda: not left(), timeout=30, interval=1, message=f"nothing left: {left()}")
    assert not faultlib.check_drift(stack)
    st = statuses(stack)
    assert all(st[n]["status"] == "TERMINATED" for n in names), [st[n] for n in names if
                                                                 st[n]["status"] != "TERMINATED"]
    print(f"in all {time.monotonic() - t0:.1f} s")
