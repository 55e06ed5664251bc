"""Privileges of a tenant inside a real session (the probe image, run through
the signed execute API as the session's owner):

- `id`: root mapped to an unprivileged host uid (user namespace), or the
  fallback: uid 1000 without effective capabilities;
- /proc/<pid>/status of an executed command and of the container's init:
  CapEff, CapPrm, CapBnd only the allowed set, CapAmb empty, NoNewPrivs 1,
  Seccomp 2 (filter);
- a list of dangerous syscalls refused with EPERM (or ENOSYS);
- raw sockets cannot be opened;
- the container's own root file system is writable (packages can be
  installed), the host's /sys, /proc/sys and /proc/sysrq-trigger are not;
- a host process can be neither seen, signalled nor traced (pid namespace).
"""
import json
import os
import shutil
import subprocess
import tempfile

import pytest

import seclib
from conftest import note

SYSCALLS = ["mount", "umount2", "unshare_newuser", "unshare_newns", "unshare_newnet", "setns",
            "pivot_root", "keyctl", "add_key", "bpf", "perf_event_open", "kexec_load", "init_module",
            "finit_module", "delete_module", "reboot", "swapon", "open_by_handle_at", "userfaultfd",
            "io_uring_setup", "settimeofday", "clock_settime", "iopl", "ioperm", "acct", "syslog",
            "mknod_char"]
STATUS_FIELDS = ["CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"]
# Host paths a tenant must not be able to write, with files to try under each
# (the first ones that exist in the container are opened O_WRONLY; nothing is
# ever written).
HOST_PATHS = {
    "/sys": ["/sys/kernel/mm/transparent_hugepage/enabled", "/sys/power/state", "/sys/kernel/uevent_helper",
             "/sys/class/net/lo/mtu", "/sys/fs/cgroup/cgroup.procs"],
    "/proc/sys": ["/proc/sys/kernel/core_pattern", "/proc/sys/vm/drop_caches",
                  "/proc/sys/net/ipv4/ip_forward", "/proc/sys/kernel/hostname"],
    "/proc/sysrq-trigger": ["/proc/sysrq-trigger"],
}


@pytest.fixture(scope="module")
def sess(sessions):
    return sessions.a


@pytest.fixture(scope="module")
def status(sess):
    """{"self": {field: value}, "init": {...}}: /proc/self/status of an executed
    command (cat) and /proc/1/status, the container's init."""
    code, out, err = sess.exec("cat /proc/self/status; echo '----'; cat /proc/1/status")
    assert code == 0, err
    parts = out.split("----\n")
    res = {}
    for who, text in zip(("self", "init"), parts):
        res[who] = {}
        for line in text.splitlines():
            k, sep, v = line.partition(":")
            if sep:
                res[who][k.strip()] = v.strip()
    return res


def test_user_is_mapped_or_unprivileged(sess, request):
    code, out, err = sess.exec("id -u; id -g; echo ----; cat /proc/self/uid_map; echo ----; "
                               "cat /proc/self/gid_map; echo ----; grep CapEff /proc/self/status")
    assert code == 0, err
    ids, uid_map, gid_map, capeff = out.split("----\n")
    uid, gid = (int(x) for x in ids.split())
    capeff = int(capeff.split()[1], 16)

    def ranges(text):
        return [tuple(int(x) for x in line.split()) for line in text.strip().splitlines()]

    um, gm = ranges(uid_map), ranges(gid_map)
    note(request, f"uid={uid} gid={gid} uid_map={um} gid_map={gm} CapEff={capeff:#x}")
    if uid == 0:
        # user namespace: 0 inside is an unprivileged uid outside, and no range
        # of the map reaches the host's root
        inside0 = [r for r in um if r[0] <= 0 < r[0] + r[2]]
        assert inside0, f"uid 0 without a mapping: {um}"
        host0 = inside0[0][1] + (0 - inside0[0][0])
        assert host0 != 0, f"root in the container is root on the host (uid_map {um})"
        assert not [r for r in um if r[1] <= 0 < r[1] + r[2]], f"uid_map reaches host uid 0: {um}"
        assert not [r for r in gm if r[1] <= 0 < r[1] + r[2]], f"gid_map reaches host gid 0: {gm}"
    else:
        assert uid == 1000, f"neither root in a user namespace nor the work user: uid {uid}"
        assert capeff == 0, f"uid 1000 with effective capabilities {seclib.cap_names(capeff)}"


@pytest.mark.parametrize("who", ["self", "init"])
@pytest.mark.parametrize("field", STATUS_FIELDS)
def test_status(status, who, field, request):
    st = status[who]
    assert field in st, f"/proc/{who}/status has no {field}"
    value = st[field]
    note(request, f"{field}={value}")
    if field.startswith("Cap"):
        mask = int(value, 16)
        if field == "CapAmb":
            assert mask == 0, f"ambient capabilities {seclib.cap_names(mask)}"
        else:
            extra = mask & ~seclib.ALLOWED_CAP_MASK
            assert extra == 0, (f"{field} {value} holds {seclib.cap_names(extra)} beyond the allowed "
                                f"{seclib.ALLOWED_CAP_MASK:#x}")
    elif field == "NoNewPrivs":
        assert value == "1", f"NoNewPrivs {value}"
    elif field == "Seccomp":
        assert value == "2", f"Seccomp {value} (2: a filter)"


@pytest.fixture(scope="module")
def syscall_results(sess):
    return sess.probe("syscalls")


@pytest.fixture(scope="module")
def host_baseline(probe_bin):
    """The probe's syscalls on the host as nobody (no capabilities,
    no_new_privs): the calls this kernel does not have answer ENOSYS there, so
    in a container their refusal proves nothing."""
    d = tempfile.mkdtemp(prefix="tessera-sec-baseline-")
    try:
        os.chmod(d, 0o777)
        probe = os.path.join(d, "probe")
        shutil.copy(probe_bin, probe)
        os.chmod(probe, 0o755)
        env = dict(os.environ, TESSERA_PROBE_SCRATCH=os.path.join(d, "scratch"))
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--no-new-privs",
                            "--inh-caps=-all", "--bounding-set=-all", probe, "syscalls"],
                           capture_output=True, text=True, timeout=60, cwd=d, env=env)
        try:
            return json.loads(r.stdout)
        except ValueError:
            return {}
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("name", SYSCALLS)
def test_syscall_refused(syscall_results, host_baseline, name, request):
    if host_baseline.get(name, {}).get("err") == "ENOSYS":
        pytest.skip(f"{name}: this kernel does not have it (ENOSYS on the host too): the check "
                    "cannot tell a refusal here")
    r = syscall_results.get(name)
    assert r is not None, f"the probe did not report {name}: {syscall_results}"
    note(request, f"{r['result']} {r['err'] or 'ret=' + str(r['ret'])} {r['detail']}".strip())
    assert r["result"] == "refused" and r["err"] in ("EPERM", "ENOSYS"), \
        f"{name}: {r['result']} (ret {r['ret']}, {r['err'] or 'no error'}) {r['detail']}".strip()


@pytest.fixture(scope="module")
def rawsock(sess):
    return sess.probe("rawsock")


@pytest.mark.parametrize("kind", ["inet_raw", "inet_raw_tcp", "packet"])
def test_raw_socket_refused(rawsock, kind, request):
    r = rawsock[kind]
    note(request, f"{r['result']} {r['err']}".strip())
    assert r["result"] == "refused", f"socket({kind}) opened: the container has CAP_NET_RAW"


def test_rootfs_writable(sess, request):
    """The container's own file system takes new files where a package manager
    puts them."""
    script = ("set -e; for d in /usr/bin /usr/lib /etc /var/lib /opt; do mkdir -p $d/tessera-sec; "
              "echo ok > $d/tessera-sec/f; cat $d/tessera-sec/f >/dev/null; rm -r $d/tessera-sec; done; "
              "echo written")
    code, out, err = sess.exec(script)
    note(request, "/usr/bin /usr/lib /etc /var/lib /opt")
    assert code == 0 and "written" in out, f"exit {code}: {err.strip()[-300:]}"


@pytest.mark.parametrize("path", list(HOST_PATHS))
def test_host_path_not_writable(sess, path, request):
    candidates = HOST_PATHS[path]
    on_host = [f for f in candidates if os.path.exists(f)]
    if not on_host:
        pytest.skip(f"this host has none of {candidates}: nothing a container could write")
    code, out, _ = sess.exec("for f in " + " ".join(candidates) + "; do [ -e $f ] && echo $f; done; true")
    present = out.split()
    if not present:
        note(request, f"none of {on_host} is there in the container")
        return
    res = sess.probe("wopen", *present)
    writable = [f for f, r in res.items() if r["result"] != "refused"]
    note(request, ", ".join(f"{f}: {r['err'] or r['result']}" for f, r in res.items()))
    assert not writable, f"opened for writing: {writable}"


@pytest.fixture(scope="module")
def host_sleeper():
    """A host process for the pid namespace check (ended at teardown)."""
    p = subprocess.Popen(["sleep", "86399.123"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    yield p
    p.kill()
    p.wait()


def test_host_processes_invisible(sess, host_sleeper, request):
    pids = sess.probe("pids")
    note(request, f"{len(pids)} processes visible")
    assert not [c for c in pids.values() if "86399.123" in c], "a host process is visible in the container"
    assert len(pids) < 50, f"{len(pids)} processes visible: not a pid namespace of its own?"


def test_host_process_not_traceable(sess, host_sleeper, request):
    targets = [host_sleeper.pid, os.getpid()]
    res = sess.probe("ptrace", *targets)
    note(request, ", ".join(f"{k}: {v['result']} {v['err']}" for k, v in res.items()))
    bad = {k: v for k, v in res.items() if v["result"] != "refused"}
    assert not bad, f"host processes reachable from the container: {bad}"
