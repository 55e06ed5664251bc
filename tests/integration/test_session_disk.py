"""A container's disk has a size (docs/sessions.md "Disk size"): the owner
keypair's policy's max_rootfs_size, taken when the session is created, or
the agent's agent.rootfs_size (32 GiB) when the policy sets none. Writing
past it fails with ENOSPC inside the session, in /home/work and in the root
file system alike, and the session stays RUNNING and usable (freeing space
lets writes through again). A size below 16 MiB is refused by the policy
API. Skipped where the stack's agent cannot enforce sizes (no loop devices
or mkfs.ext4: its log says so)."""
import os
import time
import uuid

import pytest

from test_sessions_api import _new_user, admin, gw, image, image_registered, okj, problem  # noqa: F401

TAG = uuid.uuid4().hex[:6]
MIB = 1 << 20
LIMIT = 64 * MIB


@pytest.fixture(scope="module")
def enforced(stack):
    log = os.path.join(stack.get("TESSERA_LOG_DIR") or os.path.join(stack["TESSERA_STATE_DIR"], "logs"),
                       "agent.log")
    text = ""
    for _ in range(50):
        with open(log, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if "kernel disk sizes" in text:
            break
        time.sleep(0.1)
    if "kernel disk sizes not enforced" in text:
        line = [x for x in text.splitlines() if "kernel disk sizes not enforced" in x][0]
        pytest.skip(f"the agent cannot enforce disk sizes here: {line}")
    return True


def _running(client, image, sname):
    r = client.post("/session", {"image": image, "name": sname, "maxWaitSeconds": 40,
                                 "config": {"resources": {"cpu": "1", "mem": "128m"}}}, timeout=60)
    assert r.status_code == 201, r.text
    assert r.json()["status"] == "RUNNING", r.json()


def _run(client, sname, cmd):
    res = okj(client.post(f"/session/{sname}", {"mode": "batch", "options": {"exec": cmd}},
                          timeout=80))["result"]
    out = "".join(t for k, t in res["console"] if k == "stdout")
    err = "".join(t for k, t in res["console"] if k == "stderr")
    return res["exitCode"], out, err


def _df_kb(client, sname, path="/home/work"):
    code, out, err = _run(client, sname, f"df -k {path} | tail -1")
    assert code == 0, err
    return int(out.split()[1])


def test_the_policys_size_limits_what_a_session_writes(admin, gw, image_registered, enforced):  # noqa: F811
    client, _ = _new_user(admin, gw, "disk")
    policy = f"disk-{TAG}"
    p = okj(admin.post("/admin/keypair-resource-policies",
                       {"name": policy, "max_rootfs_size": LIMIT}), 200, 201)
    assert p["max_rootfs_size"] == LIMIT
    okj(admin.patch(f"/admin/keypairs/{client.access_key}", {"resource_policy": policy}))
    sname = f"disk-{TAG}"
    try:
        _running(client, image_registered, sname)
        kb = _df_kb(client, sname)
        assert 48 * 1024 < kb <= 64 * 1024, kb
        # past the limit: ENOSPC in /home/work ...
        code, _, err = _run(client, sname, "dd if=/dev/zero of=/home/work/big bs=1M count=80")
        assert code != 0 and "No space left on device" in err, err
        # ... and in the root file system, which shares it
        code, _, err = _run(client, sname, "dd if=/dev/zero of=/root/more bs=1M count=8")
        assert code != 0 and "No space left on device" in err, err
        # the session is fine: RUNNING, executes, and writes again once space is freed
        assert okj(client.get(f"/session/{sname}"))["status"] == "RUNNING"
        code, out, err = _run(client, sname, "rm -f /home/work/big /root/more && "
                                             "dd if=/dev/zero of=/home/work/ok bs=1M count=8 2>/dev/null && "
                                             "ls -l /home/work/ok | awk '{print $5}'")
        assert code == 0 and out.strip() == str(8 * MIB), (out, err)
        # the limit was taken at create: a later change of the policy leaves it
        okj(admin.patch(f"/admin/keypair-resource-policies/{policy}", {"max_rootfs_size": 0}))
        assert 48 * 1024 < _df_kb(client, sname, "/") <= 64 * 1024
    finally:
        client.delete(f"/session/{sname}")


def test_without_a_policy_size_the_agents_default_applies(admin, gw, image_registered, enforced):  # noqa: F811
    client, _ = _new_user(admin, gw, "disk-default")
    sname = f"disk-d-{TAG}"
    try:
        _running(client, image_registered, sname)
        kb = _df_kb(client, sname)
        assert 31 * MIB < kb <= 32 * MIB, kb  # agent.rootfs_size: 32g, in KiB
    finally:
        client.delete(f"/session/{sname}")


@pytest.mark.parametrize("value", [1000, 16 * MIB - 1, -1, "big"])
def test_a_size_below_16_mib_is_refused(admin, value):  # noqa: F811
    p = problem(admin.post("/admin/keypair-resource-policies",
                           {"name": f"disk-bad-{uuid.uuid4().hex[:6]}", "max_rootfs_size": value}), 400)
    assert "max_rootfs_size" in p["msg"], p
