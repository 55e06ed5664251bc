"""What a tenant learns of the host from its session's /proc/self/mountinfo
(docs/security.md, "The host's paths"): no mount shows a host path, neither
as the path of a bind mount's source within its file system (field 4) nor in
a file system's options (overlayfs prints lowerdir, upperdir and workdir as
given). Checked in session a and in the main kernel of the cluster session:

- no line names the stack's state dir (where the agent keeps kernels, image
  layers, vfolders), the repository or the binaries' dir, whatever the
  field;
- the root's overlay names its layers, upper and work dirs relative to the
  kernel dir (`lowerdir=l/...,upperdir=disk/upper,workdir=disk/work`);
- /home/work and the /etc files are binds from the kernel's own disk, so
  their source paths are paths within it (`/home`, `/etc/hosts`), and so is
  the terminal app (`/.tessera/tessera-term`);
- what docs/security.md lists as shown (a vfolder's path within its
  volume, a GPU kernel's shim files, the kernel's cgroup path) is allowed
  only at those mount points; these sessions have none of the first two.
"""
import os

import pytest

from conftest import REPO, note

# Mount points whose source path docs/security.md says shows (mountinfo
# field 5, the path in the container): vfolders below /home/work/, a GPU
# kernel's CUDA shim files and driver libraries.
DOCUMENTED_PREFIXES = ("/home/work/", "/opt/tessera/lib/", "/etc/ld.so.preload",
                       "/etc/tessera/cuda-shim.conf", "/run/tessera-cuda", "/usr/lib/",
                       "/usr/lib64/", "/lib/")


def _unescape(s):
    """mountinfo escapes space, tab, newline and backslash as \\ooo."""
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 3 < len(s) and s[i + 1:i + 4].isdigit():
            out.append(chr(int(s[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def _parse(text):
    """[{root, point, fstype, source, super}] of mountinfo text."""
    rows = []
    for line in text.splitlines():
        pre, sep, post = line.partition(" - ")
        if not sep:
            continue
        f = pre.split()
        g = post.split()
        rows.append({"root": _unescape(f[3]), "point": _unescape(f[4]), "fstype": g[0],
                     "source": g[1] if len(g) > 1 else "", "super": g[2] if len(g) > 2 else "",
                     "line": line})
    return rows


@pytest.fixture(scope="module")
def host_dirs(stack, bin_dir):
    dirs = {stack["TESSERA_STATE_DIR"], os.path.realpath(stack["TESSERA_STATE_DIR"]), REPO,
            os.path.realpath(REPO), bin_dir, os.path.realpath(bin_dir)}
    return sorted(d.rstrip("/") for d in dirs if d and d != "/")


def _sessions(sessions):
    out = [("a", sessions.a)]
    if not isinstance(sessions.multi, Exception):
        out.append(("multi", sessions.multi))
    return out


@pytest.fixture(scope="module")
def mountinfo(sessions):
    got = {}
    for label, sess in _sessions(sessions):
        code, out, err = sess.exec("cat /proc/self/mountinfo")
        assert code == 0, err
        got[label] = _parse(out)
    return got


@pytest.mark.parametrize("label", ["a", "multi"])
def test_no_host_path_in_mountinfo(request, mountinfo, host_dirs, label):
    if label not in mountinfo:
        pytest.skip("the cluster session did not start (its SetupError is in test_network)")
    rows = mountinfo[label]
    leaks, documented = [], []
    for r in rows:
        found = [d for d in host_dirs if d in r["line"]]
        if not found:
            continue
        if r["point"].startswith(DOCUMENTED_PREFIXES) and r["point"] != "/home/work":
            documented.append(r["point"])
        else:
            leaks.append(f"{r['point']}: {found[0]} in {r['line']!r}")
    assert not leaks, "host paths in mountinfo:\n" + "\n".join(leaks)
    note(request, f"{len(rows)} mounts, none names {', '.join(host_dirs)}"
         + (f"; documented: {', '.join(documented)}" if documented else ""))


@pytest.mark.parametrize("label", ["a", "multi"])
def test_overlay_options_are_relative(request, mountinfo, label):
    if label not in mountinfo:
        pytest.skip("the cluster session did not start")
    root = [r for r in mountinfo[label] if r["point"] == "/"]
    assert len(root) == 1 and root[0]["fstype"] == "overlay", mountinfo[label]
    opts = dict(o.partition("=")[::2] for o in root[0]["super"].split(","))
    for key in ("lowerdir", "upperdir", "workdir"):
        assert key in opts, opts
        for p in opts[key].split(":"):
            assert not p.startswith("/"), f"{key}={opts[key]}: an absolute host path"
    assert opts["upperdir"] == "disk/upper" and opts["workdir"] == "disk/work", opts
    note(request, root[0]["super"])


@pytest.mark.parametrize("label", ["a", "multi"])
def test_binds_come_from_the_kernels_disk(request, mountinfo, label):
    if label not in mountinfo:
        pytest.skip("the cluster session did not start")
    by_point = {r["point"]: r for r in mountinfo[label]}
    want = {"/home/work": "/home", "/etc/hosts": "/etc/hosts", "/etc/hostname": "/etc/hostname",
            "/etc/resolv.conf": "/etc/resolv.conf"}
    if "/opt/tessera/bin/tessera-term" in by_point:
        want["/opt/tessera/bin/tessera-term"] = "/.tessera/tessera-term"
    got = {p: (by_point[p]["root"], by_point[p]["source"]) for p in want if p in by_point}
    assert {p: g[0] for p, g in got.items()} == want, got
    sources = {g[1] for g in got.values()}
    assert len(sources) == 1, sources  # one file system: the kernel's disk
    note(request, f"from {sources.pop()}: " + ", ".join(f"{p} <- {r}" for p, r in want.items()))
