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
import calendar
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
from test_cli import base_env
from test_cli import ok as cli_ok
from test_cli import run as cli_run
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

def _yyyymm(days):
    return time.strftime("%Y%m", time.gmtime(time.time() + days * 86400))


def around_now():
    """?start=yesterday&end=tomorrow: a period that holds what a test's
    sessions used just now, at any time of day."""
    t = time.time()
    return {"start": time.strftime("%Y-%m-%d", time.gmtime(t - 86400)),
            "end": time.strftime("%Y-%m-%d", time.gmtime(t + 86400))}


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

        # GET /usage: the caller's own, grouped by user; the same numbers (a
        # period from yesterday to tomorrow: the sessions may have run across
        # midnight)
        mine = okj(a.get("/usage", params={"group_by": "user", **around_now()}))
        assert len(mine["items"]) == 1, mine
        row = mine["items"][0]
        whole = sum(totals(stack, sid)[1] for sid in sids.values()) / 1000
        assert row["sessions"] == 2 and abs(row["cpu_seconds"] - whole) < 0.01, (row, whole)
        assert row["cpu_seconds"] >= sum(burned.values()) * 0.9
        # CSV, by Accept or by ?format=
        for r in (a.get("/usage", params={"group_by": "project", **around_now()},
                        headers={"Accept": "text/csv"}),
                  a.get("/usage", params={"group_by": "project", "format": "csv", **around_now()})):
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
        # (the months from yesterday's to tomorrow's: a session's months add up)
        rows = {}
        for month in sorted({_yyyymm(-1), _yyyymm(1)}):
            for g in okj(admin.get("/resource/usage/month", params={"month": month})):
                for c in g["c_infos"]:
                    if c["session_id"] in rows:
                        rows[c["session_id"]]["cpu_used"] += c["cpu_used"]
                    else:
                        rows[c["session_id"]] = c
        for n, sid in sids.items():
            c = rows[sid]
            assert c["name"] == n and c["cpu_allocated"] == 1.0 and c["mem_allocated"] == 256 << 20, c
            assert abs(c["cpu_used"] - totals(stack, sid)[1]) <= 1, c
            assert isinstance(c["io_read"], int) and isinstance(c["io_write"], int), c
            assert c["email"] is None, c
        period = okj(admin.get("/resource/usage/period",
                               params={k + "_date": v.replace("-", "") for k, v in around_now().items()}))
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
HOUR_MS = 3600 * 1000
# A fixed day in the past, far from today, so that nothing but the samples
# placed here has figures on it; each time of day below gets a week of its own.
FIXED_DAY = 1767225600000  # 2026-01-01T00:00:00Z


def _day(ms):
    return time.strftime("%Y-%m-%d", time.gmtime(ms / 1000))


def _hour(h):
    return h["hour"]


def _cpu_before(samples, t):
    """CPU ms the samples [(start, end, cpu_ms)] used before t, each at its
    own rate: what a day's figure must be, whenever it is asked for."""
    return sum(cpu * max(0, min(end, t) - start) / (end - start) for start, end, cpu in samples)


@pytest.fixture(scope="module")
def day_user(stack, admin, gw, image_registered):  # noqa: F811
    """A user with one ended session, to carry samples placed at fixed times."""
    a, ua = _new_user(admin, gw, "usage-day")
    sid = _ended_session(stack, a, image_registered, f"usage-day-{uuid.uuid4().hex[:4]}")
    return a, ua, sid


# The times of day at which the session's two hours of samples end (the time
# the old span-based split depended on): at, just before and just after
# midnight, noon, 19:36 (where the old test started to fail) and 23:00.
ENDS = {"midnight": 0, "midnight-1ms": -1, "midnight+1ms": 1, "noon": 12 * HOUR_MS,
        "19:36": 19 * HOUR_MS + 36 * 60000, "23:00": 23 * HOUR_MS, "00:00:01.5": 1500}


@pytest.mark.parametrize("when", list(ENDS))
def test_usage_by_day_is_what_was_used_that_day(stack, admin, gw, day_user, tmp_path, bin_dir,
                                                when):  # noqa: F811
    a, ua, sid = day_user
    b, _ = _new_user(admin, gw, "usage-day-b")
    kid = str(uuid.uuid4())
    week = list(ENDS).index(when)
    midnight = FIXED_DAY + (week * 7 + 1) * DAY_MS
    end = midnight + ENDS[when]
    # two hours of samples, delivered late (they are in the past): one core,
    # then two
    samples = [(end - 2 * HOUR_MS, end - HOUR_MS, HOUR_MS), (end - HOUR_MS, end, 2 * HOUR_MS)]
    msgs = [envelope(str(uuid.uuid4()), kernel_usage(sid, kid, s, e, c)) for s, e, c in samples]
    base = totals(stack, sid)
    produce(stack, tmp_path, kid, msgs)
    wait_until(lambda: totals(stack, sid)[0] >= base[0] + 2, timeout=30)
    start, last = _day(midnight - 2 * DAY_MS), _day(midnight + DAY_MS)
    params = {"start": start, "end": last, "bucket": "day"}

    def by_day():
        got = okj(a.get("/usage", params=params))
        assert got["bucket"] == "day" and len(got["items"]) == 1, got
        return got["items"][0]

    item = by_day()
    assert item["user"] == ua["id"] and item["sessions"] == 1, item
    assert abs(item["cpu_seconds"] - 3 * 3600) < 0.002, item
    days = {d["day"]: d for d in item["days"]}
    before = _cpu_before(samples, midnight) / 1000
    expect = {_day(midnight - DAY_MS): before, _day(midnight): 3 * 3600 - before}
    expect = {d: v for d, v in expect.items() if v > 0}  # days without figures are left out
    assert set(days) == set(expect), (days, expect)
    for day, cpu in expect.items():
        assert abs(days[day]["cpu_seconds"] - cpu) < 0.002, (day, days[day], cpu)
        assert days[day]["sessions"] == 1
    assert sum(d["samples"] for d in item["days"]) == 2
    # per hour: each hour what was used in it
    hours = okj(a.get("/usage", params={**params, "bucket": "hour", "start": _day(midnight - DAY_MS),
                                        "end": _day(midnight)}))["items"][0]["hours"]
    for h in hours:
        t = calendar.timegm(time.strptime(h["hour"], "%Y-%m-%dT%H:%M:%SZ")) * 1000
        want = (_cpu_before(samples, t + HOUR_MS) - _cpu_before(samples, t)) / 1000
        assert abs(h["cpu_seconds"] - want) < 0.002, (h, want)
    assert abs(sum(h["cpu_seconds"] for h in hours) - 3 * 3600) < 0.002, hours
    # CSV: one line per day and group, the day first
    r = a.get("/usage", params={**params, "format": "csv", "group_by": "project"})
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/csv"), r.text
    lines = r.text.strip().split("\r\n")
    assert lines[0].startswith("day,project,name,sessions,cpu_seconds"), lines
    assert sorted(ln.split(",")[0] for ln in lines[1:]) == sorted(expect), lines
    # the CLI: one row per day, the day first, in order
    if when == "19:36":
        env = base_env(tmp_path, TESSERA_GATEWAY_URL=gw, TESSERA_ACCESS_KEY=a.access_key,
                       TESSERA_SECRET_KEY=a.secret_key)
        out = cli_ok(bin_dir, env, "usage", "--from", start, "--to", last, "--by", "day").splitlines()
        assert out[1].split()[:3] == ["DAY", "KEY", "NAME"], out
        rows = [ln.split() for ln in out[2:]]
        assert [r[0] for r in rows] == sorted(expect) and all(r[1] == ua["id"] for r in rows), out
        for r in rows:
            assert abs(float(r[4]) - expect[r[0]] / 3600) < 0.001, (r, expect)
        hours = cli_ok(bin_dir, env, "usage", "--from", _day(midnight - DAY_MS), "--to", _day(midnight),
                       "--by", "hour", "--csv").strip().splitlines()
        assert hours[0].startswith("hour,user,name,sessions,cpu_seconds"), hours
        assert len(hours) - 1 == len({_hour(h) for h in okj(a.get("/usage", params={
            "start": _day(midnight - DAY_MS), "end": _day(midnight), "bucket": "hour"}))["items"][0]["hours"]})
        assert cli_run(bin_dir, env, "usage", "--by", "minute").returncode == 2
    # another user: nothing, by day either; the admin sees the user's days among all
    assert okj(b.get("/usage", params=params))["items"] == []
    mine = [i for i in okj(admin.get("/usage", params=params))["items"] if i["user"] == ua["id"]]
    assert len(mine) == 1 and {d["day"] for d in mine[0]["days"]} == set(expect), mine
    # delivered again: nothing changes; the samples pruned: the days stay
    produce(stack, tmp_path, kid, msgs)
    produce(stack, tmp_path, kid, [envelope(str(uuid.uuid4()), kernel_usage(sid, kid, end + 3 * DAY_MS,
                                                                             end + 3 * DAY_MS, 0))])
    wait_until(lambda: totals(stack, sid)[0] >= base[0] + 3, timeout=30)
    psql(stack, f"DELETE FROM registry.usage_samples WHERE session_id = '{sid}'"
                f" AND interval_start < to_timestamp({(midnight + 2 * DAY_MS) / 1000})")
    again = by_day()
    assert {d["day"]: round(d["cpu_seconds"], 3) for d in again["days"]} == \
        {d: round(v, 3) for d, v in expect.items()}, (again, expect)
    # Backend.AI's period report: the same figure for the day before midnight
    if before > 0:
        day0 = _day(midnight - DAY_MS).replace("-", "")
        period = okj(admin.get("/resource/usage/period", params={"start_date": day0, "end_date": day0}))
        rows = [s for p in period for k, s in p["sessions"].items() if k == sid]
        assert len(rows) == 1 and abs(rows[0]["total_usage"]["cpu_used"] - before * 1000) < 2, rows


def test_domain_admins_do_not_see_superadmins_usage(stack, admin, gw, day_user, image_registered,
                                                   tmp_path, bin_dir):  # noqa: F811
    """A domain admin reads its domain's usage but, as with sessions, never
    its superadmins': not in GET /usage (JSON, CSV, by day), nor in
    Backend.AI's month and period reports."""
    a, ua, sid = day_user
    da, _ = _new_user(admin, gw, "usage-da", role="admin")
    su_sid = _ended_session(stack, admin, image_registered, f"usage-su-{uuid.uuid4().hex[:4]}")
    su_user = psql(stack, f"SELECT user_id FROM registry.session_usage WHERE session_id = '{su_sid}'")
    day = FIXED_DAY + 100 * DAY_MS + 12 * HOUR_MS
    kid = str(uuid.uuid4())
    base = totals(stack, su_sid)
    produce(stack, tmp_path, kid, [envelope(str(uuid.uuid4()), kernel_usage(x, kid, day, day + 60000, 1000))
                                   for x in (sid, su_sid)])
    wait_until(lambda: totals(stack, su_sid)[0] >= base[0] + 1, timeout=30)
    ymd = _day(day)
    params = {"start": ymd, "end": ymd, "group_by": "user"}
    # the superadmin sees both; the domain admin its user's only
    assert {ua["id"], su_user} <= {i["user"] for i in okj(admin.get("/usage", params=params))["items"]}
    for extra in ({}, {"bucket": "day"}):
        users = {i["user"] for i in okj(da.get("/usage", params={**params, **extra}))["items"]}
        assert ua["id"] in users and su_user not in users, users
    csv_text = da.get("/usage", params={**params, "format": "csv"}).text
    assert ua["id"] in csv_text and su_user not in csv_text and su_sid not in csv_text, csv_text
    month = okj(da.get("/resource/usage/month", params={"month": ymd[:7].replace("-", "")}))
    seen = {c["session_id"] for g in month for c in g["c_infos"]}
    assert sid in seen and su_sid not in seen, seen
    period = okj(da.get("/resource/usage/period", params={"start_date": ymd.replace("-", ""),
                                                          "end_date": ymd.replace("-", "")}))
    seen = {k for p in period for k in p["sessions"]}
    assert sid in seen and su_sid not in seen, seen
    assert su_user not in str(period) and su_user not in str(month)
    # the CLI's reports: a table of the domain's sessions, the superadmin's left out
    env = base_env(tmp_path, TESSERA_GATEWAY_URL=gw, TESSERA_ACCESS_KEY=da.access_key,
                   TESSERA_SECRET_KEY=da.secret_key)
    for args in (("month", ymd[:7].replace("-", "")),
                 ("period", "--from", ymd.replace("-", ""), "--to", ymd.replace("-", ""))):
        out = cli_ok(bin_dir, env, "admin", "usage", *args)
        assert "SESSION" in out and "CPU-SECONDS" in out, out
        assert a.access_key in out and admin.access_key not in out, out


@pytest.mark.parametrize("path,params", [
    ("/usage", {"group_by": "agent"}),
    ("/usage", {"group_by": ""}),
    ("/usage", {"start": "2026-13-01"}),
    ("/usage", {"start": "20260230"}),
    ("/usage", {"end": "yesterday"}),
    ("/usage", {"start": "2026-10-02", "end": "2026-10-01"}),
    ("/usage", {"format": "xml"}),
    ("/usage", {"bucket": "minute"}),
    ("/usage", {"bucket": "hour", "start": "2026-01-01", "end": "2026-02-01"}),
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


def test_month_report_takes_a_json_body(admin, users):  # noqa: F811
    """Backend.AI's Python client sends the month report's arguments as a
    GET with a JSON body: read there too, checked as in the query; users
    still get 403."""
    month = time.strftime("%Y%m", time.gmtime())
    by_query = okj(admin.get("/resource/usage/month", params={"month": month}))
    by_body = okj(admin.get("/resource/usage/month", json={"month": month, "group_ids": []}))
    assert by_body == by_query
    projects = {g["g_id"] for g in by_query if g["g_id"]}
    if projects:
        one = sorted(projects)[0]
        got = okj(admin.get("/resource/usage/month", json={"month": month, "group_ids": [one]}))
        assert {g["g_id"] for g in got} == {one}
    for body in ({"month": "202613"}, {"month": month, "group_ids": ["not-a-uuid"]},
                 {"month": month, "group_ids": [5]}, {"month": month, "group_ids": {"a": 1}}, {}):
        problem(admin.get("/resource/usage/month", json=body), 400)
    problem(users[1].get("/resource/usage/month", json={"month": month}), 403)
