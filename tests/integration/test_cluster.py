"""Tessera as a cluster, on one machine: a stack of three nodes
(TESSERA_DEV_NODES=3, the `cluster_stack` fixture; deploy/dev/nodes.sh;
docs/operations.md, "Several hosts"), each a network namespace with an agent
of its own, the control plane on the node network's address.

- each agent runs in its node's network namespace, registered at its node's
  address, with nothing of 127.0.0.1 or localhost in its environment and
  command line, talking to the control plane over the node network only; on
  a node, 127.0.0.1 reaches nothing of the platform;
- a superadmin pins a session to each node (agentList); each works end to
  end: execute, logs, an app through tessera-wsproxy (published on the
  node's address), the pty stream through the gateway, usage accounting;
  a folder mounted in all three is written on one node and read on the
  others; agentList is refused to a plain user, and for an unknown agent;
- a kernel on a node reaches no platform port, neither at the control
  plane's address nor at 127.0.0.1 nor at the other nodes', nor a host
  service on any address of the host (its own app: yes, the control);
- a node's agent killed and restarted (deploy/dev/restart.sh
  agent@node<k> --kill) adopts its kernel in the node's namespace again;
- the last node's agent is killed with a kernel running: the stack's
  teardown (dev-down.sh) still leaves no process, container, namespace,
  bridge or rule behind (checked by the fixture)."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest
import requests

from conftest import REPO, parse_services_file, wait_until
from test_apps import start_when_listening
from test_sessions_api import _new_user, admin, gw, image, image_registered, okj, problem  # noqa: F401
from test_streams import Pty

TAG = uuid.uuid4().hex[:6]
NODES = 3
RESTART = os.path.join(REPO, "deploy", "dev", "restart.sh")
PAGE = f"node-app-{TAG}"
# the demo image's echo:http:8080, served by busybox httpd with the node's name
BOOTSTRAP = ("mkdir -p /tmp/www && echo {page}-$NODE > /tmp/www/index.html && "
             "busybox httpd -p 8080 -h /tmp/www")


@pytest.fixture(scope="module")
def stack(cluster_stack):
    """The fixtures imported from test_sessions_api (admin, gw, ...) on the
    cluster stack."""
    return cluster_stack


def node(stack, k):
    return {"name": stack[f"TESSERA_NODE_{k}_NAME"], "addr": stack[f"TESSERA_NODE_{k}_ADDR"],
            "netns": stack[f"TESSERA_NODE_{k}_NETNS"], "url": stack[f"TESSERA_NODE_{k}_AGENT_URL"]}


def agent_pid(stack, k):
    return parse_services_file(os.path.join(stack["TESSERA_STATE_DIR"], "services"))[f"agent@node{k}"][0]


def run_in(client, sname, cmd):
    r = okj(client.post(f"/session/{sname}", {"mode": "batch", "options": {"exec": cmd}}, timeout=80))
    res = r["result"]
    return res["exitCode"], "".join(t for k, t in res["console"] if k == "stdout")


def probe(netns_path, targets, timeout=1.5):
    """TCP connects from a network namespace (nsenter as root: the worst case
    of a tenant in it): {"host:port": True when it connected}."""
    code = ("import json, socket, sys, concurrent.futures as cf\n"
            "def c(t):\n"
            "    h, p = t.rsplit(':', 1)\n"
            "    try:\n"
            f"        socket.create_connection((h, int(p)), timeout={timeout}).close(); return t, True\n"
            "    except OSError:\n"
            "        return t, False\n"
            "with cf.ThreadPoolExecutor(32) as ex:\n"
            "    print(json.dumps(dict(ex.map(c, sys.argv[1:]))))\n")
    p = subprocess.run(["nsenter", f"--net={netns_path}", sys.executable, "-c", code, *targets],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def platform_ports(stack):
    """Every port the stack's control plane listens on: its services, the bus
    brokers, PostgreSQL, Redis, the OCI registry, wsproxy's apps."""
    ports = set()
    for _, url in parse_services_file(os.path.join(stack["TESSERA_STATE_DIR"], "services")).values():
        hostport = url.split("://", 1)[-1].split("/", 1)[0].rsplit("@", 1)[-1]
        if ":" in hostport and not hostport.startswith(tuple(f"{stack[f'TESSERA_NODE_{k}_ADDR']}:"
                                                          for k in range(1, NODES + 1))):
            ports.add(int(hostport.rsplit(":", 1)[1]))
    ports |= {int(b.rsplit(":", 1)[1]) for b in stack["KAFKA_BOOTSTRAP"].split(",")}
    return sorted(ports)


def host_addresses():
    out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, timeout=10).stdout
    return sorted({line.split()[3].split("/")[0] for line in out.splitlines()} - {"127.0.0.1"})


@pytest.fixture(scope="module")
def folder(admin):  # noqa: F811
    f = okj(admin.post("/folders", {"name": f"cl-{TAG}"}), 201)
    yield f
    admin.delete(f"/folders/{f['name']}")


@pytest.fixture(scope="module")
def sessions(stack, admin, image_registered, folder):  # noqa: F811
    """One session on each node (agentList), the folder mounted in all."""
    names = {}
    try:
        for k in range(1, NODES + 1):
            n = node(stack, k)
            sname = f"cl-{TAG}-{k}"
            body = {"image": image_registered, "name": sname, "maxWaitSeconds": 60,
                    "agentList": [n["name"]],
                    "bootstrap_script": BOOTSTRAP.format(page=PAGE).replace("$NODE", n["name"]),
                    "config": {"resources": {"cpu": "1", "mem": "256m"}, "mounts": [folder["name"]]}}
            r = admin.post("/session", body, timeout=75)
            assert r.status_code == 201, r.text
            names[k] = sname
            assert r.json()["status"] == "RUNNING", admin.get(f"/session/{sname}").text
        yield names
    finally:
        for sname in names.values():
            admin.delete(f"/session/{sname}")


def info(admin, sname):  # noqa: F811
    return okj(admin.get(f"/session/{sname}"))


# ---- the nodes ------------------------------------------------------------------------------------


def test_each_agent_runs_in_its_node_namespace_over_the_node_network(stack, admin):  # noqa: F811
    cp = stack["TESSERA_CONTROL_PLANE_ADDR"]
    assert all(b.startswith(cp + ":") for b in stack["KAFKA_BOOTSTRAP"].split(",")), stack["KAFKA_BOOTSTRAP"]
    assert stack["TESSERA_OCI_REGISTRY"].startswith(cp + ":")
    agents = {a["id"]: a for a in okj(admin.get("/admin/agents"))["items"]}
    for k in range(1, NODES + 1):
        n = node(stack, k)
        a = agents[n["name"]]
        assert a["status"] == "ALIVE" and a["addr"] == n["url"], a
        assert n["url"].startswith(f"http://{n['addr']}:")
        pid = agent_pid(stack, k)
        assert os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(f"/run/netns/{n['netns']}").st_ino
        with open(f"/proc/{pid}/environ", "rb") as f:
            environ = f.read().decode().split("\0")
        with open(os.path.join(stack["TESSERA_STATE_DIR"], "cmd", f"agent@node{k}"), encoding="utf-8") as f:
            cmd = f.read()
        for text in environ + [cmd]:
            assert "127.0.0.1" not in text and "localhost" not in text, text
        # the namespace's connections: to the control plane, none to loopback
        remotes = set()
        with open(f"/proc/{pid}/net/tcp", encoding="utf-8") as f:
            for line in f.read().splitlines()[1:]:
                rem, st = line.split()[2], line.split()[3]
                if st == "01":  # ESTABLISHED
                    ip = socket.inet_ntoa(bytes.fromhex(rem.split(":")[0])[::-1])
                    remotes.add(ip)
        assert cp in remotes and not any(r.startswith("127.") for r in remotes), remotes
    # on a node, 127.0.0.1 reaches nothing of the platform
    got = probe(f"/run/netns/{node(stack, 1)['netns']}",
                [f"127.0.0.1:{p}" for p in platform_ports(stack)])
    assert not any(got.values()), got


# ---- a session on each node -------------------------------------------------------------------


def test_sessions_run_on_their_nodes_and_execute_there(stack, admin, sessions):  # noqa: F811
    for k, sname in sessions.items():
        n = node(stack, k)
        i = info(admin, sname)
        assert [x["agent"] for x in i["kernels"]] == [n["name"]], i["kernels"]
        assert {sp["host"] for sp in i["servicePorts"]} == {n["addr"]}, i["servicePorts"]
        code, out = run_in(admin, sname, f"echo run-{TAG}-$((40+{k})); cat /tmp/www/index.html")
        assert code == 0 and f"run-{TAG}-{40 + k}" in out, out
        logs = okj(admin.get(f"/session/{sname}/logs"))["result"]["logs"]
        assert isinstance(logs, str)


def test_an_app_through_wsproxy_on_each_node(stack, admin, sessions):  # noqa: F811
    for k, sname in sessions.items():
        body = start_when_listening(admin, sname, timeout=30)
        want = f"{PAGE}-{node(stack, k)['name']}"
        got = wait_until(lambda: (lambda a: a if a.status_code == 200 and want in a.text else None)(
            requests.get(body["url"], timeout=5, allow_redirects=True)), timeout=20,
            message=f"the app on node {k} through wsproxy")
        assert want in got.text


def test_a_pty_stream_through_the_gateway_on_each_node(admin, sessions):  # noqa: F811
    for k, sname in sessions.items():
        p = Pty(admin, sname)
        try:
            p.stdin(f"echo pty-{TAG}-$((10+{k}))\n")
            assert f"pty-{TAG}-{10 + k}".encode() in p.read_until(f"pty-{TAG}-{10 + k}".encode())
        finally:
            p.s.close()


def test_a_folder_written_on_one_node_is_read_on_the_others(admin, sessions, folder):  # noqa: F811
    path = f"/home/work/{folder['name']}"
    code, _ = run_in(admin, sessions[1], f"echo from-node1-{TAG} > {path}/shared.txt")
    assert code == 0
    for k in (2, 3):
        code, out = run_in(admin, sessions[k], f"cat {path}/shared.txt")
        assert code == 0 and f"from-node1-{TAG}" in out, (k, out)
    code, _ = run_in(admin, sessions[3], f"echo from-node3-{TAG} > {path}/back.txt")
    code, out = run_in(admin, sessions[1], f"cat {path}/back.txt")
    assert f"from-node3-{TAG}" in out, out


def test_usage_is_accounted_on_each_node(stack, admin, sessions):  # noqa: F811
    """Samples with CPU time and, as the app served pages (above), bytes sent:
    the agent reads its kernels' network counters in its own namespace."""
    def usage(sid):
        p = subprocess.run(["psql", stack["TESSERA_PG_DSN"], "-X", "-At", "-q", "-c",
                            "SELECT samples, cpu_ms, net_tx_bytes FROM registry.session_usage"
                            f" WHERE session_id = '{sid}'"], capture_output=True, text=True, timeout=30)
        row = [int(x) for x in p.stdout.strip().split("|")] if p.stdout.strip() else [0, 0, 0]
        return row[0] > 0 and row[1] > 0 and row[2] > 0
    for sname in sessions.values():
        sid = info(admin, sname)["sessionUuid"]
        wait_until(lambda: usage(sid), timeout=30, message=f"usage samples of {sname} (CPU, network)")


def test_agent_list_is_for_superadmins_and_alive_agents(stack, admin, gw, image_registered):  # noqa: F811
    user = _new_user(admin, gw, "cl-user")[0]
    body = {"image": image_registered, "name": f"cl-{TAG}-u", "enqueueOnly": True,
            "agentList": [node(stack, 1)["name"]]}
    problem(user.post("/session", body), 403)
    problem(admin.post("/session", dict(body, agentList=["no-such-agent"])), 400)
    problem(admin.post("/session", dict(body, agentList=["node1", "node2"])), 400)
    problem(admin.post("/session", dict(body, agentList="node1")), 400)


# ---- what a kernel on a node reaches ----------------------------------------------------------


def test_a_kernel_on_a_node_reaches_no_platform_port_and_no_host_service(stack, admin, sessions):  # noqa: F811
    cp = stack["TESSERA_CONTROL_PLANE_ADDR"]
    kid = info(admin, sessions[1])["kernels"][0]["id"]
    with open(os.path.join(stack["TESSERA_STATE_DIR"], "node1", "agent", "kernels", kid, "state.json"),
              encoding="utf-8") as f:
        own_ip = json.load(f)["ip"]
    sentinel = socket.socket()
    sentinel.bind(("0.0.0.0", 0))
    sentinel.listen(16)
    sport = sentinel.getsockname()[1]
    try:
        ports = platform_ports(stack)
        targets = [f"{a}:{p}" for a in (cp, "127.0.0.1") for p in ports]
        targets += [f"{node(stack, k)['addr']}:{node(stack, k)['url'].rsplit(':', 1)[1]}"
                    for k in range(1, NODES + 1)]
        targets += [f"{a}:{sport}" for a in host_addresses()]
        got = probe(f"/run/netns/tessera-{kid}", targets + [f"{own_ip}:8080"])
        assert got.pop(f"{own_ip}:8080"), "the control: the kernel reaches its own app"
        assert not [t for t, ok in got.items() if ok], got
        # the sentinel does answer: from the host, and from the node itself
        socket.create_connection((cp, sport), timeout=2).close()
    finally:
        sentinel.close()


# ---- node agents killed ----------------------------------------------------------------------


def test_a_killed_node_agent_is_restarted_and_adopts_its_kernel(stack, admin, sessions):  # noqa: F811
    env = dict(os.environ, TESSERA_STATE_DIR=stack["TESSERA_STATE_DIR"])
    before = agent_pid(stack, 2)
    r = subprocess.run(["sh", RESTART, "agent@node2", "--kill"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    pid = agent_pid(stack, 2)
    assert pid != before
    assert os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(f"/run/netns/{node(stack, 2)['netns']}").st_ino
    code, out = run_in(admin, sessions[2], f"echo still-{TAG}")
    assert code == 0 and f"still-{TAG}" in out
    assert info(admin, sessions[2])["status"] == "RUNNING"


def test_last_a_node_agent_crashes_with_a_kernel_running(stack, admin, sessions):  # noqa: F811
    """The fixture's teardown checks that dev-down.sh cleans up after it."""
    os.kill(agent_pid(stack, NODES), signal.SIGKILL)
    time.sleep(0.5)
    kid = info(admin, sessions[NODES])["kernels"][0]["id"]
    assert os.path.exists(f"/run/netns/tessera-{kid}")
