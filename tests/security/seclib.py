"""seclib.py: what the security suite's tests share: the probe program and its
test image, tenants and their sessions, execute through the signed public API,
the host's view (addresses, the stack's listening ports, a kernel's network
namespace).

Only the standard library, requests (Debian's) and the tests' own signers."""
import glob
import ipaddress
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import bai_signer  # noqa: E402
import suitekit  # noqa: E402

# The probe is one static program from tests/security/probe*.c (and its headers).
PROBE_SRCS = sorted(glob.glob(os.path.join(HERE, "probe*.c")))
PROBE_FILES = PROBE_SRCS + sorted(glob.glob(os.path.join(HERE, "probe*.h")))
PROBE_IN_IMAGE = "/opt/tessera-probe/probe"
RAWFRAME = os.path.join(HERE, "rawframe.py")
TAG = uuid.uuid4().hex[:6]
PASSWORD = "security-Passw0rd"
# Container ports the probe's listener takes in every session: 9000 is the
# test image's "tcpecho" service port, so it is also published on a host port.
LISTEN_TCP, LISTEN_UDP = 9000, 9001
LIVE = {"PENDING", "SCHEDULED", "PREPARING", "PULLING", "RUNNING"}

# The capabilities a container may hold (linux/capability.h bit numbers).
CAP_BITS = {
    "CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_DAC_READ_SEARCH": 2, "CAP_FOWNER": 3,
    "CAP_FSETID": 4, "CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_SETPCAP": 8,
    "CAP_LINUX_IMMUTABLE": 9, "CAP_NET_BIND_SERVICE": 10, "CAP_NET_BROADCAST": 11,
    "CAP_NET_ADMIN": 12, "CAP_NET_RAW": 13, "CAP_IPC_LOCK": 14, "CAP_IPC_OWNER": 15,
    "CAP_SYS_MODULE": 16, "CAP_SYS_RAWIO": 17, "CAP_SYS_CHROOT": 18, "CAP_SYS_PTRACE": 19,
    "CAP_SYS_PACCT": 20, "CAP_SYS_ADMIN": 21, "CAP_SYS_BOOT": 22, "CAP_SYS_NICE": 23,
    "CAP_SYS_RESOURCE": 24, "CAP_SYS_TIME": 25, "CAP_SYS_TTY_CONFIG": 26, "CAP_MKNOD": 27,
    "CAP_LEASE": 28, "CAP_AUDIT_WRITE": 29, "CAP_AUDIT_CONTROL": 30, "CAP_SETFCAP": 31,
    "CAP_MAC_OVERRIDE": 32, "CAP_MAC_ADMIN": 33, "CAP_SYSLOG": 34, "CAP_WAKE_ALARM": 35,
    "CAP_BLOCK_SUSPEND": 36, "CAP_AUDIT_READ": 37, "CAP_PERFMON": 38, "CAP_BPF": 39,
    "CAP_CHECKPOINT_RESTORE": 40,
}
ALLOWED_CAPS = ("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID",
                "CAP_SETUID", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT")
ALLOWED_CAP_MASK = sum(1 << CAP_BITS[c] for c in ALLOWED_CAPS)  # 0x405fb


def cap_names(mask):
    return [n for n, b in sorted(CAP_BITS.items(), key=lambda x: x[1]) if mask >> b & 1] + \
        [f"bit{b}" for b in range(41, 64) if mask >> b & 1]


class SetupError(Exception):
    """Something the suite needs could not be made (the check then errors with
    this message instead of passing)."""


# ---- the probe and its image ------------------------------------------------------------

def probe_path(bin_dir):
    """The static probe: TESSERA_SECURITY_PROBE, else <build>/security/probe
    (`make security` builds it), compiled here with gcc -static when missing or
    older than one of its sources (probe*.c, probe*.h)."""
    path = os.environ.get("TESSERA_SECURITY_PROBE") or \
        os.path.join(os.path.dirname(bin_dir), "security", "probe")
    newest = max(os.path.getmtime(f) for f in PROBE_FILES)
    if not os.path.exists(path) or os.path.getmtime(path) < newest:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        r = subprocess.run(["gcc", "-static", "-O2", "-Wall", "-o", path + ".tmp"] + PROBE_SRCS,
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise SetupError(f"building the probe failed: {r.stderr[-2000:]}")
        os.replace(path + ".tmp", path)
    return path


def build_and_push_image(stack, probe, workdir):
    """The busybox test image plus the probe, pushed to the stack's OCI
    registry (suitekit.push_busybox_image). Returns the reference."""
    out = os.path.join(workdir, "security-image")
    shutil.rmtree(out, ignore_errors=True)
    try:
        return suitekit.push_busybox_image(stack, out, "tessera/security-probe", TAG,
                                           "tessera-security", [f"{probe}:{PROBE_IN_IMAGE}"])
    except RuntimeError as e:
        raise SetupError(str(e)) from e


# ---- the public API -----------------------------------------------------------------------

def okj(r, *statuses):
    if r.status_code not in (statuses or (200,)):
        raise SetupError(f"{r.request.method} {r.request.path_url}: {r.status_code} {r.text[:500]}")
    return r.json()


def admin_client(stack):
    from conftest import parse_env_file  # noqa: PLC0415 - the suite's conftest
    env = dict(stack)
    creds = os.path.join(stack["TESSERA_STATE_DIR"], "auth", "admin-credentials")
    if "TESSERA_ADMIN_ACCESS_KEY" not in env and os.path.exists(creds):
        env.update(parse_env_file(creds))
    if "TESSERA_ADMIN_ACCESS_KEY" not in env:
        raise SetupError("no superadmin keys in the stack's env")
    c = bai_signer.Client(stack["TESSERA_GATEWAY_URL"], env["TESSERA_ADMIN_ACCESS_KEY"],
                          env["TESSERA_ADMIN_SECRET_KEY"])
    c.email = env.get("TESSERA_ADMIN_EMAIL")
    return c


class Tenant:
    """A user with a keypair: .client (signed), .user (the admin API's record),
    .group (the project to create sessions in)."""

    def __init__(self, client, user, group):
        self.client, self.user, self.group = client, user, group
        self.access_key = client.access_key

    def __repr__(self):
        return f"<tenant {self.user['email']} ({self.user['domain_name']})>"


def new_domain(admin, prefix):
    name = f"{prefix}-{TAG}"
    okj(admin.post("/admin/domains", {"name": name}), 200, 201)
    return name


def new_tenant(admin, domain, prefix, policy=None, project=None):
    """A user of `domain` (None: the superadmin's default domain) with a keypair
    (of keypair resource policy `policy` when given), a member of `project`
    (a project id) or of the domain's "default" project."""
    uname = f"{prefix}-{TAG}-{uuid.uuid4().hex[:4]}"
    body = {"email": f"{uname}@example.com", "username": uname, "password": PASSWORD, "role": "user"}
    if domain:
        body["domain_name"] = domain
    u = okj(admin.post("/admin/users", body), 200, 201)
    kbody = {"user_id": u["id"]}
    if policy:
        kbody["resource_policy"] = policy
    k = okj(admin.post("/admin/keypairs", kbody), 200, 201)
    if project is None:
        projects = okj(admin.get("/admin/projects", params={"limit": 1000}))["items"]
        mine = [p for p in projects if p["name"] == "default" and p["domain_name"] == u["domain_name"]]
        if not mine:
            p = okj(admin.post("/admin/projects", {"name": "default", "domain_name": u["domain_name"]}),
                    200, 201)
        else:
            p = mine[0]
    else:
        p = okj(admin.get(f"/admin/projects/{project}"))
    okj(admin.post(f"/admin/projects/{p['id']}/members", {"user_ids": [u["id"]]}), 200, 201)
    client = bai_signer.Client(admin.endpoint, k["access_key"], k["secret_key"])
    return Tenant(client, u, p["name"])


class Session:
    """A session of a tenant, RUNNING: .name, .id, .kernels ([{id, role, ...}])."""

    def __init__(self, tenant, name, info):
        self.tenant, self.name, self.info = tenant, name, info
        self.id = info["sessionUuid"]
        self.kernels = sorted(info.get("kernels") or [], key=lambda k: k.get("idx", 0))

    @property
    def main_kernel(self):
        return self.kernels[0]["id"]

    def exec(self, command, timeout=60):
        """Run `command` with /bin/sh -c in the main kernel (batch execute through
        the gateway); (exit code, stdout, stderr)."""
        r = self.tenant.client.post(f"/session/{self.name}",
                                    {"mode": "batch", "runId": uuid.uuid4().hex[:8],
                                     "options": {"exec": command}}, timeout=timeout + 20)
        res = okj(r)["result"]
        out = "".join(t for kind, t in res.get("console") or [] if kind == "stdout")
        err = "".join(t for kind, t in res.get("console") or [] if kind == "stderr")
        if res.get("status") != "finished":
            raise SetupError(f"execute {command!r} in {self.name}: {res.get('status')} {err[-500:]}")
        return res.get("exitCode"), out, err

    def published(self, app):
        """The host port the app's first port is published on, or None."""
        for sp in self.info.get("servicePorts") or []:
            if sp.get("name") == app and sp.get("host_ports"):
                return sp["host_ports"][0]
        return None

    def probe(self, *args, timeout=60):
        """Run the probe in the session; its JSON answer."""
        cmd = " ".join([PROBE_IN_IMAGE] + [sh_quote(a) for a in args])
        code, out, err = self.exec(cmd, timeout=timeout)
        try:
            return json.loads(out)
        except ValueError:
            raise SetupError(f"probe {' '.join(map(str, args))}: exit {code}, not JSON: {out[-500:]!r} "
                             f"stderr {err[-500:]!r}") from None


def sh_quote(s):
    s = str(s)
    if s and all(c.isalnum() or c in "-_./:=@,+" for c in s):
        return s
    return "'" + s.replace("'", "'\\''") + "'"


def create_sessions(image, specs, timeout=90):
    """specs: [(tenant, name, extra body)]; all are created (enqueueOnly), then
    awaited together. Returns {name: Session or SetupError}."""
    out = {}
    for tenant, name, extra in specs:
        body = {"image": image, "name": name, "enqueueOnly": True, "group_name": tenant.group,
                "config": {"resources": {"cpu": "0.25", "mem": "128m"}}}
        body.update(extra or {})
        r = tenant.client.post("/session", body)
        if r.status_code != 201:
            out[name] = SetupError(f"create {name} ({tenant!r}): {r.status_code} {r.text[:500]}")
    deadline = time.monotonic() + timeout
    pending = [(t, n) for t, n, _ in specs if n not in out]
    while pending:
        still = []
        for tenant, name in pending:
            r = tenant.client.get(f"/session/{name}")
            info = r.json() if r.status_code == 200 else {}
            st = info.get("status")
            if st == "RUNNING":
                out[name] = Session(tenant, name, info)
            elif st in LIVE:
                still.append((tenant, name))
            else:
                out[name] = SetupError(f"session {name} ended {st}: {info.get('statusInfo')} "
                                       f"({r.status_code} {r.text[:300] if r.status_code != 200 else ''})")
        pending = still
        if pending and time.monotonic() > deadline:
            for tenant, name in pending:
                info = tenant.client.get(f"/session/{name}").json()
                out[name] = SetupError(f"session {name} not RUNNING after {timeout} s: "
                                       f"{info.get('status')} {info.get('statusInfo')}")
            break
        if pending:
            time.sleep(0.3)
    return out


# ---- the host's side ---------------------------------------------------------------------------

def host_ipv4_addresses():
    """{address: interface} of the host's IPv4 addresses (`ip -4 addr`)."""
    r = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, check=True)
    addrs = {}
    for line in r.stdout.splitlines():
        w = line.split()
        if "inet" in w:
            addrs[w[w.index("inet") + 1].split("/")[0]] = w[1]
    return addrs


def netns_path(kernel_id):
    return f"/run/netns/tessera-{kernel_id}"


def in_netns(kernel_id, argv, timeout=30, **kw):
    """Run argv on the host inside a kernel's network namespace (root, every
    capability: the worst case of a tenant who got them)."""
    path = netns_path(kernel_id)
    if not os.path.exists(path):
        raise SetupError(f"{path} does not exist (the agent names each kernel's netns so)")
    return subprocess.run(["nsenter", f"--net={path}"] + argv, capture_output=True, text=True,
                          timeout=timeout, **kw)


def kernel_net(kernel_id):
    """The kernel's view of its network, from inside its netns: {"ifname",
    "ip", "mac", "gateway"} (the interface of the default route)."""
    r = in_netns(kernel_id, ["ip", "-4", "-o", "route", "show", "default"])
    w = r.stdout.split()
    if "via" not in w or "dev" not in w:
        raise SetupError(f"kernel {kernel_id}: no default route ({r.stdout!r} {r.stderr!r})")
    gw, ifname = w[w.index("via") + 1], w[w.index("dev") + 1]
    r = in_netns(kernel_id, ["ip", "-4", "-o", "addr", "show", "dev", ifname])
    w = r.stdout.split()
    ip = w[w.index("inet") + 1].split("/")[0]
    # (not /sys/class/net: nsenter --net keeps the host's sysfs mount)
    r = in_netns(kernel_id, ["ip", "-o", "link", "show", "dev", ifname])
    w = r.stdout.split()
    mac = w[w.index("link/ether") + 1]
    return {"ifname": ifname, "ip": ip, "mac": mac, "gateway": gw}


def bridge_mac(gateway_ip):
    """The MAC of the host interface that holds the gateway address (the bridge)."""
    for addr, ifname in host_ipv4_addresses().items():
        if addr == gateway_ip:
            with open(f"/sys/class/net/{ifname}/address", encoding="ascii") as f:
                return f.read().strip()
    raise SetupError(f"no host interface has the gateway address {gateway_ip}")


def _listen_inodes():
    """{socket inode: port} of every IPv4/IPv6 TCP socket in LISTEN on the host."""
    found = {}
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path, encoding="ascii") as f:
                next(f)
                for line in f:
                    w = line.split()
                    if w[3] == "0A":  # TCP_LISTEN
                        found[w[9]] = int(w[1].rsplit(":", 1)[1], 16)
        except OSError:
            pass
    return found


def stack_pids(state_dir):
    """The stack's processes: the recorded pids and their descendants."""
    pids = set()
    run = os.path.join(state_dir, "run")
    for f in os.listdir(run):
        if f.endswith(".pid"):
            try:
                with open(os.path.join(run, f), encoding="ascii") as fh:
                    pids.add(int(fh.read().split()[0]))
            except (OSError, ValueError, IndexError):
                pass
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(name))
            except (OSError, ValueError, IndexError):
                pass
    todo = list(pids)
    while todo:
        p = todo.pop()
        for c in children.get(p, []):
            if c not in pids:
                pids.add(c)
                todo.append(c)
    return pids


def stack_listen_ports(state_dir):
    """Every TCP port some process of the stack listens on (found through the
    processes' socket fds), beyond those in <state>/env and services."""
    inodes = _listen_inodes()
    ports = set()
    for pid in stack_pids(state_dir):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:[") and link[8:-1] in inodes:
                ports.add(inodes[link[8:-1]])
    return ports


def platform_ports(stack):
    """{name: [ports]} of what the platform listens on: every URL and address in
    <state>/services and <state>/env, and ("stack-other") any other TCP port a
    process of the stack listens on (the Kafka mock cluster's brokers, the
    wsproxy app listener, ...)."""
    from conftest import parse_services_file  # noqa: PLC0415
    import urllib.parse  # noqa: PLC0415
    state = stack["TESSERA_STATE_DIR"]
    named = {}
    for name, (_pid, url) in parse_services_file(os.path.join(state, "services")).items():
        u = urllib.parse.urlsplit(url)
        if u.port:
            named.setdefault(name, set()).add(u.port)
    for var, value in stack.items():
        if var.endswith("_URL") and value.startswith(("http://", "redis://", "postgresql://")):
            u = urllib.parse.urlsplit(value)
            if u.port:
                svc = var[len("TESSERA_"):-len("_URL")].lower() if var.startswith("TESSERA_") else var.lower()
                if svc == "pg_dsn":
                    svc = "postgres"
                named.setdefault(svc, set()).add(u.port)
    if stack.get("TESSERA_PG_DSN"):
        named.setdefault("postgres", set()).add(urllib.parse.urlsplit(stack["TESSERA_PG_DSN"]).port)
    if stack.get("TESSERA_OCI_REGISTRY"):
        named.setdefault("oci-registry", set()).add(int(stack["TESSERA_OCI_REGISTRY"].rsplit(":", 1)[1]))
    kafka = stack.get("KAFKA_BOOTSTRAP") or stack.get("TESSERA_KAFKA_BOOTSTRAP") or ""
    for hp in kafka.split(","):
        if ":" in hp:
            named.setdefault("kafka", set()).add(int(hp.rsplit(":", 1)[1]))
    known = set().union(*named.values()) if named else set()
    other = stack_listen_ports(state) - known
    if other:
        named["stack-other"] = other
    return {k: sorted(v) for k, v in named.items()}


def host_connects(addr, port, timeout=1.0):
    try:
        with socket.create_connection((addr, port), timeout=timeout):
            return True
    except OSError:
        return False


IP_PKTINFO = 8  # linux/in.h (Python's socket module does not name it)


class Sentinel:
    """A stand-in for "another host service": a TCP listener and a UDP echo on
    0.0.0.0 (free ports) in this process, so that the suite need not touch any
    real service of the host. .seen lists what reached it: (proto, peer
    address, the host address it was sent to). The UDP echo answers from the
    address it was sent to (IP_PKTINFO), as a real UDP server on 0.0.0.0 does."""

    def __init__(self):
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tcp.bind(("0.0.0.0", 0))
        self.tcp.listen(64)
        self.tcp_port = self.tcp.getsockname()[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.setsockopt(socket.IPPROTO_IP, IP_PKTINFO, 1)
        self.udp.bind(("0.0.0.0", 0))
        self.udp_port = self.udp.getsockname()[1]
        self.seen = []
        self._stop = False
        self._threads = [threading.Thread(target=self._tcp_loop, daemon=True),
                         threading.Thread(target=self._udp_loop, daemon=True)]
        for t in self._threads:
            t.start()

    def _tcp_loop(self):
        while not self._stop:
            try:
                c, peer = self.tcp.accept()
            except OSError:
                return
            try:
                self.seen.append(("tcp", peer[0], c.getsockname()[0]))
                c.sendall(b"host-sentinel\n")
            except OSError:
                pass
            c.close()

    def _udp_loop(self):
        while not self._stop:
            try:
                data, anc, _flags, peer = self.udp.recvmsg(2048, socket.CMSG_SPACE(12))
            except OSError:
                return
            if self._stop or not peer:
                return
            dst = b"\0\0\0\0"
            for level, kind, cdata in anc:
                if level == socket.IPPROTO_IP and kind == IP_PKTINFO and len(cdata) >= 12:
                    dst = cdata[8:12]  # struct in_pktinfo: ifindex, spec_dst, addr
            self.seen.append(("udp", peer[0], socket.inet_ntoa(dst)))
            try:
                pktinfo = struct.pack("=I4s4s", 0, dst, b"\0\0\0\0")
                self.udp.sendmsg([b"host-sentinel " + data], [(socket.IPPROTO_IP, IP_PKTINFO, pktinfo)], 0, peer)
            except OSError:
                pass

    def reached(self, proto, src, dst=None):
        """Whether something from address src reached the sentinel over proto
        (at host address dst, when given)."""
        return any(p == proto and s == src and (dst is None or d == dst) for p, s, d in list(self.seen))

    def close(self):
        self._stop = True
        for s in (self.tcp, self.udp):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def in_subnet(addr, net):
    return ipaddress.ip_address(addr) in ipaddress.ip_network(net, strict=False)
