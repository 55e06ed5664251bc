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
import re
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest
import requests

import suitekit
from conftest import REPO, kernel_leftovers, parse_services_file, wait_until
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
    if stack.get("TESSERA_REDIS_TLS_URL"):  # Redis's TLS port (TESSERA_DEV_TLS)
        ports.add(int(stack["TESSERA_REDIS_TLS_URL"].rsplit(":", 1)[1].split("/")[0]))
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
        # with TLS (the default with nodes, test_tls.py) it answers on https
        # through its terminator; it listens on its namespace's 127.0.0.1
        tls = stack.get("TESSERA_DEV_TLS") == "on"
        assert n["url"].startswith(f"{'https' if tls else 'http'}://{n['addr']}:")
        agent_port = int(n["url"].rsplit(":", 1)[1])
        own_listen = f"TESSERA_HTTP_LISTEN=127.0.0.1:{agent_port}"
        pid = agent_pid(stack, k)
        assert os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(f"/run/netns/{n['netns']}").st_ino
        with open(f"/proc/{pid}/environ", "rb") as f:
            environ = f.read().decode().split("\0")
        with open(os.path.join(stack["TESSERA_STATE_DIR"], "cmd", f"agent@node{k}"), encoding="utf-8") as f:
            cmd = f.read()
        for text in environ + [cmd.replace(own_listen, "")]:
            if tls and text == own_listen:
                continue
            assert "127.0.0.1" not in text and "localhost" not in text, text
        # the namespace's connections: to the control plane, none to loopback
        remotes = set()
        with open(f"/proc/{pid}/net/tcp", encoding="utf-8") as f:
            for line in f.read().splitlines()[1:]:
                loc, rem, st = line.split()[1], line.split()[2], line.split()[3]
                # (the TLS terminator's connections to the agent: on the
                # namespace's loopback, to or from the agent's own port)
                own = {int(loc.split(":")[1], 16), int(rem.split(":")[1], 16)} & {agent_port}
                if st == "01" and not own:  # ESTABLISHED
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


# ---- cluster sessions (docs/sessions.md, "Cluster sessions") ------------------------------------

HTTP_PORT = 5555
NAMES3 = ["main1", "sub1", "sub2"]


@pytest.fixture(scope="module")
def small_image(stack, admin):  # noqa: F811
    """The busybox test image with small minimum slots (kernels of several
    sessions fit the nodes' shared cores)."""
    out = os.path.join(stack["TESSERA_STATE_DIR"], "cluster-image")
    try:
        ref = suitekit.push_busybox_image(stack, out, "tessera/cluster-test", TAG, "cluster")
    except RuntimeError as e:
        pytest.fail(str(e), pytrace=False)
    okj(admin.post("/admin/images", {"reference": ref}), 200, 201)
    return ref


@pytest.fixture(scope="module")
def admin_clusters(stack, admin):  # noqa: F811
    """The superadmin's keypair may run sessions of up to 4 kernels."""
    policy = f"cluster-{TAG}"
    okj(admin.post("/admin/keypair-resource-policies",
                   {"name": policy, "max_containers_per_session": 4}), 200, 201)
    okj(admin.patch(f"/admin/keypairs/{admin.access_key}", {"resource_policy": policy}))
    return admin


def node_state(stack):
    """Per node: its links (name and kind) and iptables rules (counters left
    out), and the kernel dirs of its agent. (Compared before a session and
    after it, with a kernel of the `sessions` fixture on every node: the
    node's own bridge and shared chains, made for its first kernel, stay.)"""
    state = {}
    for k in range(1, NODES + 1):
        ns = node(stack, k)["netns"]
        links = subprocess.run(["ip", "-n", ns, "-o", "-d", "link", "show"], capture_output=True,
                               text=True, timeout=10).stdout
        names = sorted(line.split(":")[1].strip().split("@")[0] for line in links.splitlines())
        rules = subprocess.run(["ip", "netns", "exec", ns, "iptables-save"], capture_output=True,
                               text=True, timeout=10).stdout
        rules = sorted(re.sub(r"\[\d+:\d+\]", "", r) for r in rules.splitlines() if not r.startswith("#"))
        fdb = subprocess.run(["bridge", "-n", ns, "fdb", "show"], capture_output=True, text=True,
                             timeout=10).stdout
        kdir = os.path.join(stack["TESSERA_STATE_DIR"], f"node{k}", "agent", "kernels")
        state[k] = {"links": names, "rules": rules, "kernels": sorted(os.listdir(kdir)),
                    "vxlan_fdb": sorted(f for f in fdb.splitlines() if " dst " in f)}
    return state


def wait_nodes_back(stack, before, timeout, what):
    """Every node as it was (node_state) within timeout; else fail naming the
    differences."""
    deadline = time.monotonic() + timeout
    while True:
        now = node_state(stack)
        if now == before:
            return
        if time.monotonic() >= deadline:
            diff = {k: {part: {"gone": sorted(set(before[k][part]) - set(now[k][part])),
                               "new": sorted(set(now[k][part]) - set(before[k][part]))}
                        for part in now[k] if now[k][part] != before[k][part]}
                    for k in now if now[k] != before[k]}
            pytest.fail(f"{what}: the nodes differ from before: {json.dumps(diff, indent=1)}",
                        pytrace=False)
        time.sleep(0.2)


def in_kernel(client, sname, kernel, cmd, timeout=60):
    """cmd in the session's kernel of that name (?kernel=): (exit code, stdout)."""
    r = client.post(f"/session/{sname}?kernel={kernel}", {"mode": "batch", "options": {"exec": cmd}},
                    timeout=timeout + 20)
    res = okj(r)["result"]
    return res["exitCode"], "".join(t for kk, t in res["console"] if kk == "stdout")


def serve_names(client, sname, names):
    """busybox httpd in each kernel on HTTP_PORT, serving its name and 200 kB."""
    for n in names:
        code, out = in_kernel(client, sname, n, f"mkdir -p /tmp/www2 && echo {n} > /tmp/www2/name && "
                              "head -c 200000 /dev/zero > /tmp/www2/big && "
                              f"busybox httpd -p {HTTP_PORT} -h /tmp/www2 && echo up")
        assert code == 0 and "up" in out, (n, out)


def assert_all_reach_all(client, sname, names):
    for a in names:
        for b in names:
            code, out = in_kernel(client, sname, a, f"timeout 10 wget -q -O- http://{b}:{HTTP_PORT}/name && "
                                  f"timeout 10 wget -q -O- http://{b}:{HTTP_PORT}/big | wc -c")
            assert code == 0 and out.split() == [b, "200000"], f"{a} -> {b}: {code} {out!r}"


def assert_cluster_env(client, sname, names, mode):
    for i, n in enumerate(names):
        code, out = in_kernel(client, sname, n, "env | grep ^BACKENDAI_CLUSTER_ | sort; hostname")
        env = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        role = "main" if i == 0 else "sub"
        assert env == {"BACKENDAI_CLUSTER_HOST": n, "BACKENDAI_CLUSTER_HOSTS": ",".join(names),
                       "BACKENDAI_CLUSTER_IDX": "1" if i == 0 else str(i),
                       "BACKENDAI_CLUSTER_LOCAL_RANK": str(i), "BACKENDAI_CLUSTER_MODE": mode,
                       "BACKENDAI_CLUSTER_REPLICAS": f"main:1,sub:{len(names) - 1}",
                       "BACKENDAI_CLUSTER_ROLE": role, "BACKENDAI_CLUSTER_SIZE": str(len(names))}, (n, out)
        assert out.splitlines()[-1] == n


@pytest.fixture(scope="module")
def multi(stack, admin_clusters, small_image, sessions):
    """A multi-node session of three kernels over two nodes: main1 and sub2 on
    node1, sub1 on node2 (a per-kernel agentList). Yields (name, info, the
    nodes' state before it)."""
    before = node_state(stack)
    sname = f"mn-{TAG}"
    body = {"image": small_image, "name": sname, "maxWaitSeconds": 60, "cluster_size": 3,
            "cluster_mode": "multi-node", "agentList": ["node1", "node2", "node1"],
            "config": {"resources": {"cpu": "0.25", "mem": "64m"}}}
    r = admin_clusters.post("/session", body, timeout=75)
    assert r.status_code == 201, r.text
    try:
        i = info(admin_clusters, sname)
        assert i["status"] == "RUNNING", i
        yield sname, i, before
    finally:
        admin_clusters.delete(f"/session/{sname}")


def test_a_multi_node_session_places_each_kernel_on_its_node(multi):
    _, i, _ = multi
    assert i["clusterSize"] == 3 and i["clusterMode"] == "multi-node"
    assert [(k["name"], k["role"], k["agent"], k["status"]) for k in i["kernels"]] == [
        ("main1", "main", "node1", "RUNNING"), ("sub1", "sub", "node2", "RUNNING"),
        ("sub2", "sub", "node1", "RUNNING")], i["kernels"]


def test_every_kernel_reaches_every_other_by_name(admin_clusters, multi):
    sname = multi[0]
    serve_names(admin_clusters, sname, NAMES3)
    assert_all_reach_all(admin_clusters, sname, NAMES3)


def test_the_cluster_environment_and_ssh_keypair(admin_clusters, multi):
    sname = multi[0]
    assert_cluster_env(admin_clusters, sname, NAMES3, "multi-node")
    pubs = set()
    for n in NAMES3:
        code, out = in_kernel(admin_clusters, sname, n,
                              "stat -c '%a %U' /home/config/ssh/id_cluster; head -1 /home/config/ssh/id_cluster; "
                              "cat /home/config/ssh/id_cluster.pub; grep -c \"$(cat /home/config/ssh/id_cluster.pub)\" "
                              "/home/work/.ssh/authorized_keys; grep -c 'Port 2200' /home/work/.ssh/config")
        lines = out.splitlines()
        assert code == 0 and lines[0].startswith("600 ") and "OPENSSH PRIVATE KEY" in lines[1], (n, out)
        assert lines[2].startswith("ssh-ed25519 ") and lines[3] == "1" and lines[4] == "2", (n, out)
        pubs.add(lines[2])
    assert len(pubs) == 1, pubs


def test_execute_logs_and_files_address_a_kernel_by_name(admin_clusters, multi):
    sname, i, _ = multi
    code, out = in_kernel(admin_clusters, sname, "sub1", "echo in-$(hostname) > /home/work/where.txt; hostname")
    assert code == 0 and out.strip() == "sub1"
    ids = {k["name"]: k["id"] for k in i["kernels"]}
    code, out = in_kernel(admin_clusters, sname, ids["sub2"], "hostname")  # a kernel id works too
    assert out.strip() == "sub2"
    # no kernel named: main1
    r = okj(admin_clusters.post(f"/session/{sname}", {"mode": "batch", "options": {"exec": "hostname"}}, timeout=80))
    assert "".join(t for kk, t in r["result"]["console"] if kk == "stdout").strip() == "main1"
    f = okj(admin_clusters.get(f"/session/{sname}/files", params={"path": ".", "kernel": "sub1"}))
    assert "where.txt" in json.dumps(f), f
    f = okj(admin_clusters.get(f"/session/{sname}/files", params={"path": "."}))
    assert "where.txt" not in json.dumps(f), f
    okj(admin_clusters.get(f"/session/{sname}/logs", params={"kernel": "sub1"}))
    problem(admin_clusters.get(f"/session/{sname}/logs", params={"kernel": "sub7"}), 404)


def test_another_session_cannot_reach_the_overlay(stack, admin_clusters, multi, sessions):
    """From the kernel of another session on node1 (root in its netns): no
    connection to the cluster's addresses, and VXLAN frames it sends to the
    nodes do not reach the overlay (the control: the same frames sent from a
    node itself do)."""
    sname, i, _ = multi
    kid = info(admin_clusters, sessions[1])["kernels"][0]["id"]
    got = probe(f"/run/netns/tessera-{kid}", [f"10.254.0.{n}:{HTTP_PORT}" for n in (1, 2, 3)])
    assert not any(got.values()), got
    ids = {k["name"]: k["id"] for k in i["kernels"]}
    with open(os.path.join(stack["TESSERA_STATE_DIR"], "node1", "agent", "kernels", ids["main1"],
                           "state.json"), encoding="utf-8") as f:
        vni = json.load(f)["cluster_conf"]["vxlan"]["vni"]
    target = ids["sub1"]  # on node2

    def rx():
        out = subprocess.run(["nsenter", f"--net=/run/netns/tessera-{target}", "cat", "/proc/net/dev"],
                             capture_output=True, text=True, timeout=10).stdout
        line = [x for x in out.splitlines() if x.strip().startswith("eth1:")][0]
        return int(line.split(":", 1)[1].split()[1])

    n2 = node(stack, 2)["addr"]
    before = rx()
    inject(f"/run/netns/tessera-{kid}", [n2, node(stack, 1)["addr"]], vni, 50)
    time.sleep(0.5)
    assert rx() - before < 10, "VXLAN frames from another session's kernel reached the overlay"
    before = rx()
    inject(f"/run/netns/{node(stack, 1)['netns']}", [n2], vni, 50)  # the control
    time.sleep(0.5)
    assert rx() - before >= 50, "the control's frames did not arrive: the check proves nothing"


def inject(netns_path, addrs, vni, count):
    """count VXLAN-encapsulated broadcast UDP frames with the given id, sent
    from a network namespace to each address's VXLAN port."""
    code = ("import socket, struct, sys\n"
            "vni, count = int(sys.argv[1]), int(sys.argv[2])\n"
            "ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 34, 0, 0, 64, 17, 0,"
            " socket.inet_aton('10.254.0.99'), socket.inet_aton('10.254.0.255'))\n"
            "s = sum(struct.unpack('!10H', ip)); s = (s >> 16) + (s & 0xffff); s += s >> 16\n"
            "ip = ip[:10] + struct.pack('!H', ~s & 0xffff) + ip[12:]\n"
            "frame = b'\\xff' * 6 + b'\\x02\\x00\\x00\\x00\\x00\\x63' + b'\\x08\\x00' + ip +"
            " struct.pack('!HHHH', 6000, 6000, 14, 0) + b'inject'\n"
            "hdr = struct.pack('!B3sI', 0x08, b'\\0\\0\\0', vni << 8)\n"
            "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            "for a in sys.argv[3:]:\n"
            "    for _ in range(count):\n"
            "        try:\n"
            "            s.sendto(hdr + frame, (a, 4789))\n"
            "        except OSError:\n"
            "            pass\n")
    p = subprocess.run(["nsenter", f"--net={netns_path}", sys.executable, "-c", code, str(vni), str(count),
                        *addrs], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr


def test_a_restart_keeps_the_kernels_on_their_nodes_and_their_network(admin_clusters, multi):
    """PATCH (restart): every kernel again on its node, with its name and
    address; the network is made again where its last kernel went."""
    sname, i, _ = multi
    okj(admin_clusters.patch(f"/session/{sname}"), 200, 204)
    wait_until(lambda: info(admin_clusters, sname)["status"] == "RUNNING", timeout=60,
               message="the session RUNNING again")
    after = info(admin_clusters, sname)
    assert [(k["id"], k["name"], k["agent"]) for k in after["kernels"]] == \
        [(k["id"], k["name"], k["agent"]) for k in i["kernels"]]
    serve_names(admin_clusters, sname, NAMES3)
    assert_all_reach_all(admin_clusters, sname, NAMES3)


def test_destroy_leaves_nothing_on_any_node(stack, admin_clusters, multi):
    """Last of the multi-node tests: after the destroy, every node is as it was
    before the session (links, VXLAN forwarding entries, iptables rules, kernel
    dirs)."""
    sname, i, before = multi
    kids = {k["id"] for k in i["kernels"]}
    okj(admin_clusters.delete(f"/session/{sname}"), 200, 204)
    wait_until(lambda: info(admin_clusters, sname)["status"] == "TERMINATED", timeout=30,
               message="the session TERMINATED")
    wait_nodes_back(stack, before, 20, "after the destroy")
    assert not [x for x in kernel_leftovers(kids)], kernel_leftovers(kids)


def test_a_single_node_cluster_session(stack, admin_clusters, small_image):
    """cluster_size 2 on one node: sub1 resolves and answers from main1 and back."""
    sname = f"sn-{TAG}"
    body = {"image": small_image, "name": sname, "maxWaitSeconds": 60, "cluster_size": 2,
            "agentList": ["node3"], "config": {"resources": {"cpu": "0.25", "mem": "64m"}}}
    r = admin_clusters.post("/session", body, timeout=75)
    assert r.status_code == 201, r.text
    try:
        i = info(admin_clusters, sname)
        assert i["status"] == "RUNNING" and i["clusterMode"] == "single-node", i
        assert [(k["name"], k["agent"]) for k in i["kernels"]] == [("main1", "node3"), ("sub1", "node3")]
        serve_names(admin_clusters, sname, ["main1", "sub1"])
        assert_all_reach_all(admin_clusters, sname, ["main1", "sub1"])
        assert_cluster_env(admin_clusters, sname, ["main1", "sub1"], "single-node")
    finally:
        admin_clusters.delete(f"/session/{sname}")
        kdir = os.path.join(stack["TESSERA_STATE_DIR"], "node3", "agent", "kernels")
        kids = {k["id"] for k in info(admin_clusters, sname)["kernels"]}
        wait_until(lambda: not kids & set(os.listdir(kdir)), timeout=30,
                   message="the single-node cluster session's kernels gone from node3")


def test_a_kernel_that_cannot_start_ends_the_session_in_error(stack, admin_clusters, small_image,
                                                              sessions):
    """node2 has no free host port: sub1 cannot start there. The session ends
    in ERROR with sub1's reason, and nothing of it is left on any node."""
    ports = os.path.join(stack["TESSERA_STATE_DIR"], "node2", "agent", "ports")
    lo, hi = (int(x) for x in subprocess.run(
        ["sh", "-c", f". {REPO}/deploy/dev/nodes.sh; node_port_range 0 2"], capture_output=True,
        text=True, timeout=10).stdout.strip().split("-"))
    taken = []
    for p in range(lo, hi + 1):
        path = os.path.join(ports, str(p))
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        os.write(fd, b"test-blocker\n")
        os.close(fd)
        taken.append(path)
    before = node_state(stack)
    sname = f"fail-{TAG}"
    try:
        body = {"image": small_image, "name": sname, "maxWaitSeconds": 60, "cluster_size": 3,
                "cluster_mode": "multi-node", "agentList": ["node1", "node2", "node3"],
                "config": {"resources": {"cpu": "0.25", "mem": "64m"}}}
        r = admin_clusters.post("/session", body, timeout=75)
        assert r.status_code == 201, r.text
        i = wait_until(lambda: (lambda x: x if x["status"] == "ERROR" else None)(info(admin_clusters, sname)),
                       timeout=60, message="the session in ERROR")
        assert "sub1" in i["statusInfo"] and "node2" in i["statusInfo"] and "port" in i["statusInfo"], i
        wait_nodes_back(stack, before, 30, "after the ERROR")
    finally:
        for path in taken:
            os.unlink(path)
        admin_clusters.delete(f"/session/{sname}")


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
