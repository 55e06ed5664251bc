"""GPU time in usage samples (docs/usage.md "GPU time"; services/agent/gpu_usage.h,
services/registry/usage_store.h): the agent reads the kernel's cuda-shim region
on the host each heartbeat and at its end, and the registry sums it.

No CUDA program can run in the dev stack's busybox containers, so the test
writes the region the shim would write (libcommon/cuda_region.h; `make
test-shim` checks the shim's side against the fake driver) into the kernel's
shared dir on the host:

- a version 1 region (a container started before the upgrade): its GPU memory
  is sampled, no GPU time;
- then a version 2 region with busy_ns counted: the samples carry what the
  counter added, in whole ms with the rest carried over, so the session's
  total is the counter's last value to the ms; GET /usage (JSON, CSV) shows
  it as gpu_busy_seconds."""
import csv
import io
import os
import struct
import uuid

from conftest import wait_until
from test_apps import _running
from test_sessions_api import _new_user, admin, gw, image, image_registered, okj  # noqa: F401
from test_usage import around_now, psql
from test_usage_io import _end, _row

MAGIC = 0x52414354
V1_SIZE = 148992  # CUDA_REGION_V1_SIZE
V2_SIZE = 149184  # sizeof(cuda_region), version 2
OFF_USED, OFF_PEAK, OFF_BUSY, OFF_COUNTED = 184, 312, V1_SIZE, V1_SIZE + 128
GIB = 1 << 30


def _region(version, used, busy_ns=0, counted=0):
    size = V1_SIZE if version == 1 else V2_SIZE
    b = bytearray(size)
    struct.pack_into("<IIQ", b, 0, MAGIC, version, size)
    struct.pack_into("<Q", b, OFF_USED, used)
    struct.pack_into("<Q", b, OFF_PEAK, used)
    if version >= 2:
        struct.pack_into("<q", b, OFF_BUSY, busy_ns)
        struct.pack_into("<I", b, OFF_COUNTED, counted)
    return bytes(b)


def _put(shared, data):
    tmp = os.path.join(shared, ".region.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.rename(tmp, os.path.join(shared, "tessera-cuda.region"))


def _samples(stack, sid, where):
    return int(psql(stack, f"SELECT count(*) FROM registry.usage_samples WHERE session_id = '{sid}'"
                           f" AND {where}"))


def test_gpu_time_from_the_region_is_summed(stack, admin, gw, image_registered):  # noqa: F811
    a, _ = _new_user(admin, gw, "usage-gpu")
    sname = f"usage-gpu-{uuid.uuid4().hex[:4]}"
    _running(a, image_registered, sname,
             config={"resources": {"cpu": "1", "mem": "256m", "cuda.shares": "0.5"}})
    sid = okj(a.get(f"/session/{sname}"))["sessionUuid"]
    try:
        kid = psql(stack, f"SELECT id FROM registry.kernels WHERE session_id = '{sid}'")
        shared = os.path.join(stack["TESSERA_STATE_DIR"], "agent", "gpu", kid, "shared")
        assert os.path.isdir(shared), shared
        # version 1: memory, no GPU time
        _put(shared, _region(1, GIB))
        wait_until(lambda: _samples(stack, sid, f"gpu_mem_bytes = {GIB}") > 0, timeout=30,
                   message="a sample with the v1 region's memory")
        assert _samples(stack, sid, "gpu_busy_ms <> 0") == 0
        # version 2, counted: 2500.7 ms, then 4000.4 ms
        _put(shared, _region(2, GIB, 2_500_700_000, 1))
        wait_until(lambda: _samples(stack, sid, "gpu_busy_ms > 0") > 0, timeout=30,
                   message="a sample with GPU time")
        assert _row(stack, sid, "gpu_busy_ms") == ["2500"]
        _put(shared, _region(2, 2 * GIB, 4_000_400_000, 1))
    finally:
        _end(a, stack, sname, sid)
    assert _row(stack, sid, "gpu_busy_ms, gpu_mem_peak_bytes") == ["4000", str(2 * GIB)]
    assert psql(stack, "SELECT sum(gpu_busy_ms) FROM registry.usage_samples"
                       f" WHERE session_id = '{sid}'") == "4000"
    item = okj(a.get("/usage", params=around_now()))["items"][0]
    assert item["gpu_busy_seconds"] == 4.0, item
    r = a.get("/usage", params={"format": "csv", **around_now()})
    assert r.status_code == 200, r.text
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert len(rows) == 1 and rows[0]["gpu_busy_seconds"] == "4.000", r.text
    days = okj(a.get("/usage", params={"bucket": "day", **around_now()}))["items"][0]["days"]
    assert abs(sum(d["gpu_busy_seconds"] for d in days) - 4.0) < 0.002 * len(days), days
