"""tessera-registry: the session API and lifecycle (docs/sessions.md).

The registry's internal API is called as the gateway would (caller headers).
Agents, placements and kernel events come from tests/tools/fake_agent
(build/tests/tools/fake_agent): it announces agents and publishes
SessionScheduled and kernel events on the bus. Images used for manual
placement are registered with an architecture no agent has ("fakearch"), so
a running tessera-scheduler never places them behind the test's back.
"""
import json
import os
import subprocess
import threading
import time
import urllib.parse
import uuid

import pytest
import requests

import svc_signer

from conftest import BIN_DIR, wait_until

FAKE_AGENT = os.path.join(os.path.dirname(BIN_DIR), "tests", "tools", "fake_agent")


class Reg:
    """Helpers bound to one stack."""

    def __init__(self, stack):
        self.env = stack
        self.url = stack["TESSERA_REGISTRY_URL"]
        self.auth = stack["TESSERA_AUTH_URL"]
        self.admin_ak = stack["TESSERA_ADMIN_ACCESS_KEY"]
        self.keys = stack["TESSERA_SERVICE_KEYS_DIR"]  # calls are signed as the gateway
        r = svc_signer.call(self.keys, "gateway", "GET", f"{self.auth}/v1/credentials/{self.admin_ak}", timeout=10)
        r.raise_for_status()
        self.admin_id = r.json()["user"]["id"]
        self.admin = (self.admin_id, self.admin_ak)

    # ---- HTTP ----
    def call(self, method, path, body=None, who=None, base=None, timeout=30):
        who = who or self.admin
        headers = {"X-Tessera-Caller": who[0], "X-Tessera-Caller-Access-Key": who[1]}
        return svc_signer.call(self.keys, "gateway", method, (base or self.url) + path, json=body,
                               headers=headers, timeout=timeout)

    def auth_call(self, method, path, body=None, who=None):
        return self.call(method, path, body, who, base=self.auth)

    def create(self, body, who=None, timeout=30):
        return self.call("POST", "/v1/sessions", body, who, timeout=timeout)

    def info(self, name_or_id, who=None):
        r = self.call("GET", "/v1/sessions/" + urllib.parse.quote(name_or_id, safe=""), who=who)
        assert r.status_code == 200, r.text
        return r.json()

    def history(self, sid, who=None):
        r = self.call("GET", f"/v1/sessions/{sid}/history", who=who)
        assert r.status_code == 200, r.text
        return [(h["status"], h["reason"]) for h in r.json()["items"]]

    def wait_status(self, sid, status, timeout=15):
        def reached():
            return self.info(sid)["status"] == status
        wait_until(reached, timeout=timeout, message=f"session {sid} {status} "
                   f"(now {self.info(sid)['status']})")
        return self.info(sid)

    # ---- bus ----
    def bus(self, *lines):
        p = subprocess.run([FAKE_AGENT, self.env["KAFKA_BOOTSTRAP"]], input="\n".join(lines) + "\n",
                           capture_output=True, text=True, timeout=60, check=False)
        assert p.returncode == 0, p.stderr

    def agent(self, agent_id, group, slots="cpu=4 mem=8g", gpus=0, arch="x86_64"):
        self.bus(f'started {agent_id} {group} {arch} "{slots}" {gpus}')

        def alive():
            r = self.call("GET", f"/v1/admin/agents/{agent_id}")
            return r.status_code == 200 and r.json()["status"] == "ALIVE"
        wait_until(alive, timeout=20, message=f"agent {agent_id} ALIVE")

    def redis(self, *args):
        p = subprocess.run(["redis-cli", "-u", self.env["TESSERA_REDIS_URL"], *args],
                           capture_output=True, text=True, timeout=10, check=True)
        return p.stdout

    def redis_hash(self, key):
        out = self.redis("--no-raw", "HGETALL", key).split("\n")
        vals = [line.split(") ", 1)[1].strip('"') for line in out if ") " in line]
        return dict(zip(vals[0::2], vals[1::2]))

    # ---- setup ----
    def group(self, name, **fields):
        r = self.call("POST", "/v1/admin/resource-groups", {"name": name, **fields})
        assert r.status_code in (201, 409), r.text
        r = self.auth_call("POST", "/v1/admin/resource-group-access",
                           {"resource_group": name, "scope_type": "domain", "scope_id": "default"})
        assert r.status_code in (200, 201), r.text

    def image(self, ref, labels=None, arch="fakearch"):
        r = self.call("POST", "/v1/admin/images",
                      {"reference": ref, "architecture": arch, "labels": labels or {}})
        assert r.status_code == 201, r.text
        return r.json()


@pytest.fixture(scope="module")
def reg(stack):
    if not os.path.exists(FAKE_AGENT):
        pytest.skip(f"{FAKE_AGENT} is not built (make)")
    r = Reg(stack)
    r.group("rgt", description="registry tests")
    r.image("test.local/fake/app:1", {"ai.backend.service-ports": "web:http:8080,ssh:tcp:2200",
                                      "ai.backend.resource.min.mem": "256m"})
    return r


def name():
    return "s-" + uuid.uuid4().hex[:10]


def body(n, **kw):
    b = {"image": "test.local/fake/app:1", "name": n, "enqueueOnly": True,
         "config": {"scaling_group": "rgt", "resources": {"cpu": 1, "mem": "1g"}}}
    b.update(kw)
    return b


def kernel_of(reg, sid):
    return reg.info(sid)["kernels"][0]["id"]


def enqueued_session(reg, agent_id):
    """An agent of resource group rgt and a session enqueued there:
    (name, session id, kernel id)."""
    reg.agent(agent_id, "rgt")
    n = name()
    r = reg.create(body(n))
    assert r.status_code == 201, r.text
    sid = r.json()["sessionUuid"]
    return n, sid, kernel_of(reg, sid)


def enqueued_sessions(reg, n):
    """n sessions enqueued in resource group rgt: [(session id, kernel id)]."""
    out = []
    for _ in range(n):
        r = reg.create(body(name()))
        assert r.status_code == 201, r.text
        sid = r.json()["sessionUuid"]
        out.append((sid, kernel_of(reg, sid)))
    return out


# ---- auth's session context ---------------------------------------------------------------------

def test_session_context(reg):
    r = svc_signer.call(reg.keys, "registry", "GET", f"{reg.auth}/v1/session-context",
                        params={"access_key": reg.admin_ak, "group": "default"}, timeout=10)
    assert r.status_code == 200, r.text
    c = r.json()
    assert c["user"]["id"] == reg.admin_id and c["user"]["role"] == "superadmin"
    assert c["project"]["name"] == "default" and c["project"]["is_member"] is True
    assert c["keypair_policy"]["name"] == "default"
    assert "rgt" in c["allowed_resource_groups"]
    # "default" stays open to everyone while nobody names it
    assert "default" in c["allowed_resource_groups"]
    r = svc_signer.call(reg.keys, "registry", "GET", f"{reg.auth}/v1/session-context",
                        params={"access_key": reg.admin_ak, "group": "no-such-project"}, timeout=10)
    assert r.status_code == 404
    assert "project no-such-project not found in domain default" in r.json()["msg"]


# ---- validation ----------------------------------------------------------------------------------

def test_validation_reasons(reg):
    reg.agent("fa-val", "rgt", slots="cpu=8 mem=16g cuda.device=8 cuda.shares=8", gpus=8)

    def refused(b, status, text):
        r = reg.create(b)
        assert r.status_code == status, r.text
        assert text in r.json()["msg"], r.json()["msg"]

    refused(body(name(), image="test.local/none/such:1"), 400,
            "unknown image test.local/none/such:1: register it first")
    refused(body(name(), config={"scaling_group": "no-such-group"}), 400,
            "unknown resource group no-such-group")
    reg.call("POST", "/v1/admin/resource-groups", {"name": "rgt-closed"})
    refused(body(name(), config={"scaling_group": "rgt-closed"}), 403,
            "resource group rgt-closed is not allowed")
    refused(body(name(), config={"scaling_group": "rgt", "resources": {"cpu": "1g"}}), 400,
            "cpu: unit 'g' in '1g' is only allowed for mem")
    refused(body(name(), config={"scaling_group": "rgt", "resources": {"cuda.shares": "0.005"}}),
            400, "more decimals than the quantum")
    refused(body(name(), config={"scaling_group": "rgt", "resources": {"cuda.shares": "9"}}), 400,
            "requested cuda.shares 9.00 exceeds the largest agent in group rgt (8.00)")
    refused(body(name(), config={"scaling_group": "rgt", "resources": {"cpu": "1", "mem": "128m"}}),
            400, "requested mem 134217728 is below the image's minimum (268435456)")
    refused(body(name(), cluster_size=2), 412,
            "cluster_size 2 exceeds the keypair resource policy's max_containers_per_session (1)")
    refused(body(name(), config={"scaling_group": "rgt", "mounts": ["no-such-folder"]}), 404,
            "vfolder no-such-folder not found")
    for pp, text in ((80, "item 0: a port must be a number from 1024 to 65535"),
                     ([9100, "x"], "item 1: a port must be a number from 1024 to 65535"),
                     ([9100, "9100"], "port 9100 is named twice"),
                     (list(range(2000, 2017)), "must be a list of at most 16 ports"),
                     ([70000], "item 0: a port must be"), ([True], "item 0: a port must be")):
        pp = pp if isinstance(pp, list) else [pp]
        refused(body(name(), config={"scaling_group": "rgt", "preopen_ports": pp}), 400, text)
    refused(body(name(), config={"scaling_group": "rgt", "preopen_ports": "9100"}), 400,
            "must be a list of at most 16 ports")
    refused(body("bad name!"), 400, "\"name\" must be 1 to 64")
    refused(body(name(), type="nope"), 400, "\"type\" must be interactive, batch or inference")
    refused(body(name(), starts_at="2030-01-01T00:00:00Z"), 400,
            "\"starts_at\" is only for batch sessions")
    refused({"name": name()}, 400, "\"image\" is required")
    # no caller: 401
    r = svc_signer.call(reg.keys, "gateway", "POST", f"{reg.url}/v1/sessions", json=body(name()), timeout=10)
    assert r.status_code == 401 and "caller" in r.json()["msg"].lower(), r.text
    # no service credential: 401 before anything else
    r = requests.post(f"{reg.url}/v1/sessions", json=body(name()), timeout=10)
    assert r.status_code == 401 and "service credential" in r.json()["msg"], r.text


def test_a_new_larger_agent_is_never_refused_on_a_cached_answer(reg):
    """The create's size check keeps the largest agent per group for
    registry.largest_agent_cache (2 s): a cached answer may let a request
    through, but a refusal reads the agents again."""
    for attempt in range(3):
        group = f"rgl{attempt}-{uuid.uuid4().hex[:6]}"
        reg.group(group)
        reg.agent(f"fa-small-{group}", group, slots="cpu=4 mem=8g")

        def create(cpu):
            return reg.create(body(name(), config={"scaling_group": group,
                                                   "resources": {"cpu": cpu, "mem": "1g"}}))
        r = create(2)  # reads the agents: the largest has cpu 4
        assert r.status_code == 201, r.text
        cached_at = time.monotonic()
        r = create(8)
        assert r.status_code == 400 and "exceeds the largest agent" in r.json()["msg"], r.text
        reg.agent(f"fa-big-{group}", group, slots="cpu=16 mem=32g")
        r = create(8)
        window = time.monotonic() - cached_at
        assert r.status_code == 201, f"refused {window:.2f} s after the cached answer: {r.text}"
        if window < 1.5:
            return  # the answer was still cached: the fresh read let it through
    pytest.fail("the big agent took more than 1.5 s to appear three times: nothing was tested")


def test_names_unique_per_owner_and_reuse(reg):
    n = name()
    r = reg.create(body(n))
    assert r.status_code == 201, r.text
    first = r.json()
    assert first["created"] is True and first["status"] == "PENDING"
    assert first["sessionName"] == n and first["sessionId"] == first["sessionUuid"]
    assert uuid.UUID(first["sessionUuid"])
    r = reg.create(body(n))
    assert r.status_code == 409, r.text
    r = reg.create(body(n, reuseIfExists=True))
    assert r.status_code == 200, r.text
    assert r.json()["created"] is False and r.json()["sessionUuid"] == first["sessionUuid"]
    # numbers and booleans as strings
    r = reg.create(body(name(), reuseIfExists="false", enqueueOnly="true", maxWaitSeconds="3",
                        config={"scaling_group": "rgt", "resources": {"cpu": "0.50", "mem": "1g"}}))
    assert r.status_code == 201, r.text
    info = reg.info(r.json()["sessionUuid"])
    assert info["requestedSlots"] == {"cpu": "0.5", "mem": "1073741824"}
    # cancel while pending frees the name
    r = reg.call("DELETE", f"/v1/sessions/{n}")
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "CANCELLED"
    r = reg.create(body(n))
    assert r.status_code == 201 and r.json()["sessionUuid"] != first["sessionUuid"]
    hist = reg.history(first["sessionUuid"])
    # the stack's real scheduler may add its own reason while PENDING
    assert hist[0] == ("PENDING", "enqueued") and hist[-1] == ("CANCELLED", "user-requested")
    assert all(status == "PENDING" for status, _ in hist[1:-1]), hist


# ---- lifecycle -----------------------------------------------------------------------------------

def test_lifecycle_with_duplicated_and_reordered_events(reg):
    n, sid, kid = enqueued_session(reg, "fa-life")
    # The stack's real scheduler may publish its own reason for this session
    # (once per change), before or after ours: publish ours until it shows.
    reason = "not enough cpu in resource group rgt (test)"

    def reason_shown():
        reg.bus(f"unschedulable {sid} {reason}")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if reg.info(sid)["statusInfo"] == reason:
                return True
            time.sleep(0.1)
        return False
    wait_until(reason_shown, timeout=30, message="unschedulable reason shown")
    reg.bus("slots cpu=1 mem=1g", f"scheduled {sid} rgt {kid}=fa-life")
    info = reg.wait_status(sid, "PREPARING")
    assert info["kernels"][0]["agent"] == "fa-life"
    assert info["occupiedSlots"] == {"cpu": "1", "mem": "1073741824"}
    # a duplicated placement changes nothing
    reg.bus(f"scheduled {sid} rgt {kid}=fa-life")
    reg.bus(f"pulling {sid} {kid} fa-life 1048576 4194304",
            f"pulling {sid} {kid} fa-life 1048576 4194304")
    info = reg.wait_status(sid, "PULLING")
    assert info["statusInfo"] == "pulling 1.0 MiB / 4.0 MiB"
    # with the layer counts, and counts that make no sense are left out
    reg.bus(f"pulling {sid} {kid} fa-life 2097152 4194304 1 3")
    wait_until(lambda: reg.info(sid)["statusInfo"] == "pulling 2.0 MiB / 4.0 MiB, 1 of 3 layers ready",
               timeout=10, message="layer counts in statusInfo")
    reg.bus(f"pulling {sid} {kid} fa-life 3145728 4194304 5 3")
    wait_until(lambda: reg.info(sid)["statusInfo"] == "pulling 3.0 MiB / 4.0 MiB",
               timeout=10, message="bad layer counts left out")
    reg.bus(f"creating {sid} {kid} fa-life sha256:abc",
            f"kstarted {sid} {kid} fa-life 10.0.0.5 web:http:8080:30001,ssh:tcp:2200:30002")
    info = reg.wait_status(sid, "RUNNING")
    assert info["servicePorts"][0] == {"name": "web", "protocol": "http", "container_ports": [8080],
                                       "host_ports": [30001], "host": "10.0.0.5"}
    # late and repeated events are harmless
    reg.bus(f"pulling {sid} {kid} fa-life 1 2", f"creating {sid} {kid} fa-life sha256:abc",
            f"kstarted {sid} {kid} fa-life 10.0.0.5")
    time.sleep(1.5)
    info = reg.info(sid)
    assert info["status"] == "RUNNING" and info["statusInfo"] == ""
    # destroy: TERMINATING until the kernel is gone
    r = reg.call("DELETE", f"/v1/sessions/{n}")
    assert r.status_code == 200 and r.json()["status"] == "TERMINATING", r.text
    reg.bus(f"terminated {sid} {kid} fa-life 0 user-requested",
            f"terminated {sid} {kid} fa-life 0 user-requested")
    info = reg.wait_status(sid, "TERMINATED")
    assert info["terminationTime"] and info["occupiedSlots"] == {}
    reg.bus(f"kstarted {sid} {kid} fa-life 10.0.0.5")
    time.sleep(1)
    assert reg.info(sid)["status"] == "TERMINATED"
    hist = reg.history(sid)
    assert hist[0] == ("PENDING", "enqueued")
    assert ("PENDING", "not enough cpu in resource group rgt (test)") in hist
    assert [s for s, _ in hist if s != "PENDING"] == ["SCHEDULED", "PREPARING", "PULLING",
                                                      "PREPARING", "RUNNING", "TERMINATING",
                                                      "TERMINATED"]
    # gone from the live list, still listed with a status filter
    r = reg.call("GET", "/v1/sessions?status=TERMINATED&limit=1000")
    assert sid in [s["sessionUuid"] for s in r.json()["items"]]
    r = reg.call("DELETE", f"/v1/sessions/{sid}")
    assert r.status_code == 404


def test_interleaved_events_of_several_sessions(reg):
    """The registry locks all the sessions of a batch of events in one
    statement and applies each session's events in their order, each on the
    session as the ones before it left it: the interleaved pull, create and
    start events of three sessions, published in one run, bring each to
    RUNNING with the whole history, and a second round changes nothing. Their
    placements, in one run with a duplicate, send one CreateKernel each."""
    reg.agent("fa-many", "rgt")
    sessions = enqueued_sessions(reg, 3)
    # three placements and a duplicate of the first, in one run: the batch's
    # placements go through together, the duplicate changes nothing
    placements = [f"scheduled {sid} rgt {kid}=fa-many" for sid, kid in sessions]
    reg.bus("slots cpu=1 mem=1g", *placements, placements[0])
    for sid, _ in sessions:
        info = reg.wait_status(sid, "PREPARING")
        assert info["kernels"][0]["agent"] == "fa-many"
        assert info["occupiedSlots"] == {"cpu": "1", "mem": "1073741824"}

    def create_kernel_keys():
        c = subprocess.run(["kcat", "-b", reg.env["KAFKA_BOOTSTRAP"], "-C",
                            "-t", "tessera.agent.cmd.fa-many", "-o", "beginning", "-e", "-q",
                            "-f", "%k\n"], capture_output=True, text=True, timeout=30)
        keys = c.stdout.split()
        return keys if all(kid in keys for _, kid in sessions) else None
    keys = wait_until(create_kernel_keys, 30, message="a CreateKernel for each kernel")
    assert sorted(k for k in keys if k in {kid for _, kid in sessions}) == sorted(
        kid for _, kid in sessions), keys
    steps = ("pulling {s} {k} fa-many 1048576 2097152", "pulling {s} {k} fa-many 2097152 2097152",
             "creating {s} {k} fa-many sha256:abc", "kstarted {s} {k} fa-many 10.0.0.8")
    lines = [step.format(s=sid, k=kid) for step in steps for sid, kid in sessions]
    reg.bus(*lines)
    for sid, _ in sessions:
        info = reg.wait_status(sid, "RUNNING")
        assert info["statusInfo"] == "" and info["kernels"][0]["status"] == "RUNNING", info
        assert [s for s, _ in reg.history(sid) if s != "PENDING"] == [
            "SCHEDULED", "PREPARING", "PULLING", "PREPARING", "RUNNING"]
    reg.bus(*lines)
    time.sleep(1.5)
    for sid, _ in sessions:
        hist = reg.history(sid)
        assert len([s for s, _ in hist if s != "PENDING"]) == 5, hist
        reg.call("DELETE", f"/v1/sessions/{sid}?forced=true")


def test_start_events_of_many_sessions_in_one_batch(reg):
    """KernelCreating then KernelStarted of one-kernel sessions, published
    together, are applied for all of them in a few statements (the registry's
    kernel_steps.c); the guards hold as one by one: a KernelCreating from
    another agent changes nothing while the holder's KernelStarted still
    starts the session, a KernelStarted from another agent, or for a kernel
    id that is not a UUID, leaves its session PREPARING (and holds up none of
    the others), and a second round changes nothing."""
    reg.agent("fa-steps", "rgt")
    sessions = enqueued_sessions(reg, 4)
    reg.bus("slots cpu=1 mem=1g", *[f"scheduled {sid} rgt {kid}=fa-steps" for sid, kid in sessions])
    for sid, _ in sessions:
        reg.wait_status(sid, "PREPARING")
    (a, ka), (b, kb), (c, kc), (d, _) = sessions
    lines = [f"creating {a} {ka} fa-steps sha256:abc",
             f"kstarted {a} {ka} fa-steps 10.0.0.5 web:http:8080:30001",
             f"creating {b} {kb} fa-other sha256:bad",
             f"kstarted {b} {kb} fa-steps 10.0.0.6",
             f"kstarted {c} {kc} fa-other 10.9.9.9",
             f"kstarted {d} not-a-uuid fa-steps 10.9.9.8"]
    reg.bus(*lines)
    info = reg.wait_status(a, "RUNNING")
    k = info["kernels"][0]
    assert k["status"] == "RUNNING" and k["host"] == "10.0.0.5", k
    assert info["servicePorts"][0]["host_ports"] == [30001], info["servicePorts"]
    info = reg.wait_status(b, "RUNNING")
    assert info["kernels"][0]["host"] == "10.0.0.6", info["kernels"]
    time.sleep(1.5)
    for sid in (c, d):
        info = reg.info(sid)
        assert info["status"] == "PREPARING" and info["kernels"][0]["status"] == "PREPARING", info
    reg.bus(*lines)
    time.sleep(1.5)
    for sid in (a, b):
        hist = [s for s, _ in reg.history(sid) if s != "PENDING"]
        assert hist == ["SCHEDULED", "PREPARING", "RUNNING"], hist
    assert reg.info(c)["status"] == reg.info(d)["status"] == "PREPARING"
    # ignored like any event for an unknown kernel: not retried into the DLQ
    dlq = subprocess.run(["kcat", "-b", reg.env["KAFKA_BOOTSTRAP"], "-C", "-t", "tessera.dlq.v1",
                          "-o", "beginning", "-e", "-q", "-f", "%k\t%h\n"],
                         capture_output=True, text=True, timeout=30)
    assert not [line for line in dlq.stdout.splitlines() if line.startswith(d)], dlq.stdout
    for sid, _ in sessions:
        reg.call("DELETE", f"/v1/sessions/{sid}?forced=true")


def test_kernel_events_from_elsewhere_change_nothing(reg):
    """KernelCreating and KernelStarted are applied only to a kernel of the
    session, held by the agent that sends them, in a status they can follow
    (one guarded statement in the registry): from another agent, for an
    unknown kernel or one that is not a UUID, they change nothing and the
    consumer goes on."""
    _, sid, kid = enqueued_session(reg, "fa-own")
    reg.bus(f"scheduled {sid} rgt {kid}=fa-own")
    reg.wait_status(sid, "PREPARING")
    reg.bus(f"creating {sid} {kid} fa-other sha256:bad",
            f"kstarted {sid} {kid} fa-other 10.9.9.9",
            f"kstarted {sid} {uuid.uuid4()} fa-own 10.9.9.9",
            f"kstarted {sid} not-a-uuid fa-own 10.9.9.9")
    time.sleep(1.5)
    info = reg.info(sid)
    assert info["status"] == "PREPARING", info
    assert info["kernels"][0]["status"] == "PREPARING", info["kernels"]
    # the holder's own events still apply
    reg.bus(f"creating {sid} {kid} fa-own sha256:abc", f"kstarted {sid} {kid} fa-own 10.0.0.7")
    info = reg.wait_status(sid, "RUNNING")
    assert info["kernels"][0]["status"] == "RUNNING", info["kernels"]


def test_a_bad_placement_among_good_ones_goes_to_the_dlq_alone(reg):
    """The registry applies a batch of events in one transaction; one it
    refuses rolls the batch back and each event is applied alone, so only
    the bad one is dead-lettered."""
    reg.agent("fa-batch", "rgt")
    sids = []
    for _ in range(3):
        r = reg.create(body(name()))
        assert r.status_code == 201, r.text
        sids.append(r.json()["sessionUuid"])
    kids = [kernel_of(reg, sid) for sid in sids]
    wrong = str(uuid.uuid4())  # not a kernel of sids[1]
    reg.bus("slots cpu=1 mem=1g", f"scheduled {sids[0]} rgt {kids[0]}=fa-batch",
            f"scheduled {sids[1]} rgt {wrong}=fa-batch",
            f"scheduled {sids[2]} rgt {kids[2]}=fa-batch")
    reg.wait_status(sids[0], "PREPARING")
    reg.wait_status(sids[2], "PREPARING")
    # and a kernel event after them
    reg.bus(f"kstarted {sids[0]} {kids[0]} fa-batch 10.0.0.7")
    reg.wait_status(sids[0], "RUNNING")

    def dlq():
        c = subprocess.run(["kcat", "-b", reg.env["KAFKA_BOOTSTRAP"], "-C", "-t", "tessera.dlq.v1",
                            "-o", "beginning", "-e", "-q", "-f", "%k\t%h\n"],
                           capture_output=True, text=True, timeout=30)
        return [line for line in c.stdout.splitlines()
                if line.startswith(sids[1]) and "dlq.group=tessera-registry.sessions," in line]
    line = wait_until(dlq, 30, message="the bad placement in the DLQ")[0]
    assert f"kernel {wrong} is not a pending kernel" in line, line
    assert reg.info(sids[1])["status"] == "PENDING"
    for sid in sids:
        reg.call("DELETE", f"/v1/sessions/{sid}?forced=true")


def test_a_placement_naming_an_agent_that_is_not_utf8_goes_to_the_dlq(reg):
    """The registry refuses a SessionScheduled whose agent id is not UTF-8
    (it could not store or show it): the event goes to the DLQ with that
    reason and the session stays PENDING."""
    reg.agent("fa-utf8", "rgt")
    r = reg.create(body(name()))
    assert r.status_code == 201, r.text
    sid = r.json()["sessionUuid"]
    kid = kernel_of(reg, sid)
    line = b"slots cpu=1 mem=1g\nscheduled %s rgt %s=fa-\xff\n" % (sid.encode(), kid.encode())
    p = subprocess.run([FAKE_AGENT, reg.env["KAFKA_BOOTSTRAP"]], input=line, capture_output=True,
                       timeout=60, check=False)
    assert p.returncode == 0, p.stderr

    def dlq():
        c = subprocess.run(["kcat", "-b", reg.env["KAFKA_BOOTSTRAP"], "-C", "-t", "tessera.dlq.v1",
                            "-o", "beginning", "-e", "-q", "-f", "%k\t%h\n"],
                           capture_output=True, timeout=30)
        out = c.stdout.decode("utf-8", "replace")
        return [x for x in out.splitlines() if x.startswith(sid)]
    found = wait_until(dlq, 30, message="the placement in the DLQ")[0]
    assert "the agent id is not UTF-8" in found, found
    assert reg.info(sid)["status"] == "PENDING"
    reg.call("DELETE", f"/v1/sessions/{sid}?forced=true")


def test_event_consumers_auto_and_bad_values(reg, bin_dir):
    """registry.event_consumers 0 (the default) chooses 1 consumer per group
    on a machine of at most two CPUs and 3 on larger ones, and says so at
    start; values outside 0..16 are refused, naming the variable."""
    want = 1 if (os.cpu_count() or 1) <= 2 else 3
    with open(os.path.join(reg.env["TESSERA_STATE_DIR"], "logs", "registry.log")) as f:
        lines = [x for x in f if 'msg="event consumers"' in x]
    assert lines and f"per_group={want} configured=0" in lines[0], lines
    exe = os.path.join(bin_dir, "tessera-registry")
    for bad in ("-1", "17", "three"):
        r = subprocess.run([exe, "--check-config"], capture_output=True, text=True, timeout=30,
                           env={**os.environ, "TESSERA_REGISTRY_EVENT_CONSUMERS": bad})
        assert r.returncode == 2, (bad, r.stderr)
        assert "TESSERA_REGISTRY_EVENT_CONSUMERS" in r.stderr, (bad, r.stderr)


def test_create_waits_for_running(reg):
    reg.agent("fa-wait", "rgt")
    n = name()
    result = {}

    def create():
        result["r"] = reg.create(body(n, enqueueOnly=False, maxWaitSeconds=20), timeout=40)

    t = threading.Thread(target=create)
    started = time.monotonic()
    t.start()

    def pending_id():
        r = reg.call("GET", f"/v1/sessions/{n}")
        return r.status_code == 200 and r.json()["sessionUuid"]
    sid = wait_until(pending_id, timeout=10, message="session visible")
    kid = kernel_of(reg, sid)
    reg.bus(f"scheduled {sid} rgt {kid}=fa-wait")
    reg.wait_status(sid, "PREPARING")
    reg.bus(f"kstarted {sid} {kid} fa-wait 10.0.0.6")
    t.join(40)
    elapsed = time.monotonic() - started
    r = result["r"]
    assert r.status_code == 201, r.text
    assert r.json()["status"] == "RUNNING" and r.json()["created"] is True
    assert elapsed < 15, elapsed
    # enqueueOnly answers at once; maxWaitSeconds bounds the wait
    t0 = time.monotonic()
    r = reg.create(body(name(), enqueueOnly=False, maxWaitSeconds=1))
    assert r.status_code == 201 and r.json()["status"] == "PENDING"
    assert time.monotonic() - t0 < 5
    reg.call("DELETE", f"/v1/sessions/{sid}?forced=true")


def test_batch_exit_and_commands(reg):
    reg.agent("fa-batch", "rgt")
    n = name()
    r = reg.create(body(n, type="batch", startupCommand="echo hi; exit 3",
                        config={"scaling_group": "rgt", "resources": {"cpu": 1, "mem": "1g"},
                                "environ": {"FOO": "bar", "N": 5}}))
    assert r.status_code == 201, r.text
    sid = r.json()["sessionUuid"]
    kid = kernel_of(reg, sid)
    reg.bus(f"scheduled {sid} rgt {kid}=fa-batch")
    reg.wait_status(sid, "PREPARING")
    reg.bus(f"kstarted {sid} {kid} fa-batch 10.0.0.7")
    reg.wait_status(sid, "RUNNING")
    reg.bus(f"exited {sid} {kid} fa-batch 3 exited")
    info = reg.wait_status(sid, "TERMINATING")
    assert info["result"] == "FAILURE" and info["exitCode"] == 3
    assert info["statusInfo"] == "batch finished with exit code 3"
    reg.bus(f"terminated {sid} {kid} fa-batch 3 exited")
    info = reg.wait_status(sid, "TERMINATED")
    assert info["result"] == "FAILURE" and info["exitCode"] == 3
    # what the agent was told: CreateKernel with everything, then DestroyKernel
    p = subprocess.run([FAKE_AGENT, reg.env["KAFKA_BOOTSTRAP"], "watch", "fa-batch", "8"],
                       capture_output=True, text=True, timeout=60, check=False)
    cmds = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    mine = [c for c in cmds if c.get("session_id") == sid]
    assert [c["type"] for c in mine] == ["tessera.v1.CreateKernel", "tessera.v1.DestroyKernel"]
    ck = mine[0]
    assert ck["kernel_id"] == kid and ck["image"] == "test.local/fake/app:1"
    assert ck["startup_command"] == "echo hi; exit 3" and ck["session_type"] == 2
    assert ck["environ"]["FOO"] == "bar" and ck["environ"]["N"] == "5"
    assert ck["environ"]["BACKENDAI_SESSION_ID"] == sid
    assert ck["environ"]["BACKENDAI_KERNEL_ID"] == kid
    assert ck["environ"]["BACKENDAI_SERVICE_PORTS"] == "web:http:8080,ssh:tcp:2200"
    assert ck["slots"] == {"cpu": "1", "mem": "1073741824"}
    assert mine[1]["reason"] == "batch-finished"


def test_kernel_failure_is_error_and_late_placement_is_released(reg):
    reg.agent("fa-fail", "rgt")
    r = reg.create(body(name()))
    sid = r.json()["sessionUuid"]
    kid = kernel_of(reg, sid)
    reg.bus(f"scheduled {sid} rgt {kid}=fa-fail")
    reg.wait_status(sid, "PREPARING")
    reg.bus(f"terminated {sid} {kid} fa-fail -1 create-failed: no such runtime")
    info = reg.wait_status(sid, "ERROR")
    assert info["statusInfo"] == f"kernel {kid} terminated: create-failed: no such runtime"
    # cancelled while pending, then placed: stays CANCELLED
    r = reg.create(body(name()))
    sid2 = r.json()["sessionUuid"]
    kid2 = kernel_of(reg, sid2)
    assert reg.call("DELETE", f"/v1/sessions/{sid2}").json()["status"] == "CANCELLED"
    reg.bus(f"scheduled {sid2} rgt {kid2}=fa-fail")
    time.sleep(1.5)
    assert reg.info(sid2)["status"] == "CANCELLED"
    # an undecodable record does not stop the consumer
    reg.bus("garbage tessera.kernel.v1 junk")
    r = reg.create(body(name()))
    sid3 = r.json()["sessionUuid"]
    kid3 = kernel_of(reg, sid3)
    reg.bus(f"scheduled {sid3} rgt {kid3}=fa-fail")
    reg.wait_status(sid3, "PREPARING")
    reg.bus(f"kstarted {sid3} {kid3} fa-fail h")
    reg.wait_status(sid3, "RUNNING")
    reg.call("DELETE", f"/v1/sessions/{sid3}?forced=true")
    assert reg.info(sid3)["status"] == "TERMINATED"


def test_visibility_and_list(reg):
    r = reg.create(body(name()))
    sid = r.json()["sessionUuid"]
    r = reg.call("GET", "/v1/sessions?limit=5")
    assert r.status_code == 200
    page = r.json()
    assert page["limit"] == 5 and len(page["items"]) <= 5 and page["total"] >= 1
    item = page["items"][0]
    for key in ("status", "statusInfo", "image", "type", "creationTime", "terminationTime",
                "occupiedSlots", "requestedSlots", "servicePorts", "domainName", "groupId",
                "userId", "age"):
        assert key in item, key
    # another caller (unknown user id for this key) is refused
    r = reg.call("GET", f"/v1/sessions/{sid}", who=(str(uuid.uuid4()), reg.admin_ak))
    assert r.status_code == 401
    reg.call("DELETE", f"/v1/sessions/{sid}")


# ---- a resource group's pending_timeout ---------------------------------------------------------

def test_pending_timeout_cancels_waiting_sessions_only(reg):
    reg.group("rgt-pt", pending_timeout=2)
    reg.agent("fa-pt", "rgt-pt")
    # fakearch: no agent has it, so the real scheduler leaves these PENDING
    waiting = reg.create(body(name(), config={"scaling_group": "rgt-pt",
                                              "resources": {"cpu": 1, "mem": "1g"}})).json()
    placed = reg.create(body(name(), config={"scaling_group": "rgt-pt",
                                             "resources": {"cpu": 1, "mem": "1g"}})).json()
    no_timeout = reg.create(body(name())).json()  # group rgt: pending_timeout 0
    pid = placed["sessionUuid"]
    reg.bus(f"scheduled {pid} rgt-pt {kernel_of(reg, pid)}=fa-pt")
    reg.wait_status(pid, "PREPARING")
    t0 = time.monotonic()
    s = reg.wait_status(waiting["sessionUuid"], "CANCELLED", timeout=15)
    assert time.monotonic() - t0 < 10
    reason = "pending timeout: waited more than 2 s in resource group rgt-pt"
    assert s["statusInfo"] == reason, s
    assert ("CANCELLED", reason) in reg.history(waiting["sessionUuid"])
    assert reg.info(pid)["status"] == "PREPARING"
    assert reg.info(no_timeout["sessionUuid"])["status"] == "PENDING"
    for sid in (pid, no_timeout["sessionUuid"]):
        reg.call("DELETE", f"/v1/sessions/{sid}?forced=true")


def test_pending_timeout_bad_values_refused(reg):
    for bad in (-1, "2", 1.5, 86400 * 365 + 1):
        r = reg.call("PATCH", "/v1/admin/resource-groups/rgt", {"pending_timeout": bad})
        assert r.status_code == 400, (bad, r.text)
        assert "pending_timeout" in r.json()["msg"], r.text
