"""tessera-bridge, the agent's CNI bridge plugin (services/cni-bridge/), run
directly as a CNI runtime would, in network namespaces and on a bridge of the
test's own (private subnet, its own lease directory).

It checks that ADD creates the bridge with the gateway address, puts the
container end of a veth pair in the namespace with a leased address and a
default route, the host end on the bridge with hairpin mode, and prints a CNI
result that says so (1.0.0 and 0.3.1 shapes); that two containers reach each
other and the gateway over TCP; that CHECK sees it and a missing lease; that
DEL removes the lease and the pair, twice is fine and a namespace already gone
is fine; that the lease store is host-local's, shared with Debian's bridge +
host-local on the same directory (no address handed out twice, each DELs the
other's leases); that with portIsolation and disableIPv6 (what the agent
asks for) the ports are isolated and locked to their container's MAC, the host
keeps permanent neighbour entries and answers ARP for the neighbours, so two
containers reach each other only through the host's FORWARD chain, a forged
MAC gets nowhere, and neither the bridge nor the veth ends have IPv6; and that
bad input (environment, JSON, configuration, a missing namespace, an interface
name taken) is CNI error JSON with exit status 1 that leaves no lease and no
link behind. Needs root."""
import json
import os
import shutil
import subprocess
import sys
import uuid

import pytest

from conftest import BIN_DIR

PLUGIN = os.path.join(BIN_DIR, "tessera-bridge")
CNI_DIR = "/usr/lib/cni"
NET = "tstbr"
BRIDGE = "tstbr0"
SUBNET = "10.231.188.0/24"
GATEWAY = "10.231.188.1"

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
    pytest.mark.skipif(shutil.which("ip") is None, reason="no iproute2"),
]

SERVER = r"""
import socket, sys
t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
t.bind(("0.0.0.0", 8080)); t.listen(16)
print("ready", flush=True)
while True:
    c, peer = t.accept()
    c.sendall(("hello %s from %s\n" % (sys.argv[1], peer[0])).encode()); c.close()
"""

FETCH = r"""
import socket, sys
s = socket.create_connection((sys.argv[1], 8080), timeout=3)
print(s.recv(200).decode().strip())
"""


def conf(tmp, version="1.0.0", plugin_type="tessera-bridge", **extra):
    c = {"cniVersion": version, "name": NET, "type": plugin_type, "bridge": BRIDGE,
         "isGateway": True, "ipMasq": False, "hairpinMode": True,
         "ipam": {"type": "host-local", "ranges": [[{"subnet": SUBNET}]],
                  "routes": [{"dst": "0.0.0.0/0"}], "dataDir": os.path.join(tmp, "leases")}}
    c.update(extra)
    return c


def run(cmd, cid, netns, data, plugin=PLUGIN, env_over=None):
    env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), "CNI_COMMAND": cmd,
           "CNI_CONTAINERID": cid, "CNI_NETNS": netns, "CNI_IFNAME": "eth0", "CNI_PATH": CNI_DIR}
    for k, v in (env_over or {}).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    stdin = data if isinstance(data, str) else json.dumps(data)
    return subprocess.run([plugin], input=stdin, env=env, capture_output=True, text=True,
                          timeout=60)


def refused(r, code, says):
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    err = json.loads(r.stdout)
    assert err["code"] == code, err
    assert says in err["msg"] + ": " + err["details"], err


def leases(tmp):
    d = os.path.join(tmp, "leases", NET)
    if not os.path.isdir(d):
        return {}
    out = {}
    for name in os.listdir(d):
        if name[0].isdigit():
            with open(os.path.join(d, name), newline="") as f:
                out[name] = f.read()
    return out


def links_in(ns):
    r = subprocess.run(["ip", "-n", ns, "-o", "link"], capture_output=True, text=True)
    return r.stdout


def host_veths():
    r = subprocess.run(["ip", "-o", "link", "show", "master", BRIDGE], capture_output=True,
                       text=True)
    return [l.split(":")[1].strip().split("@")[0] for l in r.stdout.splitlines() if l.strip()]


@pytest.fixture
def net(tmp_path):
    made = []

    def new_ns():
        ns = f"tstbr-{uuid.uuid4().hex[:10]}"
        subprocess.run(["ip", "netns", "add", ns], check=True)
        made.append(ns)
        return ns, f"/run/netns/{ns}"

    yield new_ns
    for ns in made:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True)


def test_add_check_del(tmp_path, net):
    tmp = str(tmp_path)
    (ns1, p1), (ns2, p2) = net(), net()
    r = run("ADD", "c1", p1, conf(tmp))
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(r.stdout)
    assert res["cniVersion"] == "1.0.0"
    names = [i["name"] for i in res["interfaces"]]
    assert names[0] == BRIDGE and names[1].startswith("veth") and names[2] == "eth0"
    assert res["interfaces"][2]["sandbox"] == p1
    assert all(len(i["mac"]) == 17 for i in res["interfaces"])
    ip1 = res["ips"][0]["address"]
    assert ip1 == "10.231.188.2/24", res
    assert res["ips"][0]["gateway"] == GATEWAY and res["ips"][0]["interface"] == 2
    assert "version" not in res["ips"][0]
    assert res["routes"] == [{"dst": "0.0.0.0/0"}]
    assert leases(tmp) == {"10.231.188.2": "c1\r\neth0"}
    # the bridge holds the gateway; the container end has the address and route
    br = subprocess.run(["ip", "-o", "addr", "show", BRIDGE], capture_output=True, text=True)
    assert f"{GATEWAY}/24" in br.stdout
    addr = subprocess.run(["ip", "-n", ns1, "-o", "addr", "show", "eth0"], capture_output=True,
                          text=True).stdout
    assert ip1 in addr
    route = subprocess.run(["ip", "-n", ns1, "route"], capture_output=True, text=True).stdout
    assert f"default via {GATEWAY} dev eth0" in route
    assert "state UP" in links_in(ns1) or "LOWER_UP" in links_in(ns1)
    veth = names[1]
    assert veth in host_veths()
    bl = subprocess.run(["bridge", "-d", "link", "show", "dev", veth], capture_output=True,
                        text=True).stdout
    assert "hairpin on" in bl, bl
    with open("/proc/sys/net/ipv4/ip_forward") as f:
        assert f.read().strip() == "1"
    # an older cniVersion: ips carry "version"
    r = run("ADD", "c2", p2, conf(tmp, version="0.3.1"))
    assert r.returncode == 0, r.stdout + r.stderr
    res2 = json.loads(r.stdout)
    assert res2["cniVersion"] == "0.3.1" and res2["ips"][0]["version"] == "4"
    ip2 = res2["ips"][0]["address"].split("/")[0]
    assert ip2 == "10.231.188.3"
    # traffic: c1 -> c2, and the host (gateway) -> c2
    srv = subprocess.Popen(["ip", "netns", "exec", ns2, sys.executable, "-c", SERVER, "c2"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert srv.stdout.readline().strip() == "ready"
        got = subprocess.run(["ip", "netns", "exec", ns1, sys.executable, "-c", FETCH, ip2],
                             capture_output=True, text=True, timeout=30)
        assert got.stdout.strip() == "hello c2 from 10.231.188.2", got.stderr
        got = subprocess.run([sys.executable, "-c", FETCH, ip2], capture_output=True,
                             text=True, timeout=30)
        assert got.stdout.strip() == f"hello c2 from {GATEWAY}", got.stderr
    finally:
        srv.kill()
        srv.wait()
    # CHECK
    assert run("CHECK", "c1", p1, conf(tmp)).returncode == 0
    refused(run("CHECK", "nobody", p1, conf(tmp)), 102, "no lease for nobody/eth0")
    # DEL: lease and pair gone; twice is fine; so is a namespace already gone
    r = run("DEL", "c1", p1, conf(tmp))
    assert r.returncode == 0, r.stdout
    assert "eth0" not in links_in(ns1)
    assert veth not in host_veths()
    assert "10.231.188.2" not in leases(tmp)
    assert run("DEL", "c1", p1, conf(tmp)).returncode == 0
    refused(run("CHECK", "c1", p1, conf(tmp)), 102, "no lease")
    subprocess.run(["ip", "netns", "del", ns2], check=True)
    r = run("DEL", "c2", p2, conf(tmp))
    assert r.returncode == 0, r.stdout
    assert leases(tmp) == {}
    # DEL without ipam or namespace: nothing to do, not an error
    r = run("DEL", "c3", "", {"cniVersion": "1.0.0", "name": NET}, env_over={"CNI_NETNS": None})
    assert r.returncode == 0, r.stdout


PING = r"""
import socket, struct, sys, time
def csum(b):
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b)); s = (s >> 16) + (s & 0xffff)
    return ~(s + (s >> 16)) & 0xffff
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); s.settimeout(1.5)
body = struct.pack('!HH', 0x7e55, 1) + b'tessera!'
s.sendto(struct.pack('!BBH', 8, 0, csum(b'\x08\0\0\0' + body)) + body, (sys.argv[1], 0))
end = time.time() + 1.5
try:
    while time.time() < end:
        d, peer = s.recvfrom(200)
        if peer[0] == sys.argv[1] and d[20] == 0:
            print("ok"); break
    else:
        print("no reply")
except OSError as e:
    print("no reply: %s" % e)
"""


def in_ns(ns, code, *args):
    return subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", code, *args],
                          capture_output=True, text=True, timeout=30).stdout.strip()


def sysctl(path):
    with open(os.path.join("/proc/sys/net", path)) as f:
        return f.read().strip()


def test_port_isolation(tmp_path, net):
    tmp = str(tmp_path)
    (ns1, p1), (ns2, p2) = net(), net()
    c = conf(tmp, portIsolation=True, disableIPv6=True)
    res = []
    for cid, path in (("c1", p1), ("c2", p2)):
        r = run("ADD", cid, path, c)
        assert r.returncode == 0, r.stdout + r.stderr
        res.append(json.loads(r.stdout))
    # the bridge's MAC is its own, not its ports' (a port coming would change
    # it, and that flushes the permanent neighbour entries below)
    with open(f"/sys/class/net/{BRIDGE}/addr_assign_type") as f:
        assert f.read().strip() == "3"
    assert res[0]["interfaces"][0]["mac"] == res[1]["interfaces"][0]["mac"]
    ip1, ip2 = (x["ips"][0]["address"].split("/")[0] for x in res)
    # each port: isolated (no frame to another isolated port), locked to its
    # container's MAC (a static FDB entry), no learning
    for x in res:
        veth, mac = x["interfaces"][1]["name"], x["interfaces"][2]["mac"]
        bl = subprocess.run(["bridge", "-d", "link", "show", "dev", veth], capture_output=True,
                            text=True).stdout
        assert "isolated on" in bl and "locked on" in bl and "learning off" in bl, bl
        assert "hairpin on" in bl, bl
        fdb = subprocess.run(["bridge", "fdb", "show", "dev", veth], capture_output=True,
                             text=True).stdout
        assert f"{mac} master {BRIDGE} static" in fdb, fdb
        assert sysctl(f"ipv6/conf/{veth}/disable_ipv6") == "1"
    # the host's neighbour entries are permanent: an ARP answer cannot move them
    neigh = subprocess.run(["ip", "neigh", "show", "dev", BRIDGE], capture_output=True,
                           text=True).stdout
    for x in res:
        ip, mac = x["ips"][0]["address"].split("/")[0], x["interfaces"][2]["mac"]
        assert f"{ip} lladdr {mac} PERMANENT" in neigh, neigh
    # the bridge answers ARP for the neighbours, at once
    assert sysctl(f"ipv4/conf/{BRIDGE}/proxy_arp") == "1"
    assert sysctl(f"ipv4/conf/{BRIDGE}/proxy_arp_pvlan") == "1"
    assert sysctl(f"ipv4/neigh/{BRIDGE}/proxy_delay") == "0"
    # no IPv6: on the bridge, in the containers (no link-local path to the host)
    assert sysctl(f"ipv6/conf/{BRIDGE}/disable_ipv6") == "1"
    assert subprocess.run(["ip", "-6", "-o", "addr", "show", "dev", BRIDGE], capture_output=True,
                          text=True).stdout == ""
    assert subprocess.run(["ip", "-n", ns1, "-6", "-o", "addr", "show", "dev", "eth0"],
                          capture_output=True, text=True).stdout == ""
    srv = subprocess.Popen(["ip", "netns", "exec", ns2, sys.executable, "-c", SERVER, "c2"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    rule = ["FORWARD", "-i", BRIDGE, "-o", BRIDGE, "-m", "comment", "--comment", "tstbr", "-j",
            "DROP"]
    try:
        assert srv.stdout.readline().strip() == "ready"
        # c1 -> c2 goes through the host (proxy ARP), keeping its address ...
        got = subprocess.run(["ip", "netns", "exec", ns1, sys.executable, "-c", FETCH, ip2],
                             capture_output=True, text=True, timeout=30)
        assert got.stdout.strip() == f"hello c2 from {ip1}", got.stderr
        # ... and only through it: the host's FORWARD decides
        subprocess.run(["iptables", "-w", "-I"] + rule, check=True)
        try:
            got = subprocess.run(["ip", "netns", "exec", ns1, sys.executable, "-c", FETCH, ip2],
                                 capture_output=True, text=True, timeout=30)
            assert got.returncode != 0 and got.stdout == "", got.stdout
        finally:
            subprocess.run(["iptables", "-w", "-D"] + rule, check=True)
        assert in_ns(ns1, PING, GATEWAY) == "ok"
        # a forged MAC: the locked port drops it
        subprocess.run(["ip", "-n", ns1, "link", "set", "eth0", "address", "02:00:00:be:ef:01"],
                       check=True)
        assert in_ns(ns1, PING, GATEWAY).startswith("no reply")
    finally:
        srv.kill()
        srv.wait()
    # DEL: the neighbour entries go with the containers
    for cid, path in (("c1", p1), ("c2", p2)):
        assert run("DEL", cid, path, c).returncode == 0
    neigh = subprocess.run(["ip", "neigh", "show", "dev", BRIDGE], capture_output=True,
                           text=True).stdout
    assert ip1 not in neigh and ip2 not in neigh, neigh
    assert leases(tmp) == {}


def test_port_isolation_on_a_bridge_made_elsewhere(tmp_path, net):
    """A bridge someone else made (Debian's plugin, an older tessera-bridge)
    whose last port left has no MAC at all (00:00:00:00:00:00): it gets one
    of its own, kept from then on."""
    tmp = str(tmp_path)
    ns1, p1 = net()
    subprocess.run(["ip", "link", "add", BRIDGE, "type", "bridge"], check=True)
    subprocess.run(["ip", "link", "add", "tstbrv0", "type", "veth", "peer", "name", "tstbrv1"],
                   check=True)
    subprocess.run(["ip", "link", "set", "tstbrv0", "master", BRIDGE], check=True)
    subprocess.run(["ip", "link", "del", "tstbrv0"], check=True)
    with open(f"/sys/class/net/{BRIDGE}/address") as f:
        assert f.read().strip() == "00:00:00:00:00:00"
    r = run("ADD", "c1", p1, conf(tmp, portIsolation=True, disableIPv6=True))
    assert r.returncode == 0, r.stdout + r.stderr
    mac = json.loads(r.stdout)["interfaces"][0]["mac"]
    assert mac != "00:00:00:00:00:00" and int(mac[:2], 16) & 1 == 0, mac
    with open(f"/sys/class/net/{BRIDGE}/addr_assign_type") as f:
        assert f.read().strip() == "3"
    assert in_ns(ns1, PING, GATEWAY) == "ok"
    assert run("DEL", "c1", p1, conf(tmp, portIsolation=True, disableIPv6=True)).returncode == 0
    with open(f"/sys/class/net/{BRIDGE}/address") as f:
        assert f.read().strip() == mac  # kept without ports


def test_shares_leases_with_host_local(tmp_path, net):
    if not os.access(os.path.join(CNI_DIR, "bridge"), os.X_OK):
        pytest.skip("no Debian bridge plugin")
    tmp = str(tmp_path)
    (_, p1), (_, p2), (_, p3) = net(), net(), net()
    deb = os.path.join(CNI_DIR, "bridge")
    r = run("ADD", "deb1", p1, conf(tmp, plugin_type="bridge"), plugin=deb)
    assert r.returncode == 0, r.stdout + r.stderr
    r = run("ADD", "ours1", p2, conf(tmp))
    assert r.returncode == 0, r.stdout + r.stderr
    r = run("ADD", "deb2", p3, conf(tmp, plugin_type="bridge"), plugin=deb)
    assert r.returncode == 0, r.stdout + r.stderr
    got = leases(tmp)
    assert sorted(v.split("\r\n")[0] for v in got.values()) == ["deb1", "deb2", "ours1"], got
    assert len(set(got)) == 3  # three different addresses
    # each releases the other's leases
    assert run("DEL", "deb1", p1, conf(tmp)).returncode == 0
    r = run("DEL", "ours1", p2, conf(tmp, plugin_type="bridge"), plugin=deb)
    assert r.returncode == 0, r.stdout
    assert sorted(v.split("\r\n")[0] for v in leases(tmp).values()) == ["deb2"]
    assert run("DEL", "deb2", p3, conf(tmp, plugin_type="bridge"), plugin=deb).returncode == 0
    assert leases(tmp) == {}


def test_version():
    r = run("VERSION", "x", "", "")
    assert r.returncode == 0
    assert "1.0.0" in json.loads(r.stdout)["supportedVersions"]


def test_bad_input(tmp_path, net):
    tmp = str(tmp_path)
    ns, path = net()
    good = conf(tmp)
    refused(run("ADD", "c1", path, good, env_over={"CNI_COMMAND": None}), 4, "CNI_COMMAND")
    refused(run("ADD", "c1", path, good, env_over={"CNI_COMMAND": "ATTACH"}), 4, "ATTACH")
    refused(run("ADD", "c1", path, good, env_over={"CNI_CONTAINERID": None}), 4,
            "CNI_CONTAINERID")
    refused(run("ADD", "../c1", path, good), 4, "CNI_CONTAINERID")
    refused(run("ADD", "c1", path, good, env_over={"CNI_NETNS": None}), 4, "CNI_NETNS")
    refused(run("ADD", "c1", path, good, env_over={"CNI_IFNAME": None}), 4, "CNI_IFNAME")
    refused(run("ADD", "c1", path, good, env_over={"CNI_IFNAME": "a-very-long-ifname"}), 4,
            "not an interface name")
    refused(run("ADD", "c1", path, "not json"), 6, "decode")
    refused(run("ADD", "c1", path, "x" * (5 << 20)), 5, "too large")
    refused(run("ADD", "c1", path, conf(tmp, ipMasq=True)), 7, "ipMasq")
    refused(run("ADD", "c1", path, conf(tmp, version="9.9.9")), 1, "9.9.9")
    bad_ipam = conf(tmp)
    bad_ipam["ipam"]["ranges"] = [[{"subnet": "fd00::/64"}]]
    refused(run("ADD", "c1", path, bad_ipam), 7, "IPv4 only")
    bad_name = conf(tmp)
    bad_name["name"] = "../../etc"
    refused(run("ADD", "c1", path, bad_name), 7, "name ../../etc")
    # a namespace that does not exist
    refused(run("ADD", "c1", "/run/netns/tstbr-none", good), 5, "/run/netns/tstbr-none")
    # a link of the bridge's name that is not a bridge
    subprocess.run(["ip", "link", "add", BRIDGE, "type", "veth", "peer", "name", "tstbr0p"],
                   check=True)
    try:
        refused(run("ADD", "c1", path, good), 100, "is not a bridge")
    finally:
        subprocess.run(["ip", "link", "del", BRIDGE], check=True)
    # the interface name is taken in the namespace: refused, lease and pair undone
    subprocess.run(["ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0p"],
                   check=True)
    before = host_veths()
    refused(run("ADD", "c1", path, good), 100, "eth0 already exists")
    assert host_veths() == before
    assert leases(tmp) == {}
    # none of it left a lease
    assert leases(tmp) == {}
