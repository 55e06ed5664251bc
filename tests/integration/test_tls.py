"""Traffic between hosts is encrypted (docs/operations.md, "Several hosts:
encryption"): a stack of three nodes (the `cluster_stack` fixture) runs with
TLS on by default (TESSERA_DEV_TLS, deploy/dev/tls.sh).

- every service talks to the bus with kafka.security_protocol=ssl, to
  PostgreSQL with sslmode=verify-full, to Redis through its TLS tunnel; each
  node's agent serves https itself (http.tls_cert: the node's certificate,
  no TLS terminator in front) and is registered with an https addr;
- each TLS port refuses a plain-text client (the bus's brokers, Redis's TLS
  port, PostgreSQL, the agents), and a client that trusts another CA fails
  verification while one with the stack's CA passes it (the OCI registry too) (the certificates
  name the addresses they are reached at);
- a capture of a node's network interface while a session on that node
  executes a command holds none of the command's text nor its output (and
  the capture does see plain text when there is some);
- bad input: a missing kafka.ssl_ca_file or http.ca_file, or a bad
  http.tls_cert/http.tls_key, is a clear start-up error, and a plain-text
  peer on another host (or an internal HTTP listener off loopback without
  TLS) is refused unless its allow_plaintext setting is set; TESSERA_DEV_TLS
  takes on or off only."""
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

from conftest import REPO, parse_services_file
from test_sessions_api import admin, gw, image, image_registered, okj  # noqa: F401

TAG = uuid.uuid4().hex[:8]
NODES = 3


@pytest.fixture(scope="module")
def stack(cluster_stack):
    """The fixtures imported from test_sessions_api (admin, ...) on the cluster stack."""
    return cluster_stack


def hostport(url):
    hp = url.split("://", 1)[-1].split("/", 1)[0].rsplit("@", 1)[-1]
    h, p = hp.rsplit(":", 1)
    return h, int(p)


def tls_ports(stack):
    """(name, host, port) of every TLS listener of the stack."""
    out = [("kafka", *hostport(b)) for b in stack["KAFKA_BOOTSTRAP"].split(",")]
    out.append(("redis", *hostport(stack["TESSERA_REDIS_TLS_URL"])))
    out.append(("oci", *hostport("https://" + stack["TESSERA_OCI_REGISTRY"])))
    for k in range(1, NODES + 1):
        out.append((f"agent@node{k}", *hostport(stack[f"TESSERA_NODE_{k}_AGENT_URL"])))
    return out


def plain_exchange(host, port, data, timeout=5):
    """Send data in plain text; what comes back before the peer closes or
    goes quiet."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(data)
        got = b""
        try:
            while len(got) < 4096:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
        except (socket.timeout, ConnectionResetError):
            pass
        return got


def handshake(host, port, cafile):
    """A TLS handshake that checks the certificate against cafile and host."""
    ctx = ssl.create_default_context(cafile=cafile)
    with socket.create_connection((host, port), timeout=5) as raw:
        with ctx.wrap_socket(raw, server_hostname=host) as s:
            return s.version()


@pytest.fixture(scope="module")
def other_ca():
    """A CA of nobody's."""
    d = tempfile.mkdtemp(prefix="tessera-tls-other-")
    key, crt = os.path.join(d, "ca.key"), os.path.join(d, "ca.crt")
    subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key],
                   check=True, capture_output=True)
    subprocess.run(["openssl", "req", "-x509", "-new", "-key", key, "-days", "1", "-subj", "/CN=other CA",
                    "-out", crt], check=True, capture_output=True)
    return crt


# ---- the stack runs with TLS ------------------------------------------------------------------


def test_plain_text_between_nodes_is_the_explicit_choice_tls_off():
    """TESSERA_DEV_TLS=off with nodes: the stack comes up in plain text, and
    only because every service is told kafka.allow_plaintext. First in the
    module: before the module's stack of nodes exists (two stacks of nodes
    at once failed here once, not understood yet)."""
    from conftest import dev_stack  # noqa: PLC0415 - the fixture's helper, used directly here
    with dev_stack("tessera-plain-", TESSERA_DEV_NODES="2", TESSERA_DEV_TLS="off") as env:
        assert env["TESSERA_DEV_TLS"] == "off" and "TESSERA_TLS_CA_FILE" not in env
        assert env["TESSERA_NODE_1_AGENT_URL"].startswith("http://")
        state = env["TESSERA_STATE_DIR"]
        for name in ["registry", "scheduler", "agent@node1", "agent@node2"]:
            with open(os.path.join(state, "cmd", name), encoding="utf-8") as f:
                cmd = f.read()
            assert "TESSERA_KAFKA_ALLOW_PLAINTEXT=true" in cmd and "SECURITY_PROTOCOL" not in cmd, name
            # plain HTTP on the node network's addresses: the explicit choice too
            assert "TESSERA_HTTP_ALLOW_PLAINTEXT=true" in cmd and "TESSERA_HTTP_TLS_CERT" not in cmd, name




def test_a_stack_of_nodes_runs_with_tls(stack, admin):  # noqa: F811
    assert stack["TESSERA_DEV_TLS"] == "on"
    assert "sslmode=verify-full" in stack["TESSERA_PG_DSN"]
    state = stack["TESSERA_STATE_DIR"]
    procs = parse_services_file(os.path.join(state, "services"))
    for name in ["gateway", "auth", "registry", "scheduler", "vfolder"] + \
            [f"agent@node{k}" for k in range(1, NODES + 1)]:
        with open(os.path.join(state, "cmd", name), encoding="utf-8") as f:
            cmd = f.read()
        assert "TESSERA_KAFKA_SECURITY_PROTOCOL=ssl" in cmd, name
        assert f"TESSERA_KAFKA_SSL_CA_FILE={stack['TESSERA_TLS_CA_FILE']}" in cmd, name
        assert f"TESSERA_HTTP_CA_FILE={stack['TESSERA_TLS_CA_FILE']}" in cmd, name
    for t in ["redis-tunnel", "bus-tls"]:
        assert t in procs, procs
    # each agent serves TLS itself with its node's certificate: no terminator
    # in front of it, and the certificate on its port is node<k>.crt
    tlsdir = os.path.dirname(stack["TESSERA_TLS_CA_FILE"])
    assert not [p for p in procs if p.startswith("agent-tls")], procs
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
    assert "agent-tls-node" not in ps, ps
    for k in range(1, NODES + 1):
        crt = os.path.join(tlsdir, f"node{k}.crt")
        with open(os.path.join(state, "cmd", f"agent@node{k}"), encoding="utf-8") as f:
            cmd = f.read()
        assert f"TESSERA_HTTP_TLS_CERT={crt}" in cmd and "TESSERA_HTTP_ALLOW_PLAINTEXT" not in cmd, cmd
        host, port = hostport(stack[f"TESSERA_NODE_{k}_AGENT_URL"])
        ctx = ssl.create_default_context(cafile=stack["TESSERA_TLS_CA_FILE"])
        with socket.create_connection((host, port), timeout=5) as raw:
            with ctx.wrap_socket(raw, server_hostname=host) as s:
                served = s.getpeercert(binary_form=True)
                s.sendall(f"GET /healthz HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
                answer = b""
                while chunk := s.recv(4096):
                    answer += chunk
        with open(crt, encoding="ascii") as f:
            assert served == ssl.PEM_cert_to_DER_cert(f.read()), k
        assert answer.startswith(b"HTTP/1.1 ") and b"Server: tessera-agent" in answer, answer[:300]
    # every agent is registered at https, on its node's address
    agents = {a["id"]: a for a in okj(admin.get("/admin/agents"))["items"]}
    for k in range(1, NODES + 1):
        url = stack[f"TESSERA_NODE_{k}_AGENT_URL"]
        assert url.startswith(f"https://{stack[f'TESSERA_NODE_{k}_ADDR']}:"), url
        assert agents[f"node{k}"]["addr"] == url and agents[f"node{k}"]["status"] == "ALIVE"
    # PostgreSQL: every connection of the services is encrypted
    out = subprocess.run(["psql", stack["TESSERA_PG_DSN"], "-X", "-At", "-c",
                          "SELECT s.ssl, count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) "
                          "WHERE a.datname = 'tessera' AND a.backend_type = 'client backend' GROUP BY 1"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    rows = dict(line.split("|") for line in out.stdout.split())
    assert set(rows) == {"t"}, rows


# ---- plain text and strangers are refused ---------------------------------------------------


def test_every_tls_port_refuses_a_plaintext_client(stack):
    # Kafka ApiVersions v0, correlation id 7, client id "p"
    body = b"\x00\x12\x00\x00\x00\x00\x00\x07\x00\x01p"
    kafka_req = len(body).to_bytes(4, "big") + body
    for name, host, port in tls_ports(stack):
        req = {"kafka": kafka_req, "redis": b"PING\r\n"}.get(name, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        got = plain_exchange(host, port, req)
        if name == "oci":  # Go's TLS server says so in plain text, and nothing else
            assert got.startswith(b"HTTP/1.0 400") and b"HTTPS server" in got, got
            continue
        if name.startswith("agent@"):  # the agent too (http_front.h): a 400 saying so, no answer
            assert got.startswith(b"HTTP/1.1 400") and b"use https://" in got, (name, got)
            assert b"healthz" not in got and b'"ok"' not in got, (name, got)
            continue
        # nothing, or a TLS alert record (0x15): never an answer in the clear
        assert not got or got[0] == 0x15, (name, got[:64])
        assert b"PONG" not in got and b"HTTP/" not in got and b"\x00\x00\x00\x07" not in got[:8], (name, got)
    # PostgreSQL: a connection without TLS is rejected
    h, p = hostport(stack["TESSERA_PG_DSN"].split("?", 1)[0])
    out = subprocess.run(["psql", f"postgresql://tessera@{h}:{p}/tessera?sslmode=disable", "-X", "-c", "SELECT 1"],
                         capture_output=True, text=True, timeout=30,
                         env={k: v for k, v in os.environ.items() if not k.startswith("PGSSL")})
    assert out.returncode != 0 and "no encryption" in out.stderr, out.stderr


def test_a_client_of_another_ca_fails_verification(stack, other_ca):
    ca = stack["TESSERA_TLS_CA_FILE"]
    for name, host, port in tls_ports(stack):
        assert handshake(host, port, ca).startswith("TLS"), name
        with pytest.raises(ssl.SSLCertVerificationError):
            handshake(host, port, other_ca)
    # the certificate names the address: the right CA and a wrong name fail
    name, host, port = tls_ports(stack)[-1]
    ctx = ssl.create_default_context(cafile=ca)
    with socket.create_connection((host, port), timeout=5) as raw:
        with pytest.raises(ssl.SSLCertVerificationError):
            ctx.wrap_socket(raw, server_hostname="elsewhere.example")
    # PostgreSQL's verify-full with another CA
    dsn = stack["TESSERA_PG_DSN"].split("?", 1)[0] + f"?sslmode=verify-full&sslrootcert={other_ca}"
    out = subprocess.run(["psql", dsn, "-X", "-c", "SELECT 1"], capture_output=True, text=True, timeout=30)
    assert out.returncode != 0 and "certificate verify failed" in out.stderr, out.stderr


# ---- a capture of a node's traffic --------------------------------------------------------------

CAPTURE = r"""
import socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind(("eth0", 0))
s.settimeout(0.2)
end = time.monotonic() + float(sys.argv[2])
n = 0
with open(sys.argv[1], "wb") as f:
    while time.monotonic() < end:
        try:
            pkt = s.recv(65535)
        except socket.timeout:
            continue
        f.write(pkt)
        n += 1
print(n)
"""


def capture(stack, k, seconds, path):
    netns = f"/run/netns/{stack[f'TESSERA_NODE_{k}_NETNS']}"
    return subprocess.Popen(["nsenter", f"--net={netns}", sys.executable, "-c", CAPTURE, path, str(seconds)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_capture_on_a_node_shows_no_plaintext(stack, admin, image_registered, tmp_path):  # noqa: F811
    token = f"tlsprobe{TAG}"
    # the capture sees plain text where there is some: the token sent in the
    # clear to the node's agent port (refused by its TLS listener)
    node_addr = stack["TESSERA_NODE_1_ADDR"]
    _, agent_port = hostport(stack["TESSERA_NODE_1_AGENT_URL"])
    probe_path = tmp_path / "probe.bin"
    p = capture(stack, 1, 3, probe_path)
    time.sleep(1)
    plain_exchange(node_addr, agent_port, f"GET /{token}-plain HTTP/1.1\r\n\r\n".encode())
    p.communicate(timeout=20)
    assert f"{token}-plain".encode() in probe_path.read_bytes()

    sname = f"tls-{TAG}"
    path = tmp_path / "node1.bin"
    p = capture(stack, 1, 40, path)
    try:
        time.sleep(1)
        r = admin.post("/session", {"image": image_registered, "name": sname, "maxWaitSeconds": 60,
                                    "agentList": ["node1"],
                                    "config": {"resources": {"cpu": "1", "mem": "256m"}}}, timeout=75)
        assert r.status_code == 201 and r.json()["status"] == "RUNNING", r.text
        # the command carries the token; its output is the token reversed and
        # upper-cased (so that neither stands in for the other)
        res = okj(admin.post(f"/session/{sname}", {
            "mode": "batch",
            "options": {"exec": f"echo {token} | rev | tr a-z A-Z"}}, timeout=80))["result"]
        out = "".join(t for kind, t in res["console"] if kind == "stdout")
        assert token[::-1].upper() in out, res
    finally:
        admin.delete(f"/session/{sname}")
        p.terminate()
        n, err = p.communicate(timeout=20)
    data = path.read_bytes()
    assert len(data) > 10000, (n, err)  # the node did talk to the control plane
    assert token.encode() not in data
    assert token[::-1].upper().encode() not in data
    assert sname.encode() not in data


# ---- bad input -----------------------------------------------------------------------------------


def run_service(bin_dir, tmp_path, service, **env):
    """tessera-<service> with a key and trust file of its own and env; its
    exit, stderr."""
    key = tmp_path / f"{service}.key"
    trusted = tmp_path / f"{service}.trusted"
    if not key.exists():
        pub = subprocess.run([os.path.join(bin_dir, f"tessera-{service}"), "--new-service-key", str(key)],
                             capture_output=True, text=True, check=True).stdout
        trusted.write_text(pub)
    base = {"PATH": os.environ["PATH"], "TESSERA_AGENT_STATE_DIR": str(tmp_path / "state"),
            "TESSERA_HTTP_LISTEN": "127.0.0.1:0", "TESSERA_SERVICE_AUTH_KEY_FILE": str(key),
            "TESSERA_SERVICE_AUTH_TRUST_FILE": str(trusted), "TESSERA_AGENT_MOCK_GPUS": "0",
            "TESSERA_PG_CONNECT_TIMEOUT": "0s"}
    base.update(env)
    return subprocess.run([os.path.join(bin_dir, f"tessera-{service}")], env=base, capture_output=True,
                          text=True, timeout=30)


def run_agent(bin_dir, tmp_path, **env):
    return run_service(bin_dir, tmp_path, "agent", **env)


def test_a_missing_ca_file_is_a_clear_start_up_error(bin_dir, tmp_path):
    r = run_agent(bin_dir, tmp_path, TESSERA_KAFKA_SECURITY_PROTOCOL="ssl",
                  TESSERA_KAFKA_SSL_CA_FILE="/nonexistent/ca.crt")
    assert r.returncode != 0 and "kafka.ssl_ca_file /nonexistent/ca.crt: No such file" in r.stderr, r.stderr
    r = run_agent(bin_dir, tmp_path, TESSERA_HTTP_CA_FILE="/nonexistent/ca.crt")
    assert r.returncode != 0 and "http.ca_file /nonexistent/ca.crt: No such file" in r.stderr, r.stderr
    notpem = tmp_path / "not.pem"
    notpem.write_text("hello\n")
    r = run_agent(bin_dir, tmp_path, TESSERA_HTTP_CA_FILE=str(notpem))
    assert r.returncode != 0 and "no PEM certificate" in r.stderr, r.stderr
    r = run_agent(bin_dir, tmp_path, TESSERA_AGENT_REGISTRY_CA_FILE="/nonexistent/ca.crt")
    assert r.returncode != 0 and "agent.registry_ca_file /nonexistent/ca.crt: No such file" in r.stderr, r.stderr


def test_plaintext_to_another_host_needs_its_setting(bin_dir, tmp_path):
    r = run_agent(bin_dir, tmp_path, TESSERA_KAFKA_BOOTSTRAP="10.255.255.1:9092")
    assert r.returncode != 0, r.stderr
    assert "kafka.bootstrap names host 10.255.255.1" in r.stderr and "kafka.allow_plaintext" in r.stderr, r.stderr
    # the registry: PostgreSQL and Redis elsewhere, in plain text
    for env, want in [({"TESSERA_PG_DSN": "postgresql://t@10.255.255.1/t"}, "pg.allow_plaintext"),
                      ({"TESSERA_PG_DSN": "postgresql://t@127.0.0.1:1/t",
                        "TESSERA_REDIS_URL": "redis://10.255.255.1:6379/0"}, "redis.allow_plaintext")]:
        r = run_service(bin_dir, tmp_path, "registry", **env)
        assert r.returncode != 0 and want in r.stderr, r.stderr


def test_bad_tls_files_are_a_clear_start_up_error(bin_dir, tmp_path):
    crt, key = tmp_path / "a.crt", tmp_path / "a.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(crt)],
                   check=True, capture_output=True)
    notpem = tmp_path / "not.pem"
    notpem.write_text("hello\n")
    for env, want in [({"TESSERA_HTTP_TLS_CERT": str(crt)}, "http.tls_cert is set but http.tls_key is not"),
                      ({"TESSERA_HTTP_TLS_CERT": "/nonexistent/a.crt", "TESSERA_HTTP_TLS_KEY": str(key)},
                       "http.tls_cert /nonexistent/a.crt: cannot be read"),
                      ({"TESSERA_HTTP_TLS_CERT": str(notpem), "TESSERA_HTTP_TLS_KEY": str(key)},
                       "no PEM certificate"),
                      ({"TESSERA_HTTP_TLS_CERT": str(crt), "TESSERA_HTTP_TLS_KEY": str(crt)},
                       "no PEM private key")]:
        r = run_agent(bin_dir, tmp_path, **env)
        assert r.returncode != 0 and want in r.stderr, (env, r.stderr)
        assert "step=http" in r.stderr, r.stderr


def test_a_plain_http_listener_off_loopback_needs_its_setting(bin_dir, tmp_path):
    r = run_agent(bin_dir, tmp_path, TESSERA_HTTP_LISTEN="0.0.0.0:0")
    assert r.returncode != 0, r.stderr
    assert "http.listen = 0.0.0.0:0" in r.stderr and "http.allow_plaintext" in r.stderr, r.stderr
    assert "http.tls_cert" in r.stderr, r.stderr


def test_dev_tls_takes_on_or_off(tmp_path):
    env = dict(os.environ, TESSERA_STATE_DIR=str(tmp_path / "state"), TESSERA_DEV_TLS="yes",
               TESSERA_DEV_NODES="1")
    r = subprocess.run(["sh", os.path.join(REPO, "deploy", "dev", "dev-up.sh")], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode != 0 and "TESSERA_DEV_TLS must be on or off, not 'yes'" in r.stderr, r.stderr

