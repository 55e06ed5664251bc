"""The one-machine stack, black-box: every service ready and scrapeable, an
event from the gateway consumed by auth into PostgreSQL, garbage on a topic
dead-lettered while consumption goes on."""
import json
import os
import re
import shutil
import subprocess
import time
import uuid

import pytest
import requests

from conftest import wait_until

SERVICES = ["gateway", "auth", "registry", "scheduler", "agent", "vfolder", "wsproxy", "devbus"]


def service_urls(stack):
    urls = {}
    with open(os.path.join(stack["TESSERA_STATE_DIR"], "services")) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[2].startswith("http"):
                urls[parts[0]] = parts[2]
    return urls


def psql(stack, sql):
    out = subprocess.run(["psql", stack["TESSERA_PG_DSN"], "-At", "-c", sql],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def metric(url, name):
    text = requests.get(url + "/metrics", timeout=5).text
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_every_service_is_ready(stack):
    urls = service_urls(stack)
    assert set(SERVICES) <= set(urls), urls
    for name in SERVICES:
        r = requests.get(urls[name] + "/readyz", timeout=10)
        assert r.status_code == 200, (name, r.text)
        body = r.json()
        assert body["status"] == "ready" and body["service"] == name
        assert all(v == "ok" for v in body["checks"].values()), body
        h = requests.get(urls[name] + "/healthz", timeout=5)
        assert h.status_code == 200 and h.json()["status"] == "ok"


def test_readyz_names_its_dependency_checks(stack):
    urls = service_urls(stack)
    expected = {
        "gateway": {"kafka", "consumers", "redis", "auth", "registry", "vfolder"},
        "auth": {"postgresql", "kafka", "consumers"},
        "registry": {"postgresql", "redis", "kafka", "consumers", "session-events",
                     "kernel-events", "agent-events", "auth-events"},
        "scheduler": {"redis", "kafka", "consumers"},
        "agent": {"kafka", "consumers"},
        "vfolder": {"postgresql", "kafka", "consumers"},
        "wsproxy": {"redis"},
    }
    for name, checks in expected.items():
        got = set(requests.get(urls[name] + "/readyz", timeout=10).json()["checks"])
        assert checks <= got, (name, got)


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian prometheus) not installed")
def test_every_metrics_endpoint_passes_promtool(stack):
    urls = service_urls(stack)
    for name in SERVICES:
        r = requests.get(urls[name] + "/metrics", timeout=5)
        assert r.status_code == 200
        assert r.headers["Content-Type"].startswith("text/plain")
        assert "tessera_build_info{" in r.text
        check = subprocess.run(["promtool", "check", "metrics"], input=r.text,
                               capture_output=True, text=True, timeout=30)
        assert check.returncode == 0, (name, check.stdout, check.stderr)


def test_gateway_version_endpoint(stack):
    r = requests.get(stack["TESSERA_GATEWAY_URL"] + "/", timeout=5)
    assert r.status_code == 200
    body = r.json()
    assert body["version"].startswith("v8.")
    # the Backend.AI release whose API this is, then Tessera's own version
    # (a PEP 440 local label: Python clients parse it; docs/api.md "Versions")
    assert body["manager"] == "24.09.0+tessera." + body["tessera"], body
    assert re.match(r"^\d+\.\d+\.\d+", body["tessera"]), body


def test_unknown_route_is_problem_json(stack):
    r = requests.get(stack["TESSERA_GATEWAY_URL"] + "/no/such/thing", timeout=5)
    assert r.status_code == 404
    assert r.headers["Content-Type"].startswith("application/problem+json")
    body = r.json()
    assert body["type"].startswith("https://api.backend.ai/probs/")
    assert body["title"]


def test_oversized_body_is_413_problem(stack):
    r = requests.post(stack["TESSERA_GATEWAY_URL"] + "/", data=b"x" * (2 << 20), timeout=10)
    assert r.status_code == 413
    assert r.json()["type"].endswith("/request-too-large")


def access_log_rows(stack, request_id):
    return int(psql(stack, f"SELECT count(*) FROM auth.access_log WHERE request_id = '{request_id}'"))


def test_gateway_event_reaches_auth_access_log(stack):
    """gateway -> tessera.audit.v1 -> auth consumer -> auth.access_log."""
    rid = "it-" + uuid.uuid4().hex
    r = requests.get(stack["TESSERA_GATEWAY_URL"] + "/", headers={"X-Request-ID": rid}, timeout=5)
    assert r.status_code == 200
    assert r.headers["X-Request-ID"] == rid
    assert wait_until(lambda: access_log_rows(stack, rid) == 1, 30), "audit event never stored"
    row = psql(stack, f"SELECT method, path, status FROM auth.access_log WHERE request_id = '{rid}'")
    assert row == "GET|/|200"


def kcat(*args, **kw):
    return subprocess.run(["kcat", *args], capture_output=True, timeout=60, **kw)


def test_garbage_goes_to_dlq_and_consumption_goes_on(stack):
    boot = stack["KAFKA_BOOTSTRAP"]
    marker = "garbage-" + uuid.uuid4().hex
    auth_url = service_urls(stack)["auth"]
    before = metric(auth_url, "tessera_kafka_dead_lettered_total") or 0
    p = kcat("-b", boot, "-P", "-t", "tessera.audit.v1", "-k", marker, input=b"\xff\x00not a protobuf envelope")
    assert p.returncode == 0, p.stderr
    assert wait_until(lambda: (metric(auth_url, "tessera_kafka_dead_lettered_total") or 0) > before, 30)

    # The DLQ record: same key, original bytes, headers saying why and whence.
    def dlq_has_marker():
        c = kcat("-b", boot, "-C", "-t", "tessera.dlq.v1", "-o", "beginning", "-e", "-q",
                 "-f", "%k\t%h\t%s\n")
        return [line for line in c.stdout.decode(errors="replace").splitlines() if line.startswith(marker)]
    assert wait_until(lambda: dlq_has_marker(), 30)
    line = dlq_has_marker()[0]
    assert "dlq.reason=" in line and "undecodable" in line
    assert "dlq.topic=tessera.audit.v1" in line
    assert "not a protobuf envelope" in line

    # Consumption goes on: a request after the garbage is still stored.
    rid = "after-garbage-" + uuid.uuid4().hex
    requests.get(stack["TESSERA_GATEWAY_URL"] + "/", headers={"X-Request-ID": rid}, timeout=5)
    assert wait_until(lambda: access_log_rows(stack, rid) == 1, 30)


def test_poison_record_in_a_batch_goes_to_dlq_alone(stack, bin_dir):
    """The access log stores batches (kbus batch mode): a well-formed envelope
    whose ApiAccess has no method, sent among good requests, is rejected; its
    batch is handed again one record at a time, so only it reaches the DLQ
    ("rejected: ...") and every good request around it is stored once."""
    boot = stack["KAFKA_BOOTSTRAP"]
    marker = "poison-" + uuid.uuid4().hex
    before = ["before-poison-" + uuid.uuid4().hex for _ in range(5)]
    after = ["after-poison-" + uuid.uuid4().hex for _ in range(5)]
    for rid in before:
        requests.get(stack["TESSERA_GATEWAY_URL"] + "/", headers={"X-Request-ID": rid}, timeout=5)
    p = subprocess.run([os.path.join(bin_dir, "tessera-busctl"), "publish", "-b", boot, "-t",
                        "tessera.audit.v1", "-T", "tessera.v1.ApiAccess", "-k", marker,
                        json.dumps({"method": "", "path": "/" + marker, "request_id": marker})],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    for rid in after:
        requests.get(stack["TESSERA_GATEWAY_URL"] + "/", headers={"X-Request-ID": rid}, timeout=5)
    for rid in before + after:
        assert wait_until(lambda: access_log_rows(stack, rid) == 1, 30), f"{rid} never stored"
    assert access_log_rows(stack, marker) == 0

    def dlq_has_marker():
        c = kcat("-b", boot, "-C", "-t", "tessera.dlq.v1", "-o", "beginning", "-e", "-q",
                 "-f", "%k\t%h\n")
        return [line for line in c.stdout.decode(errors="replace").splitlines() if line.startswith(marker)]
    assert wait_until(lambda: dlq_has_marker(), 30), "the poison record never reached the DLQ"
    line = dlq_has_marker()[0]
    assert "dlq.reason=rejected: ApiAccess without a valid event id or method" in line
    assert "dlq.topic=tessera.audit.v1" in line and "dlq.attempts=1" in line
    assert len(dlq_has_marker()) == 1


def test_time_out_of_range_goes_to_dlq(stack, bin_dir):
    """An ApiAccess whose time is outside years 1 to 9999 (some beyond what
    PostgreSQL can hold): tessera-auth refuses it before PostgreSQL sees it,
    and it alone reaches the DLQ."""
    boot = stack["KAFKA_BOOTSTRAP"]
    for i, ms in enumerate((9_000_000_000_000_000_000, -9_000_000_000_000_000_000, -2**63, 2**63 - 1,
                           300_000 * 365 * 86_400_000)):
        marker = f"far-time-{i}-" + uuid.uuid4().hex
        p = subprocess.run([os.path.join(bin_dir, "tessera-busctl"), "publish", "-b", boot, "-t",
                            "tessera.audit.v1", "-T", "tessera.v1.ApiAccess", "-k", marker,
                            json.dumps({"method": "GET", "path": "/" + marker, "request_id": marker,
                                        "occurred_at_ms": ms, "status": 200})],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr

        def dlq_has_marker():
            c = kcat("-b", boot, "-C", "-t", "tessera.dlq.v1", "-o", "beginning", "-e", "-q",
                     "-f", "%k\t%h\n")
            return [line for line in c.stdout.decode(errors="replace").splitlines()
                    if line.startswith(marker)]
        assert wait_until(lambda: dlq_has_marker(), 30), f"{ms}: never reached the DLQ"
        assert "dlq.reason=rejected: " in dlq_has_marker()[0]
        assert "occurred_at_ms out of range" in dlq_has_marker()[0]
        assert access_log_rows(stack, marker) == 0
    rid = "after-far-time-" + uuid.uuid4().hex
    requests.get(stack["TESSERA_GATEWAY_URL"] + "/", headers={"X-Request-ID": rid}, timeout=5)
    assert wait_until(lambda: access_log_rows(stack, rid) == 1, 30)


def test_awkward_text_is_stored_verbatim(stack, bin_dir):
    """A block travels in binary COPY format, its records in arrays: quotes,
    backslashes (also before t, n, N), braces, commas, NULL, \\N, tabs,
    newlines, carriage returns and non-ASCII text come back as sent."""
    marker = "awkward-" + uuid.uuid4().hex
    path = '/a"b\\c{d},e NULL \u00e9\t\\t\\n\\N\n\r|end'
    p = subprocess.run([os.path.join(bin_dir, "tessera-busctl"), "publish", "-b",
                        stack["KAFKA_BOOTSTRAP"], "-t", "tessera.audit.v1", "-T",
                        "tessera.v1.ApiAccess", "-k", marker,
                        json.dumps({"method": "GET", "path": path, "request_id": marker,
                                    "user_id": "\\N", "status": 200,
                                    "occurred_at_ms": 1795304401007, "latency_us": -12})],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert wait_until(lambda: access_log_rows(stack, marker) == 1, 30), "never stored"
    row = psql(stack, "SELECT encode(convert_to(path || '|' || user_id || '|' || (user_id IS NULL)::text,"
                      f" 'UTF8'), 'hex') FROM auth.access_log WHERE request_id = '{marker}'")
    assert bytes.fromhex(row).decode() == path + "|\\N|false"
    row = psql(stack, "SELECT (extract(epoch FROM occurred_at) * 1000)::bigint || '|' || latency_us"
                      f" || '|' || status FROM auth.access_log WHERE request_id = '{marker}'")
    assert row == "1795304401007|-12|200"


def test_replayed_event_is_stored_once(stack, tmp_path):
    """At-least-once delivery, exactly-once effect: the same envelope twice."""
    boot = stack["KAFKA_BOOTSTRAP"]
    rid = "replay-" + uuid.uuid4().hex
    requests.get(stack["TESSERA_GATEWAY_URL"] + "/", headers={"X-Request-ID": rid}, timeout=5)
    assert wait_until(lambda: access_log_rows(stack, rid) == 1, 30)
    # Find the original record's bytes and produce them again.
    c = kcat("-b", boot, "-C", "-t", "tessera.audit.v1", "-o", "beginning", "-e", "-q", "-f", "%S %o %p\n")
    assert c.returncode == 0
    auth_url = service_urls(stack)["auth"]
    dup_before = metric(auth_url, "tessera_auth_access_records_duplicate_total") or 0
    stored_before = metric(auth_url, "tessera_auth_access_records_stored_total") or 0
    found = None
    for line in c.stdout.decode().splitlines():
        _size, offset, partition = line.split()
        rec = kcat("-b", boot, "-C", "-t", "tessera.audit.v1", "-p", partition, "-o", offset,
                   "-c", "1", "-e", "-q", "-f", "%s")
        if rid.encode() in rec.stdout:
            found = rec.stdout
            break
    assert found, "original audit record not found on the topic"
    # kcat -P splits stdin on newlines; a file argument is sent as one message.
    rec_file = tmp_path / "record.bin"
    rec_file.write_bytes(found)
    p = kcat("-b", boot, "-P", "-t", "tessera.audit.v1", str(rec_file))
    assert p.returncode == 0, p.stderr
    assert wait_until(
        lambda: (metric(auth_url, "tessera_auth_access_records_duplicate_total") or 0) > dup_before, 30)
    assert access_log_rows(stack, rid) == 1
    # Its block was found stored and skipped: nothing was written for it.
    assert (metric(auth_url, "tessera_auth_access_records_stored_total") or 0) == stored_before


def test_cli_status_and_version(stack, bin_dir):
    env = dict(os.environ, TESSERA_GATEWAY_URL=stack["TESSERA_GATEWAY_URL"])
    st = subprocess.run([os.path.join(bin_dir, "tessera"), "status"], env=env,
                        capture_output=True, text=True, timeout=30)
    assert st.returncode == 0, st.stderr
    assert "ready" in st.stdout and "auth" in st.stdout
    v = subprocess.run([os.path.join(bin_dir, "tessera"), "version"], env=env,
                       capture_output=True, text=True, timeout=30)
    assert v.returncode == 0 and "v8." in v.stdout
