"""Usage accounting (docs/usage.md; services/registry/usage_store.h,
usage_api.h, usage_bai.h): the agents' KernelUsage samples on
tessera.usage.v1 are stored by the registry as samples and per-session
totals, read back through GET /usage (grouped, CSV), Backend.AI's
/resource/usage/month and /period (admins), and the live figures of
GET /session/{name}.

- two sessions burn a known amount of CPU (a busy loop measured from inside
  the container, in clock ticks); the recorded CPU-seconds are within 10%;
- a message delivered again (the same envelope event id) changes nothing;
- a restart of the registry (SIGKILL) while samples arrive loses and doubles
  nothing;
- another user never sees the usage; users get 403 on the admin reports;
- bucket=day splits a session's totals over the days it ran (the parts add
  up), in JSON and CSV, and still shows another user nothing;
- bad dates, months, group_by, formats, buckets and ids answer 400."""
import os
import subprocess
import threading
import time
import uuid

import pytest

import pbwire
from conftest import wait_until
from pbwire import field
from test_apps import _running
from test_sessions_api import _new_user, admin, gw, image, image_registered, okj, problem  # noqa: F401

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RESTART = os.path.join(REPO, "deploy", "dev", "restart.sh")
TOPIC = "tessera.usage.v1"


def psql(stack, sql):
    p = subprocess.run(["psql", stack["TESSERA_PG_DSN"], "-X", "-At", "-q", "-v", "ON_ERROR_STOP=1",
                        "-c", sql], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def totals(stack, sid):
    """(samples, cpu_ms) of the session's row in registry.session_usage; (0, 0) when none."""
    out = psql(stack, f"SELECT samples, cpu_ms FROM registry.session_usage WHERE session_id = '{sid}'")
    if not out:
        return 0, 0
    s, c = out.split("|")
    return int(s), int(c)


# ---- a KernelUsage in an Envelope, written by hand (usage.proto; pbwire.py) ----

def kernel_usage(sid, kid, start_ms, end_ms, cpu_ms, mem=1 << 20):
    return (field(1, kid) + field(2, sid) + field(3, "it-agent") + field(4, "AKIT") + field(7, start_ms) +
            field(8, end_ms) + field(9, cpu_ms) + field(10, cpu_ms / max(1, end_ms - start_ms)) +
            field(11, mem) + field(12, mem))


def envelope(event_id, payload):
    return pbwire.envelope(event_id, "tessera.v1.KernelUsage", payload, producer="it/usage")


def produce(stack, tmp_path, key, values):
    """Each value as one record of TOPIC (kcat -P, one file each)."""
    files = []
    for i, v in enumerate(values):
        f = tmp_path / f"{key}-{uuid.uuid4().hex[:8]}-{i}.bin"
        f.write_bytes(v)
        files.append(str(f))
    p = subprocess.run(["kcat", "-b", stack["KAFKA_BOOTSTRAP"], "-P", "-t", TOPIC, "-k", key, *files],
                       capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr


def restart(stack, *args):
    env = dict(os.environ, TESSERA_STATE_DIR=stack["TESSERA_STATE_DIR"])
    r = subprocess.run(["sh", RESTART, *args], env=env, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr


# ---- fixtures -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def users(admin, gw):  # noqa: F811
    a, ua = _new_user(admin, gw, "usage-a")
    b, ub = _new_user(admin, gw, "usage-b")
    return a, b


def _ended_session(stack, client, image, sname):
    """A session created and destroyed (its id), to carry hand-made samples."""
    r = _running(client, image, sname)
    sid = r["sessionUuid"] if "sessionUuid" in r else okj(client.get(f"/session/{sname}"))["sessionUuid"]
    client.delete(f"/session/{sname}")
    wait_until(lambda: okj(client.get(f"/session/{sid}")).get("status") in ("TERMINATED", "ERROR"),
               timeout=60)
    # its kernel's final sample (read as it was destroyed) is in: the totals stay
    wait_until(lambda: psql(stack, "SELECT count(*) FROM registry.usage_samples"
                                   f" WHERE session_id = '{sid}' AND final") != "0", timeout=30)
    return sid


BURN = ("sh -c 'e=$(( $(date +%s) + {secs} )); while [ $(date +%s) -lt $e ]; do :; done';"
        " cat /proc/$$/stat")


def _burn(client, sname, secs, out):
    r = okj(client.post(f"/session/{sname}", {"mode": "batch", "options": {"exec": BURN.format(secs=secs)}},
                        timeout=120))
    text = "".join(c[1] for c in r["result"]["console"] if c[0] == "stdout")
    fields = text.rsplit(")", 1)[1].split()
    # after the state (field 3): utime 14, stime 15, cutime 16, cstime 17 -> index 11..14
    ticks = int(fields[13]) + int(fields[14])
    out[sname] = ticks / os.sysconf("SC_CLK_TCK")


# ---- the tests ------------------------------------------------------------------------

def test_recorded_cpu_matches_what_was_burned(stack, users, admin, image_registered):  # noqa: F811
    a, b = users
    names = {f"usage-burn1-{uuid.uuid4().hex[:4]}": 6, f"usage-burn2-{uuid.uuid4().hex[:4]}": 3}
    sids = {}
    try:
        for n in names:
            _running(a, image_registered, n)
            sids[n] = okj(a.get(f"/session/{n}"))["sessionUuid"]
        # the agent reports from its second look at a kernel on: wait for a first sample
        for n, sid in sids.items():
            wait_until(lambda: totals(stack, sid)[0] >= 1, timeout=30)
        before = {n: totals(stack, sid)[1] for n, sid in sids.items()}
        burned = {}
        threads = [threading.Thread(target=_burn, args=(a, n, s, burned)) for n, s in names.items()]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert set(burned) == set(names), burned
        # two more samples after the burn: its whole interval is counted
        counts = {n: totals(stack, sid)[0] for n, sid in sids.items()}
        for n, sid in sids.items():
            wait_until(lambda: totals(stack, sid)[0] >= counts[n] + 2, timeout=30)
        for n, sid in sids.items():
            recorded = (totals(stack, sid)[1] - before[n]) / 1000
            assert burned[n] > names[n] * 0.3, burned
            assert abs(recorded - burned[n]) <= 0.1 * burned[n], (n, recorded, burned[n])

        # live figures in the session's info
        info = okj(a.get(f"/session/{next(iter(names))}"))
        assert info["live"] is not None and info["live"]["mem_bytes"] > 0, info.get("live")
        assert set(info["lastStat"]) >= {"cpu_util", "mem", "cuda_mem"}, info["lastStat"]

        # GET /usage: the caller's own, grouped by user; the same numbers
        mine = okj(a.get("/usage", params={"group_by": "user"}))
        assert len(mine["items"]) == 1, mine
        row = mine["items"][0]
        whole = sum(totals(stack, sid)[1] for sid in sids.values()) / 1000
        assert row["sessions"] == 2 and abs(row["cpu_seconds"] - whole) < 0.01, (row, whole)
        assert row["cpu_seconds"] >= sum(burned.values()) * 0.9
        # CSV, by Accept or by ?format=
        for r in (a.get("/usage", params={"group_by": "project"}, headers={"Accept": "text/csv"}),
                  a.get("/usage", params={"group_by": "project", "format": "csv"})):
            assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/csv"), r.text
            lines = r.text.strip().split("\r\n")
            assert lines[0].startswith("project,name,sessions,cpu_seconds"), lines
            assert len(lines) == 2 and lines[1].split(",")[2] == "2", lines

        # another user sees none of it
        theirs = okj(b.get("/usage", params={"group_by": "user"}))
        assert theirs["items"] == [], theirs
        for by in ("project", "domain", "image", "resource_group"):
            assert okj(b.get("/usage", params={"group_by": by}))["items"] == [], by
        problem(b.get("/resource/usage/month", params={"month": time.strftime("%Y%m", time.gmtime())}), 403)
        problem(b.get("/resource/usage/period", params={"start_date": time.strftime("%Y%m%d", time.gmtime()),
                                                       "end_date": time.strftime("%Y%m%d", time.gmtime())}), 403)

        # Backend.AI's reports (superadmin): per-session rows with our numbers
        month = okj(admin.get("/resource/usage/month", params={"month": time.strftime("%Y%m", time.gmtime())}))
        rows = {c["session_id"]: c for g in month for c in g["c_infos"]}
        for n, sid in sids.items():
            c = rows[sid]
            assert c["name"] == n and c["cpu_allocated"] == 1.0 and c["mem_allocated"] == 256 << 20, c
            assert abs(c["cpu_used"] - totals(stack, sid)[1]) <= 1, c
            assert isinstance(c["io_read"], int) and isinstance(c["io_write"], int), c
            assert c["email"] is None, c
        today = time.strftime("%Y%m%d", time.gmtime())
        period = okj(admin.get("/resource/usage/period", params={"start_date": today, "end_date": today}))
        got = {sid for p in period for sid in p["sessions"]}
        assert set(sids.values()) <= got, (sids, got)
    finally:
        for n in names:
            a.delete(f"/session/{n}")


def test_redelivery_changes_nothing(stack, users, image_registered, tmp_path):  # noqa: F811
    a, _ = users
    sid = _ended_session(stack, a, image_registered, f"usage-dup-{uuid.uuid4().hex[:4]}")
    kid = str(uuid.uuid4())
    base = totals(stack, sid)
    now = int(time.time() * 1000)
    eid = str(uuid.uuid4())
    sample = envelope(eid, kernel_usage(sid, kid, now - 3000, now, 777))
    produce(stack, tmp_path, kid, [sample])
    wait_until(lambda: totals(stack, sid) == (base[0] + 1, base[1] + 777), timeout=30)
    # the same message twice more, then a different one as a marker (same key: after them)
    produce(stack, tmp_path, kid, [sample, sample,
                                   envelope(str(uuid.uuid4()), kernel_usage(sid, kid, now, now + 3000, 5))])
    wait_until(lambda: totals(stack, sid)[0] >= base[0] + 2, timeout=30)
    time.sleep(1)
    assert totals(stack, sid) == (base[0] + 2, base[1] + 782)
    assert psql(stack, f"SELECT count(*) FROM registry.usage_samples WHERE event_id = '{eid}'") == "1"
    # a sample of a session nobody knows: skipped, not stored
    ghost = str(uuid.uuid4())
    produce(stack, tmp_path, kid, [envelope(str(uuid.uuid4()), kernel_usage(ghost, kid, now, now + 1000, 9)),
                                   envelope(str(uuid.uuid4()), kernel_usage(sid, kid, now + 3000, now + 6000, 1))])
    wait_until(lambda: totals(stack, sid)[0] >= base[0] + 3, timeout=30)
    assert psql(stack, f"SELECT count(*) FROM registry.usage_samples WHERE session_id = '{ghost}'") == "0"
    assert totals(stack, ghost) == (0, 0)


def test_registry_restart_loses_and_doubles_nothing(stack, users, image_registered, tmp_path):  # noqa: F811
    a, _ = users
    sid = _ended_session(stack, a, image_registered, f"usage-rst-{uuid.uuid4().hex[:4]}")
    kid = str(uuid.uuid4())
    base = totals(stack, sid)
    t0 = int(time.time() * 1000)
    msgs = [envelope(str(uuid.uuid4()), kernel_usage(sid, kid, t0 + i * 1000, t0 + (i + 1) * 1000, 100))
            for i in range(60)]
    produce(stack, tmp_path, kid, msgs[:20])
    restarter = threading.Thread(target=restart, args=(stack, "registry", "--kill", "--down", "1"))
    restarter.start()
    produce(stack, tmp_path, kid, msgs[20:40])
    restarter.join()
    produce(stack, tmp_path, kid, msgs[40:])
    wait_until(lambda: totals(stack, sid)[0] >= base[0] + 60, timeout=90)
    # everything delivered again: still each once
    produce(stack, tmp_path, kid, msgs)
    produce(stack, tmp_path, kid, [envelope(str(uuid.uuid4()),
                                            kernel_usage(sid, kid, t0 + 61000, t0 + 62000, 1))])
    wait_until(lambda: totals(stack, sid)[0] >= base[0] + 61, timeout=60)
    time.sleep(1)
    assert totals(stack, sid) == (base[0] + 61, base[1] + 6001)

DAY_MS = 86400 * 1000


def _share(first, last, lo, hi):
    """usage_calc.c's usage_share: the part of [first, last] in [lo, hi)."""
    if last <= first:
        return 1.0 if lo <= first < hi else 0.0
    return max(0, min(last, hi) - max(first, lo)) / (last - first)


def test_usage_by_day(stack, admin, gw, image_registered, tmp_path):  # noqa: F811
    a, ua = _new_user(admin, gw, "usage-day")
    b, _ = _new_user(admin, gw, "usage-day-b")
    sid = _ended_session(stack, a, image_registered, f"usage-day-{uuid.uuid4().hex[:4]}")
    kid = str(uuid.uuid4())
    base = totals(stack, sid)
    now = int(time.time() * 1000)
    today = now - now % DAY_MS
    # two hours of samples before midnight: 22:00-23:00 at one core, 23:00-24:00 at two
    msgs = [envelope(str(uuid.uuid4()), kernel_usage(sid, kid, today - 2 * 3600_000, today - 3600_000, 3600_000)),
            envelope(str(uuid.uuid4()), kernel_usage(sid, kid, today - 3600_000, today, 7200_000))]
    produce(stack, tmp_path, kid, msgs)
    wait_until(lambda: totals(stack, sid)[0] >= base[0] + 2, timeout=30)
    row = psql(stack, "SELECT cpu_ms, (extract(epoch FROM first_sample_at) * 1000)::bigint,"
                      " (extract(epoch FROM last_sample_at) * 1000)::bigint"
                      f" FROM registry.session_usage WHERE session_id = '{sid}'")
    cpu_ms, first, last = (int(x) for x in row.split("|"))
    start = time.strftime("%Y-%m-%d", time.gmtime(today / 1000 - 2 * 86400))
    end = time.strftime("%Y-%m-%d", time.gmtime(today / 1000))
    got = okj(a.get("/usage", params={"start": start, "end": end, "bucket": "day"}))
    assert got["bucket"] == "day" and len(got["items"]) == 1, got
    item = got["items"][0]
    assert item["user"] == ua["id"] and abs(item["cpu_seconds"] - cpu_ms / 1000) < 0.01, (item, cpu_ms)
    days = {d["day"]: d for d in item["days"]}
    # the day before yesterday had nothing: it is left out
    expect = {}
    for i in range(3):
        lo = today - (2 - i) * DAY_MS
        part = _share(first, last, lo, lo + DAY_MS)
        if part > 0:
            expect[time.strftime("%Y-%m-%d", time.gmtime(lo / 1000))] = part * cpu_ms / 1000
    assert set(days) == set(expect), (days, expect)
    for day, cpu in expect.items():
        assert abs(days[day]["cpu_seconds"] - cpu) < 0.01, (day, days[day], cpu)
        assert days[day]["sessions"] == 1
    assert abs(sum(d["cpu_seconds"] for d in item["days"]) - item["cpu_seconds"]) < 0.01
    yesterday = time.strftime("%Y-%m-%d", time.gmtime(today / 1000 - 86400))
    assert days[yesterday]["cpu_seconds"] > 1000, days  # most of the 3 CPU-hours burned before midnight
    # CSV: one line per day and group, the day first
    r = a.get("/usage", params={"start": start, "end": end, "bucket": "day", "format": "csv",
                                "group_by": "project"})
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/csv"), r.text
    lines = r.text.strip().split("\r\n")
    assert lines[0].startswith("day,project,name,sessions,cpu_seconds"), lines
    assert sorted(ln.split(",")[0] for ln in lines[1:]) == sorted(expect), lines
    # another user: nothing, by day either
    assert okj(b.get("/usage", params={"start": start, "end": end, "bucket": "day"}))["items"] == []
    # the admin sees the user's days among all
    mine = [i for i in okj(admin.get("/usage", params={"start": start, "end": end, "bucket": "day"}))["items"]
            if i["user"] == ua["id"]]
    assert len(mine) == 1 and {d["day"] for d in mine[0]["days"]} == set(expect), mine


@pytest.mark.parametrize("path,params", [
    ("/usage", {"group_by": "agent"}),
    ("/usage", {"group_by": ""}),
    ("/usage", {"start": "2026-13-01"}),
    ("/usage", {"start": "20260230"}),
    ("/usage", {"end": "yesterday"}),
    ("/usage", {"start": "2026-10-02", "end": "2026-10-01"}),
    ("/usage", {"format": "xml"}),
    ("/usage", {"bucket": "hour"}),
    ("/usage", {"bucket": "Day"}),
    ("/usage", {"bucket": "day", "start": "2025-01-01", "end": "2026-10-01"}),
    ("/resource/usage/month", {}),
    ("/resource/usage/month", {"month": "202613"}),
    ("/resource/usage/month", {"month": "2026-10"}),
    ("/resource/usage/month", {"month": "202610", "group_ids": "not-a-uuid"}),
    ("/resource/usage/month", {"month": "202610", "group_ids": str(uuid.uuid4()) + ","}),
    ("/resource/usage/period", {}),
    ("/resource/usage/period", {"start_date": "20261001"}),
    ("/resource/usage/period", {"start_date": "20260101", "end_date": "20261001"}),
    ("/resource/usage/period", {"start_date": "20261002", "end_date": "20261001"}),
    ("/resource/usage/period", {"start_date": "20261001", "end_date": "20261002", "project_id": "x"}),
])
def test_bad_input_is_400(admin, path, params):  # noqa: F811
    problem(admin.get(path, params=params), 400)
