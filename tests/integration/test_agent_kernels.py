"""tessera-agent end to end (issue 5, parts 4-7; issue 6 part 2, the agent's
GPU side): commands published on tessera.agent.cmd.<agent-id> as the registry
would, events read back from tessera.agent.v1 / tessera.kernel.v1 /
tessera.usage.v1, execute and logs through the agent's internal HTTP API,
real runc containers from the busybox demo image.

The bus tool is build/tests/tessera-agent-testctl (tests/tools/agent_testctl.c):
`publish <topic> <key> <Type> '<json>'` and `consume <topics>` (JSON lines).
The dev stack runs the agent as root with 2 mock GPUs (deploy/dev/dev-up.sh)."""
import glob
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
import uuid

import pytest
import requests

import svc_signer

from conftest import BIN_DIR, wait_until

TESTCTL = os.path.join(os.path.dirname(BIN_DIR), "tests", "tessera-agent-testctl")
TOPICS = "tessera.agent.v1,tessera.kernel.v1,tessera.usage.v1"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the agent runs containers as root")


class Bus:
    """Every event on TOPICS since the stack started (a consumer of our own),
    and a way to publish agent commands."""

    def __init__(self, stack):
        if not os.path.exists(TESTCTL):
            pytest.skip(f"{TESTCTL} is not built (make)")
        self.env = dict(os.environ, KAFKA_BOOTSTRAP=stack["KAFKA_BOOTSTRAP"])
        self.events = []
        self.lock = threading.Lock()
        self.proc = subprocess.Popen([TESTCTL, "consume", TOPICS], env=self.env,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                self.events.append(ev)

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def find(self, type_, pred=lambda p: True, since=0.0):
        """Events of a type (short name) whose payload matches pred."""
        with self.lock:
            evs = list(self.events)
        return [e for e in evs if e["type"] == "tessera.v1." + type_ and e.get("payload") is not None
                and e["occurred_at_ms"] >= since * 1000 and pred(e["payload"])]

    def wait(self, type_, pred=lambda p: True, timeout=30, since=0.0):
        return wait_until(lambda: self.find(type_, pred, since), timeout=timeout,
                          message=f"{type_} event")[-1]["payload"]

    def kernel_events(self, kernel_id):
        with self.lock:
            evs = list(self.events)
        return [e["type"].rsplit(".", 1)[1] for e in evs
                if e["topic"] == "tessera.kernel.v1" and e.get("payload", {}).get("kernel_id") == kernel_id]

    def publish(self, agent_id, type_, payload):
        key = payload["kernel_id"]
        p = subprocess.run([TESTCTL, "publish", f"tessera.agent.cmd.{agent_id}", key, type_,
                            json.dumps(payload)], env=self.env, capture_output=True, text=True,
                           timeout=30)
        assert p.returncode == 0, p.stderr


@pytest.fixture(scope="module")
def agent(stack):
    """(bus, agent info from GET /v1/agent, agent URL, created kernel ids)."""
    url = stack["TESSERA_AGENT_URL"]
    info = svc_signer.call(stack, "registry", "GET", url + "/v1/agent", timeout=10).json()
    bus = Bus(stack)
    # our consumer is in once it has read the agent's first heartbeat
    bus.wait("AgentHeartbeat", lambda p: p["agent_id"] == info["agent_id"], timeout=30)
    created = []
    ctx = {"bus": bus, "info": info, "url": url, "id": info["agent_id"], "created": created,
           "stack": stack}
    yield ctx
    # leave no container behind
    for kid in created:
        bus.publish(ctx["id"], "DestroyKernel", {"session_id": "s-" + kid, "kernel_id": kid,
                                                 "reason": "test cleanup"})
    for kid in created:
        try:
            bus.wait("KernelTerminated", lambda p, k=kid: p["kernel_id"] == k, timeout=30)
        except BaseException:  # noqa: BLE001 - report the rest
            pass
    bus.close()


def api(agent, method, path, **kw):
    """The agent's internal API as the registry calls it (signed with the
    stack's registry key: only the registry may drive an agent)."""
    return svc_signer.call(agent["stack"], "registry", method, agent["url"] + path, **kw)


def create(agent, session_type=1, image=None, slots=None, **extra):
    kid = "k" + uuid.uuid4().hex[:20]
    cmd = {
        "session_id": "s-" + kid, "kernel_id": kid, "agent_id": agent["id"],
        "session_type": session_type, "image": image or agent["stack"]["TESSERA_DEMO_IMAGE"],
        "cluster_role": "main", "cluster_idx": 0, "cluster_size": 1, "access_key": "AKIATESTAGENT",
        "slots": [{"name": k, "amount": v} for k, v in (slots or {"cpu": "1", "mem": "256m"}).items()],
    }
    cmd.update(extra)
    agent["created"].append(kid)
    agent["bus"].publish(agent["id"], "CreateKernel", cmd)
    return kid, cmd


def destroy(agent, kid, reason="user-requested"):
    agent["bus"].publish(agent["id"], "DestroyKernel",
                         {"session_id": "s-" + kid, "kernel_id": kid, "reason": reason})
    return agent["bus"].wait("KernelTerminated", lambda p: p["kernel_id"] == kid, timeout=30)


def execute(agent, kid, **body):
    r = api(agent, "POST", f"/v1/kernels/{kid}/execute", json=body, timeout=90)
    assert r.status_code == 200, r.text
    return r.json()["result"]


def stdout_of(result):
    return "".join(text for kind, text in result["console"] if kind == "stdout")


def leftovers(agent, kid):
    """What a destroyed kernel must not leave: mounts, cgroups, netns, dirs, runc state."""
    found = []
    with open("/proc/self/mountinfo") as f:
        found += [line.strip() for line in f if kid in line]
    found += glob.glob(f"/sys/fs/cgroup/*/tessera/{kid}")
    if os.path.exists(f"/run/netns/tessera-{kid}"):
        found.append(f"/run/netns/tessera-{kid}")
    state = os.path.join(agent["stack"]["TESSERA_STATE_DIR"], "agent")
    if os.path.exists(os.path.join(state, "kernels", kid)):
        found.append(os.path.join(state, "kernels", kid))
    if os.path.exists(f"/run/runc/{kid}"):
        found.append(f"/run/runc/{kid}")
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cgroup") as f:
                    if f"/tessera/{kid}" in f.read():
                        found.append(f"process {pid}")
            except OSError:
                pass
    return found


# ---- tests ---------------------------------------------------------------------------


def test_agent_started_with_mock_gpus(agent):
    info = agent["info"]
    started = agent["bus"].wait("AgentStarted", lambda p: p["agent_id"] == agent["id"])
    assert started["addr"] == agent["url"] == info["addr"]
    assert started["resource_group"] == "default"
    assert started["runtime"] == "runc"
    slots = {s["name"]: s["amount"] for s in started["slots"]}
    assert slots["cuda.device"] == "2" and slots["cuda.shares"] == "2.00"
    assert int(slots["mem"]) > 0 and float(slots["cpu"]) >= 1
    assert [d["device_id"] for d in started["devices"]] == ["0", "1"]
    for d in started["devices"]:
        assert d["mock"] and d["slot_name"] == "cuda.device" and d["capacity"] == "1"
        assert d["shares_capacity"] == "1.00" and d["memory_bytes"] == 16 << 30


def test_interactive_kernel_execute_heartbeat_destroy(agent):
    bus = agent["bus"]
    kid, cmd = create(agent, slots={"cpu": "1", "mem": "256m", "cuda.shares": "0.5"},
                      devices=[{"device_id": "1", "slot_name": "cuda.shares", "amount": "0.5"}],
                      environ={"MY_VAR": "my value"}, preopen_ports=[9100])
    started = bus.wait("KernelStarted", lambda p: p["kernel_id"] == kid, timeout=60)
    assert bus.kernel_events(kid)[:1] == ["KernelPulling"]
    assert "KernelCreating" in bus.kernel_events(kid)
    assert started["container_id"] == kid and started["kernel_host"] == "127.0.0.1"
    ports = {p["container_port"]: p for p in started["service_ports"]}
    assert ports[8080]["name"] == "echo" and ports[8080]["protocol"] == "http"
    assert ports[9100]["protocol"] == "preopen"
    # the built-in terminal (docs/agent.md, "Apps") and the image's tcp app
    assert ports[7681]["name"] == "ttyd" and ports[9000]["protocol"] == "tcp"
    assert all(p["host_port"] > 0 for p in ports.values())
    pulling = bus.find("KernelPulling", lambda p: p["kernel_id"] == kid)[-1]["payload"]
    assert pulling["image"] == cmd["image"]
    assert pulling["layers_total"] >= 1 and pulling["layers_done"] == pulling["layers_total"], pulling

    # a repeated CreateKernel is a no-op
    bus.publish(agent["id"], "CreateKernel", cmd)

    # execute, query mode: the image's runtime (/bin/sh -c)
    r = execute(agent, kid, mode="query", code="echo hi", runId="r1")
    assert r["status"] == "finished" and r["exitCode"] == 0 and r["runId"] == "r1"
    assert r["console"] == [["stdout", "hi\n"]] and r["files"] == []
    r = execute(agent, kid, mode="query",
                code="echo $BACKENDAI_SESSION_ID $BACKENDAI_ACCESS_KEY $BACKENDAI_CLUSTER_ROLE"
                     " $BACKENDAI_CLUSTER_SIZE $TESSERA_CUDA_DEVICES \"$MY_VAR\"; hostname")
    assert stdout_of(r) == f"s-{kid} AKIATESTAGENT main 1 1 my value\nmain1\n"
    # batch mode runs options.exec; stderr and the exit code come back
    r = execute(agent, kid, mode="batch", options={"exec": "echo out; echo err >&2; exit 2"})
    assert r["exitCode"] == 2
    assert ["stdout", "out\n"] in r["console"] and ["stderr", "err\n"] in r["console"]
    # time-limited
    t0 = time.monotonic()
    r = execute(agent, kid, mode="query", code="sleep 30", timeout_ms=500)
    assert r["status"] == "exec-timeout" and r["exitCode"] == -1
    assert time.monotonic() - t0 < 10

    # the cuda-shim configuration for the fractional device
    conf = os.path.join(agent["stack"]["TESSERA_STATE_DIR"], "agent", "gpu", kid, "cuda-shim.conf")
    with open(conf) as f:
        text = f.read()
    assert f"mem_limit = 0:{8 << 30}" in text and "compute_share = 0.50" in text
    # the allocated device's UUID (as the agent's info reports it), for NVML visibility
    uuids = {d["device_id"]: d["uuid"] for d in agent["info"]["devices"]}
    assert len(set(uuids.values())) == 2
    for u in uuids.values():
        assert re.fullmatch(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", u), u
    assert f"\nvisible_uuids = {uuids['1']}\n" in text, text
    # ... and inside the container (gpu_mounts.c): the shim preloaded, its
    # config where the shim reads it first, the accounting dir, all but the
    # last read-only
    r = execute(agent, kid, mode="query",
                code="cat /etc/ld.so.preload; cat /etc/tessera/cuda-shim.conf; "
                     "test -s /opt/tessera/lib/libtessera-cuda.so && echo shim-present; "
                     "touch /run/tessera-cuda/probe && echo shared-writable; "
                     "echo x >> /etc/ld.so.preload || echo preload-read-only; "
                     "echo x >> /etc/tessera/cuda-shim.conf || echo conf-read-only")
    out = stdout_of(r)
    assert out.startswith("/opt/tessera/lib/libtessera-cuda.so\n"), out
    assert f"mem_limit = 0:{8 << 30}\n" in out and "shared_dir = /run/tessera-cuda\n" in out
    for word in ("shim-present", "shared-writable", "preload-read-only", "conf-read-only"):
        assert word + "\n" in out, out
    # mock GPUs: no device nodes, and the scheduler's device ids are kept
    r = execute(agent, kid, mode="query", code="ls /dev | grep -c nvidia; echo $CUDA_VISIBLE_DEVICES")
    assert stdout_of(r) == "0\n1\n"

    # heartbeats: the kernel, its allocation (slots and the device part), node usage
    since = time.time()
    hb = bus.wait("AgentHeartbeat", lambda p: any(k["kernel_id"] == kid for k in p["kernels"]),
                  since=since)
    assert [k["status"] for k in hb["kernels"] if k["kernel_id"] == kid] == ["running"]
    alloc = [a for a in hb["allocations"] if a["kernel_id"] == kid][0]
    assert {s["name"]: s["amount"] for s in alloc["slots"]} == {
        "cpu": "1", "mem": str(256 << 20), "cuda.shares": "0.50"}
    assert alloc["devices"] == [{"device_id": "1", "slot_name": "cuda.shares", "amount": "0.5"}]
    assert hb["usage"]["mem_total_bytes"] > 0 and hb["usage"]["disk_free_bytes"] > 0
    assert hb["interval_ms"] == 3000 and hb["seq"] >= 2
    # per-kernel usage on tessera.usage.v1
    u = bus.wait("KernelUsage", lambda p: p["kernel_id"] == kid, timeout=15)
    assert u["session_id"] == "s-" + kid and u["access_key"] == "AKIATESTAGENT"
    assert u["mem_bytes"] > 0 and u["interval_end_ms"] > u["interval_start_ms"]

    assert len(bus.find("KernelStarted", lambda p: p["kernel_id"] == kid)) == 1
    listed = api(agent, "GET", "/v1/kernels", timeout=10).json()["kernels"]
    assert [k["status"] for k in listed if k["kernel_id"] == kid] == ["running"]

    term = destroy(agent, kid)
    assert term["reason"] == "user-requested" and term["agent_id"] == agent["id"]
    assert leftovers(agent, kid) == []
    assert not os.path.exists(conf) and not os.path.exists(os.path.dirname(conf))
    # destroy is idempotent: a repeat is answered again
    n = len(bus.find("KernelTerminated", lambda p: p["kernel_id"] == kid))
    bus.publish(agent["id"], "DestroyKernel", {"session_id": "s-" + kid, "kernel_id": kid})
    wait_until(lambda: len(bus.find("KernelTerminated", lambda p: p["kernel_id"] == kid)) > n)
    r = api(agent, "POST", f"/v1/kernels/{kid}/execute", json={"mode": "query", "code": "true"}, timeout=10)
    assert r.status_code == 409


def test_batch_kernel_exit_code_and_logs(agent):
    bus = agent["bus"]
    kid, _ = create(agent, session_type=2, startup_command="echo hello-logs; echo oops >&2; exit 3")
    exited = bus.wait("KernelExited", lambda p: p["kernel_id"] == kid, timeout=60)
    assert exited["exit_code"] == 3
    assert bus.kernel_events(kid)[-2:] == ["KernelStarted", "KernelExited"]
    logs = api(agent, "GET", f"/v1/kernels/{kid}/logs", timeout=10).json()["result"]["logs"]
    assert "hello-logs\n" in logs and "oops\n" in logs
    term = destroy(agent, kid)
    assert term["exit_code"] == 3
    assert leftovers(agent, kid) == []


def test_cpu_kernel_has_no_shim(agent):
    """A kernel without a GPU allocation gets no preload, shim, config or
    accounting dir (the same check finds them in a GPU kernel)."""
    bus = agent["bus"]
    check = ("test ! -e /etc/ld.so.preload && test ! -e /etc/tessera/cuda-shim.conf"
             " && test ! -e /opt/tessera/lib && test ! -e /run/tessera-cuda")
    kid, _ = create(agent, session_type=2, startup_command=check)
    gkid, _ = create(agent, session_type=2, startup_command=check,
                     slots={"cpu": "1", "mem": "256m", "cuda.device": "1"},
                     devices=[{"device_id": "0", "slot_name": "cuda.device", "amount": "1"}])
    assert bus.wait("KernelExited", lambda p: p["kernel_id"] == kid, timeout=60)["exit_code"] == 0
    assert bus.wait("KernelExited", lambda p: p["kernel_id"] == gkid, timeout=60)["exit_code"] == 1
    conf = os.path.join(agent["stack"]["TESSERA_STATE_DIR"], "agent", "gpu", kid)
    assert not os.path.exists(conf)


def test_gpu_kernel_of_an_unknown_device_fails_clearly(agent):
    bus = agent["bus"]
    kid, _ = create(agent, slots={"cpu": "1", "mem": "256m", "cuda.device": "1"},
                    devices=[{"device_id": "7", "slot_name": "cuda.device", "amount": "1"}])
    term = bus.wait("KernelTerminated", lambda p: p["kernel_id"] == kid, timeout=60)
    assert term["reason"] == "create failed: GPU '7' is not a device of this agent"
    assert not os.path.exists(os.path.join(agent["stack"]["TESSERA_STATE_DIR"], "agent", "gpu", kid))


def test_agent_refuses_to_start_with_a_bad_shim_path(agent, tmp_path):
    """agent.cuda_shim_path is checked at start on a node with (mock) GPUs."""
    run = os.path.join(agent["stack"]["TESSERA_STATE_DIR"], "run")
    with open(os.path.join(run, "agent.pid")) as f:
        pid = int(f.read().split()[0])
    with open(f"/proc/{pid}/environ", "rb") as f:
        env = dict(kv.split("=", 1) for kv in f.read().decode().split("\0") if "=" in kv)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env.update(TESSERA_AGENT_STATE_DIR=str(tmp_path), TESSERA_AGENT_ID="bad-shim-agent",
               TESSERA_HTTP_LISTEN=f"127.0.0.1:{port}", TESSERA_SERVICE_INSTANCE="bad-shim",
               TESSERA_AGENT_CNI_NETWORK="tsbadshim")
    for path, want in (("/nonexistent/libtessera-cuda.so",
                        "agent.cuda_shim_path /nonexistent/libtessera-cuda.so: No such file"),
                       ("build/lib/libtessera-cuda.so", "must be an absolute path")):
        env["TESSERA_AGENT_CUDA_SHIM_PATH"] = path
        p = subprocess.run([os.path.join(BIN_DIR, "tessera-agent")], env=env, capture_output=True,
                           text=True, timeout=60)
        assert p.returncode != 0
        assert want in p.stdout + p.stderr, p.stdout + p.stderr


def test_batch_success(agent):
    kid, _ = create(agent, session_type=2, startup_command="true")
    assert agent["bus"].wait("KernelExited", lambda p: p["kernel_id"] == kid, timeout=60)["exit_code"] == 0
    destroy(agent, kid)


def test_memory_over_limit_is_oom_killed(agent):
    kid, _ = create(agent, session_type=2, slots={"cpu": "1", "mem": "32m"},
                    startup_command="exec dd if=/dev/zero of=/dev/null bs=96M count=1")
    exited = agent["bus"].wait("KernelExited", lambda p: p["kernel_id"] == kid, timeout=60)
    assert "OOM" in exited["reason"], exited
    assert exited["exit_code"] == 137
    # a process of the kernel killed while the main one goes on counts too
    kid2, _ = create(agent, session_type=2, slots={"cpu": "1", "mem": "32m"},
                     startup_command="dd if=/dev/zero of=/dev/null bs=96M count=1; echo survived")
    exited = agent["bus"].wait("KernelExited", lambda p: p["kernel_id"] == kid2, timeout=60)
    assert exited["exit_code"] == 0 and "OOM" in exited["reason"], exited
    destroy(agent, kid2)
    destroy(agent, kid)


def test_cached_image_pinned_by_digest_skips_pulling(agent):
    """A digest-pinned image already in the cache is used without asking the
    registry: no KernelPulling, KernelCreating first. By tag it is always
    asked for (KernelPulling first); an unknown digest is pulled (and fails)."""
    bus = agent["bus"]
    kid, _ = create(agent, session_type=2, startup_command="true")
    bus.wait("KernelExited", lambda p: p["kernel_id"] == kid, timeout=60)
    assert bus.kernel_events(kid)[:1] == ["KernelPulling"]
    digest = bus.find("KernelCreating", lambda p: p["kernel_id"] == kid)[-1]["payload"]["image_digest"]
    assert digest.startswith("sha256:")
    destroy(agent, kid)

    tag = agent["stack"]["TESSERA_DEMO_IMAGE"]
    for image, extra in ((tag + "@" + digest, {}), (tag, {"image_digest": digest})):
        kid, _ = create(agent, session_type=2, startup_command="true", image=image, **extra)
        bus.wait("KernelExited", lambda p: p["kernel_id"] == kid, timeout=60)
        events = bus.kernel_events(kid)
        assert "KernelPulling" not in events and events[0] == "KernelCreating", (image, events)
        destroy(agent, kid)
        assert leftovers(agent, kid) == []

    kid, _ = create(agent, image=tag + "@sha256:" + "0" * 64)
    term = bus.wait("KernelTerminated", lambda p: p["kernel_id"] == kid, timeout=60)
    assert bus.kernel_events(kid)[:1] == ["KernelPulling"]
    assert term["exit_code"] == -1 and "KernelStarted" not in bus.kernel_events(kid), term
    assert leftovers(agent, kid) == []


def test_missing_image(agent):
    image = agent["stack"]["TESSERA_OCI_REGISTRY"] + "/tessera/no-such-image:latest"
    kid, _ = create(agent, image=image)
    term = agent["bus"].wait("KernelTerminated", lambda p: p["kernel_id"] == kid, timeout=60)
    assert term["exit_code"] == -1 and "image not found" in term["reason"], term
    assert "KernelStarted" not in agent["bus"].kernel_events(kid)
    assert leftovers(agent, kid) == []


def test_registry_down_retries_then_fails(agent):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    kid, _ = create(agent, image=f"127.0.0.1:{port}/tessera/busybox:latest")
    t0 = time.monotonic()
    term = agent["bus"].wait("KernelTerminated", lambda p: p["kernel_id"] == kid, timeout=90)
    assert "registry unreachable" in term["reason"], term
    # 3 retries with backoff 250, 500, 1000 ms
    assert time.monotonic() - t0 >= 1.5
    assert leftovers(agent, kid) == []


def test_destroy_of_an_unknown_kernel_is_answered(agent):
    kid = "k" + uuid.uuid4().hex[:20]
    term = destroy(agent, kid, reason="cleanup")
    assert term["exit_code"] == -1 and term["reason"] == "cleanup"


def test_generations_create_a_kernel_again_and_ignore_replays(agent):
    """A session restart (docs/sessions.md): DestroyKernel of generation 0, then
    CreateKernel of generation 1 for the same id creates the container again; a
    replayed generation-0 CreateKernel or DestroyKernel leaves it alone."""
    bus, kid_gen = agent["bus"], lambda p: p.get("generation", 0)
    kid, cmd = create(agent)
    bus.wait("KernelStarted", lambda p: p["kernel_id"] == kid, timeout=60)
    term = destroy(agent, kid, reason="restarting")
    assert kid_gen(term) == 0
    since = time.time()
    bus.publish(agent["id"], "CreateKernel", dict(cmd, generation=1))
    started = bus.wait("KernelStarted", lambda p: p["kernel_id"] == kid and kid_gen(p) == 1,
                       timeout=60, since=since)
    assert started["container_id"] == kid
    assert stdout_of(execute(agent, kid, mode="query", code="echo again")) == "again\n"
    # replays of generation 0: the create is a duplicate, the destroy is stale
    n_term = len(bus.find("KernelTerminated", lambda p: p["kernel_id"] == kid))
    bus.publish(agent["id"], "CreateKernel", cmd)
    bus.publish(agent["id"], "DestroyKernel", {"session_id": "s-" + kid, "kernel_id": kid,
                                               "reason": "replayed"})
    stale = wait_until(lambda: bus.find("KernelTerminated", lambda p: p["kernel_id"] == kid)[n_term:],
                       timeout=30, message="stale destroy answered")[-1]["payload"]
    assert kid_gen(stale) == 0
    time.sleep(2)
    k = api(agent, "GET", f"/v1/kernels/{kid}", timeout=10).json()
    assert k["status"] == "running" and k["runtime"]["state"] == "running"
    assert len(bus.find("KernelStarted", lambda p: p["kernel_id"] == kid)) == 2
    assert len(bus.find("KernelTerminated", lambda p: p["kernel_id"] == kid)) == n_term + 1
    # the generation survives in the meta file (an agent restart remembers it)
    meta = os.path.join(agent["stack"]["TESSERA_STATE_DIR"], "agent", "meta", kid + ".json")
    with open(meta) as f:
        assert json.load(f)["generation"] == 1
    # the current generation is destroyed as usual
    agent["bus"].publish(agent["id"], "DestroyKernel", {"session_id": "s-" + kid,
                                                        "kernel_id": kid, "generation": 1})
    term = bus.wait("KernelTerminated", lambda p: p["kernel_id"] == kid and kid_gen(p) == 1)
    assert leftovers(agent, kid) == []


# ---- restart -------------------------------------------------------------------------


def _restart_agent_after_sigkill(stack):
    """SIGKILL the stack's agent and start it again as dev-up did (same
    environment and command line), recorded so that dev-down stops it."""
    run = os.path.join(stack["TESSERA_STATE_DIR"], "run")
    with open(os.path.join(run, "agent.pid")) as f:
        pid = int(f.read().split()[0])
    with open(f"/proc/{pid}/environ", "rb") as f:
        env = dict(kv.split("=", 1) for kv in f.read().decode().split("\0") if "=" in kv)
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        argv = [a.decode() for a in f.read().split(b"\0") if a]
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not os.path.exists(f"/proc/{pid}") or
               open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z", timeout=10)
    log = open(os.path.join(stack["TESSERA_STATE_DIR"], "logs", "agent.log"), "ab")
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                            start_new_session=True)
    with open(os.path.join(run, "agent.pid"), "w") as f:
        f.write(f"{proc.pid}\n")
    with open(f"/proc/{proc.pid}/stat") as f:
        start = f.read().rsplit(")", 1)[1].split()[19]
    with open(os.path.join(run, "agent.start"), "w") as f:
        f.write(start + "\n")
    return proc


def test_agent_killed_and_restarted_readopts_kernels(agent):
    bus, stack = agent["bus"], agent["stack"]
    kid, _ = create(agent)
    bus.wait("KernelStarted", lambda p: p["kernel_id"] == kid, timeout=60)
    bkid, _ = create(agent, session_type=2, startup_command="sleep 2; exit 5")
    bus.wait("KernelStarted", lambda p: p["kernel_id"] == bkid, timeout=60)

    t_kill = time.time()
    _restart_agent_after_sigkill(stack)
    started = bus.wait("AgentStarted", lambda p: p["agent_id"] == agent["id"], since=t_kill,
                       timeout=60)
    assert kid in started["adopted_kernel_ids"]
    wait_until(lambda: requests.get(agent["url"] + "/readyz", timeout=5).status_code == 200,
               timeout=60)
    # still running, still reachable
    k = api(agent, "GET", f"/v1/kernels/{kid}", timeout=10).json()
    assert k["status"] == "running" and k["runtime"]["state"] == "running"
    assert stdout_of(execute(agent, kid, mode="query", code="echo still here")) == "still here\n"
    # the batch kernel that ended while (or after) the agent was down is reported
    exited = bus.wait("KernelExited", lambda p: p["kernel_id"] == bkid, timeout=30)
    assert exited["exit_code"] == 5
    # nothing duplicated: one KernelStarted each
    assert len(bus.find("KernelStarted", lambda p: p["kernel_id"] == kid)) == 1
    destroy(agent, kid)
    destroy(agent, bkid)
    assert leftovers(agent, kid) == [] and leftovers(agent, bkid) == []


def test_vfolder_mounts_ro_rw_and_bad_paths(agent, tmp_path):
    """CreateKernel.mounts: bind mounts at /home/work/<name> or the mapped
    path, read-only for "ro"; gone with the container; a mount path outside
    /home/work fails the creation before anything is made."""
    rw, ro = tmp_path / "rw", tmp_path / "ro"
    rw.mkdir()
    # owned by the kernels' mapped root, as tessera-vfolder makes its folders
    # (vfolder.file_owner; docs/vfolders.md "Ownership")
    os.chown(rw, 100000, 100000)
    ro.mkdir()
    (ro / "in.txt").write_text("ro data\n")
    kid, _ = create(agent, mounts=[
        {"vfolder_id": "v1", "name": "data", "host_path": str(rw), "mount_path": "", "permission": "rw"},
        {"vfolder_id": "v2", "name": "ref", "host_path": str(ro), "mount_path": "/home/work/in/ref",
         "permission": "ro"}])
    agent["bus"].wait("KernelStarted", lambda p: p["kernel_id"] == kid, timeout=60)
    r = execute(agent, kid, mode="batch", options={"exec": "cat /home/work/in/ref/in.txt && echo w > /home/work/data/w"})
    assert r["exitCode"] == 0 and stdout_of(r) == "ro data\n", r
    assert (rw / "w").read_text() == "w\n"
    r = execute(agent, kid, mode="batch", options={"exec": "echo x > /home/work/in/ref/x"})
    assert r["exitCode"] != 0 and "Read-only file system" in json.dumps(r["console"]), r
    destroy(agent, kid)
    wait_until(lambda: leftovers(agent, kid) == [], timeout=10, message="no leftovers")
    with open("/proc/self/mountinfo") as f:
        assert not [line for line in f if str(tmp_path) in line]
    assert sorted(os.listdir(ro)) == ["in.txt"] and sorted(os.listdir(rw)) == ["w"]
    for path in ("/etc", "/home/work/../etc", "/home/work/", "relative"):
        kid, _ = create(agent, mounts=[{"vfolder_id": "v1", "name": "data", "host_path": str(rw),
                                        "mount_path": path, "permission": "rw"}])
        term = agent["bus"].wait("KernelTerminated", lambda p, k=kid: p["kernel_id"] == k, timeout=60)
        assert "create failed: vfolder mount" in term["reason"], (path, term)
        assert leftovers(agent, kid) == []


# ---- the registry's reconcile pass -------------------------------------------------------


def _reconcile_passes(stack):
    text = requests.get(stack["TESSERA_REGISTRY_URL"] + "/metrics", timeout=10).text
    m = re.search(r"^tessera_registry_reconcile_passes_total (\d+)", text, re.M)
    assert m, "no reconcile passes metric"
    return int(m.group(1))


def test_a_kernel_of_no_registry_session_outlives_the_reconcile_pass(agent):
    """The registry reclaims the kernels of its own sessions only (their ids
    are UUIDs): a kernel made through the agent's command topic for another
    session (as these tests do) is left running through reconcile passes that
    would have destroyed an orphan of the registry (two passes)."""
    kid, _ = create(agent)
    bus = agent["bus"]
    bus.wait("KernelStarted", lambda p: p["kernel_id"] == kid, timeout=60)
    first = _reconcile_passes(agent["stack"])
    wait_until(lambda: _reconcile_passes(agent["stack"]) >= first + 3, timeout=60,
               message="three reconcile passes")
    k = api(agent, "GET", f"/v1/kernels/{kid}", timeout=10).json()
    assert k["status"] == "running", k
    assert not bus.find("KernelTerminated", lambda p: p["kernel_id"] == kid)
    destroy(agent, kid)
