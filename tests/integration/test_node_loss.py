"""A node's loss and an agent's drain, on a stack of three nodes of its own
(TESSERA_DEV_NODES=3, like test_cluster.py's cluster_stack) with a short
registry.agent_lost_timeout (LOST_S), heartbeats every second, the reconcile
pass every 2 s and the roundrobin placement (docs/operations.md, "Several
hosts": "A node's loss", "Draining a node"; docs/sessions.md, "Agents").

- node 2 disappears (deploy/dev/node.sh down 2: its link down, its agent
  frozen): its sessions end in ERROR naming it within LOST_S + a margin,
  a cluster session with a kernel there ends whole (its kernels on the other
  nodes destroyed: no container anywhere), Redis occupancy and PostgreSQL
  agree, the sessions on nodes 1 and 3 stay RUNNING and execute; the
  gateway's /admin/status shows node 2 as a LOST agent's row;
- node 2 returns (node.sh up 2): ALIVE, empty (the stale containers from
  before its loss destroyed, not re-adopted into the ended sessions), and
  it takes a new session;
- an agent restarted alone (restart.sh agent@node3 --kill: network intact,
  back within LOST_S) re-adopts its kernel;
- node 2 is lost while sessions start there (its link down and its agent
  killed right before the creates): they end in ERROR, the cluster
  session's kernels on the other nodes are destroyed, nothing stays
  PREPARING; when the node returns (its agent started again) nothing of
  them is left there either;
- drain (POST /admin/agents/{id}/drain, the CLI, GraphQL's modify_agent):
  no new placement there (a session pinned to it waits, saying it is
  drained; unpinned ones go elsewhere), its running session goes on;
  undrain places the waiting one; callers and bad input checked.

The cross-node cluster session is a `cluster_mode` multi-node session of
three kernels placed one per node by the roundrobin selector; its kernels do
not need to reach each other here (the overlay between nodes is other
work). A stack of its own: about 2 minutes with its start."""
import os
import subprocess
import sys
import time
import uuid

import pytest

import suitekit
from conftest import REPO, dev_stack, wait_until
from test_cli import base_env, js, ok as cli_ok
from test_sessions_api import _new_user, admin, gw, okj, problem  # noqa: F401

# after tests/integration (tests/faults has a conftest.py of its own)
sys.path.append(os.path.join(REPO, "tests", "faults"))
import faultlib  # noqa: E402

TAG = uuid.uuid4().hex[:6]
LOST_S = 8
MARGIN_S = 12  # the lost check runs every second; a loaded 2-core machine
NODE_SH = os.path.join(REPO, "deploy", "dev", "node.sh")
RESTART = os.path.join(REPO, "deploy", "dev", "restart.sh")
ENV = {"TESSERA_DEV_NODES": "3",
       "TESSERA_REGISTRY_AGENT_LOST_TIMEOUT": f"{LOST_S}s",
       "TESSERA_AGENT_HEARTBEAT_INTERVAL": "1s",
       "TESSERA_REGISTRY_KERNEL_RECONCILE_INTERVAL": "2s",
       "TESSERA_SCHEDULER_DEFAULT_SELECTOR": "roundrobin"}
SMALL = {"cpu": "0.25", "mem": "64m"}


@pytest.fixture(scope="module")
def stack():
    with dev_stack("tessera-nl-", **ENV) as env:
        yield env


def script(stack, *args, timeout=120):
    """deploy/dev/node.sh or restart.sh on this stack (with the options the
    stack's processes got: a started agent must heartbeat as often)."""
    env = dict(os.environ, TESSERA_STATE_DIR=stack["TESSERA_STATE_DIR"], **ENV)
    r = subprocess.run(["sh", *args], env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


@pytest.fixture(scope="module")
def image(stack, admin):  # noqa: F811
    """The busybox test image with small minimum slots."""
    out = os.path.join(stack["TESSERA_STATE_DIR"], "nl-image")
    try:
        ref = suitekit.push_busybox_image(stack, out, "tessera/node-loss", TAG, "node-loss")
    except RuntimeError as e:
        pytest.fail(str(e), pytrace=False)
    okj(admin.post("/admin/images", {"reference": ref}), 200, 201)
    # the superadmin's keypair may start cluster sessions of three kernels
    okj(admin.patch("/admin/keypair-resource-policies/default", {"max_containers_per_session": 3}))
    return ref


def create(admin, image, name, node=None, wait=True, cluster=0):  # noqa: F811
    body = {"image": image, "name": name, "config": {"resources": SMALL}}
    if node:
        body["agentList"] = [f"node{node}"]
    if cluster:
        body.update(cluster_size=cluster, cluster_mode="multi-node")
    if wait:
        body["maxWaitSeconds"] = 60
    else:
        body["enqueueOnly"] = True
    r = admin.post("/session", body, timeout=90)
    assert r.status_code == 201, r.text
    if wait:
        assert r.json()["status"] == "RUNNING", admin.get(f"/session/{name}").text
    return okj(admin.get(f"/session/{name}"))


def info(admin, name):  # noqa: F811
    return okj(admin.get(f"/session/{name}"))


def agents_of(i):
    return [k["agent"] for k in i["kernels"]]


def execute(admin, name, word):  # noqa: F811
    r = okj(admin.post(f"/session/{name}", {"mode": "batch", "options": {"exec": f"echo {word}"}},
                       timeout=80))
    out = "".join(t for k, t in r["result"]["console"] if k == "stdout")
    return r["result"]["exitCode"] == 0 and word in out


def agent(admin, node):  # noqa: F811
    return okj(admin.get(f"/admin/agents/node{node}"))


def containers(stack, node=None):
    """{id: status} of this stack's runc containers (on node k only)."""
    state = stack["TESSERA_STATE_DIR"]
    c = faultlib.runc_containers(state)
    if node is None:
        return c
    prefix = os.path.join(state, f"node{node}") + "/"
    bundles = {x["id"]: x.get("bundle", "") for x in faultlib.runc_list()}
    return {k: v for k, v in c.items() if bundles.get(k, "").startswith(prefix)}


def clean(stack):
    """Redis occupancy equal to PostgreSQL's kernels holding slots, and no
    container of an ended session or without a kernel (the fault suite's
    checks: tests/faults/faultlib.py)."""
    bad = faultlib.check_drift(stack) + faultlib.check_containers(stack)[0]
    return None if bad else True


def wait_clean(stack, what):
    try:
        wait_until(lambda: clean(stack), timeout=40, interval=1, message=what)
    except AssertionError:
        raise AssertionError(f"{what}: {faultlib.check_drift(stack)} {faultlib.check_containers(stack)[0]}")


@pytest.fixture(scope="module")
def running(stack, admin, image):  # noqa: F811
    """One session on each node and a cluster session with a kernel on each."""
    names = {k: f"nl-{TAG}-n{k}" for k in (1, 2, 3)}
    for k, n in names.items():
        assert agents_of(create(admin, image, n, node=k)) == [f"node{k}"]
    cl = f"nl-{TAG}-cl"
    i = create(admin, image, cl, cluster=3)
    assert sorted(agents_of(i)) == ["node1", "node2", "node3"], (
        "the roundrobin selector put one kernel on each node", agents_of(i))
    return {"nodes": names, "cluster": cl, "cluster_kernels": [k["id"] for k in i["kernels"]]}


# ---- a node lost while sessions run -------------------------------------------------------------


def test_a_lost_node_ends_its_sessions_naming_it_and_frees_their_slots(stack, admin, running):  # noqa: F811
    wait_clean(stack, "a clean start")
    gone = running["nodes"][2]
    t0 = time.monotonic()
    script(stack, NODE_SH, "down", "2")
    wait_until(lambda: info(admin, gone)["status"] == "ERROR", timeout=LOST_S + MARGIN_S, interval=0.5,
               message="the lost node's session ends in ERROR")
    took = time.monotonic() - t0
    i = info(admin, gone)
    assert "node2" in i["statusInfo"] and "lost" in i["statusInfo"], i["statusInfo"]
    assert took >= LOST_S - 1.5, f"ended after {took:.1f} s, before the lost timeout"
    a = agent(admin, 2)
    assert a["status"] == "LOST" and a["status_info"].startswith("no heartbeat for"), a
    # the cluster session with a kernel there ends whole
    c = wait_until(lambda: (lambda x: x if x["status"] == "ERROR" else None)(info(admin, running["cluster"])),
                   timeout=MARGIN_S, message="the cluster session ends too")
    assert "node2" in c["statusInfo"], c["statusInfo"]
    # their slots freed, Redis and PostgreSQL agreeing; no container of theirs
    # on nodes 1 and 3 (node 2's are beyond reach until it returns)
    def others_gone():
        left = set(containers(stack, 1)) | set(containers(stack, 3))
        return not (left & set(running["cluster_kernels"]))
    wait_until(others_gone, timeout=40, interval=1,
               message="the cluster session's kernels on nodes 1 and 3 destroyed")
    drift = wait_until(lambda: not faultlib.check_drift(stack) or None, timeout=30, interval=1,
                       message=f"occupancy agrees: {faultlib.check_drift(stack)}")
    assert drift
    used = faultlib.Redis(stack["TESSERA_REDIS_URL"]).hgetall("agent:node2")
    assert used.get("schedulable") == "0" and not any(
        int(v) for k, v in used.items() if k.startswith("used:")), used
    # the other nodes' sessions are untouched
    for k in (1, 3):
        n = running["nodes"][k]
        assert info(admin, n)["status"] == "RUNNING"
        assert execute(admin, n, f"alive-{TAG}-{k}")


def test_status_shows_the_lost_agent(admin):  # noqa: F811
    body = okj(admin.get("/admin/status", params={"timeout": "5"}))
    rows = {r["service"]: r for r in body["services"] if r["kind"] == "agent"}
    assert rows["node2"]["state"] == "unreachable" and not rows["node2"]["ready"], rows
    assert "lost" in rows["node2"]["error"], rows["node2"]
    assert rows["node1"]["state"] == "ready" and rows["node3"]["state"] == "ready", rows


def test_the_node_returns_empty_and_takes_sessions(stack, admin, image, running):  # noqa: F811
    stale = set(containers(stack, 2))
    assert stale, "node 2's containers from before its loss are still there, out of reach"
    script(stack, NODE_SH, "up", "2")
    wait_until(lambda: agent(admin, 2)["status"] == "ALIVE", timeout=30, message="node 2 ALIVE again")
    wait_until(lambda: not containers(stack, 2), timeout=40, interval=1,
               message=f"node 2's stale containers destroyed: {containers(stack, 2)}")
    for n in (running["nodes"][2], running["cluster"]):
        assert info(admin, n)["status"] == "ERROR"  # not re-adopted
    wait_clean(stack, "nothing left of the lost sessions")
    fresh = f"nl-{TAG}-back"
    assert agents_of(create(admin, image, fresh, node=2)) == ["node2"]
    assert execute(admin, fresh, f"back-{TAG}")
    okj(admin.delete(f"/session/{fresh}"))


def test_an_agent_restarted_alone_adopts_its_kernel(stack, admin, running):  # noqa: F811
    """Network intact, back within the lost timeout: nothing ends."""
    n = running["nodes"][3]
    script(stack, RESTART, "agent@node3", "--kill")
    assert execute(admin, n, f"adopted-{TAG}")
    time.sleep(LOST_S / 2)  # past the heartbeats' gap
    assert info(admin, n)["status"] == "RUNNING"
    assert agent(admin, 3)["status"] == "ALIVE"


# ---- a node lost while sessions start ---------------------------------------------------------


def test_a_node_lost_while_sessions_start_leaves_nothing(stack, admin, image):  # noqa: F811
    names = [f"nl-{TAG}-s-pin", f"nl-{TAG}-s-cl"]
    script(stack, NODE_SH, "down", "2", "--kill")
    t0 = time.monotonic()
    # the registry still has node 2 ALIVE: the scheduler places there
    create(admin, image, names[0], node=2, wait=False)
    create(admin, image, names[1], cluster=3, wait=False)

    def placed():
        i = info(admin, names[1])
        return i if len(i["kernels"]) == 3 and all(k.get("agent") for k in i["kernels"]) else None
    cl = wait_until(placed, timeout=20, message="the cluster session placed")
    assert sorted(agents_of(cl)) == ["node1", "node2", "node3"], agents_of(cl)
    assert info(admin, names[0])["status"] in ("SCHEDULED", "PREPARING", "PULLING", "ERROR")
    for n in names:
        wait_until(lambda: info(admin, n)["status"] == "ERROR", timeout=LOST_S + MARGIN_S, interval=0.5,
                   message=f"{n} ends in ERROR")
        assert "node2" in info(admin, n)["statusInfo"], info(admin, n)
    assert time.monotonic() - t0 < LOST_S + MARGIN_S + 5
    kids = {k["id"] for k in cl["kernels"]}
    wait_until(lambda: not (set(containers(stack)) & kids), timeout=40, interval=1,
               message="the cluster session's kernels on nodes 1 and 3 destroyed")
    wait_clean(stack, "nothing leaked by the starts")
    # the node returns (its agent started again): the commands that waited
    # for it leave nothing behind
    script(stack, NODE_SH, "up", "2")
    wait_until(lambda: agent(admin, 2)["status"] == "ALIVE", timeout=30, message="node 2 ALIVE again")
    time.sleep(3)  # its waiting CreateKernel / DestroyKernel handled
    wait_until(lambda: not containers(stack, 2), timeout=40, interval=1,
               message=f"nothing of the ended sessions on node 2: {containers(stack, 2)}")
    wait_clean(stack, "nothing left after the node's return")
    for n in names:
        assert info(admin, n)["status"] == "ERROR"


# ---- drain -------------------------------------------------------------------------------------


def test_drain_callers_and_bad_input(stack, admin, gw):  # noqa: F811
    user, _ = _new_user(admin, gw, "nl-user")
    dadmin, _ = _new_user(admin, gw, "nl-dadmin", role="admin")
    for who in (user, dadmin):
        for verb in ("drain", "undrain"):
            p = problem(who.post(f"/admin/agents/node1/{verb}", {}), 403)
            assert "superadmins" in p["msg"], p
    problem(user.get("/admin/agents"), 403)
    okj(dadmin.get("/admin/agents/node1"))  # administrators read
    assert agent(admin, 1)["schedulable"] is True  # nothing changed
    problem(admin.post("/admin/agents/no-such-node/drain", {}), 404)
    problem(admin.post("/admin/agents/bad*id/drain", {}), 400)
    problem(admin.post("/admin/agents/" + "n" * 200 + "/undrain", {}), 400)
    problem(admin.get("/admin/agents/node1/drain"), 404, 405)


def test_a_drained_node_takes_nothing_new_and_undrain_restores(stack, admin, image, running):  # noqa: F811
    keep = running["nodes"][3]
    a = okj(admin.post("/admin/agents/node3/drain", {}))
    assert a["id"] == "node3" and a["schedulable"] is False and a["status"] == "ALIVE", a
    h = faultlib.Redis(stack["TESSERA_REDIS_URL"]).hgetall("agent:node3")
    assert h.get("schedulable") == "0" and h.get("drained") == "1", h
    # pinned to it: waits, saying why
    pinned = f"nl-{TAG}-d-pin"
    create(admin, image, pinned, node=3, wait=False)
    i = wait_until(lambda: (lambda x: x if "drained" in (x["statusInfo"] or "") else None)(info(admin, pinned)),
                   timeout=20, message="the pinned session waits, saying the agent is drained")
    assert i["status"] == "PENDING" and "node3" in i["statusInfo"], i
    # unpinned: placed on the others (roundrobin would put one of three on node3)
    free = [f"nl-{TAG}-d-{x}" for x in range(3)]
    for n in free:
        assert agents_of(create(admin, image, n)) != ["node3"]
    # its running session goes on
    assert info(admin, keep)["status"] == "RUNNING"
    assert execute(admin, keep, f"drained-{TAG}")
    # a restarted scheduler still knows (the mark in Redis)
    script(stack, RESTART, "scheduler")
    extra = f"nl-{TAG}-d-after"
    assert agents_of(create(admin, image, extra)) != ["node3"]
    assert info(admin, pinned)["status"] == "PENDING"
    # undrain: the waiting session goes there
    a = okj(admin.post("/admin/agents/node3/undrain", {}))
    assert a["schedulable"] is True, a
    wait_until(lambda: info(admin, pinned)["status"] == "RUNNING", timeout=60,
               message="the pinned session placed after the undrain")
    assert agents_of(info(admin, pinned)) == ["node3"]
    for n in free + [extra, pinned]:
        okj(admin.delete(f"/session/{n}"))


def test_drain_through_the_cli_and_graphql(stack, admin, bin_dir, tmp_path):  # noqa: F811
    env = base_env(tmp_path, BACKEND_ENDPOINT=stack["TESSERA_GATEWAY_URL"],
                   BACKEND_ACCESS_KEY=admin.access_key, BACKEND_SECRET_KEY=admin.secret_key)
    assert js(bin_dir, env, "admin", "agent", "drain", "node1")["schedulable"] is False
    assert "SCHEDULABLE" in cli_ok(bin_dir, env, "admin", "agent", "list")
    assert js(bin_dir, env, "admin", "agent", "undrain", "node1")["schedulable"] is True

    def gql(q):
        return okj(admin.post("/admin/gql", {"query": q}))

    r = gql('mutation { modify_agent(id: "node1", props: {schedulable: false}) { ok msg } }')
    assert r["data"]["modify_agent"] == {"ok": True, "msg": "success"}, r
    r = gql('{ agent(agent_id: "node1") { id schedulable status } }')
    assert r["data"]["agent"] == {"id": "node1", "schedulable": False, "status": "ALIVE"}, r
    r = gql('mutation { modify_agent(id: "node1", props: {schedulable: true}) { ok msg } }')
    assert r["data"]["modify_agent"]["ok"] is True, r
    assert agent(admin, 1)["schedulable"] is True
    r = gql('mutation { modify_agent(id: "node1", props: {scaling_group: "elsewhere"}) { ok msg } }')
    assert r["data"]["modify_agent"]["ok"] is False and "scaling group" in r["data"]["modify_agent"]["msg"], r
    r = gql('mutation { modify_agent(id: "no-such-node", props: {schedulable: false}) { ok msg } }')
    assert r["data"]["modify_agent"]["ok"] is False, r
