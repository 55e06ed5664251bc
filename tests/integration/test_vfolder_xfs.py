"""tessera-vfolder on a real XFS file system with project quotas (issue 7;
docs/vfolders.md, "Volumes" and "Quotas").

A 320 MiB sparse image is formatted with mkfs.xfs and loop-mounted with
`-o prjquota`; one extra tessera-vfolder process (a replica of the stack's,
same PostgreSQL, tessera-auth and bus) serves the stack's "local" volume and
an "xfs" volume on that mount. Then: the volume reports xfs and its quota
support, a folder created with a quota gets an XFS project (inherit flag,
hard limit) and one without gets none, uploads land in the project, an upload
past the quota is refused and leaves nothing behind, a write from outside the
API (as a session's bind mount does) stops at the quota with EDQUOT/ENOSPC,
restore keeps the project and purge removes it.

Needs root, mkfs.xfs and xfs_quota (xfsprogs; `make deps`), a free loop
device and a kernel with XFS: skipped otherwise, with the reason. The mount
and the loop device go away at teardown, also when a test fails.
"""
import errno
import fcntl
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.parse
import uuid

import pytest
import requests

import svc_signer

from conftest import BIN_DIR, wait_until

TAG = uuid.uuid4().hex[:8]
TUS = {"Tus-Resumable": "1.0.0"}
MIB = 1 << 20
QUOTA = 16 * MIB
IMAGE_SIZE = 320 * MIB  # mkfs.xfs refuses file systems under 300 MB

# struct fsxattr (linux/fs.h): xflags, extsize, nextents, projid, cowextsize, pad[8]
FSXATTR = struct.Struct("=IIIII8s")
FS_IOC_FSGETXATTR = 0x801C581F  # _IOR('X', 31, struct fsxattr)
FS_IOC_FSSETXATTR = 0x401C5820  # _IOW('X', 32, struct fsxattr)
FS_XFLAG_PROJINHERIT = 0x00000200

_n = [0]


def fresh(prefix):
    _n[0] += 1
    return f"{prefix}-{TAG}-{_n[0]}"


def ok(r, *codes):
    assert r.status_code in (codes or (200, 201)), f"{r.request.method} {r.url}: {r.status_code} {r.text}"
    return r.json() if r.content else None


def _run(*argv, timeout=60):
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)


def project_of(path):
    """(project id, inherit flag) of a file or directory (FS_IOC_FSGETXATTR)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        buf = fcntl.ioctl(fd, FS_IOC_FSGETXATTR, bytes(FSXATTR.size))
    finally:
        os.close(fd)
    xflags, _, _, projid, _, _ = FSXATTR.unpack(buf)
    return projid, bool(xflags & FS_XFLAG_PROJINHERIT)


def set_project(path, projid):
    """Give a directory a project id and the inherit flag (as a prjquota mount left it)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        xflags, extsize, nextents, _, cow, pad = FSXATTR.unpack(
            fcntl.ioctl(fd, FS_IOC_FSGETXATTR, bytes(FSXATTR.size)))
        fcntl.ioctl(fd, FS_IOC_FSSETXATTR,
                    FSXATTR.pack(xflags | FS_XFLAG_PROJINHERIT, extsize, nextents, projid, cow, pad))
    finally:
        os.close(fd)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class XfsMount:
    """A loop-mounted XFS image with project quotas; torn down by close()."""

    def __init__(self, prjquota):
        self.prjquota = prjquota
        self.dir = tempfile.mkdtemp(prefix="tessera-xfs-")
        self.image = os.path.join(self.dir, "xfs.img")
        self.mnt = os.path.join(self.dir, "mnt")
        self.loop = None
        self.mounted = False

    def open(self):
        """Create, format and mount; returns None or why it is not possible."""
        if os.geteuid() != 0:
            return "needs root (losetup, mount)"
        for tool in ("mkfs.xfs", "xfs_quota", "losetup", "mount", "umount"):
            if not shutil.which(tool):
                return f"{tool} is missing (make deps installs xfsprogs)"
        os.makedirs(self.mnt)
        with open(self.image, "wb") as f:
            f.truncate(IMAGE_SIZE)
        r = _run("mkfs.xfs", "-q", self.image)
        if r.returncode != 0:
            return f"mkfs.xfs failed: {r.stderr.strip()}"
        r = _run("losetup", "--find", "--show", self.image)
        if r.returncode != 0:
            return f"no loop device (losetup: {r.stderr.strip()})"
        self.loop = r.stdout.strip()
        opts = ["-o", "prjquota"] if self.prjquota else []
        r = _run("mount", "-t", "xfs", *opts, self.loop, self.mnt)
        if r.returncode == 0:
            self.mounted = True
            return None
        why = f"mount -t xfs {' '.join(opts)} {self.loop} failed: {r.stderr.strip()}"
        if self.prjquota and _run("mount", "-t", "xfs", self.loop, self.mnt).returncode == 0:
            self.mounted = True  # for close()
            why = "this kernel's XFS has no quota support (CONFIG_XFS_QUOTA): plain mounts work, prjquota not"
        return why

    def report(self):
        """{project id: (used KiB, hard limit KiB)} from xfs_quota's report."""
        r = _run("xfs_quota", "-x", "-c", "report -p -n -N -b", self.mnt)
        assert r.returncode == 0, r.stderr
        out = {}
        for line in r.stdout.splitlines():
            f = line.split()
            if len(f) >= 4 and f[0].startswith("#"):
                out[int(f[0][1:])] = (int(f[1]), int(f[3]))
        return out

    def close(self):
        problems = []
        if self.mounted:
            for _ in range(50):
                r = _run("umount", self.mnt)
                if r.returncode == 0:
                    self.mounted = False
                    break
                time.sleep(0.1)
            if self.mounted:
                problems.append(f"umount {self.mnt}: {r.stderr.strip()}")
                if _run("umount", "-l", self.mnt).returncode == 0:
                    self.mounted = False
        if self.loop:
            r = _run("losetup", "-d", self.loop)
            if r.returncode != 0:
                problems.append(f"losetup -d {self.loop}: {r.stderr.strip()}")
            self.loop = None
        if not self.mounted:
            shutil.rmtree(self.dir, ignore_errors=True)
        return problems


class Replica:
    """One more tessera-vfolder against the stack's PostgreSQL, auth and bus,
    with the stack's local volume and the XFS one."""

    def __init__(self, stack, xfs_volume, workdir):
        self.stack = stack
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = os.path.join(workdir, "vfolder-xfs.log")
        state = stack["TESSERA_STATE_DIR"]
        self.local = os.path.join(state, "vfolder", "volumes", "local")
        self.xfs = xfs_volume
        env = {k: v for k, v in os.environ.items() if not k.startswith("TESSERA_")}
        env.update({
            "TESSERA_HTTP_LISTEN": f"127.0.0.1:{self.port}",
            "TESSERA_SERVICE_INSTANCE": f"xfs-test-{TAG}",
            "TESSERA_PG_DSN": stack["TESSERA_PG_DSN"],
            "TESSERA_AUTH_URL": stack["TESSERA_AUTH_URL"],
            "TESSERA_REGISTRY_URL": stack["TESSERA_REGISTRY_URL"],
            "TESSERA_VFOLDER_STATE_DIR": workdir,
            "TESSERA_VFOLDER_VOLUMES": f"local:{self.local},xfs:{self.xfs}",
            "TESSERA_VFOLDER_DEFAULT_HOST": "local",
            # the stack's vfolder key: the replica calls auth and the registry as tessera-vfolder
            "TESSERA_SERVICE_AUTH_KEY_FILE": os.path.join(stack["TESSERA_SERVICE_KEYS_DIR"], "vfolder.key"),
            "TESSERA_SERVICE_AUTH_TRUST_FILE": stack["TESSERA_SERVICE_TRUST_FILE"],
        })
        if "KAFKA_BOOTSTRAP" in stack:
            env["TESSERA_KAFKA_BOOTSTRAP"] = stack["KAFKA_BOOTSTRAP"]
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([os.path.join(BIN_DIR, "tessera-vfolder")], env=env,
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)

    def ready(self):
        if self.proc.poll() is not None:
            pytest.fail(f"tessera-vfolder (xfs replica) exited {self.proc.returncode}:\n{self.tail()}")
        return requests.get(self.url + "/readyz", timeout=2).status_code == 200

    def tail(self):
        with open(self.log_path, "rb") as f:
            return f.read()[-4000:].decode(errors="replace")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
        self.log.close()


class Caller:
    def __init__(self, replica, user_id, ak):
        self.r, self.user_id, self.ak = replica, user_id, ak

    def vf(self, method, path, json=None):
        h = {"X-Tessera-Caller": self.user_id, "X-Tessera-Caller-Access-Key": self.ak}
        return svc_signer.call(self.r.stack, "gateway", method,
                               self.r.url + "/v1" + urllib.parse.quote(path, safe="/%:@"),
                               json=json, headers=h, timeout=60)


class World:
    def __init__(self, stack, mount, replica):
        self.stack, self.mount, self.replica = stack, mount, replica
        ak = stack["TESSERA_ADMIN_ACCESS_KEY"]
        cred = svc_signer.call(stack, "gateway", "GET", f"{stack['TESSERA_AUTH_URL']}/v1/credentials/{ak}",
                               timeout=10).json()
        self.super = Caller(replica, cred["user"]["id"], ak)
        name = fresh("vfx")
        u = ok(self.auth("POST", "/admin/users", {"email": f"{name}@example.com", "username": name,
                                                  "password": "vfolder-Passw0rd", "role": "user",
                                                  "domain_name": "default"}))
        k = ok(self.auth("POST", "/admin/keypairs", {"user_id": u["id"]}))
        self.user = Caller(replica, u["id"], k["access_key"])

    def auth(self, method, path, json=None):
        h = {"X-Tessera-Caller": self.super.user_id, "X-Tessera-Caller-Access-Key": self.super.ak}
        return svc_signer.call(self.stack, "gateway", method, self.stack["TESSERA_AUTH_URL"] + "/v1" + path,
                               json=json, headers=h, timeout=10)

    def disk(self, folder):
        i = folder["id"]
        return os.path.join(self.replica.xfs, i[:2], i[2:4], i)

    def trash(self, folder):
        return os.path.join(self.replica.xfs, ".trash", folder["id"])

    def staging(self):
        d = os.path.join(self.replica.xfs, ".tessera-uploads")
        return sorted(os.listdir(d)) if os.path.isdir(d) else []


def _world(stack, prjquota):
    if "TESSERA_ADMIN_ACCESS_KEY" not in stack:
        pytest.skip("no bootstrap superadmin")
    mount = XfsMount(prjquota)
    replica = None
    try:
        why = mount.open()
        if why:
            pytest.skip(f"no XFS{' with project quotas' if prjquota else ''} here: {why}")
        replica = Replica(stack, os.path.join(mount.mnt, "vf"), mount.dir)
        wait_until(replica.ready, timeout=30, message="the xfs tessera-vfolder replica's /readyz")
        yield World(stack, mount, replica)
    finally:
        if replica:
            replica.stop()
        problems = mount.close()
        if problems:
            pytest.fail("XFS teardown: " + "; ".join(problems), pytrace=False)


@pytest.fixture(scope="module")
def world(stack):
    """XFS mounted with prjquota."""
    yield from _world(stack, True)


@pytest.fixture(scope="module")
def plain(stack):
    """XFS mounted without quotas."""
    yield from _world(stack, False)


def request_upload(caller, folder, path, size):
    return caller.vf("POST", f"/folders/{folder['id']}/request-upload", {"path": path, "size": size})


def tus_patch(up, offset, data):
    h = dict(TUS, **{"Upload-Offset": str(offset), "Content-Type": "application/offset+octet-stream"})
    return requests.patch(up["url"], params={"token": up["token"]}, headers=h, data=data, timeout=120)


def upload(caller, folder, path, data):
    up = ok(request_upload(caller, folder, path, len(data)))
    r = tus_patch(up, 0, data)
    return up, r


def dd(path, mib):
    """Write mib MiB of zeros from outside the API (as a session would)."""
    return _run("dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={mib}", "conv=fsync")


# ---- XFS without prjquota: no fence, the accounting alone ----------------------------------

def test_plain_xfs_is_not_fenced_but_accounted(plain):
    vols = {v["name"]: v for v in ok(plain.super.vf("GET", "/folders/_/volumes"))["volumes"]}
    assert vols["xfs"]["fs_type"] == "xfs" and vols["xfs"]["xfs_quota"] is False, vols["xfs"]
    hosts = ok(plain.user.vf("GET", "/folders/_/hosts"))["volume_info"]
    assert hosts["xfs"]["backend"] == "vfs" and "quota" not in hosts["xfs"]["capabilities"], hosts
    f = ok(plain.user.vf("POST", "/folders", {"name": fresh("q"), "host": "xfs", "quota": QUOTA}), 201)
    assert project_of(plain.disk(f)) == (0, False)
    data = os.urandom(4 * MIB)
    _, r = upload(plain.user, f, "a.bin", data)
    assert r.status_code == 204, r.text
    with open(os.path.join(plain.disk(f), "a.bin"), "rb") as fh:
        assert fh.read() == data
    r = request_upload(plain.user, f, "big.bin", QUOTA)
    assert r.status_code == 412 and r.json()["type"].endswith("/quota-exceeded"), r.text
    assert sorted(os.listdir(plain.disk(f))) == ["a.bin"] and plain.staging() == []
    # Nothing stops a session's own writes here (docs/vfolders.md says so).
    r = dd(os.path.join(plain.disk(f), "from-session.bin"), QUOTA // MIB + 4)
    assert r.returncode == 0, r.stderr
    assert plain.user.vf("DELETE", f"/folders/{f['id']}").status_code == 204
    ok(plain.user.vf("POST", "/folders/purge", {"vfolder_id": f["id"]}), 200, 204)
    assert not os.path.exists(plain.trash(f)) and not os.path.exists(plain.disk(f))


def test_plain_xfs_upload_into_a_folder_that_kept_its_project(plain):
    """A folder made a project under prjquota keeps it when the volume is
    mounted without: XFS still refuses renames into it from outside the
    project (EXDEV), so an upload's staged file must join the project."""
    f = ok(plain.user.vf("POST", "/folders", {"name": fresh("kept"), "host": "xfs"}), 201)
    set_project(plain.disk(f), 4242)
    os.mkdir(os.path.join(plain.disk(f), "sub"))
    data = os.urandom(MIB)
    for path in ("a.bin", "sub/b.bin"):
        _, r = upload(plain.user, f, path, data)
        assert r.status_code == 204, r.text
        assert project_of(os.path.join(plain.disk(f), path))[0] == 4242
    assert plain.staging() == []


# ---- XFS with prjquota; in order: one folder goes through its life -------------------------

@pytest.fixture(scope="module")
def folder(world):
    return ok(world.user.vf("POST", "/folders", {"name": fresh("q"), "host": "xfs", "quota": QUOTA}), 201)


def test_volume_reports_xfs_quota(world):
    vols = {v["name"]: v for v in ok(world.super.vf("GET", "/folders/_/volumes"))["volumes"]}
    assert vols["xfs"]["fs_type"] == "xfs" and vols["xfs"]["xfs_quota"] is True, vols["xfs"]
    assert vols["xfs"]["path"] == world.replica.xfs
    assert 250 * MIB < vols["xfs"]["capacity_bytes"] <= IMAGE_SIZE
    assert vols["local"]["fs_type"] != "xfs" or vols["local"]["xfs_quota"] is False
    hosts = ok(world.user.vf("GET", "/folders/_/hosts"))["volume_info"]
    assert hosts["xfs"]["backend"] == "xfs" and "quota" in hosts["xfs"]["capabilities"], hosts
    assert world.user.vf("GET", "/folders/_/volumes").status_code == 403


def test_folder_with_quota_gets_a_project(world, folder):
    d = world.disk(folder)
    projid, inherit = project_of(d)
    assert projid != 0 and inherit
    assert world.mount.report().get(projid, (0, 0))[1] == QUOTA // 1024
    # A folder without a quota of its own gets no project (only the accounting applies).
    plain = ok(world.user.vf("POST", "/folders", {"name": fresh("plain"), "host": "xfs"}), 201)
    assert project_of(world.disk(plain)) == (0, False)
    # Two folders never share a project, whatever their ids.
    other = ok(world.user.vf("POST", "/folders", {"name": fresh("q2"), "host": "xfs", "quota": MIB}), 201)
    assert project_of(world.disk(other))[0] not in (0, projid)
    assert world.mount.report()[project_of(world.disk(other))[0]][1] == 1024


def test_upload_lands_in_the_project(world, folder):
    data = os.urandom(4 * MIB)
    _, r = upload(world.user, folder, "sub/a.bin", data)
    assert r.status_code == 204, r.text
    path = os.path.join(world.disk(folder), "sub", "a.bin")
    with open(path, "rb") as f:
        assert f.read() == data
    projid = project_of(world.disk(folder))[0]
    assert project_of(path)[0] == projid
    assert world.mount.report()[projid][0] >= 4 * 1024
    assert world.staging() == []
    # Replacing the file keeps it in the project too.
    _, r = upload(world.user, folder, "sub/a.bin", data[:MIB])
    assert r.status_code == 204, r.text
    assert os.path.getsize(path) == MIB and project_of(path)[0] == projid


def test_upload_past_the_quota_is_refused(world, folder):
    before = sorted(os.listdir(world.disk(folder)))
    r = request_upload(world.user, folder, "big.bin", QUOTA)
    assert r.status_code == 412 and r.json()["type"].endswith("/quota-exceeded"), r.text
    assert sorted(os.listdir(world.disk(folder))) == before
    assert world.staging() == []
    info = ok(world.user.vf("GET", f"/folders/{folder['id']}"))
    assert info["used_bytes"] == MIB, info


def test_write_from_outside_stops_at_the_quota(world, folder):
    """A session writes through its bind mount, past our accounting: XFS stops it."""
    path = os.path.join(world.disk(folder), "from-session.bin")
    r = dd(path, 32)
    assert r.returncode != 0, "dd wrote 32 MiB into a folder with a 16 MiB quota"
    assert "Disk quota exceeded" in r.stderr or "No space left on device" in r.stderr, r.stderr
    projid = project_of(world.disk(folder))[0]
    assert project_of(path)[0] == projid
    used, hard = world.mount.report()[projid]
    assert used <= hard == QUOTA // 1024
    assert os.path.getsize(path) <= QUOTA
    # Python's own write gets the errno itself.
    with pytest.raises(OSError) as exc:
        with open(os.path.join(world.disk(folder), "more.bin"), "wb") as f:
            for _ in range(32):
                f.write(b"\0" * MIB)
                f.flush()
                os.fsync(f.fileno())
    assert exc.value.errno in (errno.EDQUOT, errno.ENOSPC)


def test_upload_the_file_system_refuses_leaves_nothing(world, folder):
    """Our accounting allows it (the session's bytes are not accounted), XFS
    does not: a clear 507, no partial file in the folder, and terminating
    the upload frees what was staged."""
    projid = project_of(world.disk(folder))[0]
    used_before = world.mount.report()[projid][0]
    up = ok(request_upload(world.user, folder, "late.bin", 4 * MIB))
    r = tus_patch(up, 0, os.urandom(4 * MIB))
    assert r.status_code == 507 and r.json()["type"].endswith("/insufficient-storage"), r.text
    assert not os.path.exists(os.path.join(world.disk(folder), "late.bin"))
    r = requests.delete(up["url"], params={"token": up["token"]}, headers=TUS, timeout=30)
    assert r.status_code == 204, r.text
    assert world.staging() == []
    assert world.mount.report()[projid][0] <= used_before
    # Room made (the session's file removed): the same upload goes through.
    os.unlink(os.path.join(world.disk(folder), "from-session.bin"))
    os.unlink(os.path.join(world.disk(folder), "more.bin"))
    _, r = upload(world.user, folder, "late.bin", os.urandom(4 * MIB))
    assert r.status_code == 204, r.text


def test_trash_restore_keep_the_project_and_purge_removes_it(world, folder):
    projid = project_of(world.disk(folder))[0]
    assert world.user.vf("DELETE", f"/folders/{folder['id']}").status_code == 204
    assert project_of(world.trash(folder)) == (projid, True)
    assert world.mount.report()[projid][1] == QUOTA // 1024  # trashed folders keep counting
    ok(world.user.vf("POST", "/folders/restore-from-trash", {"vfolder_id": folder["id"]}), 200, 204)
    assert project_of(world.disk(folder)) == (projid, True)
    assert world.user.vf("DELETE", f"/folders/{folder['id']}").status_code == 204
    ok(world.user.vf("POST", "/folders/purge", {"vfolder_id": folder["id"]}), 200, 204)
    assert not os.path.exists(world.trash(folder)) and not os.path.exists(world.disk(folder))
    assert projid not in world.mount.report()
    # Bad input on the way: purging it again, or a folder that never was.
    assert world.user.vf("POST", "/folders/purge", {"vfolder_id": folder["id"]}).status_code in (404, 409)
    assert world.user.vf("POST", "/folders/purge", {"vfolder_id": "not-a-uuid"}).status_code in (400, 404)


def test_clone_past_the_quota_is_refused_and_removed(world):
    src = ok(world.user.vf("POST", "/folders", {"name": fresh("src"), "host": "xfs", "cloneable": True}), 201)
    _, r = upload(world.user, src, "two.bin", os.urandom(2 * MIB))
    assert r.status_code == 204, r.text
    name = fresh("clone")
    r = world.user.vf("POST", f"/folders/{src['id']}/clone", {"target_name": name, "target_host": "xfs",
                                                              "quota": MIB})
    assert r.status_code == 412, r.text
    names = [f["name"] for f in ok(world.user.vf("GET", "/folders"))]
    assert name not in names
    # Within its quota, the clone is its own project.
    c = ok(world.user.vf("POST", f"/folders/{src['id']}/clone", {"target_name": name, "target_host": "xfs",
                                                                 "quota": 4 * MIB}), 201)
    projid = wait_until(lambda: project_of(world.disk(c))[0], timeout=30, message="the clone's directory")
    assert project_of(os.path.join(world.disk(c), "two.bin"))[0] == projid
    assert world.mount.report()[projid][1] == 4 * 1024
