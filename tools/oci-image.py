#!/usr/bin/env python3
"""oci-image.py: build small OCI images from Debian files and push them to a
registry (Docker Registry HTTP API v2), with nothing but the Python standard
library. Output is an OCI image layout directory (oci-layout, index.json,
blobs/sha256/...); builds are reproducible (fixed mtimes, sorted entries, gzip
without timestamps), so the same inputs give the same digests.

  oci-image.py busybox OUT [--arch A ...] [--marker TEXT] [--bad-diffid]
      [--add SRC:DST ...] [--label K=V ...]
      The test and demo image: Debian's busybox-static (/bin/busybox and its
      applet symlinks), /etc/passwd with root and 'work' (uid 1000), /home/work,
      /tmp, as one gzip layer, plus a tiny second layer /etc/tessera-image naming
      the architecture (and the marker, which makes the image's blobs unique).
      Two or more --arch give an image index with one manifest per
      architecture. --bad-diffid writes a wrong rootfs.diff_ids entry (tests).
      --add puts the host file SRC at the absolute path DST in a third layer
      (owner root, mode 0755 when SRC is executable, else 0644; missing parent
      directories 0755), e.g. a test program (tests/security). --label sets or
      replaces an image label (e.g. ai.backend.resource.min.cpu=0.25).
      Without either option the image is the same as before, digests included.
  oci-image.py rootfs TAR OUT [--label K=V ...] [--env K=V ...] [--cmd ARG ...]
      [--workdir DIR] [--user USER]
      An image from a root file system tarball (mmdebstrap's output) as one
      gzip layer.
  oci-image.py push OUT REF [--insecure] [--user U:P]
      Push the layout's image (manifest or index, blobs first) as REF =
      host:port/repository:tag. Blobs the registry has are not sent again.
  oci-image.py digest OUT
      Print the digest of the layout's top manifest (or index).
"""
import argparse
import base64
import gzip
import hashlib
import http.client
import io
import json
import os
import subprocess
import sys
import tarfile
import urllib.parse

MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_INDEX = "application/vnd.oci.image.index.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_LAYER_GZ = "application/vnd.oci.image.layer.v1.tar+gzip"
EPOCH = 1700000000  # fixed mtime: reproducible layers

BUSYBOX_LABELS = {
    "ai.backend.kernelspec": "1",
    "ai.backend.features": "batch query uid-match",
    "ai.backend.base-distro": "busybox",
    "ai.backend.runtime-type": "app",
    "ai.backend.runtime-path": "/bin/sh",
    "ai.backend.service-ports": "echo:http:8080,tcpecho:tcp:9000",
    # started on demand by start-service (docs/agent.md, "Apps"): a TCP echo
    "tessera.app.tcpecho.start": "nc -ll -p 9000 -e /bin/cat",
    "ai.backend.resource.min.cpu": "1",
    "ai.backend.resource.min.mem": "64m",
    "org.opencontainers.image.title": "tessera/busybox",
    "org.opencontainers.image.description": "Tessera test and demo image: Debian busybox-static",
}


def die(msg):
    print(f"oci-image: {msg}", file=sys.stderr)
    sys.exit(1)


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def host_arch():
    try:
        out = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        m = os.uname().machine
        return {"x86_64": "amd64", "aarch64": "arm64"}.get(m, m)


class Layout:
    """An OCI image layout being written."""

    def __init__(self, out):
        self.out = out
        os.makedirs(os.path.join(out, "blobs", "sha256"), exist_ok=True)

    def put(self, data, media_type, **extra):
        d = sha256(data)
        path = os.path.join(self.out, "blobs", "sha256", d[7:])
        if not os.path.exists(path):
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        desc = {"mediaType": media_type, "digest": d, "size": len(data)}
        desc.update(extra)
        return desc

    def put_json(self, obj, media_type, **extra):
        return self.put(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode(), media_type, **extra)

    def finish(self, top, ref_name="latest"):
        top = dict(top)
        top["annotations"] = {"org.opencontainers.image.ref.name": ref_name}
        index = {"schemaVersion": 2, "mediaType": MT_INDEX, "manifests": [top]}
        with open(os.path.join(self.out, "oci-layout"), "w", encoding="utf-8") as f:
            json.dump({"imageLayoutVersion": "1.0.0"}, f)
        tmp = os.path.join(self.out, f"index.json.{os.getpid()}.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(index, f, sort_keys=True)
        os.replace(tmp, os.path.join(self.out, "index.json"))


def gzip_bytes(data):
    return gzip.compress(data, compresslevel=6, mtime=0)


class TarBuilder:
    def __init__(self):
        self.buf = io.BytesIO()
        self.tar = tarfile.open(fileobj=self.buf, mode="w", format=tarfile.PAX_FORMAT)

    def _info(self, name, kind, mode, uid=0, gid=0):
        ti = tarfile.TarInfo(name)
        ti.type = kind
        ti.mode = mode
        ti.uid, ti.gid = uid, gid
        ti.uname = ti.gname = ""
        ti.mtime = EPOCH
        return ti

    def dir(self, name, mode=0o755, uid=0, gid=0):
        self.tar.addfile(self._info(name + "/", tarfile.DIRTYPE, mode, uid, gid))

    def file(self, name, data, mode=0o644, uid=0, gid=0):
        ti = self._info(name, tarfile.REGTYPE, mode, uid, gid)
        ti.size = len(data)
        self.tar.addfile(ti, io.BytesIO(data))

    def symlink(self, name, target):
        ti = self._info(name, tarfile.SYMTYPE, 0o777)
        ti.linkname = target
        self.tar.addfile(ti)

    def bytes(self):
        self.tar.close()
        return self.buf.getvalue()


def busybox_rootfs_tar(busybox):
    with open(busybox, "rb") as f:
        bb = f.read()
    applets = subprocess.run([busybox, "--list-full"], capture_output=True, text=True, check=True).stdout.split()
    t = TarBuilder()
    dirs = {"bin", "sbin", "usr", "usr/bin", "usr/sbin", "etc", "home", "root", "tmp", "proc", "sys",
            "dev", "run", "var", "var/tmp", "home/work"}
    for a in applets:
        dirs.add(os.path.dirname(a))
    for d in sorted(dirs):
        if d == "tmp" or d == "var/tmp":
            t.dir(d, 0o1777)
        elif d == "root":
            t.dir(d, 0o700)
        elif d == "home/work":
            t.dir(d, 0o755, 1000, 1000)
        else:
            t.dir(d)
    t.file("bin/busybox", bb, 0o755)
    for a in sorted(set(applets)):
        if a != "bin/busybox":
            t.symlink(a, "/bin/busybox")
    t.file("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\nwork:x:1000:1000:work:/home/work:/bin/sh\n"
                         b"nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")
    t.file("etc/group", b"root:x:0:\nwork:x:1000:\nnogroup:x:65534:\n")
    t.file("etc/hostname", b"tessera\n")
    t.file("etc/hosts", b"127.0.0.1 localhost\n::1 localhost\n")
    t.file("etc/profile", b"export PS1='\\u@\\h:\\w\\$ '\n")
    return t.bytes()


def added_files_tar(adds):
    """The --add layer: [(src, dst)] -> uncompressed tar bytes (sorted, fixed
    mtimes, like the other layers), or None when there is nothing to add."""
    if not adds:
        return None
    files = {}
    for spec in adds:
        src, sep, dst = spec.partition(":")
        if not sep or not src or not dst.startswith("/") or dst.endswith("/"):
            die(f"--add {spec!r}: expected SRC:/absolute/path/of/a/file")
        dst = os.path.normpath(dst).lstrip("/")
        if dst in files:
            die(f"--add: {dst} is named twice")
        if not os.path.isfile(src):
            die(f"--add {spec!r}: {src} is not a file")
        files[dst] = src
    t = TarBuilder()
    dirs = set()
    for dst in files:
        d = os.path.dirname(dst)
        while d:
            dirs.add(d)
            d = os.path.dirname(d)
    for d in sorted(dirs):
        t.dir(d)
    for dst in sorted(files):
        src = files[dst]
        with open(src, "rb") as f:
            data = f.read()
        t.file(dst, data, 0o755 if os.access(src, os.X_OK) else 0o644)
    return t.bytes()


def image_manifest(lay, layers, cfg_extra, arch, bad_diffid=False):
    """layers: list of uncompressed tar bytes. Returns the manifest descriptor."""
    descs, diff_ids = [], []
    for tar in layers:
        diff_ids.append(sha256(tar))
        descs.append(lay.put(gzip_bytes(tar), MT_LAYER_GZ))
    if bad_diffid:
        diff_ids[-1] = "sha256:" + "0" * 64
    config = {
        "architecture": arch,
        "os": "linux",
        "created": "2023-11-14T22:13:20Z",
        "config": cfg_extra,
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": [{"created": "2023-11-14T22:13:20Z", "created_by": "tools/oci-image.py"} for _ in layers],
    }
    cdesc = lay.put_json(config, MT_CONFIG)
    manifest = {"schemaVersion": 2, "mediaType": MT_MANIFEST, "config": cdesc, "layers": descs}
    return lay.put_json(manifest, MT_MANIFEST)


def cmd_busybox(a):
    busybox = a.busybox
    if not os.path.exists(busybox):
        die(f"{busybox} is missing: install busybox-static (tools/deps.sh)")
    archs = a.arch or [host_arch()]
    labels = dict(BUSYBOX_LABELS)
    for kv in a.label:
        k, sep, v = kv.partition("=")
        if not sep or not k:
            die(f"--label {kv!r}: expected KEY=VALUE")
        labels[k] = v
    extra = added_files_tar(a.add)
    lay = Layout(a.out)
    base = busybox_rootfs_tar(busybox)
    manifests = []
    for arch in archs:
        t = TarBuilder()
        t.file("etc/tessera-image", f"arch={arch}\nmarker={a.marker or ''}\n".encode())
        cfg = {
            "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"],
            "Cmd": ["/bin/sh"],
            "WorkingDir": "/home/work",
            "Labels": dict(labels),
        }
        layers = [base, t.bytes()] + ([extra] if extra is not None else [])
        desc = image_manifest(lay, layers, cfg, arch, a.bad_diffid)
        desc["platform"] = {"architecture": arch, "os": "linux"}
        manifests.append(desc)
    if len(manifests) == 1:
        top = dict(manifests[0])
        top.pop("platform")
    else:
        top = lay.put_json({"schemaVersion": 2, "mediaType": MT_INDEX, "manifests": manifests}, MT_INDEX)
    lay.finish(top)
    print(top["digest"])


def cmd_rootfs(a):
    lay = Layout(a.out)
    with open(a.tar, "rb") as f:
        tar = f.read()
    labels = dict(kv.split("=", 1) for kv in a.label)
    cfg = {"Env": a.env or ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"],
           "Labels": labels}
    if a.cmd:
        cfg["Cmd"] = a.cmd
    if a.workdir:
        cfg["WorkingDir"] = a.workdir
    if a.user:
        cfg["User"] = a.user
    top = image_manifest(lay, [tar], cfg, a.arch or host_arch())
    lay.finish(top)
    print(top["digest"])


def read_layout_top(out):
    with open(os.path.join(out, "index.json"), encoding="utf-8") as f:
        return json.load(f)["manifests"][0]


def blob(out, digest):
    with open(os.path.join(out, "blobs", "sha256", digest[7:]), "rb") as f:
        return f.read()


class Registry:
    def __init__(self, host, insecure, user=None):
        self.host = host
        self.insecure = insecure
        self.auth = None
        if user:
            self.auth = "Basic " + base64.b64encode(user.encode()).decode()

    def request(self, method, path, body=None, headers=None):
        url = urllib.parse.urlsplit(path)
        host = url.netloc or self.host
        conn = (http.client.HTTPConnection if self.insecure else http.client.HTTPSConnection)(host, timeout=60)
        target = url.path + ("?" + url.query if url.query else "")
        h = dict(headers or {})
        if self.auth:
            h["Authorization"] = self.auth
        conn.request(method, target, body=body, headers=h)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return resp.status, resp.headers, data

    def push_blob(self, repo, digest, data):
        st, _, _ = self.request("HEAD", f"/v2/{repo}/blobs/{digest}")
        if st == 200:
            return False
        st, hdrs, body = self.request("POST", f"/v2/{repo}/blobs/uploads/")
        if st != 202:
            die(f"upload of {digest} to {self.host}/{repo}: POST answered {st}: {body[:200]!r}")
        loc = hdrs.get("Location")
        sep = "&" if "?" in loc else "?"
        st, _, body = self.request("PUT", f"{loc}{sep}digest={urllib.parse.quote(digest)}", body=data,
                                   headers={"Content-Type": "application/octet-stream",
                                            "Content-Length": str(len(data))})
        if st != 201:
            die(f"upload of {digest} to {self.host}/{repo}: PUT answered {st}: {body[:200]!r}")
        return True

    def push_manifest(self, repo, ref, data, media_type):
        st, _, body = self.request("PUT", f"/v2/{repo}/manifests/{ref}", body=data,
                                   headers={"Content-Type": media_type})
        if st != 201:
            die(f"manifest {repo}:{ref} on {self.host}: PUT answered {st}: {body[:300]!r}")


def push_manifest_tree(reg, out, repo, desc, ref):
    data = blob(out, desc["digest"])
    m = json.loads(data)
    sent = 0
    if desc["mediaType"] == MT_INDEX:
        for sub in m["manifests"]:
            sent += push_manifest_tree(reg, out, repo, sub, sub["digest"])
    else:
        for b in [m["config"]] + m["layers"]:
            sent += reg.push_blob(repo, b["digest"], blob(out, b["digest"]))
    reg.push_manifest(repo, ref, data, desc["mediaType"])
    return sent


def cmd_push(a):
    ref = a.ref
    if "/" not in ref:
        die(f"reference {ref!r}: expected host:port/repository:tag")
    host, rest = ref.split("/", 1)
    repo, _, tag = rest.rpartition(":") if ":" in rest else (rest, "", "latest")
    reg = Registry(host, a.insecure, a.user)
    top = read_layout_top(a.out)
    sent = push_manifest_tree(reg, a.out, repo, top, tag)
    print(f"pushed {ref} ({top['digest']}, {sent} blob(s) uploaded)")


def cmd_digest(a):
    print(read_layout_top(a.out)["digest"])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("busybox")
    b.add_argument("out")
    b.add_argument("--arch", action="append")
    b.add_argument("--marker")
    b.add_argument("--bad-diffid", action="store_true")
    b.add_argument("--busybox", default="/bin/busybox")
    b.add_argument("--add", action="append", default=[], metavar="SRC:DST",
                   help="add the host file SRC at DST (absolute) in a third layer")
    b.add_argument("--label", action="append", default=[], metavar="K=V",
                   help="set or replace an image label")
    r = sub.add_parser("rootfs")
    r.add_argument("tar")
    r.add_argument("out")
    r.add_argument("--label", action="append", default=[])
    r.add_argument("--env", action="append")
    r.add_argument("--cmd", nargs="+")
    r.add_argument("--workdir")
    r.add_argument("--user")
    r.add_argument("--arch")
    u = sub.add_parser("push")
    u.add_argument("out")
    u.add_argument("ref")
    u.add_argument("--insecure", action="store_true", help="plain HTTP (the development registry)")
    u.add_argument("--user", help="USER:PASSWORD for HTTP basic")
    d = sub.add_parser("digest")
    d.add_argument("out")
    a = p.parse_args()
    {"busybox": cmd_busybox, "rootfs": cmd_rootfs, "push": cmd_push, "digest": cmd_digest}[a.command](a)


if __name__ == "__main__":
    main()
