"""What a tenant's container can reach (the probe inside real sessions, and
hand-built frames from a kernel's network namespace):

- nothing on the host answers: no port the platform listens on (PostgreSQL,
  Redis, the Kafka brokers, the OCI registry, every service, and any other
  listener of the stack's processes), at the container's 127.0.0.1, at the
  bridge gateway address or at any other address of the host; nor another host
  service (a sentinel TCP listener and UDP echo on 0.0.0.0, standing in for
  sshd and friends); nor an ICMP echo to the host's addresses;
- frames sent by a tenant with a raw socket (the worst case: run as root in
  the kernel's netns with nsenter) to the gateway's MAC with destination
  127.0.0.1 (a TCP SYN to each platform port, an ICMP echo) get no answer;
- the container of another session (another user, another domain) answers
  on no protocol tried: TCP to its listener, UDP to its echo, ICMP echo,
  and TCP to its published service port through the host's addresses;
- two kernels of one session (cluster_size 2) do reach each other (TCP, UDP,
  ICMP), and a session reaches its own listener (the controls: the probes
  work, so a refusal means the path is closed).

Every port checked is first seen listening from the host (else the check
errors: it would prove nothing).
"""
import json
import os
import signal
import sys

import pytest

import seclib
from conftest import note

PLATFORM = ["postgres", "redis", "oci-registry", "kafka", "devbus", "auth", "registry", "scheduler",
            "agent", "vfolder", "wsproxy", "gateway", "stack-other"]
KINDS = ["loopback", "gateway", "host"]
TIMEOUT_MS = 2000


class Net:
    pass


@pytest.fixture(scope="module")
def net(stack, sessions):
    """The host's side, nothing executed in a container: both kernels' network
    (from their netns), the gateway, the host's addresses, the platform's ports
    (and which listen), a sentinel host service, session b's published port."""
    n = Net()
    n.a, n.b = sessions.a, sessions.b
    try:
        n.na = seclib.kernel_net(n.a.main_kernel)
        n.nb = seclib.kernel_net(n.b.main_kernel)
    except seclib.SetupError as e:
        pytest.fail(str(e), pytrace=False)
    n.gateway = n.na["gateway"]
    n.host_addrs = [a for a in seclib.host_ipv4_addresses() if not a.startswith("127.") and a != n.gateway]
    n.ports = seclib.platform_ports(stack)
    n.listening = {p for ports in n.ports.values() for p in ports if seclib.host_connects("127.0.0.1", p)}
    n.sentinel = seclib.Sentinel()
    n.pub_b = n.b.published("tcpecho")
    yield n
    n.sentinel.close()


@pytest.fixture(scope="module")
def frames(net):
    """Hand-built frames and ICMP echo from the kernels' netns (root)."""
    try:
        f = Net()
        f.raw = _frames(net, sorted({p for ports in net.ports.values() for p in ports} |
                                    {net.sentinel.tcp_port}))
        f.ping_a = _nsping(net.a.main_kernel, [net.nb["ip"], net.gateway] + net.host_addrs)
        f.ping_b = _nsping(net.b.main_kernel, [net.na["ip"]])
    except seclib.SetupError as e:
        pytest.fail(str(e), pytrace=False)
    return f


@pytest.fixture(scope="module")
def inside(net):
    """The probe inside sessions a and b (through the execute API): its
    listener in both, then TCP, UDP and ICMP from each."""
    n = net
    addrs = {"loopback": ["127.0.0.1"], "gateway": [n.gateway], "host": n.host_addrs}
    tcp_a = set()
    for alist in addrs.values():
        for ports in n.ports.values():
            tcp_a |= {f"{a}:{p}" for a in alist for p in ports}
    for a in [n.gateway] + n.host_addrs:
        tcp_a.add(f"{a}:{n.sentinel.tcp_port}")
        if n.pub_b:
            tcp_a.add(f"{a}:{n.pub_b}")
    tcp_a |= {f"{n.nb['ip']}:{seclib.LISTEN_TCP}", f"{n.na['ip']}:{seclib.LISTEN_TCP}"}
    udp_a = {f"{a}:{n.sentinel.udp_port}" for a in [n.gateway] + n.host_addrs}
    udp_a |= {f"{n.nb['ip']}:{seclib.LISTEN_UDP}", f"{n.na['ip']}:{seclib.LISTEN_UDP}"}
    i = Net()
    try:
        for sess in (n.a, n.b):
            out = sess.probe("serve", seclib.LISTEN_TCP, seclib.LISTEN_UDP)
            if "pid" not in out:
                raise seclib.SetupError(f"probe serve in {sess.name}: {out}")
        i.tcp_a = n.a.probe("tcp", "-t", TIMEOUT_MS, *sorted(tcp_a))
        i.udp_a = n.a.probe("udp", "-t", TIMEOUT_MS, *sorted(udp_a))
        i.tcp_b = n.b.probe("tcp", "-t", TIMEOUT_MS, f"{n.na['ip']}:{seclib.LISTEN_TCP}",
                            f"{n.nb['ip']}:{seclib.LISTEN_TCP}")
        i.udp_b = n.b.probe("udp", "-t", TIMEOUT_MS, f"{n.na['ip']}:{seclib.LISTEN_UDP}",
                            f"{n.nb['ip']}:{seclib.LISTEN_UDP}")
        # ICMP as the tenant: a ping socket, else a raw one, as far as the
        # container allows (the netns side is in `frames`)
        i.ping_a = n.a.probe("ping", "-t", TIMEOUT_MS, n.nb["ip"], n.gateway, *n.host_addrs)
        i.ping_b = n.b.probe("ping", "-t", TIMEOUT_MS, n.na["ip"])
    except seclib.SetupError as e:
        pytest.fail(str(e), pytrace=False)
    return i


def _json_of(r, what):
    try:
        return json.loads(r.stdout)
    except ValueError:
        raise seclib.SetupError(f"{what}: exit {r.returncode}: {r.stdout[-300:]!r} {r.stderr[-500:]!r}") from None


def _nsping(kernel_id, dsts):
    args = [sys.executable, seclib.RAWFRAME, "--timeout", str(TIMEOUT_MS / 1000)]
    for d in dsts:
        args += ["--ping", d]
    return _json_of(seclib.in_netns(kernel_id, args), "rawframe.py --ping")


def _frames(n, ports):
    args = [sys.executable, seclib.RAWFRAME, "--ifname", n.na["ifname"], "--src-mac", n.na["mac"],
            "--src-ip", n.na["ip"], "--dst-mac", seclib.bridge_mac(n.gateway), "--gateway", n.gateway,
            "--timeout", str(TIMEOUT_MS / 1000), "--icmp", "127.0.0.1"]
    for p in ports:
        args += ["--tcp", f"127.0.0.1:{p}"]
    return _json_of(seclib.in_netns(n.a.main_kernel, args), "rawframe.py")


def _need_listening(n, name):
    if name not in n.ports:
        if name == "stack-other":
            pytest.skip("the stack's processes listen on no port beyond those in <state>/env and services")
        pytest.fail(f"the stack has no {name} port in <state>/env or services", pytrace=False)
    ports = n.ports[name]
    dead = [p for p in ports if p not in n.listening]
    assert not dead, f"{name}: port(s) {dead} do not accept connections on the host: the check would prove nothing"
    return ports


def _answered(results, keys):
    return {k: results[k]["result"] for k in keys if results[k]["result"] in ("open", "reply")}


def _summary(results, keys):
    return ", ".join(f"{k} {results[k]['result']}" for k in keys)


# ---- the host's listeners -----------------------------------------------------------------------

@pytest.mark.parametrize("name", PLATFORM)
@pytest.mark.parametrize("kind", KINDS)
def test_platform_port_unreachable(net, inside, kind, name, request):
    ports = _need_listening(net, name)
    addrs = {"loopback": ["127.0.0.1"], "gateway": [net.gateway], "host": net.host_addrs}[kind]
    if not addrs:
        pytest.skip("the host has no IPv4 address besides loopback and the bridge gateway")
    keys = [f"{a}:{p}" for a in addrs for p in ports]
    note(request, _summary(inside.tcp_a, keys))
    bad = _answered(inside.tcp_a, keys)
    assert not bad, f"{name} answers a container at {sorted(bad)}"


@pytest.mark.parametrize("target", ["tcp-gateway", "tcp-host", "udp-gateway", "udp-host"])
def test_host_service_unreachable(net, inside, target, request):
    """Neither an answer reaches the container nor its packet the service."""
    proto, kind = target.split("-")
    addrs = [net.gateway] if kind == "gateway" else net.host_addrs
    if not addrs:
        pytest.skip("the host has no IPv4 address besides loopback and the bridge gateway")
    s = net.sentinel
    if proto == "tcp":
        assert seclib.host_connects("127.0.0.1", s.tcp_port), "the sentinel does not answer on the host"
        keys, res = [f"{a}:{s.tcp_port}" for a in addrs], inside.tcp_a
    else:
        keys, res = [f"{a}:{s.udp_port}" for a in addrs], inside.udp_a
    got = [a for a in addrs if s.reached(proto, net.na["ip"], a)]
    note(request, _summary(res, keys) + f"; the service got packets at {got or 'none'}")
    bad = _answered(res, keys)
    assert not bad, f"a host service on 0.0.0.0 answers a container at {sorted(bad)}"
    assert not got, f"a container's {proto} packets reach a host service on 0.0.0.0 at {got}"


@pytest.mark.parametrize("kind", ["gateway", "host"])
def test_host_icmp_echo_unanswered(net, frames, kind, request):
    addrs = [net.gateway] if kind == "gateway" else net.host_addrs
    if not addrs:
        pytest.skip("the host has no IPv4 address besides loopback and the bridge gateway")
    ns = {a: frames.ping_a[f"ping {a}"]["answer"] for a in addrs}
    note(request, f"from the netns (root): {ns}")
    assert not [a for a, v in ns.items() if v], f"the host answers ICMP echo at {[a for a, v in ns.items() if v]}"
    ping = request.getfixturevalue("inside").ping_a
    tenant = {a: ping[a]["result"] for a in addrs}
    note(request, f"as the tenant ({ping[addrs[0]]['detail']}): {tenant}")
    assert not [a for a, v in tenant.items() if v == "reply"], "the host answers the tenant's ICMP echo"


# ---- raw frames to 127.0.0.1 ---------------------------------------------------------------------

@pytest.mark.parametrize("name", PLATFORM + ["host-sentinel"])
def test_raw_frame_to_loopback_unanswered(net, frames, name, request):
    ports = [net.sentinel.tcp_port] if name == "host-sentinel" else _need_listening(net, name)
    res = {p: frames.raw[f"tcp 127.0.0.1:{p}"] for p in ports}
    note(request, ", ".join(f"SYN 127.0.0.1:{p} -> {r['answer'] or 'nothing'}" for p, r in res.items()))
    bad = {p: r["answer"] for p, r in res.items() if r["answer"]}
    assert not bad, f"TCP SYN frames to 127.0.0.1 through the bridge get answers: {bad}"


def test_raw_frame_icmp_to_loopback_unanswered(frames, request):
    r = frames.raw["icmp 127.0.0.1"]
    note(request, f"ICMP echo 127.0.0.1 -> {r['answer'] or 'nothing'}; ICMP errors {frames.raw['icmp_errors']}")
    assert not r["answer"], "an ICMP echo frame to 127.0.0.1 through the bridge is answered"


# ---- another session ------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["tcp-a-to-b", "tcp-b-to-a", "udp-a-to-b", "udp-b-to-a",
                                  "icmp-a-to-b", "icmp-b-to-a"])
def test_other_session_unreachable(net, case, request):
    proto, src, _, dst = case.split("-")
    ip = (net.nb if dst == "b" else net.na)["ip"]
    if proto == "icmp":
        frames = request.getfixturevalue("frames")
        ns = (frames.ping_a if src == "a" else frames.ping_b)[f"ping {ip}"]["answer"]
        note(request, f"from the netns (root): {ns or 'nothing'}")
        assert not ns, f"session {dst} ({ip}) answers ICMP echo from session {src}'s netns"
    inside = request.getfixturevalue("inside")
    if proto == "tcp":
        res = inside.tcp_a if src == "a" else inside.tcp_b
        key = f"{ip}:{seclib.LISTEN_TCP}"
        note(request, f"{key} {res[key]['result']}")
        assert res[key]["result"] != "open", f"session {src} connects to session {dst}'s listener {key}"
    elif proto == "udp":
        res = inside.udp_a if src == "a" else inside.udp_b
        key = f"{ip}:{seclib.LISTEN_UDP}"
        note(request, f"{key} {res[key]['result']}")
        assert res[key]["result"] != "reply", f"session {dst}'s UDP echo {key} answers session {src}"
    else:
        r = (inside.ping_a if src == "a" else inside.ping_b)[ip]
        note(request, f"as the tenant ({r['detail']}): {r['result']}")
        assert r["result"] != "reply", f"session {dst} ({ip}) answers the tenant's ICMP echo from session {src}"


@pytest.mark.parametrize("kind", ["gateway", "host"])
def test_other_session_published_port_unreachable(net, inside, kind, request):
    """Session b's published service port (tcpecho, container port 9000, where
    the probe listens) answers on the host, but not to session a's container
    through the host's addresses."""
    assert net.pub_b, f"session b publishes no tcpecho port: {net.b.info.get('servicePorts')}"
    from_host = [a for a in ["127.0.0.1"] + [net.gateway] + net.host_addrs if seclib.host_connects(a, net.pub_b)]
    assert from_host, f"session b's published port {net.pub_b} answers nowhere on the host: nothing to check"
    addrs = [net.gateway] if kind == "gateway" else net.host_addrs
    if not addrs:
        pytest.skip("the host has no IPv4 address besides loopback and the bridge gateway")
    keys = [f"{a}:{net.pub_b}" for a in addrs]
    note(request, _summary(inside.tcp_a, keys) + f" (answers the host at {from_host})")
    bad = _answered(inside.tcp_a, keys)
    assert not bad, f"session a reaches session b's published port at {sorted(bad)}"


@pytest.mark.parametrize("proto", ["tcp", "udp"])
def test_control_own_listener_reachable(net, inside, proto, request):
    """The control: a session reaches its own listener at its own address, so
    the probes work."""
    i = inside
    for sess, nn, tcp, udp in ((net.a, net.na, i.tcp_a, i.udp_a), (net.b, net.nb, i.tcp_b, i.udp_b)):
        if proto == "tcp":
            key = f"{nn['ip']}:{seclib.LISTEN_TCP}"
            assert tcp[key]["result"] == "open", f"{sess.name}: own listener {key}: {tcp[key]}"
        else:
            key = f"{nn['ip']}:{seclib.LISTEN_UDP}"
            assert udp[key]["result"] == "reply", f"{sess.name}: own UDP echo {key}: {udp[key]}"
    note(request, "both sessions")


# ---- two kernels of one session ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def cluster(sessions, probe_bin):
    """The two kernels of the cluster_size 2 session: the probe's listener in the
    second kernel's netns (started from the host), probes from the first."""
    m = sessions.multi
    if isinstance(m, Exception):
        pytest.fail(f"a session with cluster_size 2 (docs/sessions.md) did not start: {m}", pytrace=False)
    if len(m.kernels) != 2:
        pytest.fail(f"cluster_size 2 gave {len(m.kernels)} kernel(s): {m.kernels}", pytrace=False)
    c = Net()
    c.sess = m
    c.main, c.sub = m.kernels[0]["id"], m.kernels[1]["id"]
    c.server_pid = None
    try:
        c.nmain, c.nsub = seclib.kernel_net(c.main), seclib.kernel_net(c.sub)
        r = seclib.in_netns(c.sub, [probe_bin, "serve", str(seclib.LISTEN_TCP), str(seclib.LISTEN_UDP),
                                    "900"])
        served = _json_of(r, "probe serve in the second kernel's netns")
        if "pid" not in served:
            raise seclib.SetupError(f"probe serve: {served}")
        c.server_pid = served["pid"]
        ip = c.nsub["ip"]
        c.tcp = m.probe("tcp", "-t", TIMEOUT_MS, f"{ip}:{seclib.LISTEN_TCP}")
        c.udp = m.probe("udp", "-t", TIMEOUT_MS, f"{ip}:{seclib.LISTEN_UDP}")
        c.ping = _nsping(c.main, [ip])
        failed = None
    except seclib.SetupError as e:
        failed = str(e)
    try:
        if failed:
            pytest.fail(failed, pytrace=False)
        yield c
    finally:
        # the listener is a host process of ours (in the kernel's netns)
        if c.server_pid:
            try:
                os.kill(c.server_pid, signal.SIGKILL)
            except OSError:
                pass


@pytest.mark.parametrize("proto", ["tcp", "udp", "icmp"])
def test_same_session_kernels_reach_each_other(cluster, proto, request):
    ip = cluster.nsub["ip"]
    if proto == "tcp":
        r = cluster.tcp[f"{ip}:{seclib.LISTEN_TCP}"]["result"]
        ok = r == "open"
    elif proto == "udp":
        r = cluster.udp[f"{ip}:{seclib.LISTEN_UDP}"]["result"]
        ok = r == "reply"
    else:
        r = cluster.ping[f"ping {ip}"]["answer"]
        ok = r == "echo-reply"
    note(request, f"{cluster.nmain['ip']} -> {ip}: {r}")
    assert ok, f"the session's second kernel {ip} is not reachable from its first over {proto}: {r}"
