#!/usr/bin/env python3
"""bench/session/bench.py: session create-to-RUNNING and destroy latency through
the signed Backend.AI API of a running development stack, beside bare
`runc run` of an equivalent bundle (bench/session/run.sh starts the stack and
calls this). Uses only the standard library, requests and the tests'
independent signer (tests/integration/bai_signer.py).

Environment (from <state>/env): TESSERA_GATEWAY_URL, TESSERA_ADMIN_ACCESS_KEY,
TESSERA_ADMIN_SECRET_KEY, TESSERA_DEMO_IMAGE, TESSERA_STATE_DIR. Bench knobs:
BENCH_SERIAL (200), BENCH_PARALLEL (200), BENCH_CONCURRENCY (8), BENCH_RUNC (50),
BENCH_RESOURCES (cpu=1,mem=64m).

Per session:
  create  = wall time of POST /session (enqueueOnly false, maxWaitSeconds 30)
            until it answers RUNNING; when it answers an earlier status (the
            registry lets only registry.max_waiting_creates calls wait), GET
            /session/{name} is polled every 5 ms until RUNNING and the time
            until then is counted.
  destroy = from sending DELETE /session/{name} to the terminationTime the
            registry records for the session (same host clock); GET is
            polled every 25 ms until it is TERMINATED, only to know when to
            go on.
runc = `runc run` of an equivalent bundle: the config.json of a live kernel of
the same image and resources (its seccomp profile, cgroup limits, mounts,
masked paths, capabilities), with a copy of the busybox layer from the agent's
image cache as rootfs, a new empty network namespace instead of the kernel's
(the network is the agent's work), and `true` as the process: create + start
+ wait + delete, as one command; one after another, and BENCH_CONCURRENCY at
a time (the yardstick of the concurrent sessions: the same number of runtimes
contending for the same cores). `runc spec`'s default bundle (no seccomp, no
limits, no binds) is run too and its ratio printed, for reference.
"""
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
import uuid

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
import bai_signer  # noqa: E402

POLL = 0.005
# Destroys are waited for at this pace only (to keep BENCH_CONCURRENCY
# sessions in flight); their latency is read from the session's
# terminationTime. Polling every 5 ms, 8 waiting clients were a fifth of the
# machine's CPU (python, gateway, registry, PostgreSQL) taken from the
# creates being measured.
DESTROY_POLL = 0.025
TARGET_P50_MS = 150.0
TARGET_RATIO = 3.0


def pct(xs, p):
    """Nearest-rank percentile of xs (ms)."""
    s = sorted(xs)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


class KeepAliveClient(bai_signer.Client):
    """The tests' signed client over one kept-alive connection per thread:
    the bench's own polling then costs the machine a request, not a TCP
    connection and a requests.Session each, and leaves the cores to the stack
    under test."""

    def __init__(self, *a):
        super().__init__(*a)
        self.local = threading.local()

    def transport(self):
        sess = getattr(self.local, "s", None)
        if sess is None:
            sess = self.local.s = requests.Session()
        return sess


class Bench:
    def __init__(self):
        self.cli = KeepAliveClient(os.environ["TESSERA_GATEWAY_URL"],
                                     os.environ["TESSERA_ADMIN_ACCESS_KEY"],
                                     os.environ["TESSERA_ADMIN_SECRET_KEY"])
        self.image = os.environ["TESSERA_DEMO_IMAGE"]
        res = {}
        for kv in os.environ.get("BENCH_RESOURCES", "cpu=1,mem=64m").split(","):
            k, v = kv.split("=", 1)
            res[k] = v
        self.resources = res
        self.run_id = uuid.uuid4().hex[:6]
        self.seq = 0
        self.lock = threading.Lock()
        self.errors = []
        self.early = 0  # creates that answered before RUNNING

    def name(self, tag):
        with self.lock:
            self.seq += 1
            return f"b{self.run_id}-{tag}-{self.seq}"

    def status(self, name):
        r = self.cli.get(f"/session/{name}")
        if r.status_code == 404:
            return "GONE", None
        r.raise_for_status()
        j = r.json()
        return j.get("status"), j

    def create(self, name):
        body = {"image": self.image, "name": name, "type": "interactive",
                "enqueueOnly": False, "maxWaitSeconds": 30,
                "config": {"resources": self.resources}}
        t0 = time.perf_counter()
        r = self.cli.post("/session", json=body, timeout=40)
        if r.status_code not in (200, 201):
            raise RuntimeError(f"create {name}: {r.status_code} {r.text[:300]}")
        st = r.json().get("status")
        if st != "RUNNING":
            with self.lock:
                self.early += 1
            deadline = t0 + 30
            while st != "RUNNING":
                if st in ("ERROR", "TERMINATED", "CANCELLED", "GONE"):
                    raise RuntimeError(f"create {name}: ended as {st}")
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"create {name}: still {st} after 30 s")
                time.sleep(POLL)
                st, _ = self.status(name)
        return (time.perf_counter() - t0) * 1000.0

    def destroy(self, name):
        t_wall = time.time()
        t0 = time.perf_counter()
        r = self.cli.delete(f"/session/{name}", timeout=40)
        if r.status_code != 200:
            raise RuntimeError(f"destroy {name}: {r.status_code} {r.text[:300]}")
        j = r.json()
        st = j.get("status")
        deadline = t0 + 30
        while st not in ("TERMINATED", "GONE"):
            if st in ("ERROR",):
                raise RuntimeError(f"destroy {name}: ended as {st}")
            if time.perf_counter() > deadline:
                raise RuntimeError(f"destroy {name}: still {st} after 30 s")
            time.sleep(DESTROY_POLL)
            st, j = self.status(name)
        ended = (j or {}).get("terminationTime")
        if ended:  # the registry's own record: exact, whatever the poll interval
            return (datetime.datetime.fromisoformat(ended).timestamp() - t_wall) * 1000.0
        return (time.perf_counter() - t0) * 1000.0

    def one(self, tag, creates, destroys):
        name = self.name(tag)
        try:
            c = self.create(name)
        except Exception as e:  # noqa: BLE001 - recorded, counted, reported
            with self.lock:
                self.errors.append(str(e))
            try:
                self.cli.delete(f"/session/{name}", params={"forced": "true"})
            except Exception:  # noqa: BLE001
                pass
            return
        try:
            d = self.destroy(name)
        except Exception as e:  # noqa: BLE001
            with self.lock:
                self.errors.append(str(e))
            return
        with self.lock:
            creates.append(c)
            destroys.append(d)

    def serial(self, n):
        creates, destroys = [], []
        for _ in range(n):
            self.one("s", creates, destroys)
        return creates, destroys

    def parallel(self, n, conc):
        creates, destroys = [], []
        left = [n]

        def worker():
            while True:
                with self.lock:
                    if left[0] == 0:
                        return
                    left[0] -= 1
                self.one("p", creates, destroys)

        ts = [threading.Thread(target=worker) for _ in range(conc)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return creates, destroys


def layer_dir(state):
    images = os.path.join(state, "agent", "images")
    # the agent's layer cache: layers-<base>-<size>/ with a user namespace
    # (owners shifted), layers/ without
    caches = sorted(d for d in os.listdir(images) if d.startswith("layers"))
    base = os.path.join(images, caches[-1] if caches else "layers", "sha256")
    dirs = [os.path.join(base, d) for d in sorted(os.listdir(base))
            if os.path.isdir(os.path.join(base, d))]
    for d in dirs:  # the busybox layer: the one with bin/busybox (or bin/sh)
        if os.path.exists(os.path.join(d, "bin", "sh")) or os.path.exists(os.path.join(d, "bin", "busybox")):
            return d
    raise RuntimeError(f"no busybox layer under {base}: {dirs}")


HOME_DEST = "/home/work"


def kernel_binds(spec, kdir):
    """The bind mounts of spec whose source is in the kernel dir kdir (its
    /etc files, its home, ...), as (mount, path relative to kdir)."""
    return [(m, m["source"][len(kdir) + 1:]) for m in spec.get("mounts", [])
            if m.get("type") == "bind" and m.get("source", "").startswith(kdir + "/")]


def capture_kernel_bundle(b, state):
    """The config.json of a live kernel of the bench's own kind (same image
    and resources) and a copy of what it binds from its kernel dir but its
    home (its /etc files: disk/etc/ since the kernel's disk, etc/ before),
    made while its session runs; the session is then destroyed. Returns
    (spec, the kernel dir it came from, the dir holding the copies, at the
    same paths relative to it)."""
    name = b.name("k")
    b.create(name)
    try:
        kernels = os.path.join(state, "agent", "kernels")
        for k in sorted(os.listdir(kernels)):
            cfg = os.path.join(kernels, k, "bundle", "config.json")
            try:
                with open(cfg) as f:
                    spec = json.load(f)
            except (OSError, ValueError):
                continue
            if f"BACKENDAI_SESSION_NAME={name}" in spec.get("process", {}).get("env", []):
                kdir = os.path.join(kernels, k)
                saved = os.path.join(state, "runc-bench-kernel")
                shutil.rmtree(saved, ignore_errors=True)
                os.makedirs(saved)
                for m, rel in kernel_binds(spec, kdir):
                    if m.get("destination") == HOME_DEST:
                        continue
                    os.makedirs(os.path.dirname(os.path.join(saved, rel)), exist_ok=True)
                    if os.path.isdir(m["source"]):
                        shutil.copytree(m["source"], os.path.join(saved, rel), dirs_exist_ok=True)
                    else:
                        shutil.copy2(m["source"], os.path.join(saved, rel))
                # the kernel's own dirs are closed to all but its mapped root
                # (root:<base> 0710); the copies open, for runc's mapped root
                for d, _, _ in os.walk(saved):
                    os.chmod(d, 0o755)
                return spec, kdir, saved
        raise RuntimeError(f"no kernel of session {name} under {kernels}")
    finally:
        b.destroy(name)


def kernel_like_spec(captured, bundle, home, cid):
    """The captured kernel's config.json for one `runc run` in bundle: the same
    process settings, namespaces, mounts, cgroup limits, seccomp profile,
    masked paths and capabilities, with the rootfs a copy of the layer, its
    own cgroup, new empty network and user namespaces in place of the kernel's (CNI is
    the agent's work, counted in the session), the kernel's etc/ files copied,
    an empty home, and `true` as the process."""
    spec, kdir, saved = captured
    s = json.loads(json.dumps(spec))
    s["root"]["path"] = os.path.join(bundle, "rootfs")
    s["process"]["args"] = ["/bin/true"] if os.path.exists(
        os.path.join(bundle, "rootfs", "bin", "true")) else ["/bin/sh", "-c", "true"]
    s["process"]["terminal"] = False
    for m, rel in kernel_binds(s, kdir):
        m["source"] = home if m.get("destination") == HOME_DEST else os.path.join(saved, rel)
    for ns in s["linux"].get("namespaces", []):
        # new namespaces in place of the kernel's (the agent makes its user
        # and network namespaces before CNI; runc makes them here, with the
        # same id mappings)
        if ns.get("type") in ("network", "user"):
            ns.pop("path", None)
    s["linux"]["cgroupsPath"] = f"/tessera-bench-runc/{cid}"
    return s


def default_spec(bundle):
    """`runc spec`'s default bundle: no seccomp, no cgroup limits, no binds."""
    subprocess.run(["runc", "spec", "--bundle", bundle], check=True)
    with open(os.path.join(bundle, "config.json")) as f:
        s = json.load(f)
    s["process"]["terminal"] = False
    s["process"]["args"] = ["/bin/true"] if os.path.exists(
        os.path.join(bundle, "rootfs", "bin", "true")) else ["/bin/sh", "-c", "true"]
    s["root"]["readonly"] = True
    return s


def runc_bench(state, n, conc=1, captured=None):
    """Times of `runc run` of a bundle with a copy of the cached busybox layer
    as rootfs, conc at a time: the captured kernel's config (kernel_like_spec)
    or, with captured None, `runc spec`'s default."""
    work = os.path.join(state, "runc-bench")
    root = os.path.join(work, "root")
    os.makedirs(root)
    layer = layer_dir(state)
    times, errors, lock = [], [], threading.Lock()
    todo = iter(range(n))

    def worker(w):
        # a bundle per worker, as the agent's rootfs is the kernel's own (an
        # overlay upper over the layer; copying keeps the cache untouched)
        bundle = os.path.join(work, f"bundle{w}")
        home = os.path.join(work, f"home{w}")
        os.makedirs(home)
        # cp -a: owners kept (a layer of the shifted cache belongs to the
        # mapped ids, as the kernel's overlay does)
        os.makedirs(bundle, exist_ok=True)
        subprocess.run(["cp", "-a", layer, os.path.join(bundle, "rootfs")], check=True)
        base = None if captured else default_spec(bundle)
        while True:
            with lock:
                i = next(todo, None)
            if i is None or errors:
                return
            cid = f"tessera-bench-{os.getpid()}-{i}"
            spec = kernel_like_spec(captured, bundle, home, cid) if captured else base
            with open(os.path.join(bundle, "config.json"), "w") as f:
                json.dump(spec, f)
            t0 = time.perf_counter()
            p = subprocess.run(["runc", "--root", root, "run", "--bundle", bundle, cid],
                               stdin=subprocess.DEVNULL, capture_output=True)
            dt = (time.perf_counter() - t0) * 1000.0
            with lock:
                if p.returncode != 0:
                    subprocess.run(["runc", "--root", root, "delete", "-f", cid], capture_output=True)
                    errors.append(f"runc run failed ({p.returncode}): {p.stderr.decode()[:300]}")
                times.append(dt)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(conc)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    shutil.rmtree(work, ignore_errors=True)
    # the yardstick's parent cgroup: cgroup v2's, or one per v1 hierarchy
    parents = ["/sys/fs/cgroup/tessera-bench-runc"] + [
        os.path.join("/sys/fs/cgroup", c, "tessera-bench-runc") for c in os.listdir("/sys/fs/cgroup")]
    for d in parents:
        if os.path.isdir(d) and not os.path.islink(os.path.dirname(d)):
            try:
                os.rmdir(d)
            except OSError:
                pass
    if errors:
        raise RuntimeError(errors[0])
    return times


def main():
    n_serial = int(os.environ.get("BENCH_SERIAL", "200"))
    n_par = int(os.environ.get("BENCH_PARALLEL", "200"))
    conc = int(os.environ.get("BENCH_CONCURRENCY", "8"))
    n_runc = int(os.environ.get("BENCH_RUNC", "50"))
    state = os.environ["TESSERA_STATE_DIR"]
    b = Bench()

    def say(msg):
        print(f"bench-session: {msg}", flush=True)

    say(f"warm-up: 3 sessions of {b.image} (pulls the image onto the agent)")
    wc, wd = [], []
    for _ in range(3):
        b.one("w", wc, wd)
    if b.errors:
        raise SystemExit("bench-session: warm-up failed: " + "; ".join(b.errors[:3]))
    say("warm-up create ms: " + ", ".join(f"{x:.0f}" for x in wc))

    say("the yardstick's bundle: the config.json of a live kernel of the same image and resources")
    captured = capture_kernel_bundle(b, state)
    say(f"bare runc run x{n_runc} (the kernel's bundle)")
    runc = runc_bench(state, n_runc, captured=captured)
    say(f"{n_serial} sessions one after another")
    t0 = time.perf_counter()
    sc, sd = b.serial(n_serial)
    ts = time.perf_counter() - t0
    say(f"{n_par} sessions {conc} at a time")
    early_before = b.early
    t0 = time.perf_counter()
    pc, pd = b.parallel(n_par, conc)
    tp = time.perf_counter() - t0
    say(f"bare runc run x{n_runc} again, x{n_runc} {conc} at a time, and x{n_runc} of "
        f"`runc spec`'s default bundle")
    runc += runc_bench(state, n_runc, captured=captured)
    runc_par = runc_bench(state, n_runc, conc, captured=captured)
    runc_def = runc_bench(state, n_runc)
    shutil.rmtree(captured[2], ignore_errors=True)

    r50 = statistics.median(runc)
    rp50 = statistics.median(runc_par)
    # (label, times, the runc yardstick's p50 for the ratio)
    rows = [
        (f"create -> RUNNING, serial", sc, r50),
        (f"destroy -> TERMINATED, serial", sd, r50),
        (f"create -> RUNNING, {conc} at a time", pc, rp50),
        (f"destroy -> TERMINATED, {conc} at a time", pd, rp50),
        ("bare runc run, kernel's bundle", runc, r50),
        (f"bare runc run, kernel's bundle, {conc} at a time", runc_par, rp50),
        ("bare runc run, `runc spec` default", runc_def, r50),
    ]
    print()
    print(f"| {'case':<44} | {'n':>4} | {'p50 ms':>7} | {'p99 ms':>7} | {'p50 / runc':>10} |")
    print(f"|{'-' * 46}|{'-' * 6}|{'-' * 9}|{'-' * 9}|{'-' * 12}|")
    for label, xs, base in rows:
        p50 = statistics.median(xs) if xs else float("nan")
        print(f"| {label:<44} | {len(xs):>4} | {p50:>7.1f} | {pct(xs, 99):>7.1f} | {p50 / base:>9.2f}x |")
    print(f"(ratios: serial rows against bare runc of the kernel's bundle one after another, "
          f"'{conc} at a time' rows against it {conc} at a time; the kernel's bundle has the "
          f"kernel's seccomp profile, cgroup limits, mounts and masked paths, `runc spec`'s has none)")
    d50 = statistics.median(runc_def)
    print(f"(against `runc spec`'s default bundle instead: serial create "
          f"{statistics.median(sc) / d50:.2f}x)" if sc else "")
    print()
    say(f"serial: {n_serial} sessions in {ts:.1f} s; {conc} at a time: {n_par} in {tp:.1f} s "
        f"({n_par / tp:.1f} sessions/s)")
    say(f"creates that answered before RUNNING (then polled): {b.early - early_before} of the "
        f"concurrent ones, {early_before} of the rest")
    verdict = []
    for label, xs, base in (rows[0], rows[2]):
        p50 = statistics.median(xs) if xs else float("inf")
        ok = p50 <= TARGET_P50_MS and p50 <= TARGET_RATIO * base
        verdict.append(f"{label}: {'met' if ok else 'NOT met'} (p50 {p50:.1f} ms, "
                       f"{p50 / base:.2f}x bare runc at the same concurrency)")
    say(f"target (p50 <= {TARGET_P50_MS:.0f} ms and <= {TARGET_RATIO:.0f}x bare runc):")
    for v in verdict:
        print("  " + v)
    if b.errors:
        say(f"{len(b.errors)} sessions failed; first: {b.errors[:3]}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
