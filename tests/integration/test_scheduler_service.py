"""tessera-scheduler as a service: each test runs a mini stack of its own
(redis-server, tessera-devbus, then the schedulers and simulated agents it
needs), enqueues through the bus with tessera-busctl and watches
tessera.session.v1. The registry is not involved: these tests drive the flow
contract of docs/sessions.md from the scheduler's side."""
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import uuid

import pytest
import requests

from conftest import wait_until


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Mini:
    """redis + devbus + whatever a test starts; everything stopped by pid."""

    def __init__(self, bin_dir, tmp):
        self.bin = bin_dir
        self.tmp = tmp
        self.procs = []
        self.redis_port = free_port()
        self.start("redis", ["redis-server", "--bind", "127.0.0.1", "--port", str(self.redis_port),
                             "--save", "", "--appendonly", "no"])
        boot = os.path.join(tmp, "bootstrap")
        self.start("devbus", [os.path.join(bin_dir, "tessera-devbus")],
                   {"TESSERA_HTTP_LISTEN": f"127.0.0.1:{free_port()}",
                    "TESSERA_DEVBUS_BOOTSTRAP_FILE": boot, "TESSERA_DEVBUS_PARTITIONS": "3"})
        wait_until(lambda: os.path.exists(boot) and open(boot).read().strip(), 30, message="devbus")
        self.kafka = open(boot).read().strip()
        wait_until(lambda: self.redis("PING") == "PONG", 10, message="redis")

    def start(self, name, argv, env=None):
        log = open(os.path.join(self.tmp, f"{name}.{len(self.procs)}.log"), "w")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             env=dict(os.environ, **(env or {})))
        self.procs.append(p)
        return p

    def stop_all(self):
        # the services first (their last events still reach the bus), then devbus, redis
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    # ---- redis --------------------------------------------------------------------------
    def redis(self, *args):
        r = subprocess.run(["redis-cli", "-p", str(self.redis_port), "--raw", *args],
                           capture_output=True, text=True, timeout=30)
        return r.stdout.strip()

    def hgetall(self, key):
        out = self.redis("HGETALL", key).splitlines()
        return dict(zip(out[0::2], out[1::2]))

    def keys(self, pattern):
        return [k for k in self.redis("KEYS", pattern).splitlines() if k]

    def invariant(self, prefix=""):
        """Redis reservations = occupancy: per agent, the sums of alloc:* equal
        used:* and dev:*, nothing above capacity; sess:* counts kernels."""
        used, devs, sess = {}, {}, {}
        for key in self.keys(prefix + "alloc:*"):
            a = self.hgetall(key)
            ag = a["agent"]
            for kv in a.get("slots", "").split():
                s, v = kv.split("=")
                used[(ag, s)] = used.get((ag, s), 0) + int(v)
            for kv in a.get("devs", "").split():
                d, v = kv.split("=")
                devs[(ag, d)] = devs.get((ag, d), 0) + int(v)
            sess[a["session"]] = sess.get(a["session"], 0) + 1
        for key in self.keys(prefix + "agent:*"):
            ag = key[len(prefix + "agent:"):]
            h = self.hgetall(key)
            for f, v in h.items():
                if f.startswith("used:"):
                    assert int(v) == used.get((ag, f[5:]), 0), (ag, f, v)
                    assert int(v) <= int(h.get("cap:" + f[5:], 0)), (ag, f, "above capacity")
                if f.startswith("dev:"):
                    assert int(v) == devs.get((ag, f[4:]), 0), (ag, f, v)
                    assert int(v) <= int(h.get("devcap:" + f[4:], 0)), (ag, f, "above capacity")
            for (a2, s), v in used.items():
                if a2 == ag and v:
                    assert "used:" + s in h, (ag, s)
        for sid, n in sess.items():
            assert self.redis("GET", prefix + "sess:" + sid) == str(n), sid
        assert len(self.keys(prefix + "sess:*")) == len(sess)
        return sum(sess.values())

    # ---- services -----------------------------------------------------------------------
    def scheduler(self, name="s1", **opts):
        port = free_port()
        env = {"TESSERA_HTTP_LISTEN": f"127.0.0.1:{port}",
               "TESSERA_REDIS_URL": f"redis://127.0.0.1:{self.redis_port}/0",
               "KAFKA_BOOTSTRAP": self.kafka, "TESSERA_SERVICE_INSTANCE": name,
               "TESSERA_LOG_LEVEL": "debug"}
        for k, v in opts.items():
            env["TESSERA_SCHEDULER_" + k.upper()] = str(v)
        p = self.start("scheduler-" + name, [os.path.join(self.bin, "tessera-scheduler")], env)
        url = f"http://127.0.0.1:{port}"

        def ready():
            assert p.poll() is None, "scheduler exited"
            return requests.get(url + "/readyz", timeout=2).status_code == 200
        wait_until(ready, 30, message="scheduler ready")
        p.url = url
        wait_until(lambda: metric(url, "tessera_scheduler_sessions_partitions_assigned") == 1, 60,
                   message="the sessions consumer has partitions")
        return p

    def simagent(self, count, gpus, prefix, group, **opts):
        env = {"TESSERA_HTTP_LISTEN": f"127.0.0.1:{free_port()}", "KAFKA_BOOTSTRAP": self.kafka,
               "TESSERA_SERVICE_INSTANCE": "sim-" + prefix, "TESSERA_SIMAGENT_COUNT": str(count),
               "TESSERA_SIMAGENT_GPUS": str(gpus), "TESSERA_SIMAGENT_ID_PREFIX": prefix,
               "TESSERA_SIMAGENT_RESOURCE_GROUP": group,
               "TESSERA_SIMAGENT_HEARTBEAT_INTERVAL": "1s"}
        for k, v in opts.items():
            env["TESSERA_SIMAGENT_" + k.upper()] = str(v)
        return self.start("simagent-" + prefix, [os.path.join(self.bin, "tessera-simagent")], env)

    # ---- bus ----------------------------------------------------------------------------
    def busctl(self, *args, input=None, timeout=60):
        r = subprocess.run([os.path.join(self.bin, "tessera-busctl"), *args], input=input,
                           capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, KAFKA_BOOTSTRAP=self.kafka))
        return r

    def publish(self, type_, payload, key=None, topic="tessera.session.v1"):
        args = ["publish", "-t", topic, "-T", type_, json.dumps(payload)]
        if key or payload.get("session_id"):
            args[1:1] = ["-k", key or payload["session_id"]]
        r = self.busctl(*args)
        assert r.returncode == 0, r.stderr

    def dlq(self, key_prefix):
        """The DLQ's records whose key starts with key_prefix: "key<TAB>headers"."""
        c = subprocess.run(["kcat", "-b", self.kafka, "-C", "-t", "tessera.dlq.v1", "-o", "beginning",
                            "-e", "-q", "-f", "%k\t%h\n"], capture_output=True, text=True, timeout=30)
        return [line for line in c.stdout.splitlines() if line.startswith(key_prefix)]

    def events(self, topic="tessera.session.v1", type_=None, count=0, timeout=10, idle=2):
        args = ["dump", "-t", topic, "--timeout", str(timeout)]
        if type_:
            args += ["--type", type_]
        if count:
            args += ["--count", str(count)]
        else:
            args += ["--idle", str(idle)]
        r = self.busctl(*args, timeout=timeout + 30)
        return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def metric(url, name):
    for line in requests.get(url + "/metrics", timeout=5).text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def enqueued(sid, group, kernels, ak="AK1", user="u1"):
    """A SessionEnqueued payload: kernels = [(kernel_id, {slot: amount})]."""
    return {"session_id": sid, "session_name": sid, "access_key": ak, "user_id": user,
            "project_id": "p1", "domain_name": "default", "resource_group": group,
            "architecture": "x86_64", "cluster_size": len(kernels), "cluster_mode": "single-node",
            "kernels": [{"kernel_id": k, "cluster_role": "main" if i == 0 else "sub", "cluster_idx": i,
                         "slots": [{"name": n, "amount": a} for n, a in slots.items()]}
                        for i, (k, slots) in enumerate(kernels)]}


@pytest.fixture
def mini(bin_dir):
    if not os.path.exists(os.path.join(bin_dir, "tessera-busctl")):
        pytest.skip("tessera-busctl is not built (make tools)")
    tmp = tempfile.mkdtemp(prefix="tessera-sched-it-")
    m = Mini(bin_dir, tmp)
    try:
        yield m
    finally:
        m.stop_all()
        print(f"\nmini stack logs: {tmp}")


def wait_agents(sched, n):
    wait_until(lambda: metric(sched.url, "tessera_scheduler_agents") == n, 30,
               message=f"{n} agents in the scheduler's model")


def scheduled_of(events):
    return {e["payload"]["session_id"]: e["payload"] for e in events
            if e.get("type") == "tessera.v1.SessionScheduled"}


def test_fractional_placement_through_the_service(mini):
    s = mini.scheduler()
    mini.simagent(2, 2, "frac-", "gpu")
    wait_agents(s, 2)
    for i in range(4):
        mini.publish("SessionEnqueued", enqueued(f"q{i}", "gpu", [(f"q{i}-k", {"cpu": "1", "mem": "1g",
                                                                               "cuda.shares": "0.25"})]))
    mini.publish("SessionEnqueued", enqueued("w1", "gpu", [("w1-k", {"cpu": "1", "cuda.device": "1"})]))
    ev = scheduled_of(mini.events(type_="SessionScheduled", count=5, timeout=30))
    assert len(ev) == 5, ev
    places = set()
    for i in range(4):
        k = ev[f"q{i}"]["kernels"][0]
        assert k["devices"] == [{"device_id": k["devices"][0]["device_id"], "slot_name": "cuda.shares",
                                 "amount": "0.25"}], k
        assert {"name": "cuda.shares", "amount": "0.25"} in k["slots"]
        places.add((k["agent_id"], k["devices"][0]["device_id"]))
    assert len(places) == 1, f"four 0.25 requests fill one device: {places}"
    w = ev["w1"]["kernels"][0]
    assert w["devices"][0]["slot_name"] == "cuda.device" and w["devices"][0]["amount"] == "1"
    assert (w["agent_id"], w["devices"][0]["device_id"]) not in places
    assert ev["w1"]["resource_group"] == "gpu" and ev["w1"]["scheduler"] == "scheduler/s1"
    assert mini.invariant() == 5
    assert mini.keys("sched:pending:*") == []


def test_unschedulable_reason_published_once(mini):
    s = mini.scheduler(sweep_interval="200ms")
    mini.simagent(1, 1, "un-", "gpu")
    wait_agents(s, 1)
    mini.publish("SessionEnqueued", enqueued("big", "gpu", [("big-k", {"cpu": "1000"})]))
    mini.publish("SessionEnqueued", enqueued("nogroup", "empty", [("ng-k", {"cpu": "1"})]))
    time.sleep(3)  # a dozen sweeps
    ev = [e for e in mini.events(type_="SessionUnschedulable", timeout=15, idle=2)]
    by = {}
    for e in ev:
        by.setdefault(e["payload"]["session_id"], []).append(e["payload"])
    assert len(by["big"]) == 1, by["big"]
    assert by["big"][0]["reason_code"] == "too_big"
    assert "requested cpu 1000 is more than any agent in resource group gpu has" in by["big"][0]["reason"]
    assert by["nogroup"][0]["reason_code"] == "no_agent", by["nogroup"]
    assert len(by["nogroup"]) == 1
    assert metric(s.url, "tessera_scheduler_pending_sessions") == 2
    # still pending, so its record survives a restart
    assert sorted(mini.keys("sched:pending:*")) == ["sched:pending:big", "sched:pending:nogroup"]


def test_sigkill_mid_queue_loses_no_pending_session(mini):
    s = mini.scheduler()
    mini.simagent(1, 2, "kill-", "gpu")
    wait_agents(s, 1)
    # two GPUs, six whole-GPU sessions: two run, four wait
    for i in range(6):
        mini.publish("SessionEnqueued", enqueued(f"k{i}", "gpu", [(f"k{i}-k", {"cpu": "1", "cuda.device": "1"})]))
    wait_until(lambda: len(mini.keys("alloc:*")) == 2 and metric(s.url, "tessera_scheduler_pending_sessions") == 4,
               30, message="2 scheduled, 4 pending")
    s.send_signal(signal.SIGKILL)
    s.wait()
    # while it is down: one more enqueued, one running session ends
    running = sorted(k[len("alloc:"):-2] for k in mini.keys("alloc:*"))
    mini.publish("SessionEnqueued", enqueued("k6", "gpu", [("k6-k", {"cpu": "1", "cuda.device": "1"})]))
    mini.publish("SessionTerminated", {"session_id": running[0], "reason": "done"})
    s2 = mini.scheduler("s2")
    wait_agents(s2, 1)
    # the ended one is released, a pending one takes its GPU; 4 still wait
    wait_until(lambda: metric(s2.url, "tessera_scheduler_pending_sessions") == 4, 30,
               message="4 pending after restart")
    assert len(mini.keys("alloc:*")) == 2
    # end everything that runs, repeatedly: every session gets its turn (the one
    # ended while the scheduler was down is done already)
    done = {running[0]}
    deadline = time.time() + 90
    while len(done) < 7 and time.time() < deadline:
        for k in mini.keys("alloc:*"):
            sid = k[len("alloc:"):-2]
            if sid not in done:
                done.add(sid)
                mini.publish("SessionTerminated", {"session_id": sid, "reason": "done"})
        time.sleep(0.5)
    assert done == {f"k{i}" for i in range(7)}, done
    wait_until(lambda: mini.keys("alloc:*") == [] and mini.keys("sched:pending:*") == [], 30,
               message="nothing held, nothing pending")
    mini.invariant()


def test_two_schedulers_under_load_never_double_book(mini):
    a = mini.scheduler("a", resync_interval="500ms")
    b = mini.scheduler("b", resync_interval="500ms")
    mini.simagent(4, 2, "two-", "gpu")
    wait_agents(a, 4)
    wait_agents(b, 4)
    # 8 GPUs x 1.00, 60 sessions of 0.25..1.00: far more than fits
    lines = []
    sizes = ["0.25", "0.5", "1", "0.75"]
    for i in range(60):
        p = enqueued(f"t{i}", "gpu", [(f"t{i}-k", {"cpu": "1", "cuda.shares": sizes[i % 4]})],
                     ak=f"AK{i % 5}", user=f"u{i % 5}")
        lines.append(json.dumps({"topic": "tessera.session.v1", "type": "tessera.v1.SessionEnqueued",
                                 "key": p["session_id"], "payload": p}))
    # and sessions under no limit, spread over the partitions, so that both
    # instances place something whichever fills the limits first (each takes
    # what has arrived on its partitions in one batch)
    for i in range(8):
        p = enqueued(f"free{i}", "cpu", [(f"free{i}-k", {"cpu": "1"})], ak=f"AKF{i}", user=f"uf{i}")
        lines.append(json.dumps({"topic": "tessera.session.v1", "type": "tessera.v1.SessionEnqueued",
                                 "key": p["session_id"], "payload": p}))
    r = mini.busctl("publish", "-t", "tessera.session.v1", input="\n".join(lines) + "\n")
    assert r.returncode == 0, r.stderr
    time.sleep(5)
    # release a wave and let both race for the room again
    for k in mini.keys("alloc:*")[:6]:
        mini.publish("SessionTerminated", {"session_id": k[len("alloc:"):-2], "reason": "done"})
    time.sleep(5)
    n = mini.invariant()
    assert n > 0
    shares = 0
    for k in mini.keys("alloc:*"):
        a_ = mini.hgetall(k)
        for kv in a_["devs"].split():
            shares += int(kv.split("=")[1])
    assert shares <= 800
    both = (metric(a.url, "tessera_scheduler_scheduled_total") or 0) + \
        (metric(b.url, "tessera_scheduler_scheduled_total") or 0)
    assert both >= n
    ev = scheduled_of(mini.events(type_="SessionScheduled", timeout=15, idle=2))
    held = {k[len("alloc:"):-2] for k in mini.keys("alloc:*")}
    assert held <= set(ev), "every held session was announced"


def test_duplicated_and_reordered_events_are_harmless(mini):
    s = mini.scheduler()
    mini.simagent(1, 1, "dup-", "gpu")
    wait_agents(s, 1)
    p = enqueued("d1", "gpu", [("d1-k", {"cpu": "1", "cuda.shares": "0.5"})])
    mini.publish("SessionEnqueued", p)
    mini.publish("SessionEnqueued", p)
    wait_until(lambda: mini.keys("alloc:*") == ["alloc:d1-k"], 20, message="d1 scheduled")
    mini.publish("SessionEnqueued", p)  # a replay after scheduling
    # Cancelled arrives before its Enqueued: the late Enqueued is ignored
    mini.publish("SessionCancelled", {"session_id": "c1", "reason": "user-requested"})
    mini.publish("SessionEnqueued", enqueued("c1", "gpu", [("c1-k", {"cpu": "1"})]))
    time.sleep(3)
    ev = [e["payload"]["session_id"] for e in mini.events(type_="SessionScheduled", timeout=10, idle=2)]
    assert ev.count("d1") == 1 and "c1" not in ev, ev
    assert mini.keys("alloc:*") == ["alloc:d1-k"]
    assert mini.keys("sched:pending:*") == []
    # terminated twice (and failed once more): released exactly once
    for t in ("SessionTerminated", "SessionTerminated", "SessionFailed"):
        mini.publish(t, {"session_id": "d1", "reason": "x"})
    wait_until(lambda: mini.keys("alloc:*") == [], 20, message="d1 released")
    time.sleep(1)
    h = mini.hgetall("agent:dup-0")
    assert h["used:cpu"] == "0" and h["used:cuda.shares"] == "0" and h["dev:0"] == "0", h
    assert metric(s.url, "tessera_scheduler_kernels_released_total") == 1
    assert metric(s.url, "tessera_scheduler_duplicates_total") >= 3
    mini.invariant()


def test_undecodable_session_event_goes_to_the_dlq(mini):
    s = mini.scheduler()
    marker = "garbage-" + uuid.uuid4().hex
    r = mini.busctl("publish-raw", "-t", "tessera.session.v1", "-k", marker, "\xff not an envelope")
    assert r.returncode == 0, r.stderr

    line = wait_until(lambda: mini.dlq(marker), 30, message="the DLQ record")[0]
    assert "dlq.group=tessera-scheduler.sessions" in line and "undecodable" in line, line
    # and consumption goes on
    mini.simagent(1, 1, "dlq-", "gpu")
    wait_agents(s, 1)
    mini.publish("SessionEnqueued", enqueued("after", "gpu", [("after-k", {"cpu": "1"})]))
    wait_until(lambda: mini.keys("alloc:*") == ["alloc:after-k"], 20, message="scheduled after garbage")


def test_a_bad_event_in_a_batch_is_dead_lettered_alone(mini):
    """Session events are taken in batches (one Redis round trip each): a
    decodable event with a bad session id among good ones goes to the DLQ
    alone, the good ones before and after it are scheduled."""
    s = mini.scheduler()
    mini.simagent(1, 1, "bb-", "gpu")
    wait_agents(s, 1)
    marker = "bad-" + uuid.uuid4().hex
    s.send_signal(signal.SIGSTOP)  # so that the three arrive together
    try:
        mini.publish("SessionEnqueued", enqueued("bb1", "gpu", [("bb1-k", {"cpu": "1"})]))
        mini.publish("SessionEnqueued", enqueued("bad id", "gpu", [("bad-k", {"cpu": "1"})]), key=marker)
        mini.publish("SessionEnqueued", enqueued("bb2", "gpu", [("bb2-k", {"cpu": "1"})]))
    finally:
        s.send_signal(signal.SIGCONT)
    wait_until(lambda: sorted(mini.keys("alloc:*")) == ["alloc:bb1-k", "alloc:bb2-k"], 20,
               message="bb1 and bb2 scheduled")

    line = wait_until(lambda: mini.dlq(marker), 30, message="the DLQ record")[0]
    assert "dlq.group=tessera-scheduler.sessions" in line and "session_id" in line, line
    assert mini.keys("sched:pending:*") == []
    mini.invariant()


def test_flushall_then_occupancy_is_correct_again(mini):
    s = mini.scheduler(rebuild_after="1s", sweep_interval="200ms")
    mini.simagent(2, 2, "fl-", "gpu")
    wait_agents(s, 2)
    for i in range(5):
        mini.publish("SessionEnqueued", enqueued(f"f{i}", "gpu", [(f"f{i}-k", {"cpu": "2", "mem": "1g",
                                                                               "cuda.shares": "0.5"})]))
    wait_until(lambda: len(mini.keys("alloc:*")) == 5, 20, message="5 scheduled")
    before = {k: mini.hgetall(k) for k in mini.keys("agent:*")}
    allocs = {k: mini.hgetall(k) for k in mini.keys("alloc:*")}
    mini.publish("SessionEnqueued", enqueued("pend", "gpu", [("pend-k", {"cpu": "1000"})]))
    wait_until(lambda: mini.keys("sched:pending:*") == ["sched:pending:pend"], 20)
    assert mini.redis("FLUSHALL") == "OK"
    # the scheduler notices, waits for a rebuild, then (rebuild_after) rebuilds from its model
    wait_until(lambda: metric(s.url, "tessera_scheduler_redis_losses_total") == 1, 10)
    wait_until(lambda: len(mini.keys("alloc:*")) == 5 and metric(s.url, "tessera_scheduler_redis_lost") == 0,
               20, message="occupancy back")
    for k, h in before.items():
        now = mini.hgetall(k)
        for f in h:
            if f.startswith(("used:", "dev:", "cap:", "devcap:")):
                assert now.get(f) == h[f], (k, f, now.get(f), h[f])
    assert {k: mini.hgetall(k) for k in mini.keys("alloc:*")} == allocs
    assert mini.keys("sched:pending:*") == ["sched:pending:pend"]
    mini.invariant()
    # scheduling resumes, releases too
    mini.publish("SessionEnqueued", enqueued("f9", "gpu", [("f9-k", {"cpu": "1", "cuda.shares": "0.5"})]))
    wait_until(lambda: "alloc:f9-k" in mini.keys("alloc:*"), 20, message="scheduling resumed")
    mini.publish("SessionTerminated", {"session_id": "f0", "reason": "done"})
    wait_until(lambda: "alloc:f0-k" not in mini.keys("alloc:*"), 20)
    mini.invariant()


def test_simagent_speaks_the_agent_protocol(mini):
    mini.simagent(3, 2, "proto-", "gpu", start_delay="200ms", stop_delay="200ms",
                  batch_run_time="500ms", gpu_shares_per_device="0.5")
    hb = mini.events(topic="tessera.agent.v1", type_="AgentHeartbeat", count=3, timeout=30)
    agents = {e["payload"]["agent_id"] for e in hb}
    assert agents <= {"proto-0", "proto-1", "proto-2"}
    dev = hb[0]["payload"]["devices"][0]
    assert dev["shares_capacity"] == "0.50" and dev["slot_name"] == "cuda.device"
    cmd = {"session_id": "ps1", "kernel_id": "pk1", "agent_id": "proto-1", "session_type": "SESSION_TYPE_BATCH",
           "slots": [{"name": "cpu", "amount": "1"}],
           "devices": [{"device_id": "0", "slot_name": "cuda.shares", "amount": "0.25"}]}
    mini.publish("CreateKernel", cmd, key="pk1", topic="tessera.agent.cmd.proto-1")
    mini.publish("CreateKernel", cmd, key="pk1", topic="tessera.agent.cmd.proto-1")  # a repeat
    ev = mini.events(topic="tessera.kernel.v1", count=3, timeout=40)
    types = [e["type"] for e in ev]
    assert types == ["tessera.v1.KernelCreating", "tessera.v1.KernelStarted", "tessera.v1.KernelExited"], types
    assert ev[2]["payload"]["exit_code"] == 0 and ev[1]["payload"]["agent_id"] == "proto-1"
    # the heartbeat carries the allocation
    def allocated():
        for e in mini.events(topic="tessera.agent.v1", type_="AgentHeartbeat", timeout=8, idle=3):
            p = e["payload"]
            if p["agent_id"] == "proto-1" and any(a["kernel_id"] == "pk1" for a in p["allocations"]):
                return True
        return False
    assert allocated()
    mini.publish("DestroyKernel", {"session_id": "ps1", "kernel_id": "pk1", "reason": "batch-finished"},
                 key="pk1", topic="tessera.agent.cmd.proto-1")
    ev = mini.events(topic="tessera.kernel.v1", type_="KernelTerminated", count=1, timeout=30)
    assert ev[0]["payload"]["kernel_id"] == "pk1" and ev[0]["payload"]["exit_code"] == 0
    assert ev[0]["payload"]["reason"] == "batch-finished"


def test_simagent_kernel_generations(mini):
    """A restart (docs/events.md, "Generations"): DestroyKernel of generation 0 then
    CreateKernel of generation 1 for the same id; stale and repeated commands are harmless."""
    mini.simagent(1, 1, "gen-", "gpu", start_delay="100ms", stop_delay="300ms")
    topic = "tessera.agent.cmd.gen-0"
    cmd = {"session_id": "gs1", "kernel_id": "gk1", "agent_id": "gen-0",
           "session_type": "SESSION_TYPE_INTERACTIVE", "slots": [{"name": "cpu", "amount": "1"}]}

    def kev(count=0):  # the first count kernel events, or all within an idle 2 s
        ev = mini.events(topic="tessera.kernel.v1", count=count, timeout=40)
        return [(e["type"].split(".")[-1], e["payload"].get("generation", 0),
                 e["payload"].get("reason", "")) for e in ev if e["payload"]["kernel_id"] == "gk1"]

    mini.publish("CreateKernel", cmd, key="gk1", topic=topic)
    assert kev(2) == [("KernelCreating", 0, ""), ("KernelStarted", 0, "")]
    mini.publish("DestroyKernel", {"session_id": "gs1", "kernel_id": "gk1", "reason": "restarting"},
                 key="gk1", topic=topic)
    mini.publish("CreateKernel", dict(cmd, generation=1), key="gk1", topic=topic)
    mini.publish("CreateKernel", dict(cmd, generation=1), key="gk1", topic=topic)  # a repeat
    mini.publish("CreateKernel", cmd, key="gk1", topic=topic)  # an old replay
    assert kev(5)[2:] == [("KernelTerminated", 0, "restarting"), ("KernelCreating", 0, ""),
                          ("KernelStarted", 1, "")]
    # a replayed destroy of generation 0 is stale: answered, the kernel stays
    mini.publish("DestroyKernel", {"session_id": "gs1", "kernel_id": "gk1", "reason": "old"},
                 key="gk1", topic=topic)
    assert kev(6)[5] == ("KernelTerminated", 0, "stale generation")
    time.sleep(1)
    assert len(kev()) == 6, "the stale destroy ended the current generation"
    mini.publish("DestroyKernel", {"session_id": "gs1", "kernel_id": "gk1", "reason": "bye",
                                   "generation": 1}, key="gk1", topic=topic)
    assert kev(7)[6] == ("KernelTerminated", 1, "bye")


def test_two_schedulers_hold_limits_together(mini):
    """Each instance counts what it placed; the reserve script counts what both
    placed (usage:<scope> in Redis), so together they never pass a limit."""
    a = mini.scheduler("a", resync_interval="500ms")
    b = mini.scheduler("b", resync_interval="500ms")
    mini.simagent(4, 0, "lim-", "cpu")
    wait_agents(a, 4)
    wait_agents(b, 4)
    lines = []
    for i in range(24):
        kp = i % 2 == 0  # even: keypair AKC, at most 2 sessions; odd: user us, at most 3 cpu
        p = enqueued(f"l{i}", "cpu", [(f"l{i}-k", {"cpu": "1"})],
                     ak="AKC" if kp else f"AKS{i}", user="uc" if kp else "us")
        p["limits"] = ([{"scope": "keypair", "id": "AKC", "max_concurrent_sessions": 2}] if kp else
                       [{"scope": "user", "id": "us", "max_slots": [{"name": "cpu", "amount": "3"}]}])
        lines.append(json.dumps({"topic": "tessera.session.v1", "type": "tessera.v1.SessionEnqueued",
                                 "key": p["session_id"], "payload": p}))
    # and sessions under no limit, spread over the partitions, so that both
    # instances place something whichever fills the limits first (each takes
    # what has arrived on its partitions in one batch)
    for i in range(8):
        p = enqueued(f"free{i}", "cpu", [(f"free{i}-k", {"cpu": "1"})], ak=f"AKF{i}", user=f"uf{i}")
        lines.append(json.dumps({"topic": "tessera.session.v1", "type": "tessera.v1.SessionEnqueued",
                                 "key": p["session_id"], "payload": p}))
    r = mini.busctl("publish", "-t", "tessera.session.v1", input="\n".join(lines) + "\n")
    assert r.returncode == 0, r.stderr

    def held(prefix_ids):
        return sorted(k[len("alloc:"):-2] for k in mini.keys("alloc:*")
                      if k[len("alloc:"):-2] in prefix_ids)
    even = {f"l{i}" for i in range(0, 24, 2)}
    odd = {f"l{i}" for i in range(1, 24, 2)}
    wait_until(lambda: len(held(even)) == 2 and len(held(odd)) == 3, 20,
               message="2 sessions of AKC and 3 of user us placed")
    time.sleep(3)  # both instances had every chance to place more
    assert len(held(even)) == 2 and len(held(odd)) == 3, (held(even), held(odd))
    assert mini.hgetall("usage:kp:AKC")["sessions"] == "2"
    assert mini.hgetall("usage:user:us")["cpu"] == "3000"
    # both instances took part (each owns some partitions of the sessions topic)
    assert (metric(a.url, "tessera_scheduler_scheduled_total") or 0) > 0
    assert (metric(b.url, "tessera_scheduler_scheduled_total") or 0) > 0
    # room freed by whichever instance: the next waiting session is placed
    first = held(even)
    for sid in first:
        mini.publish("SessionTerminated", {"session_id": sid, "reason": "done"})
    wait_until(lambda: len(held(even)) == 2 and not set(held(even)) & set(first), 20,
               message="two more AKC sessions placed after two ended")
    mini.invariant()


def test_multi_node_kernels_on_their_agents_through_a_restart_and_a_race(mini):
    """A multi-node session whose kernels each name an agent (a per-kernel
    agentList, docs/sessions.md "Cluster sessions"): every kernel goes to its
    own agent in one SessionScheduled, or none does. One of its agents is
    full at first: the session waits, saying why, through a SIGKILLed
    scheduler's restart (its pending record keeps the agents), and is placed
    whole once that agent frees, by one of two schedulers racing for it."""
    s = mini.scheduler("r1")
    mini.simagent(3, 0, "mn-", "cl", cpu="2", mem="8g")
    wait_agents(s, 3)
    mini.publish("SessionEnqueued", enqueued("fill", "cl", [("fill-k", {"cpu": "2"})]) |
                 {"designated_agent": "mn-1"})
    wait_until(lambda: mini.keys("alloc:fill-k"), 30, message="mn-1 full")
    mn = enqueued("mn", "cl", [("mn-k0", {"cpu": "1"}), ("mn-k1", {"cpu": "1"}), ("mn-k2", {"cpu": "1"})])
    mn["cluster_mode"] = "multi-node"
    for k, agent in zip(mn["kernels"], ["mn-0", "mn-1", "mn-0"]):
        k["designated_agent"] = agent
    mini.publish("SessionEnqueued", mn)
    ev = [e["payload"] for e in mini.events(type_="SessionUnschedulable", timeout=20, idle=2)
          if e["payload"]["session_id"] == "mn"]
    assert ev and ev[0]["reason_code"] == "no_capacity" and "designated agent mn-1" in ev[0]["reason"], ev
    assert mini.keys("alloc:mn-*") == [], "nothing of it placed while one kernel cannot be"
    s.send_signal(signal.SIGKILL)
    s.wait()
    a, b = mini.scheduler("r2"), mini.scheduler("r3")
    wait_agents(a, 3)
    wait_agents(b, 3)
    mini.publish("SessionTerminated", {"session_id": "fill", "reason": "done"})
    placed = scheduled_of(mini.events(type_="SessionScheduled", timeout=30, idle=3))
    assert "mn" in placed, placed
    assert {k["kernel_id"]: k["agent_id"] for k in placed["mn"]["kernels"]} == {
        "mn-k0": "mn-0", "mn-k1": "mn-1", "mn-k2": "mn-0"}, placed["mn"]
    assert sorted(mini.keys("alloc:mn-*")) == ["alloc:mn-k0", "alloc:mn-k1", "alloc:mn-k2"]
    assert mini.hgetall("agent:mn-0").get("used:cpu") == "2000"
    assert mini.keys("sched:pending:*") == []
    mini.invariant()
