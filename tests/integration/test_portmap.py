"""tessera-portmap, the agent's CNI port plugin (services/cni-portmap/), run
directly as a CNI runtime would, against the real nat table (iptables-nft here).

Each test gets network namespaces of its own on a bridge the test makes with
Debian's `bridge` plugin (/usr/lib/cni, host-local IPAM) on a private subnet,
and a small TCP/UDP server in each namespace that answers with its name. It
checks that <local address>:<host port> reaches the server from the host
(127.0.0.1, the bridge address, another address of the host) and from the
container itself (hairpin), that CHECK sees the rules, that DEL removes every
rule and chain of the container and only those (DEL twice is fine), that a
repeated ADD adds no copies, that two containers on one network work and
deleting one leaves the other, how many iptables runs ADD and DEL exec (one
iptables-restore on the fast paths, with an iptables-save before it
otherwise), that runs at once on the host stay consistent, and that
bad input is CNI error JSON with a non-zero exit. A mapping with a hostIP
answers on that address only, and route_localnet is set only when some
mapping answers on loopback (the agent publishes on the address wsproxy
connects to). Everything the tests make is removed at the end, also after a
failure. Needs root."""
import fcntl
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import BIN_DIR, wait_until

PLUGIN = os.path.join(BIN_DIR, "tessera-portmap")
CNI_DIR = "/usr/lib/cni"
NET = "tstpm"
BRIDGE = "tstpm0"
SUBNET = "10.231.187.0/24"
GATEWAY = "10.231.187.1"
PORTS = (39870, 39899)  # host ports the tests use

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="iptables and network namespaces need root"),
    pytest.mark.skipif(not os.access(os.path.join(CNI_DIR, "bridge"), os.X_OK),
                       reason="no CNI bridge plugin in /usr/lib/cni (containernetworking-plugins)"),
    pytest.mark.skipif(shutil.which("iptables-save") is None, reason="no iptables-save"),
]

SERVER = r"""
import socket, sys, threading
name, tcp_port, udp_port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
t.bind(("0.0.0.0", tcp_port)); t.listen(64)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("0.0.0.0", udp_port))
def udp():
    while True:
        data, peer = u.recvfrom(100)
        u.sendto(("udp " + name).encode(), peer)
threading.Thread(target=udp, daemon=True).start()
print("ready", flush=True)
while True:
    c, peer = t.accept()
    c.sendall(("tcp %s from %s\n" % (name, peer[0])).encode()); c.close()
"""


def fnv1a64(*parts):
    h = 0xCBF29CE484222325
    for p in parts:
        for b in p.encode() + b"\0":
            h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def chain_of(cid, net=NET):
    return "TESSERA-HP-%016x" % fnv1a64(net, cid)


def nat_lines():
    out = subprocess.run(["iptables-save", "-t", "nat"], check=True, capture_output=True,
                         text=True).stdout
    return [l for l in out.splitlines() if l and not l.startswith("#")]


def ours(lines, cids):
    """The nat lines that belong to these containers (their chain or comment)."""
    keys = [chain_of(c) for c in cids] + [f"tessera-portmap:{NET}:{c}" for c in cids]
    return sorted(l for l in lines if any(k in l for k in keys))


def shared(lines):
    """The shared chains, their rules and the jumps to them from the built-in chains."""
    heads = tuple(f"{p}TESSERA-HP-{c}" for p in (":", "-A ") for c in ("SETMARK ", "MASQ "))
    heads += (":TESSERA-HP-DNAT ",)
    return sorted(l for l in lines if l.startswith(heads) or (
        re.match(r"-A (PREROUTING|OUTPUT|POSTROUTING) ", l) and "TESSERA-HP-" in l))


def run_plugin(cmd, cid, conf, netns="/run/netns/none", plugin=PLUGIN, extra_env=None,
               stdin=None):
    env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), "CNI_COMMAND": cmd,
           "CNI_CONTAINERID": cid, "CNI_NETNS": netns, "CNI_IFNAME": "eth0", "CNI_PATH": CNI_DIR}
    env.update(extra_env or {})
    data = stdin if stdin is not None else json.dumps(conf)
    return subprocess.run([plugin], input=data, env=env, capture_output=True, text=True,
                          timeout=60)


def portmap_conf(prev, mappings, snat=True, version="1.0.0", plugin_type="tessera-portmap"):
    return {"cniVersion": version, "name": NET, "type": plugin_type, "snat": snat,
            "capabilities": {"portMappings": True},
            "runtimeConfig": {"portMappings": mappings}, "prevResult": prev}


def fake_prev(ip):
    return {"cniVersion": "1.0.0", "interfaces": [{"name": BRIDGE}],
            "ips": [{"address": f"{ip}/24", "gateway": GATEWAY}]}


def fetch(host, port, timeout=2.0):
    """What the server at host:port says over TCP, or None."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            return s.recv(200).decode()
    except OSError:
        return None


def fetch_udp(host, port, timeout=2.0):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        try:
            s.sendto(b"hi", (host, port))
            return s.recv(200).decode()
        except OSError:
            return None


class Network:
    """Namespaces on the test's bridge (Debian's bridge plugin), each with a server."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.boxes = {}  # cid -> {"ns", "prev", "ip", "server"}
        self.cids = set()  # every container id given to tessera-portmap

    def bridge_conf(self):
        return {"cniVersion": "1.0.0", "name": NET, "type": "bridge", "bridge": BRIDGE,
                "isGateway": True, "ipMasq": False, "hairpinMode": True,
                "ipam": {"type": "host-local", "ranges": [[{"subnet": SUBNET}]],
                         "routes": [{"dst": "0.0.0.0/0"}], "dataDir": os.path.join(self.tmp, "ipam")}}

    def add(self, name):
        cid = f"tstpm-{name}-{uuid.uuid4().hex[:8]}"
        ns = cid
        subprocess.run(["ip", "netns", "add", ns], check=True)
        box = {"ns": ns, "path": f"/run/netns/{ns}"}
        self.boxes[cid] = box
        r = run_plugin("ADD", cid, self.bridge_conf(), netns=box["path"],
                       plugin=os.path.join(CNI_DIR, "bridge"))
        assert r.returncode == 0, r.stdout + r.stderr
        box["prev"] = json.loads(r.stdout)
        box["ip"] = box["prev"]["ips"][0]["address"].split("/")[0]
        box["server"] = subprocess.Popen(
            ["ip", "netns", "exec", ns, sys.executable, "-c", SERVER, name, "8080", "8081"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert box["server"].stdout.readline().strip() == "ready"
        return cid

    def exec_in(self, cid, code):
        return subprocess.run(["ip", "netns", "exec", self.boxes[cid]["ns"], sys.executable, "-c",
                               code], capture_output=True, text=True, timeout=30)

    def portmap(self, cmd, cid, mappings, **kw):
        self.cids.add(cid)
        box = self.boxes.get(cid)
        prev = box["prev"] if box else kw.pop("prev")
        netns = box["path"] if box else "/run/netns/none"
        return run_plugin(cmd, cid, portmap_conf(prev, mappings, **kw), netns=netns)

    def close(self):
        problems = []
        for cid in sorted(self.cids):  # whatever a failed test left in the nat table
            r = run_plugin("DEL", cid, {"cniVersion": "1.0.0", "name": NET})
            if r.returncode != 0:
                problems.append(f"DEL {cid}: {r.stdout}")
        for cid, box in self.boxes.items():
            if box.get("server"):
                box["server"].kill()
                box["server"].wait()
            if box.get("prev"):
                conf = dict(self.bridge_conf(), prevResult=box["prev"])
                run_plugin("DEL", cid, conf, netns=box["path"],
                           plugin=os.path.join(CNI_DIR, "bridge"))
            subprocess.run(["ip", "netns", "del", box["ns"]], capture_output=True)
        subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True)
        left = ours(nat_lines(), self.cids)
        assert not problems and not left, (problems, left)


def remove_idle_shared_chains():
    """The shared chains and their jumps, when no container uses them: under
    the plugin's lock, so no ADD runs in between."""
    with open("/run/tessera-portmap.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lines = nat_lines()
        if any(re.match(r"(:|-A )TESSERA-HP-[0-9a-f]{16}\b", l) or l.startswith("-A TESSERA-HP-DNAT ")
               for l in lines):
            return False
        rules = ["*nat"] + ["-D" + l[2:] for l in lines if re.match(
            r"-A (PREROUTING|OUTPUT|POSTROUTING) .*-j TESSERA-HP-(DNAT|MASQ)$", l)]
        for c in ("DNAT", "SETMARK", "MASQ"):
            if f":TESSERA-HP-{c} - [0:0]" in lines:
                rules += [f"-F TESSERA-HP-{c}", f"-X TESSERA-HP-{c}"]
        subprocess.run(["iptables-restore", "--noflush", "--wait=10"], input="\n".join(rules + ["COMMIT", ""]),
                       text=True, check=True)
        return True


@pytest.fixture(scope="module", autouse=True)
def shared_chains_cleanup():
    """The shared chains, removed at the end if the tests made them (and
    nothing else uses them by then)."""
    had = os.geteuid() == 0 and shutil.which("iptables-save") and any(
        l.startswith(":TESSERA-HP-DNAT ") for l in nat_lines())
    yield
    if os.geteuid() == 0 and shutil.which("iptables-save") and not had:
        remove_idle_shared_chains()


@pytest.fixture
def network():
    if not os.access(PLUGIN, os.X_OK):
        pytest.skip(f"{PLUGIN} is not built (make)")
    tmp = tempfile.mkdtemp(prefix="tstpm-")
    net = Network(tmp)
    try:
        yield net
    finally:
        try:
            net.close()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def other_local_ip():
    """An IPv4 address of this host that is neither loopback nor on the test bridge."""
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], check=True,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if f[1] != BRIDGE:
            return f[3].split("/")[0]
    return None


def test_add_reaches_the_container_and_del_removes_everything(network):
    before = nat_lines()
    cid = network.add("a")
    hp, hpu = PORTS[0], PORTS[0] + 1
    maps = [{"hostPort": hp, "containerPort": 8080, "protocol": "tcp"},
            {"hostPort": hpu, "containerPort": 8081, "protocol": "udp"}]
    r = network.portmap("ADD", cid, maps)
    assert r.returncode == 0, r.stdout + r.stderr
    # a chained plugin passes prevResult on unchanged
    assert json.loads(r.stdout) == network.boxes[cid]["prev"]
    assert r.stderr == ""
    with open(f"/proc/sys/net/ipv4/conf/{BRIDGE}/route_localnet") as f:
        assert f.read().strip() == "1"
    # from the host: loopback (masqueraded to the bridge address), the bridge, another address
    said = fetch("127.0.0.1", hp)
    assert said and said.startswith("tcp a from "), said
    assert said.split()[-1] == GATEWAY  # snat: 127.0.0.1 cannot be answered from the container
    assert (fetch(GATEWAY, hp) or "").startswith("tcp a ")
    other = other_local_ip()
    if other:
        assert (fetch(other, hp) or "").startswith("tcp a "), other
    assert fetch_udp("127.0.0.1", hpu) == "udp a"
    # hairpin: the container reaches itself through the host port
    r2 = network.exec_in(cid, f"import socket; s = socket.create_connection(('{GATEWAY}', {hp}), "
                              "timeout=3); print(s.recv(100).decode())")
    assert r2.stdout.startswith("tcp a from "), r2.stdout + r2.stderr
    # CHECK sees it all
    r = network.portmap("CHECK", cid, maps)
    assert r.returncode == 0 and r.stdout == "", r.stdout
    after_add = nat_lines()
    mine = ours(after_add, [cid])
    ch = chain_of(cid)
    assert f":{ch} - [0:0]" in mine
    assert sum(1 for l in mine if "-j DNAT" in l) == 2
    assert sum(1 for l in after_add if l.startswith("-A TESSERA-HP-DNAT ") and cid in l) == 2
    # DEL: every rule and chain of the container goes, the shared chains stay
    r = network.portmap("DEL", cid, maps)
    assert r.returncode == 0, r.stdout
    after_del = nat_lines()
    assert ours(after_del, [cid]) == ours(before, [cid]) == []
    assert shared(after_del) == shared(after_add)
    assert fetch("127.0.0.1", hp, timeout=1) is None
    # again: nothing to delete is success, and changes nothing
    r = network.portmap("DEL", cid, maps)
    assert r.returncode == 0 and r.stdout == "", r.stdout
    assert ours(nat_lines(), [cid]) == []
    # CHECK now says what is missing
    r = network.portmap("CHECK", cid, maps)
    assert r.returncode != 0
    err = json.loads(r.stdout)
    assert err["code"] == 101 and "missing" in err["msg"], err


def test_host_ip_is_the_only_address(network):
    """hostIP: the port answers there and nowhere else; route_localnet only
    for a mapping on loopback."""
    other = other_local_ip()
    if not other:
        pytest.skip("no address of the host besides loopback and the test bridge")
    cid = network.add("h")
    hp = PORTS[0] + 6
    localnet = f"/proc/sys/net/ipv4/conf/{BRIDGE}/route_localnet"
    with open(localnet, "w") as f:
        f.write("0")
    maps = [{"hostPort": hp, "containerPort": 8080, "hostIP": other}]
    assert network.portmap("ADD", cid, maps).returncode == 0
    assert (fetch(other, hp) or "").startswith("tcp h ")
    assert fetch("127.0.0.1", hp, timeout=1) is None
    assert fetch(GATEWAY, hp, timeout=1) is None
    with open(localnet) as f:
        assert f.read().strip() == "0"  # no mapping on loopback: not needed
    assert network.portmap("CHECK", cid, maps).returncode == 0
    # on 127.0.0.1 (the dev stack's wsproxy address) and that address
    maps.append({"hostPort": hp, "containerPort": 8080, "hostIP": "127.0.0.1"})
    assert network.portmap("ADD", cid, maps).returncode == 0
    with open(localnet) as f:
        assert f.read().strip() == "1"
    said = fetch("127.0.0.1", hp)
    assert said and said.split()[-1] == GATEWAY, said
    assert (fetch(other, hp) or "").startswith("tcp h ")
    assert fetch(GATEWAY, hp, timeout=1) is None
    assert network.portmap("DEL", cid, maps).returncode == 0
    assert ours(nat_lines(), [cid]) == []


def test_add_again_is_idempotent(network):
    cid = network.add("b")
    hp = PORTS[0] + 2
    maps = [{"hostPort": hp, "containerPort": 8080}]
    assert network.portmap("ADD", cid, maps).returncode == 0
    first = ours(nat_lines(), [cid])
    shared_first = shared(nat_lines())
    for _ in range(3):
        r = network.portmap("ADD", cid, maps)
        assert r.returncode == 0, r.stdout
    assert ours(nat_lines(), [cid]) == first
    assert shared(nat_lines()) == shared_first
    assert sum(1 for l in nat_lines() if l.startswith("-A PREROUTING") and "TESSERA-HP-DNAT" in l) == 1
    assert (fetch("127.0.0.1", hp) or "").startswith("tcp b ")
    # ADD with other ports replaces the container's mapping
    maps2 = [{"hostPort": hp + 1, "containerPort": 8080}]
    assert network.portmap("ADD", cid, maps2).returncode == 0
    assert (fetch("127.0.0.1", hp + 1) or "").startswith("tcp b ")
    assert fetch("127.0.0.1", hp, timeout=1) is None
    assert network.portmap("CHECK", cid, maps2).returncode == 0
    assert network.portmap("CHECK", cid, maps).returncode != 0
    assert network.portmap("DEL", cid, maps2).returncode == 0
    assert ours(nat_lines(), [cid]) == []


def test_two_containers_on_one_network(network):
    c1, c2 = network.add("one"), network.add("two")
    p1, p2 = PORTS[0] + 4, PORTS[0] + 5
    assert network.portmap("ADD", c1, [{"hostPort": p1, "containerPort": 8080}]).returncode == 0
    assert network.portmap("ADD", c2, [{"hostPort": p2, "containerPort": 8080}]).returncode == 0
    assert (fetch("127.0.0.1", p1) or "").startswith("tcp one ")
    assert (fetch("127.0.0.1", p2) or "").startswith("tcp two ")
    # one container to the other through the host port
    r = network.exec_in(c1, f"import socket; s = socket.create_connection(('{GATEWAY}', {p2}), "
                            "timeout=3); print(s.recv(100).decode())")
    assert r.stdout.startswith("tcp two "), r.stdout + r.stderr
    two_rules = ours(nat_lines(), [c2])
    assert network.portmap("DEL", c1, []).returncode == 0
    assert ours(nat_lines(), [c1]) == []
    assert ours(nat_lines(), [c2]) == two_rules
    assert fetch("127.0.0.1", p1, timeout=1) is None
    assert (fetch("127.0.0.1", p2) or "").startswith("tcp two ")
    assert network.portmap("CHECK", c2, [{"hostPort": p2, "containerPort": 8080}]).returncode == 0


def test_a_port_handed_out_again_goes_to_its_new_container(network):
    """A DEL that never came leaves the first container's rules for a host
    port; the agent's pool may hand that port to another container, whose
    jump comes first and so wins (both servers still answer here)."""
    c1, c2 = network.add("one"), network.add("two")
    p = PORTS[0] + 6
    assert network.portmap("ADD", c1, [{"hostPort": p, "containerPort": 8080}]).returncode == 0
    assert (fetch("127.0.0.1", p) or "").startswith("tcp one ")
    assert network.portmap("ADD", c2, [{"hostPort": p, "containerPort": 8080}]).returncode == 0
    assert (fetch("127.0.0.1", p) or "").startswith("tcp two ")
    jumps = [l for l in nat_lines() if l.startswith("-A TESSERA-HP-DNAT ")]
    first = next(i for i, l in enumerate(jumps) if c2 in l)
    assert first < next(i for i, l in enumerate(jumps) if c1 in l), jumps
    # the first container's DEL leaves the second's mapping alone
    assert network.portmap("DEL", c1, []).returncode == 0
    assert (fetch("127.0.0.1", p) or "").startswith("tcp two ")


def test_runs_at_once_stay_consistent(network):
    """Eight ADDs at once, then eight DELs at once (the flock serialises them)."""
    cids = [f"tstpm-par{i}-{uuid.uuid4().hex[:6]}" for i in range(8)]

    def add(i):
        return network.portmap("ADD", cids[i], [{"hostPort": PORTS[0] + 10 + i,
                                                 "containerPort": 80}],
                               prev=fake_prev(f"10.231.187.{200 + i}"))

    with ThreadPoolExecutor(8) as ex:
        results = list(ex.map(add, range(8)))
    assert all(r.returncode == 0 for r in results), [r.stdout for r in results]
    lines = nat_lines()
    for i, cid in enumerate(cids):
        r = network.portmap("CHECK", cid, [{"hostPort": PORTS[0] + 10 + i, "containerPort": 80}],
                            prev=fake_prev(f"10.231.187.{200 + i}"))
        assert r.returncode == 0, r.stdout
        assert len([l for l in lines if f"tessera-portmap:{NET}:{cid}" in l]) == 1
    for chain in ("PREROUTING", "OUTPUT", "POSTROUTING"):
        assert sum(1 for l in lines if l.startswith(f"-A {chain} ") and "TESSERA-HP-" in l) == 1

    def delete(i):
        return network.portmap("DEL", cids[i], [], prev=fake_prev(f"10.231.187.{200 + i}"))

    with ThreadPoolExecutor(8) as ex:
        results = list(ex.map(delete, range(8)))
    assert all(r.returncode == 0 for r in results), [r.stdout for r in results]
    assert ours(nat_lines(), cids) == []


STATE_DIR = "/run/tessera-portmap"


def test_iptables_runs_per_add_and_del(network):
    """The first ADD of a network (no fresh verified.<net> stamp) reads the
    table and applies once; a later ADD and a DEL of a recorded container
    only apply; a DEL with nothing recorded and nothing to delete only reads;
    a recorded rule someone else deleted makes DEL fall back to reading the
    table, and it still removes the rest."""
    if shutil.which("strace") is None:
        pytest.skip("no strace")
    cid = f"tstpm-strace-{uuid.uuid4().hex[:6]}"
    cid2 = f"tstpm-strace2-{uuid.uuid4().hex[:6]}"
    network.cids.update([cid, cid2])
    conf = portmap_conf(fake_prev("10.231.187.250"), [{"hostPort": PORTS[0] + 20,
                                                       "containerPort": 80},
                                                      {"hostPort": PORTS[0] + 21,
                                                       "containerPort": 81, "protocol": "udp"}])

    def execs(cmd, cid=cid):
        log = os.path.join(network.tmp, f"strace-{cmd}")
        env = dict(os.environ, CNI_COMMAND=cmd, CNI_CONTAINERID=cid, CNI_NETNS="/run/netns/none",
                   CNI_IFNAME="eth0", ASAN_OPTIONS="detect_leaks=0")  # LSan cannot run under ptrace
        r = subprocess.run(["strace", "-f", "-qq", "-e", "trace=execve", "-o", log, PLUGIN],
                           input=json.dumps(conf), env=env, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stdout
        with open(log) as f:
            progs = re.findall(r'execve\("([^"]+)"', f.read())
        return sorted(os.path.basename(p) for p in progs[1:])  # [0]: the plugin itself

    try:
        os.unlink(os.path.join(STATE_DIR, f"verified.{NET}"))
    except FileNotFoundError:
        pass
    assert execs("ADD") == ["iptables-restore", "iptables-save"]
    with open(os.path.join(STATE_DIR, chain_of(cid))) as f:
        recorded = f.read()
    assert recorded.count("-A TESSERA-HP-DNAT ") == 2 and cid in recorded, recorded
    assert execs("ADD", cid2) == ["iptables-restore"]
    assert len(ours(nat_lines(), [cid2])) == len(ours(nat_lines(), [cid])), nat_lines()
    assert execs("DEL") == ["iptables-restore"]
    assert ours(nat_lines(), [cid]) == []
    assert not os.path.exists(os.path.join(STATE_DIR, chain_of(cid)))
    assert execs("DEL") == ["iptables-save"]
    # a recorded jump deleted behind the plugin's back: the fast DEL is
    # refused, the full one removes what is left
    jump = next(l for l in nat_lines() if l.startswith("-A TESSERA-HP-DNAT ") and cid2 in l)
    subprocess.run(["iptables", "-t", "nat"] + ["-D"] + shlex.split(jump)[1:], check=True)
    assert execs("DEL", cid2) == ["iptables-restore", "iptables-restore", "iptables-save"]
    assert ours(nat_lines(), [cid2]) == []


def test_version():
    if not os.access(PLUGIN, os.X_OK):
        pytest.skip(f"{PLUGIN} is not built (make)")
    r = run_plugin("VERSION", "x", None, stdin='{"cniVersion":"1.0.0"}')
    assert r.returncode == 0
    v = json.loads(r.stdout)
    assert v["cniVersion"] == "1.0.0"
    assert set(v["supportedVersions"]) >= {"0.3.1", "0.4.0", "1.0.0"}


GOOD = {"cniVersion": "1.0.0", "name": NET, "type": "tessera-portmap",
        "runtimeConfig": {"portMappings": [{"hostPort": PORTS[1], "containerPort": 80,
                                            "protocol": "tcp"}]},
        "prevResult": fake_prev("10.231.187.251")}


def bad(**changes):
    c = json.loads(json.dumps(GOOD))
    for k, v in changes.items():
        if v is None:
            c.pop(k, None)
        else:
            c[k] = v
    return json.dumps(c)


def mapping(**kw):
    m = {"hostPort": PORTS[1], "containerPort": 80, "protocol": "tcp"}
    m.update(kw)
    return {"portMappings": [{k: v for k, v in m.items() if v is not None}]}


@pytest.mark.parametrize("cmd,stdin,env,code,says", [
    ("ADD", "this is not json", {}, 6, "decode"),
    ("ADD", "", {}, 6, "decode"),
    ("ADD", "[]", {}, 6, "not a JSON object"),
    ("ADD", bad(cniVersion=None), {}, 7, "cniVersion"),
    ("ADD", bad(cniVersion="2.0.0"), {}, 1, "2.0.0"),
    ("ADD", bad(name=None), {}, 7, "name is missing"),
    ("ADD", bad(name="no spaces allowed"), {}, 7, "name"),
    ("ADD", bad(prevResult=None), {}, 7, "chained plugin"),
    ("ADD", bad(prevResult={"ips": [{"address": "fd00::2/64"}]}), {}, 7, "no IPv4"),
    ("ADD", bad(prevResult={"ips": [{"address": "10.231.187.300/24"}]}), {}, 7, "10.231.187.300"),
    ("ADD", bad(runtimeConfig=mapping(hostPort=0)), {}, 7, "hostPort 0"),
    ("ADD", bad(runtimeConfig=mapping(hostPort=65536)), {}, 7, "hostPort 65536"),
    ("ADD", bad(runtimeConfig=mapping(containerPort=None)), {}, 7, "containerPort is missing"),
    ("ADD", bad(runtimeConfig=mapping(containerPort="80")), {}, 7, "containerPort"),
    ("ADD", bad(runtimeConfig=mapping(protocol="sctp")), {}, 7, "sctp"),
    ("ADD", bad(runtimeConfig={"portMappings": "80:80"}), {}, 7, "not an array"),
    ("ADD", bad(snat="yes"), {}, 7, "snat"),
    ("CHECK", bad(cniVersion="0.3.1"), {}, 1, "CHECK"),
    ("ADD", json.dumps(GOOD), {"CNI_CONTAINERID": ""}, 4, "CNI_CONTAINERID"),
    ("ADD", json.dumps(GOOD), {"CNI_CONTAINERID": "a;b"}, 4, "CNI_CONTAINERID"),
    ("ADD", json.dumps(GOOD), {"CNI_NETNS": ""}, 4, "CNI_NETNS"),
    ("ADD", json.dumps(GOOD), {"CNI_IFNAME": ""}, 4, "CNI_IFNAME"),
    ("ADD", json.dumps(GOOD), {"CNI_COMMAND": ""}, 4, "CNI_COMMAND"),
    ("STATUS", json.dumps(GOOD), {}, 4, "CNI_COMMAND"),
])
def test_bad_input_is_a_cni_error(cmd, stdin, env, code, says):
    if not os.access(PLUGIN, os.X_OK):
        pytest.skip(f"{PLUGIN} is not built (make)")
    before = nat_lines()
    cid = f"tstpm-bad-{uuid.uuid4().hex[:6]}"
    r = run_plugin(cmd, cid, None, stdin=stdin, extra_env=env)
    assert r.returncode != 0, r.stdout
    err = json.loads(r.stdout)
    assert set(err) >= {"cniVersion", "code", "msg", "details"}, err
    assert err["code"] == code, err
    assert says in err["msg"] + " " + err["details"], err
    assert ours(nat_lines(), [cid]) == ours(before, [cid]) == []
