"""GET /admin/status: every service's /healthz and /readyz, probed by the
gateway at once within a short time limit (docs/api.md, "Platform status").

On the development stack: every service (gateway, the upstreams, the
scheduler and dev bus named in gateway.status_targets, the agent the
registry lists) is ready with the release's version, and the dependencies
carry their versions; a stopped service (SIGSTOP: it accepts and never
answers; killed: refused) is a row "unreachable: <reason>" within the time
limit while the others stay ready; only superadmins may ask."""

import json
import os
import signal
import socket
import subprocess
import time
import uuid

import pytest
import requests

import bai_signer
from conftest import parse_services_file, wait_until
from test_sessions_api import admin, gw, okj, problem  # noqa: F401

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RESTART = os.path.join(REPO, "deploy", "dev", "restart.sh")
with open(os.path.join(REPO, "VERSION"), encoding="utf-8") as f:
    VERSION = f.read().strip()
PASSWORD = "status-Passw0rd"


def rows(body):
    return {r["service"]: r for r in body["services"]}


def _client(admin, gw, role):
    name = f"status-{role}-{uuid.uuid4().hex[:8]}"
    u = okj(admin.post("/admin/users", {"email": f"{name}@example.com", "username": name,
                                        "password": PASSWORD, "role": role}), 200, 201)
    k = okj(admin.post("/admin/keypairs", {"user_id": u["id"]}), 200, 201)
    return bai_signer.Client(gw, k["access_key"], k["secret_key"])


def _pid(stack, name):
    return parse_services_file(os.path.join(stack["TESSERA_STATE_DIR"], "services"))[name][0]


def _all_ready(admin):
    """The status once every service is ready and the agent has registered."""
    body = okj(admin.get("/admin/status"))
    agents = [r for r in body["services"] if r["kind"] == "agent"]
    return body if body["status"] == "ok" and agents else None


def test_every_service_is_listed_ready_with_the_release_version(stack, admin):
    body = wait_until(lambda: _all_ready(admin), timeout=30, message="every service ready")
    r = rows(body)
    for name in ("gateway", "auth", "registry", "vfolder", "wsproxy", "scheduler"):
        assert name in r, sorted(r)
        row = r[name]
        assert row["state"] == "ready" and row["ready"] is True, row
        assert row["version"] == VERSION, row
        assert row["failed_checks"] == {}, row
        assert row["address"].startswith("http://127.0.0.1:"), row
        assert isinstance(row["latency_ms"], int) and row["latency_ms"] < body["timeout_ms"], row
    assert r["registry"]["address"] == stack["TESSERA_REGISTRY_URL"].rstrip("/")
    assert r["scheduler"]["address"] == stack["TESSERA_SCHEDULER_URL"].rstrip("/")
    assert "postgresql" in r["registry"]["checks"] and "kafka" in r["auth"]["checks"]
    agents = [row for row in body["services"] if row["kind"] == "agent"]
    assert agents and all(a["state"] == "ready" and a["version"] == VERSION for a in agents), agents
    assert body["version"] == VERSION and body["timeout_ms"] == 2000
    deps = body["dependencies"]
    pg = subprocess.run(["psql", stack["TESSERA_PG_DSN"], "-XAtc", "SHOW server_version"],
                        capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    assert deps["postgresql"]["status"] == "ok" and deps["postgresql"]["version"] == pg, deps
    assert {"auth", "registry", "vfolder"} <= set(deps["postgresql"]["reported_by"]), deps
    assert deps["redis"]["status"] == "ok" and deps["redis"]["version"][0].isdigit(), deps
    assert deps["kafka"]["status"] == "ok" and "gateway" in deps["kafka"]["reported_by"], deps
    oci = deps["oci-registry"]
    assert oci["status"] == "ok" and stack["TESSERA_OCI_REGISTRY"] in oci["url"], deps
    # ?agents=false: the services alone
    body = okj(admin.get("/admin/status", params={"agents": "false"}))
    assert not [row for row in body["services"] if row["kind"] == "agent"]


def test_a_stopped_service_is_unreachable_within_the_timeout(stack, admin):
    wait_until(lambda: _all_ready(admin), timeout=30, message="every service ready")
    pid = _pid(stack, "vfolder")
    os.kill(pid, signal.SIGSTOP)  # accepts connections (the kernel does) and never answers
    try:
        t0 = time.monotonic()
        body = okj(admin.get("/admin/status", params={"timeout": "1"}))
        took = time.monotonic() - t0
    finally:
        os.kill(pid, signal.SIGCONT)
    assert took < 1 + 1, took
    assert body["status"] == "degraded" and body["timeout_ms"] == 1000
    r = rows(body)
    v = r["vfolder"]
    assert v["state"] == "unreachable" and v["ready"] is False, v
    assert v["error"].startswith("unreachable: ") and "time" in v["error"], v
    # (the gateway's own /readyz checks vfolder's /healthz, with a time
    # limit of its own: it is not ready meanwhile, or did not answer in time)
    assert r["gateway"]["state"] != "ready", r["gateway"]
    for name in ("auth", "registry", "wsproxy", "scheduler"):
        assert r[name]["state"] == "ready", r[name]


def test_a_killed_service_is_unreachable_then_back(stack, admin):
    wait_until(lambda: _all_ready(admin), timeout=30, message="every service ready")
    env = dict(os.environ, TESSERA_STATE_DIR=stack["TESSERA_STATE_DIR"])
    # down 5 s, then started again exactly as dev-up started it
    p = subprocess.Popen(["sh", RESTART, "vfolder", "--kill", "--down", "5"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        def down():
            t0 = time.monotonic()
            body = okj(admin.get("/admin/status", params={"agents": "false"}))
            assert time.monotonic() - t0 < 2 + 1
            v = rows(body)["vfolder"]
            return (body, v) if v["state"] == "unreachable" else None
        body, v = wait_until(down, timeout=10, message="vfolder unreachable")
        assert v["error"].startswith("unreachable: ") and v["latency_ms"] is None, v
        r = rows(body)
        assert all(r[n]["state"] == "ready" for n in ("auth", "registry", "scheduler")), r
    finally:
        out, _ = p.communicate(timeout=90)
    assert p.returncode == 0, out
    wait_until(lambda: rows(okj(admin.get("/admin/status")))["vfolder"]["state"] == "ready",
               timeout=30, message="vfolder ready again")


def test_the_oci_registry_down_is_a_dependency_not_unreadiness(stack, admin):
    wait_until(lambda: _all_ready(admin), timeout=30, message="every service ready")
    env = dict(os.environ, TESSERA_STATE_DIR=stack["TESSERA_STATE_DIR"])
    p = subprocess.Popen(["sh", RESTART, "oci-registry", "--kill", "--down", "4"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        def oci_down():
            body = okj(admin.get("/admin/status", params={"agents": "false"}))
            return body if body["dependencies"]["oci-registry"]["status"] != "ok" else None
        body = wait_until(oci_down, timeout=10, message="the OCI registry reported down")
        oci = body["dependencies"]["oci-registry"]
        assert oci["status"].startswith("unreachable: ") and "(seen by registry)" in oci["status"], oci
        assert rows(body)["registry"]["state"] == "ready", rows(body)["registry"]
    finally:
        out, _ = p.communicate(timeout=90)
    assert p.returncode == 0, out
    wait_until(lambda: okj(admin.get("/admin/status"))["dependencies"]["oci-registry"]["status"] == "ok",
               timeout=30, message="the OCI registry ok again")


def test_callers(stack, admin, gw):
    user = _client(admin, gw, "user")
    p = problem(user.get("/admin/status"), 403)
    assert "superadmin" in p["msg"]
    domain_admin = _client(admin, gw, "admin")
    problem(domain_admin.get("/admin/status"), 403)
    problem(requests.get(gw + "/admin/status", timeout=10), 401)
    # a wrong signature
    bad = bai_signer.Client(gw, admin.access_key, "x" * 40)
    problem(bad.get("/admin/status"), 401)


@pytest.mark.parametrize("params", [{"timeout": "abc"}, {"timeout": "0"}, {"timeout": "-1"},
                                    {"timeout": "31"}, {"timeout": ""}, {"timeout": "nan"},
                                    {"agents": "yes"}, {"agents": ""}])
def test_bad_query(admin, params):
    t0 = time.monotonic()
    p = problem(admin.get("/admin/status", params=params), 400)
    assert time.monotonic() - t0 < 2
    assert "timeout" in p["msg"] or "agents" in p["msg"], p


def test_cli_status_all(stack, admin, gw, bin_dir, tmp_path):
    from test_cli import base_env, fails, ok, run  # noqa: PLC0415
    wait_until(lambda: _all_ready(admin), timeout=30, message="every service ready")
    env = base_env(tmp_path, TESSERA_GATEWAY_URL=gw, TESSERA_ACCESS_KEY=admin.access_key,
                   TESSERA_SECRET_KEY=admin.secret_key)
    out = ok(bin_dir, env, "status", "--all")
    lines = out.splitlines()
    assert lines[0].startswith("platform: ok"), out
    assert lines[2].split()[:5] == ["SERVICE", "KIND", "ADDRESS", "VERSION", "STATE"], out
    by_name = {ln.split()[0]: ln.split() for ln in lines[3:] if ln.strip()}
    for name in ("gateway", "auth", "registry", "vfolder", "wsproxy", "scheduler"):
        assert by_name[name][3] == VERSION and by_name[name][4] == "ready", out
    assert by_name["postgresql"][1] == "ok", out  # the dependencies' table
    body = json.loads(ok(bin_dir, env, "status", "--all", "--no-agents", "--json"))
    assert {r["service"] for r in body["services"]} >= {"gateway", "auth", "scheduler"}
    assert not [r for r in body["services"] if r["kind"] == "agent"]
    # a service that does not answer: exit 1, its row says why
    pid = _pid(stack, "wsproxy")
    os.kill(pid, signal.SIGSTOP)
    try:
        r = run(bin_dir, env, "status", "--all", "--timeout", "0.5", "--no-agents")
    finally:
        os.kill(pid, signal.SIGCONT)
    assert r.returncode == 1 and r.stdout.startswith("platform: degraded"), r.stdout + r.stderr
    row = [ln for ln in r.stdout.splitlines() if ln.startswith("wsproxy ")][0]
    assert "unreachable" in row, r.stdout
    # a user: the route is refused; plain `tessera status` works for anyone
    user = _client(admin, gw, "user")
    uenv = base_env(tmp_path, TESSERA_GATEWAY_URL=gw, TESSERA_ACCESS_KEY=user.access_key,
                    TESSERA_SECRET_KEY=user.secret_key)
    fails(bin_dir, uenv, "status", "--all", status=403)
    assert ok(bin_dir, base_env(tmp_path, TESSERA_GATEWAY_URL=gw), "status").startswith("gateway ")
    fails(bin_dir, env, "status", "--timeout", "1", code=2)
    fails(bin_dir, env, "status", "--all", "--timeout", "abc", status=400)


@pytest.mark.parametrize("targets", ["scheduler", "scheduler=ftp://h:1", "=http://h:1"])
def test_a_malformed_status_targets_stops_start_up(bin_dir, tmp_path, targets):
    gw_bin = os.path.join(bin_dir, "tessera-gateway")
    key = str(tmp_path / "gateway.key")
    subprocess.run([gw_bin, "--new-service-key", key], capture_output=True, check=True, timeout=10)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, TESSERA_HTTP_LISTEN=f"127.0.0.1:{port}", TESSERA_SERVICE_AUTH_KEY_FILE=key,
               TESSERA_GATEWAY_STATUS_TARGETS=targets)
    p = subprocess.run([gw_bin], env=env, capture_output=True, text=True, timeout=20)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "gateway.status_targets" in p.stdout + p.stderr
