"""A restart keeps the kernels' work directory (docs/api.md, PATCH
/session/{name}; docs/sessions.md "Restart"): a file written to /home/work
before `PATCH /session/{name}` is there again once the session is RUNNING
after it, in a session of one kernel and in each kernel of a cluster session
(cluster_size 2, single-node; each kernel reached through its agent's
execute as the registry reaches it), while the container's root file system
starts again from the image (a file written to /root is gone). And an
execute without a mode on a running session is a 400 naming mode, not a 200
that ran nothing."""
import os
import uuid

import pytest

import suitekit
import svc_signer
from conftest import parse_services_file, wait_until
from test_sessions_api import _new_user, admin, gw, okj, problem  # noqa: F401 - fixtures

TAG = uuid.uuid4().hex[:6]


@pytest.fixture(scope="module")
def small_image(stack, admin):  # noqa: F811
    """The busybox test image with small minimum slots (two kernels fit)."""
    out = os.path.join(stack["TESSERA_STATE_DIR"], "restart-image")
    try:
        ref = suitekit.push_busybox_image(stack, out, "tessera/restart-test", TAG, "restart")
    except RuntimeError as e:
        pytest.fail(str(e), pytrace=False)
    okj(admin.post("/admin/images", {"reference": ref}), 200, 201)
    return ref


@pytest.fixture(scope="module")
def client(admin, gw):  # noqa: F811
    """A user whose keypair's policy allows two containers per session."""
    c, _ = _new_user(admin, gw, "restart")
    policy = f"restart-{TAG}"
    okj(admin.post("/admin/keypair-resource-policies",
                   {"name": policy, "max_containers_per_session": 2}), 200, 201)
    okj(admin.patch(f"/admin/keypairs/{c.access_key}", {"resource_policy": policy}))
    return c


@pytest.fixture(scope="module")
def agent_url(stack):
    services = parse_services_file(os.path.join(stack["TESSERA_STATE_DIR"], "services"))
    if "agent" not in services:
        pytest.skip("no agent in this stack")
    return services["agent"][1].rstrip("/")


def _running(client, image, sname, **extra):
    body = {"image": image, "name": sname, "maxWaitSeconds": 40,
            "config": {"resources": {"cpu": "0.25", "mem": "64m"}}}
    body.update(extra)
    r = client.post("/session", body, timeout=60)
    assert r.status_code == 201, r.text
    if r.json()["status"] != "RUNNING":
        info = client.get(f"/session/{sname}").json()
        client.delete(f"/session/{sname}")
        pytest.fail(f"not RUNNING: {info.get('status')} ({info.get('statusInfo')})")
    return okj(client.get(f"/session/{sname}"))


def _in_kernel(stack, agent_url, kid, cmd):
    """Run cmd in kernel kid through its agent, as the registry does: (exit code, stdout)."""
    r = svc_signer.call(stack, "registry", "POST", f"{agent_url}/v1/kernels/{kid}/execute",
                        json={"mode": "batch", "options": {"exec": cmd}}, timeout=60)
    assert r.status_code == 200, r.text
    res = r.json()["result"]
    return res["exitCode"], "".join(t for k, t in res["console"] if k == "stdout")


def _restart(client, sname):
    before = okj(client.get(f"/session/{sname}"))
    assert okj(client.patch(f"/session/{sname}"))["status"] in ("RESTARTING", "RUNNING")
    wait_until(lambda: okj(client.get(f"/session/{sname}"))["status"] == "RUNNING",
               timeout=60, message="RUNNING again after the restart")
    after = okj(client.get(f"/session/{sname}"))
    assert [k["id"] for k in after["kernels"]] == [k["id"] for k in before["kernels"]]
    return after


def _write_files(stack, agent_url, kernels):
    write = ("echo KEEP-{i} > /home/work/keep.txt && mkdir -p /home/work/dir && "
             "echo deep > /home/work/dir/f && echo gone > /root/rootfs.txt && sync")
    for i, k in enumerate(kernels):
        assert _in_kernel(stack, agent_url, k["id"], write.format(i=i))[0] == 0


def test_restart_keeps_the_work_directory(stack, agent_url, client, small_image):
    sname = f"rs-one-{TAG}"
    try:
        info = _running(client, small_image, sname)
        kernels = info["kernels"]
        assert len(kernels) == 1
        _write_files(stack, agent_url, kernels)
        info = _restart(client, sname)
        kid = info["kernels"][0]["id"]
        code, out = _in_kernel(stack, agent_url, kid,
                               "cat /home/work/keep.txt /home/work/dir/f; "
                               "test -e /root/rootfs.txt && echo ROOTFS-KEPT; true")
        assert code == 0
        assert out.split() == ["KEEP-0", "deep"], out
        # also through the public API and the files API (the main kernel's home)
        r = okj(client.post(f"/session/{sname}", {"mode": "query", "code": "cat /home/work/keep.txt"},
                            timeout=80))
        assert ["stdout", "KEEP-0\n"] in r["result"]["console"], r
        files = client.get(f"/session/{sname}/download_single", params={"file": "keep.txt"})
        assert files.status_code == 200 and files.content == b"KEEP-0\n", files.text
        # a second restart keeps it too, and files written after the first
        assert _in_kernel(stack, agent_url, kid, "echo second > /home/work/two.txt")[0] == 0
        _restart(client, sname)
        code, out = _in_kernel(stack, agent_url, kid, "cat /home/work/keep.txt /home/work/two.txt")
        assert code == 0 and out.split() == ["KEEP-0", "second"], out
    finally:
        client.delete(f"/session/{sname}")


def test_restart_keeps_each_kernels_work_directory(stack, agent_url, client, small_image):
    sname = f"rs-two-{TAG}"
    try:
        info = _running(client, small_image, sname, cluster_size=2, cluster_mode="single-node")
        kernels = info["kernels"]
        assert len(kernels) == 2, kernels
        _write_files(stack, agent_url, kernels)
        info = _restart(client, sname)
        for i, k in enumerate(info["kernels"]):
            code, out = _in_kernel(stack, agent_url, k["id"],
                                   "cat /home/work/keep.txt; test -e /root/rootfs.txt || echo fresh-root")
            assert code == 0 and out.split() == [f"KEEP-{i}", "fresh-root"], (k, out)
    finally:
        client.delete(f"/session/{sname}")


def test_destroy_after_a_restart_leaves_no_kept_disk(stack, agent_url, client, small_image):
    sname = f"rs-end-{TAG}"
    kernels_dir = os.path.join(stack["TESSERA_STATE_DIR"], "agent", "kernels")
    info = _running(client, small_image, sname)
    kid = info["kernels"][0]["id"]
    _restart(client, sname)
    assert os.path.isdir(os.path.join(kernels_dir, kid, "disk", "home"))
    client.delete(f"/session/{sname}")
    wait_until(lambda: not os.path.exists(os.path.join(kernels_dir, kid)), timeout=60,
               message="the kernel dir removed")
    assert not os.path.exists(os.path.join(kernels_dir, f".kept-{kid}"))


def test_execute_without_a_mode_is_refused(client, small_image):
    sname = f"rs-exec-{TAG}"
    try:
        _running(client, small_image, sname)
        for body in ({}, {"code": "echo hi"}, {"mode": None, "code": "echo hi"},
                     {"mode": 1, "code": "echo hi"}, {"mode": "nope", "code": "echo hi"}):
            p = problem(client.post(f"/session/{sname}", body, timeout=30), 400)
            assert "mode" in p["msg"], (body, p)
    finally:
        client.delete(f"/session/{sname}")
