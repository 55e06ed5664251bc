"""Usage accounting, continued (docs/usage.md; services/agent/usage.h,
services/registry/usage_store.h): block I/O and network bytes per sample,
exact ends (a kernel's first sample counts from its start, a final one is
read when it is destroyed), and the wall time per status phase.

- a session that writes 32 MiB with fsync shows >= 32 MiB of block I/O
  written (its cgroup's counters: cgroup v2 io.stat, v1 blkio with the
  agent's accounting rule), in GET /usage and in Backend.AI's usage series;
- a session whose app receives 16 MiB (a POST through wsproxy to a CGI that
  reads it) shows rx >= 16 MiB, and one that serves 8 MiB shows tx >= 8 MiB;
- a session that lives less than two sampling intervals and burns CPU: its
  CPU-seconds match what it burned within 10%, and its last sample is marked
  final;
- the wall time per phase adds up to the session's lifetime within 2 s and
  shows in GET /usage (JSON and CSV) for its owner only."""
import json
import os
import time
import uuid

import requests

from conftest import wait_until
from test_apps import _running, start_when_listening
from test_sessions_api import _new_user, admin, gw, image, image_registered, okj  # noqa: F401
from test_usage import around_now, psql

MIB = 1 << 20


def _row(stack, sid, cols):
    out = psql(stack, f"SELECT {cols} FROM registry.session_usage WHERE session_id = '{sid}'")
    return out.split("|") if out else None


def _final_seen(stack, sid):
    return psql(stack, f"SELECT count(*) FROM registry.usage_samples WHERE session_id = '{sid}'"
                       " AND final") != "0"


def _end(client, stack, sname, sid):
    assert client.delete(f"/session/{sname}").status_code == 200
    wait_until(lambda: okj(client.get(f"/session/{sid}")).get("status") in ("TERMINATED", "ERROR"),
               timeout=60, message="the session to end")
    wait_until(lambda: _final_seen(stack, sid), timeout=30, message="the kernel's final sample")


def _exec(client, sname, cmd):
    r = okj(client.post(f"/session/{sname}", {"mode": "batch", "options": {"exec": cmd}}, timeout=120))
    return "".join(c[1] for c in r["result"]["console"] if c[0] == "stdout")


def test_block_io_written_is_counted(stack, admin, gw, image_registered):  # noqa: F811
    a, _ = _new_user(admin, gw, "usage-io")
    sname = f"usage-io-{uuid.uuid4().hex[:4]}"
    _running(a, image_registered, sname)
    sid = okj(a.get(f"/session/{sname}"))["sessionUuid"]
    try:
        out = _exec(a, sname, "dd if=/dev/zero of=/home/work/io.bin bs=1M count=32 conv=fsync 2>&1;"
                              " rm -f /home/work/io.bin")
        assert "32" in out, out
    finally:
        _end(a, stack, sname, sid)
    rd, wr = (int(v) for v in _row(stack, sid, "io_read_bytes, io_write_bytes"))
    assert wr >= 32 * MIB * 0.95, (wr, "block I/O written: the kernel's cgroup counted nothing")
    assert wr < 32 * MIB * 4, wr
    items = okj(a.get("/usage", params={"group_by": "user", **around_now()}))["items"]
    assert len(items) == 1 and items[0]["io_write_bytes"] == wr and items[0]["io_read_bytes"] == rd, items
    # Backend.AI's series of the last 30 days: the same bytes, spread over its bins
    series = okj(a.get("/resource/stats/user/month", timeout=30))
    assert sum(b["io_write_bytes"]["value"] for b in series) == wr, series[-8:]
    assert sum(b["io_read_bytes"]["value"] for b in series) == rd


SINK = "#!/bin/sh\\necho Content-Type: text/plain\\necho\\nwc -c\\n"
NET_BOOT = ("mkdir -p /tmp/www/cgi-bin && printf '" + SINK + "' > /tmp/www/cgi-bin/sink &&"
            " chmod +x /tmp/www/cgi-bin/sink &&"
            " dd if=/dev/zero of=/tmp/www/blob bs=1M count=8 2>/dev/null &&"
            " busybox httpd -p 8080 -h /tmp/www")


def test_network_bytes_are_counted(stack, admin, gw, image_registered):  # noqa: F811
    a, _ = _new_user(admin, gw, "usage-net")
    sname = f"usage-net-{uuid.uuid4().hex[:4]}"
    _running(a, image_registered, sname, bootstrap_script=NET_BOOT)
    sid = okj(a.get(f"/session/{sname}"))["sessionUuid"]
    try:
        body = start_when_listening(a, sname, timeout=30)
        url = body["url"]
        base, q = url.split("?", 1)
        root = base.rstrip("/")
        # the kernel receives 16 MiB (the CGI reads the request's body)
        got = wait_until(lambda: (lambda r: r if r.status_code == 200 else None)(
            requests.post(f"{root}/cgi-bin/sink?{q}", data=b"x" * (16 * MIB), timeout=60)),
            timeout=30, message="the CGI through wsproxy")
        assert int(got.text.strip()) == 16 * MIB, got.text
        # and sends 8 MiB
        blob = requests.get(f"{root}/blob?{q}", timeout=60, cookies=got.cookies)
        assert blob.status_code == 200 and len(blob.content) == 8 * MIB, blob.status_code
    finally:
        _end(a, stack, sname, sid)
    rx, tx = (int(v) for v in _row(stack, sid, "net_rx_bytes, net_tx_bytes"))
    assert rx >= 16 * MIB, (rx, tx)
    assert tx >= 8 * MIB, (rx, tx)
    item = okj(a.get("/usage", params=around_now()))["items"][0]
    assert item["net_rx_bytes"] == rx and item["net_tx_bytes"] == tx, item


BURN = ("sh -c 'e=$(( $(date +%s) + 2 )); while [ $(date +%s) -lt $e ]; do :; done';"
        " cat /proc/$$/stat")


def test_short_session_counts_all_its_cpu_and_wall_time(stack, admin, gw, image_registered):  # noqa: F811
    a, b = _new_user(admin, gw, "usage-short")[0], _new_user(admin, gw, "usage-other")[0]
    sname = f"usage-short-{uuid.uuid4().hex[:4]}"
    _running(a, image_registered, sname)
    info = okj(a.get(f"/session/{sname}"))
    sid = info["sessionUuid"]
    t0 = time.time()
    text = _exec(a, sname, BURN)
    fields = text.rsplit(")", 1)[1].split()
    burned = (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")
    _end(a, stack, sname, sid)
    lived = time.time() - t0
    assert burned > 0.6, burned
    cpu_ms, samples = (int(v) for v in _row(stack, sid, "cpu_ms, samples"))
    # the first sample counts from the start, the final one to the end
    assert abs(cpu_ms / 1000 - burned) <= 0.1 * burned, (cpu_ms, burned, samples, lived)

    # wall time per phase: adds up to the lifetime of the session
    ph = psql(stack, "SELECT pending_s, preparing_s, running_s, terminating_s, other_s,"
                     " extract(epoch FROM (s.terminated_at - s.created_at))"
                     " FROM registry.session_usage u JOIN registry.sessions s ON s.id = u.session_id"
                     f" WHERE u.session_id = '{sid}'").split("|")
    pending, preparing, running, terminating, other, life = (float(v) for v in ph)
    assert running >= burned * 0.9, (ph, burned)
    assert abs(pending + preparing + running + terminating + other - life) <= 2.0, ph
    item = okj(a.get("/usage", params=around_now()))["items"][0]
    assert abs(item["running_seconds"] - running) < 0.01, item
    assert abs(item["wall_seconds"] - (pending + preparing + running + terminating + other)) < 0.01, item
    csv = a.get("/usage", params={"format": "csv", **around_now()}).text.strip().split("\r\n")
    head = csv[0].split(",")
    assert "running_seconds" in head and "io_write_bytes" in head, head
    assert abs(float(csv[1].split(",")[head.index("running_seconds")]) - running) < 0.01, csv
    # another user sees none of it
    assert okj(b.get("/usage", params=around_now()))["items"] == []


LIVE_Q = """query($id: UUID!) { compute_session(id: $id) { id containers { id live_stat last_stat } } }"""


def test_graphql_live_stat_of_a_running_session(stack, admin, gw, image_registered):  # noqa: F811
    from test_graphql import gql
    a, b = _new_user(admin, gw, "usage-gql")[0], _new_user(admin, gw, "usage-gql2")[0]
    sname = f"usage-gql-{uuid.uuid4().hex[:4]}"
    _running(a, image_registered, sname)
    sid = okj(a.get(f"/session/{sname}"))["sessionUuid"]
    try:
        def live():
            body = okj(gql(a, LIVE_Q, {"id": sid}))
            c = body["data"]["compute_session"]["containers"][0]
            return c if c["live_stat"] else None
        c = wait_until(live, timeout=30, message="a sample of the kernel")
        st = json.loads(c["live_stat"])
        assert json.loads(c["last_stat"]) == st
        assert set(st) >= {"cpu_util", "cpu_used", "mem", "io_read", "io_write", "net_rx", "net_tx"}, st
        assert st["cpu_util"]["unit_hint"] == "percent" and float(st["cpu_util"]["capacity"]) == 100.0, st
        assert int(float(st["mem"]["current"])) > 0 and float(st["mem"]["capacity"]) == 256 << 20, st
        assert {"current", "capacity", "pct", "stats.max", "stats.rate"} <= set(st["mem"]), st
        # another user: the session is not theirs, no figures of it
        body = gql(b, LIVE_Q, {"id": sid}).json()
        assert not (body.get("data") or {}).get("compute_session"), body
        assert body.get("errors"), body
    finally:
        _end(a, stack, sname, sid)
    # once it ended: no live figures
    body = okj(gql(a, LIVE_Q, {"id": sid}))
    assert body["data"]["compute_session"]["containers"][0]["live_stat"] is None, body


def test_agent_restart_counts_nothing_twice(stack, admin, gw, image_registered):  # noqa: F811
    """The agent keeps what it reported in the kernel's dir: after a crash
    and restart its first sample of an adopted kernel is the difference since
    then, not everything since the kernel started again."""
    from test_usage import restart, totals
    a = _new_user(admin, gw, "usage-rst")[0]
    sname = f"usage-arst-{uuid.uuid4().hex[:4]}"
    _running(a, image_registered, sname)
    sid = okj(a.get(f"/session/{sname}"))["sessionUuid"]
    try:
        text = _exec(a, sname, BURN)
        fields = text.rsplit(")", 1)[1].split()
        burned = sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
        n = totals(stack, sid)[0]
        wait_until(lambda: totals(stack, sid)[0] >= n + 1, timeout=30, message="a sample after the burn")
        restart(stack, "agent", "--kill")
        n = totals(stack, sid)[0]
        wait_until(lambda: totals(stack, sid)[0] >= n + 2, timeout=60, message="samples after the restart")
    finally:
        _end(a, stack, sname, sid)
    cpu_ms = totals(stack, sid)[1]
    assert burned > 0.6, burned
    assert abs(cpu_ms / 1000 - burned) <= 0.1 * burned + 0.05, (cpu_ms, burned)
