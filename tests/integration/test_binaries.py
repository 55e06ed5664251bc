"""Service binaries without the stack: command line, config errors, start-up
failures with a reason, SIGTERM -> exit 0. And the CLI's bad input."""
import os
import re
import signal
import socket
import subprocess
import time

import pytest
import requests

SERVICES = ["gateway", "auth", "registry", "scheduler", "agent", "vfolder", "wsproxy", "devbus", "simagent"]


def run(args, env=None, timeout=30, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})), **kw)


def key_env(bin_dir, svc, tmp_path):
    """A service key for svc and a trust file with its public key, as the
    environment that names them (what a deployment configures)."""
    key = tmp_path / f"{svc}.key"
    if not key.exists():
        r = run([os.path.join(bin_dir, "tessera-" + svc), "--new-service-key", str(key)])
        assert r.returncode == 0, r.stderr
        (tmp_path / "trusted").write_text(r.stdout)
    return {"TESSERA_SERVICE_AUTH_KEY_FILE": str(key),
            "TESSERA_SERVICE_AUTH_TRUST_FILE": str(tmp_path / "trusted")}


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("svc", SERVICES)
def test_help_lists_every_option_of_the_example(bin_dir, svc, tmp_path):
    exe = os.path.join(bin_dir, "tessera-" + svc)
    h = run([exe, "--help"])
    assert h.returncode == 0, h.stderr
    ex = run([exe, "--print-config-example"])
    assert ex.returncode == 0
    keys = set()
    section = ""
    for line in ex.stdout.splitlines():
        m = re.match(r"^\[(.+)\]$", line.strip())
        if m:
            section = m.group(1) + "."
        m = re.match(r"^#\s*([a-z0-9_.-]+)\s*=", line)
        if m:
            keys.add(m.group(1) if "." in m.group(1) else section + m.group(1))
    assert "http.listen" in keys and "log.level" in keys, keys
    for k in keys:
        assert k in h.stdout, (svc, k)
    # The example is a valid file (with the service credentials a deployment
    # must give every service: docs/operations.md).
    conf = tmp_path / "ex.conf"
    conf.write_text(ex.stdout)
    chk = run([exe, "--config", str(conf), "--check-config"], env=key_env(bin_dir, svc, tmp_path))
    assert chk.returncode == 0, chk.stderr


@pytest.mark.parametrize("svc,needs", [("gateway", "key_file"), ("registry", "key_file"),
                                       ("vfolder", "key_file"), ("auth", "trust_file"),
                                       ("agent", "trust_file"), ("wsproxy", "trust_file")])
def test_missing_service_credentials_fail_with_reason(bin_dir, svc, needs):
    """A service that calls others needs its key; one that others call needs
    the trust file: without them it refuses to start, and says what to do."""
    r = run([os.path.join(bin_dir, "tessera-" + svc), "--check-config"],
            env={"TESSERA_SERVICE_AUTH_KEY_FILE": "", "TESSERA_SERVICE_AUTH_TRUST_FILE": ""})
    assert r.returncode == 2, r.stderr
    assert f"service_auth.{needs} is not set" in r.stderr, r.stderr


def test_service_key_files(bin_dir, tmp_path):
    exe = os.path.join(bin_dir, "tessera-registry")
    key = tmp_path / "registry.key"
    r = run([exe, "--new-service-key", str(key)])
    assert r.returncode == 0, r.stderr
    assert re.fullmatch(r"registry [A-Za-z0-9+/]{43}=\n", r.stdout), r.stdout
    assert os.stat(key).st_mode & 0o777 == 0o600
    assert re.fullmatch(r"tessera-service-key v1 registry [A-Za-z0-9+/]{43}=\n", key.read_text())
    # the trust line of an existing key is the same; an existing key is never overwritten
    assert run([exe, "--service-public-key", str(key)]).stdout == r.stdout
    before = key.read_text()
    again = run([exe, "--new-service-key", str(key)])
    assert again.returncode == 1 and "never overwritten" in again.stderr and key.read_text() == before
    trust = tmp_path / "trusted"
    trust.write_text("# comment\n\n" + r.stdout)
    ok = {"TESSERA_SERVICE_AUTH_KEY_FILE": str(key), "TESSERA_SERVICE_AUTH_TRUST_FILE": str(trust)}
    assert run([exe, "--check-config"], env=ok).returncode == 0
    # another service's key
    other = tmp_path / "auth.key"
    assert run([os.path.join(bin_dir, "tessera-auth"), "--new-service-key", str(other)]).returncode == 0
    bad = run([exe, "--check-config"], env=dict(ok, TESSERA_SERVICE_AUTH_KEY_FILE=str(other)))
    assert bad.returncode == 2 and "a key of service 'auth', not of 'registry'" in bad.stderr, bad.stderr
    # a file that is not a key, a trust file with a bad line, a trust file with no key
    junk = tmp_path / "junk"
    junk.write_text("hello\n")
    bad = run([exe, "--check-config"], env=dict(ok, TESSERA_SERVICE_AUTH_KEY_FILE=str(junk)))
    assert bad.returncode == 2 and "not a service key file" in bad.stderr, bad.stderr
    trust.write_text(r.stdout + "gateway not-base64!\n")
    bad = run([exe, "--check-config"], env=ok)
    assert bad.returncode == 2 and f"{trust} line 2" in bad.stderr, bad.stderr
    trust.write_text("# nobody\n")
    bad = run([exe, "--check-config"], env=ok)
    assert bad.returncode == 2 and "lists no service key" in bad.stderr, bad.stderr
    missing = run([exe, "--service-public-key", str(tmp_path / "nope")])
    assert missing.returncode == 1 and "No such file" in missing.stderr


def test_unknown_key_names_file_line_and_key(bin_dir, tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text("# comment\n[http]\nthreads = 2\nno_such_option = 1\n")
    r = run([os.path.join(bin_dir, "tessera-gateway"), "--config", str(conf), "--check-config"])
    assert r.returncode == 2
    assert f"{conf}:4" in r.stderr and "http.no_such_option" in r.stderr, r.stderr


def test_out_of_bounds_value_in_file(bin_dir, tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text("http.threads = 0\n")
    r = run([os.path.join(bin_dir, "tessera-auth"), "--config", str(conf), "--check-config"])
    assert r.returncode == 2
    assert f"{conf}:1" in r.stderr and "http.threads" in r.stderr, r.stderr


def test_bad_env_value_names_the_variable(bin_dir):
    r = run([os.path.join(bin_dir, "tessera-registry"), "--check-config"],
            env={"TESSERA_HTTP_MAX_BODY": "lots"})
    assert r.returncode == 2
    assert "TESSERA_HTTP_MAX_BODY" in r.stderr and "http.max_body" in r.stderr, r.stderr


def test_missing_config_file(bin_dir, tmp_path):
    r = run([os.path.join(bin_dir, "tessera-vfolder"), "--config", str(tmp_path / "nope.conf")])
    assert r.returncode == 2 and "nope.conf" in r.stderr


def test_unknown_flag_and_stray_argument(bin_dir):
    exe = os.path.join(bin_dir, "tessera-scheduler")
    assert run([exe, "--frobnicate"]).returncode == 2
    r = run([exe, "stray"])
    assert r.returncode == 2 and "stray" in r.stderr


def start(exe, env):
    p = subprocess.Popen([exe], env=dict(os.environ, **env), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    return p


def wait_port(p, timeout=20):
    """The port from the 'serving HTTP' log line."""
    deadline = time.time() + timeout
    seen = []
    while time.time() < deadline:
        line = p.stderr.readline()
        if not line:
            if p.poll() is not None:
                break
            continue
        seen.append(line)
        m = re.search(r'msg="serving HTTP".* port=(\d+)', line)
        if m:
            return int(m.group(1)), seen
    raise AssertionError("no 'serving HTTP' line: " + "".join(seen))


def test_sigterm_drains_and_exits_zero(bin_dir, tmp_path):
    boot = tmp_path / "bootstrap"
    p = start(os.path.join(bin_dir, "tessera-devbus"),
              {"TESSERA_HTTP_LISTEN": "127.0.0.1:0", "TESSERA_DEVBUS_BOOTSTRAP_FILE": str(boot)})
    try:
        port, _ = wait_port(p)
        url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 20
        while time.time() < deadline and requests.get(url + "/readyz", timeout=5).status_code != 200:
            time.sleep(0.1)
        assert requests.get(url + "/readyz", timeout=5).status_code == 200
        assert boot.read_text().strip()
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=20)
        rest = p.stderr.read()
        assert rc == 0, rest
        assert 'msg="stopping"' in rest and 'msg="stopped"' in rest
        with pytest.raises(requests.ConnectionError):
            requests.get(url + "/healthz", timeout=2)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_unreachable_postgres_fails_start_with_reason(bin_dir, tmp_path):
    port = closed_port()
    p = start(os.path.join(bin_dir, "tessera-registry"), {
        **key_env(bin_dir, "registry", tmp_path),
        "TESSERA_HTTP_LISTEN": "127.0.0.1:0",
        "TESSERA_PG_DSN": f"postgresql://tessera@127.0.0.1:{port}/tessera",
        "TESSERA_PG_CONNECT_TIMEOUT": "1s",
    })
    rc = p.wait(timeout=30)
    err = p.stderr.read()
    assert rc != 0
    assert "start-up failed" in err and "PostgreSQL" in err, err


def test_unreachable_redis_fails_start_with_reason(bin_dir, tmp_path):
    port = closed_port()
    p = start(os.path.join(bin_dir, "tessera-wsproxy"), {
        **key_env(bin_dir, "wsproxy", tmp_path),
        "TESSERA_HTTP_LISTEN": "127.0.0.1:0",
        "TESSERA_REDIS_URL": f"redis://127.0.0.1:{port}/0",
    })
    rc = p.wait(timeout=30)
    err = p.stderr.read()
    assert rc != 0
    assert "Redis" in err, err


def test_port_in_use_fails_start_with_reason(bin_dir):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    port = s.getsockname()[1]
    try:
        p = start(os.path.join(bin_dir, "tessera-devbus"), {"TESSERA_HTTP_LISTEN": f"127.0.0.1:{port}"})
        rc = p.wait(timeout=30)
        err = p.stderr.read()
        assert rc != 0 and "step=http" in err, err
    finally:
        s.close()


def test_cli_bad_input(bin_dir):
    cli = os.path.join(bin_dir, "tessera")
    r = run([cli, "frobnicate"])
    assert r.returncode == 2 and "unknown command" in r.stderr
    r = run([cli])
    assert r.returncode == 2 and "Usage" in r.stderr
    r = run([cli, "status", "extra"])
    assert r.returncode == 2 and "extra" in r.stderr
    r = run([cli, "--help"])
    assert r.returncode == 0 and "status" in r.stdout
    r = run([cli, "status", "--help"])
    assert r.returncode == 0 and "Usage" in r.stdout
    port = closed_port()
    r = run([cli, "--endpoint", f"http://127.0.0.1:{port}", "status"])
    assert r.returncode == 1 and "cannot reach" in r.stderr


@pytest.mark.parametrize("svc", SERVICES)
def test_docs_configuration_lists_every_option(bin_dir, svc):
    """docs/configuration.md stays true: every option a binary has is documented."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "docs", "configuration.md")) as f:
        doc = f.read()
    ex = run([os.path.join(bin_dir, "tessera-" + svc), "--print-config-example"]).stdout
    section = ""
    for line in ex.splitlines():
        m = re.match(r"^\[(.+)\]$", line.strip())
        if m:
            section = m.group(1) + "."
        m = re.match(r"^#\s*([a-z0-9_.-]+)\s*=", line)
        if m:
            key = m.group(1) if "." in m.group(1) else section + m.group(1)
            assert f"`{key}`" in doc, f"{svc}: option {key} missing from docs/configuration.md"
