"""Backend.AI's monthly usage series (docs/api.md "Resources";
services/registry/usage_stats.h): GET /resource/stats/user/month is the
caller's own (a session's cores, memory and GPU share appear in the current
15-minute bin; another user's series does not show it), GET
/resource/stats/admin/month everyone's, for superadmins only. Block I/O is
what the samples measured (test_usage_io.py checks that it adds up); disk_used
is measured by no one: null, never a made-up number."""
import time

from test_apps import _running
from test_sessions_api import _new_user, admin, gw, image, image_registered, okj, problem  # noqa: F401


def _last(series):
    assert len(series) == 2880, len(series)
    dates = [b["date"] for b in series]
    assert dates == sorted(dates) and abs(dates[1] - dates[0] - 900) < 1e-6
    assert abs(dates[-1] + 900 - time.time()) < 120, dates[-1]
    return series[-1]


def test_the_callers_series_and_the_admins(admin, gw, image_registered):  # noqa: F811
    a, _ = _new_user(admin, gw, "ustat-a")
    b, _ = _new_user(admin, gw, "ustat-b")
    sname = "ustat-s"
    before = _last(okj(a.get("/resource/stats/user/month", timeout=30)))
    assert before["num_sessions"] == {"value": 0, "unit_hint": "count"}
    _running(a, image_registered, sname, config={"resources": {"cpu": "1", "mem": "256m",
                                                               "cuda.shares": "0.5"}})
    try:
        mine = okj(a.get("/resource/stats/user/month", timeout=30))
        last = _last(mine)
        assert last["num_sessions"]["value"] == 1, last
        assert last["cpu_allocated"] == {"value": 1.0, "unit_hint": "count"}, last
        assert last["mem_allocated"] == {"value": 256 << 20, "unit_hint": "bytes"}, last
        assert last["gpu_allocated"]["value"] == 0.5, last
        for k in ("io_read_bytes", "io_write_bytes"):
            assert isinstance(last[k]["value"], int) and last[k]["unit_hint"] == "bytes", last
        assert last["disk_used"] == {"value": None, "unit_hint": "bytes"}, last
        # the earlier bins do not have it (it started just now)
        assert mine[-3]["num_sessions"]["value"] == 0, mine[-3]
        # another user's series does not show it
        theirs = _last(okj(b.get("/resource/stats/user/month", timeout=30)))
        assert theirs["num_sessions"]["value"] == 0, theirs
        # everyone's: superadmins only
        problem(a.get("/resource/stats/admin/month", timeout=30), 403)
        every = _last(okj(admin.get("/resource/stats/admin/month", timeout=30)))
        assert every["num_sessions"]["value"] >= 1 and every["cpu_allocated"]["value"] >= 1.0
    finally:
        a.delete(f"/session/{sname}")
    # ended: it still counts in the bins it ran in
    time.sleep(1)
    last = _last(okj(a.get("/resource/stats/user/month", timeout=30)))
    assert last["num_sessions"]["value"] == 1, last
