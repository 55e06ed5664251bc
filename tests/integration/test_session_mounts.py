"""vfolder mounts in sessions (docs/sessions.md "Mounts", docs/vfolders.md
"Mount resolution" and "Trash"), black-box through the signed gateway with
real containers (the demo busybox image, the real agent and runc):

- a folder with an uploaded file is mounted at /home/work/<name>, another at
  its mount_map path; a command in the session reads the file and writes a
  new one, which the vfolder API then serves; a restart keeps the mounts;
- a folder shared read-only (invitation ro) is mounted read-only: a write in
  the container fails and nothing lands in the folder;
- a mounted folder cannot be trashed (409 naming the session) until the
  session ends; no bind mount of the folder is left on the host;
- refusals with a precise reason and the folder named: another user's
  folder, an unknown folder, bad mount paths, two folders on one path, a
  folder named twice, tessera-vfolder not answering (503, not a hang);
- `tessera session create --mount`: usage errors, and a round trip.
"""
import os
import signal
import time
import urllib.parse
import uuid

import pytest
import requests

import svc_signer

from conftest import parse_services_file, wait_until
from test_cli import base_env, run
from test_sessions_api import _new_user, admin, gw, image, image_registered, okj, problem  # noqa: F401

TAG = uuid.uuid4().hex[:6]
TUS = {"Tus-Resumable": "1.0.0"}
_n = [0]


def fresh(prefix):
    _n[0] += 1
    return f"{prefix}-{TAG}-{_n[0]}"


def q(name):
    return urllib.parse.quote(name, safe="")


@pytest.fixture(scope="module")
def alice(admin, gw):
    return _new_user(admin, gw, "mnt-a")


@pytest.fixture(scope="module")
def bob(admin, gw):
    return _new_user(admin, gw, "mnt-b")


def new_folder(client):
    return okj(client.post("/folders", {"name": fresh("vf")}), 201)


def upload(client, folder, path, data):
    up = okj(client.post(f"/folders/{q(folder['name'])}/request-upload", {"path": path, "size": len(data)}))
    h = dict(TUS, **{"Upload-Offset": "0", "Content-Type": "application/offset+octet-stream"})
    r = requests.patch(up["url"], params={"token": up["token"]}, headers=h, data=data, timeout=60)
    assert r.status_code == 204, r.text


def download(client, folder, path):
    d = okj(client.post(f"/folders/{q(folder['name'])}/request-download", {"file": path}))
    r = requests.get(d["url"], params={"token": d["token"]}, timeout=60)
    assert r.status_code == 200, r.text
    return r.content


def files(client, folder, path=""):
    return {i["name"] for i in okj(client.get(f"/folders/{q(folder['name'])}/files", params={"path": path}))["items"]}


def create(client, image, sname, config, wait=True):
    body = {"image": image, "name": sname, "config": dict({"resources": {"cpu": "1", "mem": "256m"}}, **config)}
    if wait:
        body["maxWaitSeconds"] = 30
    else:
        body["enqueueOnly"] = True
    return client.post("/session", body, timeout=45)


def run_in(client, sname, cmd):
    r = okj(client.post(f"/session/{sname}", {"mode": "batch", "options": {"exec": cmd}}, timeout=80))
    res = r["result"]
    out = "".join(t for k, t in res["console"] if k == "stdout")
    err = "".join(t for k, t in res["console"] if k == "stderr")
    return res["exitCode"], out, err


def destroy_and_wait(client, sname):
    client.delete(f"/session/{sname}")
    wait_until(lambda: client.get(f"/session/{sname}").json().get("status") in ("TERMINATED", "CANCELLED", "ERROR")
               or client.get(f"/session/{sname}").status_code == 404,
               timeout=30, message=f"session {sname} ended")


def running(client, image, sname, config):
    body = okj(create(client, image, sname, config), 201)
    if body["status"] != "RUNNING":
        info = client.get(f"/session/{sname}").json()
        client.delete(f"/session/{sname}")
        pytest.fail(f"{sname} did not reach RUNNING: {body['status']} ({info.get('statusInfo')})")


def host_mounts_of(folder_id):
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        return [line for line in f if folder_id in line]


# ---- the happy path, with a real container -----------------------------------------------


def test_mount_read_write_restart_and_delete_guard(alice, image_registered):
    a, _ = alice
    data, other = new_folder(a), new_folder(a)
    upload(a, data, "in.txt", b"hello from the vfolder\n")
    sname = fresh("mnt")
    mapped = "/home/work/sub/second"
    running(a, image_registered, sname, {"mounts": [data["name"], other["name"]],
                                         "mount_map": {other["name"]: mapped}})
    try:
        home = f"/home/work/{data['name']}"
        code, out, err = run_in(a, sname, f"cat {home}/in.txt && echo written > {home}/out.txt"
                                          f" && echo second > {mapped}/s.txt")
        assert code == 0, err
        assert out == "hello from the vfolder\n"
        assert download(a, data, "out.txt") == b"written\n"
        assert download(a, other, "s.txt") == b"second\n"
        assert "s.txt" not in files(a, data)
        # the mounted folder cannot go to the trash while the session lives
        p = problem(a.delete(f"/folders/{q(data['name'])}"), 409)
        assert sname in p["msg"] and p["sessions"] == [sname], p
        # a restart keeps the mounts
        okj(a.patch(f"/session/{sname}"))
        wait_until(lambda: a.get(f"/session/{sname}").json()["status"] == "RUNNING", timeout=30,
                   message="RUNNING again after restart")
        code, out, err = run_in(a, sname, f"cat {home}/out.txt {mapped}/s.txt")
        assert (code, out) == (0, "written\nsecond\n"), err
    finally:
        destroy_and_wait(a, sname)
    # ended: no bind mount of the folders left on the host, and the delete goes through
    wait_until(lambda: not host_mounts_of(data["id"]) and not host_mounts_of(other["id"]), timeout=10,
               message="no mount of the folders left")
    r = a.delete(f"/folders/{q(data['name'])}")
    assert r.status_code == 204, r.text


def test_read_only_share_is_mounted_read_only(alice, bob, image_registered):
    (a, _), (b, bu) = alice, bob
    f = new_folder(a)
    upload(a, f, "shared.txt", b"read me\n")
    inv = okj(a.post(f"/folders/{q(f['name'])}/invite", {"perm": "ro", "emails": [bu["email"]]}), 201)
    okj(b.post("/folders/invitations/accept", {"inv_id": inv["invited_ids"][0]}))
    sname = fresh("ro")
    running(b, image_registered, sname, {"mounts": [f["name"]]})
    try:
        home = f"/home/work/{f['name']}"
        code, out, _ = run_in(b, sname, f"cat {home}/shared.txt")
        assert (code, out) == (0, "read me\n")
        code, _, err = run_in(b, sname, f"echo x > {home}/new.txt")
        assert code != 0 and "Read-only file system" in err, err
        assert files(a, f) == {"shared.txt"}
    finally:
        destroy_and_wait(b, sname)


# ---- refusals ------------------------------------------------------------------------------


def refused(client, image, config, status, *texts, folder=None):
    sname = fresh("bad")
    p = problem(create(client, image, sname, config, wait=False), status)
    for t in texts:
        assert t in p["msg"], p
    if folder is not None:
        assert p.get("vfolder") == folder, p
    # nothing was created
    assert client.get(f"/session/{sname}").status_code == 404
    return p


def test_refusals_name_the_folder_and_the_reason(alice, bob, image_registered):
    (a, _), (b, _) = alice, bob
    f, g = new_folder(a), new_folder(a)
    img = image_registered
    # another user's folder is not visible to bob; an unknown folder neither
    refused(b, img, {"mounts": [f["name"]]}, 404, f["name"], folder=f["name"])
    refused(a, img, {"mounts": [f["name"], f"nope-{TAG}"]}, 404, f"nope-{TAG}", folder=f"nope-{TAG}")
    # bad mount paths
    for path, why in (("/etc", "under /home/work/"), ("../escape", ".."), ("x/../../y", ".."),
                      ("/home/work/", "1 to 1024"), (".ssh", "reserved"), ("/home/work/.bashrc", "reserved"),
                      ("a//b", "empty")):
        refused(a, img, {"mounts": [f["name"]], "mount_map": {f["name"]: path}}, 400, f"mount_map[{f['name']}]",
                why, folder=f["name"])
    # two folders on one path, or one inside the other
    refused(a, img, {"mounts": [f["name"], g["name"]], "mount_map": {f["name"]: "x", g["name"]: "/home/work/x"}},
            400, "would both mount at /home/work/x", folder=g["name"])
    refused(a, img, {"mounts": [f["name"], g["name"]], "mount_map": {g["name"]: f"{f['name']}/in"}},
            400, "one inside the other", folder=g["name"])
    # the body's own shape
    refused(a, img, {"mounts": [f["name"], f["name"]]}, 400, f"vfolder {f['name']} is named twice")
    refused(a, img, {"mounts": f["name"]}, 400, "config.mounts: must be a list")
    refused(a, img, {"mounts": [""]}, 400, "config.mounts[0]")
    refused(a, img, {"mounts": [7]}, 400, "config.mounts[0]")
    refused(a, img, {"mounts": [f["name"]], "mount_map": {g["name"]: "x"}}, 400,
            f"vfolder {g['name']} is not in config.mounts")
    refused(a, img, {"mounts": [f["name"]], "mount_map": {f["name"]: 5}}, 400, "must be a path")
    refused(a, img, {"mounts": [f["name"]], "mount_map": ["x"]}, 400, "config.mount_map: must be an object")


def _pid_of(stack, service):
    return parse_services_file(os.path.join(stack["TESSERA_STATE_DIR"], "services"))[service][0]


def test_vfolder_down_is_a_503_not_a_hang(stack, alice, image_registered):
    a, _ = alice
    f = new_folder(a)
    pid = _pid_of(stack, "vfolder")
    os.kill(pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        p = refused(a, image_registered, {"mounts": [f["name"]]}, 503, "tessera-vfolder")
        assert time.monotonic() - t0 < 20, p
    finally:
        os.kill(pid, signal.SIGCONT)
    # and it works again once tessera-vfolder answers
    sname = fresh("back")
    okj(create(a, image_registered, sname, {"mounts": [f["name"]]}, wait=False), 201)
    destroy_and_wait(a, sname)


def test_registry_down_refuses_the_delete_with_503(stack, alice):
    a, _ = alice
    f = new_folder(a)
    pid = _pid_of(stack, "registry")
    os.kill(pid, signal.SIGSTOP)
    try:
        # straight to tessera-vfolder: the gateway's own call to the registry is not the point here
        urls = parse_services_file(os.path.join(stack["TESSERA_STATE_DIR"], "services"))
        r = svc_signer.call(stack, "gateway", "DELETE", urls["vfolder"][1] + f"/v1/folders/{q(f['name'])}",
                            headers={"X-Tessera-Caller": alice[1]["id"],
                                     "X-Tessera-Caller-Access-Key": a.access_key}, timeout=30)
        p = problem(r, 503)
        assert "tessera-registry" in p["msg"], p
    finally:
        os.kill(pid, signal.SIGCONT)
    assert okj(a.get(f"/folders/{q(f['name'])}"))["status"] == "ready"


# ---- the CLI ---------------------------------------------------------------------------------


@pytest.mark.parametrize("arg,text", [("", "bad --mount"), (":x", "bad --mount"), ("f:", "bad --mount")])
def test_cli_mount_usage_errors(bin_dir, tmp_path, arg, text):
    env = base_env(tmp_path, TESSERA_ACCESS_KEY="A" * 20, TESSERA_SECRET_KEY="s" * 40,
                   TESSERA_GATEWAY_URL="http://127.0.0.1:9")
    r = run(bin_dir, env, "session", "create", "img", "--mount", arg)
    assert r.returncode == 2 and text in r.stderr, r.stderr
    r = run(bin_dir, env, "session", "create", "img", "-m", "f", "--mount", "f:/home/work/x")
    assert r.returncode == 2 and "'f' is named twice" in r.stderr, r.stderr
    assert "--mount NAME[:PATH]" in run(bin_dir, env, "session", "create", "--help").stdout


def test_cli_mount_round_trip(bin_dir, stack, alice, image_registered, tmp_path):
    a, _ = alice
    f = new_folder(a)
    env = base_env(tmp_path, TESSERA_GATEWAY_URL=stack["TESSERA_GATEWAY_URL"],
                   TESSERA_ACCESS_KEY=a.access_key, TESSERA_SECRET_KEY=a.secret_key)
    sname = fresh("cli")
    r = run(bin_dir, env, "session", "create", image_registered, "--name", sname, "--mount",
            f"{f['name']}:data/in", "-r", "cpu=1,mem=256m", "--max-wait", "30", timeout=60)
    try:
        assert r.returncode == 0, r.stderr
        code, out, err = run_in(a, sname, "echo via-cli > /home/work/data/in/c.txt && echo ok")
        assert (code, out) == (0, "ok\n"), err
        assert download(a, f, "c.txt") == b"via-cli\n"
    finally:
        destroy_and_wait(a, sname)
    r = run(bin_dir, env, "session", "create", image_registered, "--mount", f"nope-{TAG}", "--enqueue-only")
    assert r.returncode == 1 and f"nope-{TAG}" in r.stderr and "404" in r.stderr, r.stderr


def test_destroy_then_delete_the_folder_at_once(alice, image_registered):
    """Backend.AI's everyday flow: destroy a session, then delete the folder it
    mounted, without waiting for the container to be gone (the session is
    TERMINATING, which no longer holds the folder)."""
    a, _ = alice
    data = new_folder(a)
    sname = fresh("mntdel")
    running(a, image_registered, sname, {"mounts": [data["name"]]})
    info = okj(a.delete(f"/session/{sname}"))
    assert info["status"] in ("TERMINATING", "TERMINATED"), info
    r = a.delete(f"/folders/{q(data['name'])}")
    assert r.status_code == 204, r.text
    wait_until(lambda: a.get(f"/session/{info['sessionUuid']}").json().get("status") == "TERMINATED",
               timeout=30, message="the session ends")
