"""What a tenant's container on a node that is not the control plane's can
reach, on a stack of three nodes (TESSERA_DEV_NODES=3: each node a network
namespace with its own agent and address on the node network, the control
plane on the node network's address; TLS between hosts on).

Session a runs on node2, session b (another tenant, another domain) on node3,
each pinned by a superadmin (agentList, owner_access_key). From session a:
- no port of the control plane answers at its address on the node network
  (PostgreSQL, Redis, the bus, the OCI registry, every service and any other
  listener of the stack's processes), nor a host service there (a sentinel on
  0.0.0.0 of the host), nor its ICMP echo;
- no node answers at its address: its agent, and whatever else listens in
  the node's namespace, on node1, on its own node2 and on node3;
- session b answers on nothing: TCP to its listener and its published port,
  ICMP echo.

The controls: from node2's namespace itself (the host's side, not a
container) every control-plane port and every node listener checked does
accept connections, so a refusal in the container means the path is closed;
and session a reaches its own listener.
"""
import json
import subprocess
import sys
import time

import pytest

import seclib
from conftest import note

TIMEOUT_MS = 2000
PROBE_NODE, OTHER_NODE = 2, 3


class Net:
    pass


def _ns_run(netns, argv, timeout=30):
    return subprocess.run(["ip", "netns", "exec", netns] + argv, capture_output=True, text=True,
                          timeout=timeout)


def _listening_on(addr):
    """The TCP ports something listens on, on the host, at addr or at every
    address."""
    r = subprocess.run(["ss", "-Htln"], capture_output=True, text=True, timeout=30, check=True)
    ports = set()
    for line in r.stdout.splitlines():
        w = line.split()
        if len(w) >= 4:
            host, _, port = w[3].rpartition(":")
            if host in (addr, "0.0.0.0", "*", "[::]") and port.isdigit():
                ports.add(int(port))
    return ports


def _ns_listening(netns):
    """The TCP ports something listens on in a node's namespace, on an address
    a container could be routed to (not 127.0.0.0/8)."""
    r = _ns_run(netns, ["ss", "-Htln"])
    if r.returncode != 0:
        raise seclib.SetupError(f"ss in {netns}: {r.stderr.strip()}")
    ports = set()
    for line in r.stdout.splitlines():
        w = line.split()
        if len(w) >= 4:
            addr, _, port = w[3].rpartition(":")
            if not addr.startswith("127.") and port.isdigit():
                ports.add(int(port))
    return sorted(ports)


_CONNECT = """
import json, socket, sys
out = {}
for hp in sys.argv[1:]:
    h, p = hp.rsplit(":", 1)
    try:
        socket.create_connection((h, int(p)), timeout=2).close()
        out[hp] = True
    except OSError:
        out[hp] = False
print(json.dumps(out))
"""


def _ns_connects(netns, targets):
    """{host:port: connects} from a node's namespace (the node itself)."""
    r = _ns_run(netns, [sys.executable, "-c", _CONNECT] + sorted(targets), timeout=120)
    try:
        return json.loads(r.stdout)
    except ValueError:
        raise seclib.SetupError(f"connect test in {netns}: {r.stdout!r} {r.stderr!r}") from None


def _session_on(admin, tenant, image, name, agent):
    r = admin.post("/session", {"image": image, "name": name, "enqueueOnly": True,
                                "group_name": tenant.group, "owner_access_key": tenant.access_key,
                                "agentList": [agent], "config": {"resources": {"cpu": "0.25", "mem": "128m"}}})
    if r.status_code != 201:
        raise seclib.SetupError(f"create {name} on {agent}: {r.status_code} {r.text[:500]}")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        info = tenant.client.get(f"/session/{name}").json()
        if info.get("status") == "RUNNING":
            return seclib.Session(tenant, name, info)
        if info.get("status") not in seclib.LIVE:
            raise seclib.SetupError(f"session {name} ended {info.get('status')}: {info.get('statusInfo')}")
        time.sleep(0.3)
    raise seclib.SetupError(f"session {name} not RUNNING on {agent} after 120 s")


@pytest.fixture(scope="module")
def cl(cluster_stack, probe_bin):
    """The three-node stack's side: tenants, sessions a (node2) and b (node3),
    the addresses and ports to probe, the controls from node2's namespace,
    then the probe's answers from inside session a."""
    st = cluster_stack
    n = Net()
    n.sentinel = seclib.Sentinel()
    try:
        admin = seclib.admin_client(st)
        image = seclib.build_and_push_image(st, probe_bin, st["TESSERA_STATE_DIR"])
        seclib.okj(admin.post("/admin/images", {"reference": image}), 200, 201)
        ta = seclib.new_tenant(admin, None, "secn-a")
        tb = seclib.new_tenant(admin, seclib.new_domain(admin, "secn-dom-b"), "secn-b")
        node = {k: {"name": st[f"TESSERA_NODE_{k}_NAME"], "addr": st[f"TESSERA_NODE_{k}_ADDR"],
                    "netns": st[f"TESSERA_NODE_{k}_NETNS"]} for k in (1, 2, 3)}
        n.a = _session_on(admin, ta, image, f"secn-a-{seclib.TAG}", node[PROBE_NODE]["name"])
        n.b = _session_on(admin, tb, image, f"secn-b-{seclib.TAG}", node[OTHER_NODE]["name"])
        n.na, n.nb = seclib.kernel_net(n.a.main_kernel), seclib.kernel_net(n.b.main_kernel)
        n.cp = st["TESSERA_CONTROL_PLANE_ADDR"]
        # the control plane's ports, and each node's listeners at its address
        # (those that listen there: some listen on the host's 127.0.0.1 only)
        on_cp = _listening_on(n.cp)
        n.cp_ports = {name: [p for p in ports if p in on_cp] for name, ports in seclib.platform_ports(st).items()}
        n.cp_ports = {name: ports for name, ports in n.cp_ports.items() if ports}
        n.node = node
        n.node_ports = {k: _ns_listening(v["netns"]) for k, v in node.items()}
        n.pub_b = n.b.published("tcpecho")
        controls = {f"{n.cp}:{p}" for ports in n.cp_ports.values() for p in ports}
        controls |= {f"{v['addr']}:{p}" for k, v in node.items() for p in n.node_ports[k]}
        n.control = _ns_connects(node[PROBE_NODE]["netns"], controls)
        # inside session a
        for sess in (n.a, n.b):
            out = sess.probe("serve", seclib.LISTEN_TCP, seclib.LISTEN_UDP)
            if "pid" not in out:
                raise seclib.SetupError(f"probe serve in {sess.name}: {out}")
        targets = set(controls) | {f"{n.cp}:{n.sentinel.tcp_port}",
                                   f"{n.nb['ip']}:{seclib.LISTEN_TCP}", f"{n.na['ip']}:{seclib.LISTEN_TCP}"}
        if n.pub_b:
            targets |= {f"{v['addr']}:{n.pub_b}" for v in node.values()}
        n.tcp = n.a.probe("tcp", "-t", TIMEOUT_MS, *sorted(targets), timeout=300)
        n.udp = n.a.probe("udp", "-t", TIMEOUT_MS, f"{n.cp}:{n.sentinel.udp_port}",
                          f"{n.nb['ip']}:{seclib.LISTEN_UDP}")
        n.ping = n.a.probe("ping", "-t", TIMEOUT_MS, n.cp, n.nb["ip"], *[v["addr"] for v in node.values()])
    except seclib.SetupError as e:
        n.sentinel.close()
        pytest.fail(str(e), pytrace=False)
    yield n
    n.sentinel.close()
    for sess in (n.a, n.b):
        sess.tenant.client.delete(f"/session/{sess.name}")


def _open(n, keys):
    return sorted(k for k in keys if n.tcp[k]["result"] == "open")


def _summary(n, keys):
    return ", ".join(f"{k} {n.tcp[k]['result']}" for k in sorted(keys))


def test_control_plane_ports_closed_to_a_node_s_container(cl, request):
    assert cl.cp_ports.get("postgres") and len(cl.cp_ports) >= 3, \
        f"too few control-plane listeners found at {cl.cp} to prove anything: {cl.cp_ports}"
    keys = [f"{cl.cp}:{p}" for ports in cl.cp_ports.values() for p in ports]
    dead = [k for k in keys if not cl.control[k]]
    assert not dead, f"from node{PROBE_NODE} itself these do not connect: {dead}: the check would prove nothing"
    note(request, _summary(cl, keys))
    bad = _open(cl, keys)
    names = {f"{cl.cp}:{p}": name for name, ports in cl.cp_ports.items() for p in ports}
    assert not bad, f"the control plane answers a container on node{PROBE_NODE}: " + \
        ", ".join(f"{names[k]} {k}" for k in bad)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_node_listeners_closed_to_a_container(cl, k, request):
    if not cl.node_ports[k]:
        pytest.fail(f"node{k}'s namespace listens on nothing: its agent should", pytrace=False)
    keys = [f"{cl.node[k]['addr']}:{p}" for p in cl.node_ports[k]]
    dead = [x for x in keys if not cl.control[x]]
    assert not dead, f"from node{PROBE_NODE} itself these do not connect: {dead}: the check would prove nothing"
    note(request, _summary(cl, keys))
    bad = _open(cl, keys)
    assert not bad, f"node{k} answers a container on node{PROBE_NODE} at {bad}"


def test_host_service_closed_to_a_node_s_container(cl, request):
    s = cl.sentinel
    assert seclib.host_connects(cl.cp, s.tcp_port), "the sentinel does not answer at the control plane's address"
    tcp, udp = f"{cl.cp}:{s.tcp_port}", f"{cl.cp}:{s.udp_port}"
    note(request, f"{tcp} {cl.tcp[tcp]['result']}, udp {udp} {cl.udp[udp]['result']}; seen {s.seen}")
    assert cl.tcp[tcp]["result"] != "open", f"a host service on 0.0.0.0 answers a node's container at {tcp}"
    assert cl.udp[udp]["result"] != "reply", f"a host service's UDP echo answers a node's container at {udp}"
    peers = {cl.na["ip"], cl.node[PROBE_NODE]["addr"]}
    assert not [x for x in s.seen if x[1] in peers], f"the container's packets reach a host service: {s.seen}"


def test_icmp_echo_unanswered(cl, request):
    addrs = [cl.cp] + [v["addr"] for v in cl.node.values()]
    got = {a: cl.ping[a]["result"] for a in addrs}
    note(request, f"as the tenant ({cl.ping[cl.cp]['detail']}): {got}")
    assert not [a for a, v in got.items() if v == "reply"], f"ICMP echo answered: {got}"


def test_session_on_another_node_unreachable(cl, request):
    own = f"{cl.na['ip']}:{seclib.LISTEN_TCP}"
    assert cl.tcp[own]["result"] == "open", f"session a does not reach its own listener {own}: {cl.tcp[own]}"
    keys = [f"{cl.nb['ip']}:{seclib.LISTEN_TCP}"]
    if cl.pub_b:
        keys += [f"{v['addr']}:{cl.pub_b}" for v in cl.node.values()]
    udp = f"{cl.nb['ip']}:{seclib.LISTEN_UDP}"
    note(request, _summary(cl, keys) + f", udp {udp} {cl.udp[udp]['result']}, "
                  f"icmp {cl.nb['ip']} {cl.ping[cl.nb['ip']]['result']}")
    assert not _open(cl, keys), f"session b (node{OTHER_NODE}) answers session a (node{PROBE_NODE}) at {_open(cl, keys)}"
    assert cl.udp[udp]["result"] != "reply", f"session b's UDP echo answers session a at {udp}"
    assert cl.ping[cl.nb["ip"]]["result"] != "reply", "session b answers session a's ICMP echo"
