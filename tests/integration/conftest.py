"""Shared fixtures for Tessera's integration tests.

`stack` starts the whole development stack (deploy/dev/dev-up.sh) once per test
session in a fresh temporary state dir, on free loopback ports, and yields its
environment (the <state>/env file as a dict: TESSERA_GATEWAY_URL, KAFKA_BOOTSTRAP,
TESSERA_PG_DSN, ...). At the end it runs dev-down.sh and checks that no process
of the stack survived.

Only the Python standard library, pytest and requests (Debian packages).
"""

import contextlib
import os
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

_system_getaddrinfo = socket.getaddrinfo


def _getaddrinfo(host, *args, **kwargs):
    """Names under .localhost are the loopback address (RFC 6761 6.3), as
    Chromium and libcurl take them: the stack serves each app at a host name
    of its own, <hash>.apps.localhost (docs/wsproxy.md). glibc without
    nss-myhostname does not resolve them, so every suite's Python clients
    (requests, sockets) get them here."""
    name = host.decode() if isinstance(host, bytes) else host
    if isinstance(name, str) and name.rstrip(".").lower().endswith(".localhost"):
        host = "127.0.0.1"
    return _system_getaddrinfo(host, *args, **kwargs)


socket.getaddrinfo = _getaddrinfo

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEV_UP = os.path.join(REPO, "deploy", "dev", "dev-up.sh")
DEV_DOWN = os.path.join(REPO, "deploy", "dev", "dev-down.sh")
BIN_DIR = os.path.abspath(os.environ.get("TESSERA_BIN_DIR") or os.path.join(REPO, "build", "bin"))


def wait_until(predicate, timeout=10.0, interval=0.1, message=None):
    """Call predicate() until it returns a truthy value; return that value.

    Exceptions from predicate count as "not yet" (the last one is reported).
    Fails the test (pytest.fail) when timeout seconds pass first."""
    deadline = time.monotonic() + timeout
    last_exc = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:  # noqa: BLE001 - a probe may fail while waiting
            last_exc = exc
        if time.monotonic() >= deadline:
            what = message or getattr(predicate, "__name__", "condition")
            extra = f" (last error: {last_exc!r})" if last_exc else ""
            pytest.fail(f"timed out after {timeout} s waiting for {what}{extra}")
        time.sleep(interval)


def parse_env_file(path):
    """Parse the `export NAME='value'` lines dev-up.sh writes (shell syntax)."""
    env = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            words = shlex.split(line, comments=True)
            if words and words[0] == "export":
                words = words[1:]
            for word in words:
                name, sep, value = word.partition("=")
                if sep:
                    env[name] = value
    return env


def parse_services_file(path):
    """<state>/services: "name pid url" per line -> {name: (pid, url)}."""
    services = {}
    if not os.path.exists(path):
        return services
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                services[parts[0]] = (int(parts[1]), parts[2] if len(parts) > 2 else "")
    return services


def service_urls(stack):
    """name -> URL of each process in <state>/services that serves HTTP, and
    "keys": the stack's service keys dir (svc_signer signs internal calls
    with it)."""
    urls = {"keys": stack.get("TESSERA_SERVICE_KEYS_DIR", "")}
    with open(os.path.join(stack["TESSERA_STATE_DIR"], "services"), encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[2].startswith("http"):
                urls[parts[0]] = parts[2]
    return urls


def free_port():
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tls_settings(stack):
    """A stack with TLS (TESSERA_DEV_TLS=on): the settings a service started
    by a test needs to reach its bus and the agents; else none."""
    if stack.get("TESSERA_DEV_TLS") != "on":
        return {}
    out = {"TESSERA_HTTP_CA_FILE": stack["TESSERA_TLS_CA_FILE"]}
    for k in ("TESSERA_KAFKA_SECURITY_PROTOCOL", "TESSERA_KAFKA_SSL_CA_FILE"):
        if k in stack:
            out[k] = stack[k]
    return out


@contextlib.contextmanager
def second_gateway(stack, bin_dir, log_path, instance, **options):
    """Another tessera-gateway in front of the stack's services, with options
    of its own as environment variables (TESSERA_<OPTION>=value, e.g.
    TESSERA_GATEWAY_CORS_ORIGINS): yields (its URL, its process) once ready;
    killed afterwards if still running. Its log goes to log_path."""
    import requests  # noqa: PLC0415 - only the tests that start one need it
    port = free_port()
    env = dict(os.environ,
               TESSERA_HTTP_LISTEN=f"127.0.0.1:{port}",
               TESSERA_SERVICE_INSTANCE=instance,
               TESSERA_KAFKA_BOOTSTRAP=stack["KAFKA_BOOTSTRAP"],
               TESSERA_REDIS_URL=stack["TESSERA_REDIS_URL"],
               TESSERA_AUTH_URL=stack["TESSERA_AUTH_URL"],
               TESSERA_REGISTRY_URL=stack["TESSERA_REGISTRY_URL"],
               TESSERA_VFOLDER_URL=stack["TESSERA_VFOLDER_URL"],
               TESSERA_WSPROXY_URL=stack["TESSERA_WSPROXY_URL"],
               TESSERA_SERVICE_AUTH_KEY_FILE=os.path.join(stack["TESSERA_SERVICE_KEYS_DIR"],
                                                          "gateway.key"),
               **tls_settings(stack),
               **options)
    log = open(log_path, "wb")
    p = subprocess.Popen([os.path.join(bin_dir, "tessera-gateway")], env=env, stdout=log,
                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        def ready():
            try:
                return requests.get(url + "/readyz", timeout=2).status_code == 200
            except requests.RequestException:
                return False
        assert wait_until(ready, 60), open(log_path, encoding="utf-8", errors="replace").read()
        yield url, p
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        log.close()


def _proc_stat(pid):
    """(state, starttime) of a process from /proc/<pid>/stat, or None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], fields[19]


def _proc_running(pid):
    """True when /proc/<pid> exists and is not a zombie (a zombie holds no
    resources; it only waits for its parent to reap it)."""
    st = _proc_stat(pid)
    return st is not None and st[0] != "Z"


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def survivors(state_dir, pids):
    """Running processes that belong to the stack in state_dir: a recorded pid
    (pids: {pid: starttime}; the same start time, so not a reused pid), or any
    process whose command line mentions the state dir."""
    found = []
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        if pid == me or not _proc_running(pid):
            continue
        cmd = _cmdline(pid)
        st = _proc_stat(pid)
        names_dir = re.search(re.escape(state_dir) + r"(/|\s|$)", cmd) is not None
        if (st and pids.get(pid) == st[1]) or names_dir:
            found.append((pid, cmd))
    return found


def kernel_leftovers(kernel_ids):
    """What is left of the given kernels: processes in their cgroups, cgroup
    directories, runc containers."""
    found = []
    if not kernel_ids:
        return found
    for name in os.listdir("/proc"):
        if not name.isdigit() or not _proc_running(int(name)):
            continue
        try:
            with open(f"/proc/{name}/cgroup", encoding="utf-8") as f:
                cg = f.read()
        except OSError:
            continue
        for kid in kernel_ids:
            if f"/tessera/{kid}" in cg:
                found.append(f"process {name} ({_cmdline(int(name))}) in cgroup tessera/{kid}")
    base = "/sys/fs/cgroup"
    if os.path.isdir(base):
        for ctrl in os.listdir(base):
            for kid in kernel_ids:
                if os.path.isdir(os.path.join(base, ctrl, "tessera", kid)):
                    found.append(f"cgroup {ctrl}/tessera/{kid}")
    if shutil.which("runc"):
        for _ in range(20):
            out = subprocess.run(["runc", "list", "-q"], capture_output=True, text=True, timeout=30)
            # a container removed (by any stack) while runc lists them fails the listing
            if out.returncode == 0 or "no such file or directory" not in out.stderr:
                break
            time.sleep(0.05)
        assert out.returncode == 0, f"runc list: {out.stderr.strip()}"
        found += [f"runc container {c}" for c in out.stdout.split() if c in kernel_ids]
    return found


def _run_script(script, state_dir, timeout, **extra):
    """Run a deploy/dev script on state_dir. A stack has one node and one
    instance of each service unless extra says otherwise (a TESSERA_DEV_NODES
    or TESSERA_DEV_REPLICAS of the caller's shell is not for the tests: they
    assume one agent on 127.0.0.1, cluster_stack aside, and one process per
    service, replicated_stack aside)."""
    env = dict(os.environ, **extra)
    env["TESSERA_DEV_NODES"] = extra.get("TESSERA_DEV_NODES", "1")
    env["TESSERA_DEV_REPLICAS"] = extra.get("TESSERA_DEV_REPLICAS", "1")
    env["TESSERA_STATE_DIR"] = state_dir
    env.setdefault("TESSERA_BIN_DIR", BIN_DIR)
    return subprocess.run(
        ["sh", script],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
    )


_failed_tests = []


@pytest.fixture(scope="session")
def bin_dir():
    """Absolute path of the built binaries (TESSERA_BIN_DIR, default build/bin)."""
    if not os.path.isdir(BIN_DIR):
        pytest.skip(f"{BIN_DIR} does not exist: build first (make)")
    return os.path.abspath(BIN_DIR)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Remember failures: the stack's logs are then kept for inspection."""
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        _failed_tests.append(item.nodeid)


def node_network_leftovers(env):
    """What is left of a stack's node network (TESSERA_DEV_NODES > 1) on this
    host: its nodes' network namespaces, its bridge and veths, the host's
    iptables chain for it."""
    br = env.get("TESSERA_NODE_NETWORK")
    if not br:
        return []
    found = []
    if os.path.isdir("/run/netns"):
        found += [f"netns {n}" for n in os.listdir("/run/netns") if n.startswith(br + "-node")]
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, timeout=10).stdout
    for line in links.splitlines():
        name = line.split(":")[1].strip().split("@")[0] if ":" in line else ""
        if name == br or re.fullmatch(re.escape(br) + r"n\d+", name):
            found.append(f"link {name}")
    rules = subprocess.run(["iptables-save", "-t", "filter"], capture_output=True, text=True, timeout=10).stdout
    found += [f"iptables: {r}" for r in rules.splitlines() if "TESSERA-NODES-" + br in r or f"tessera-nodes:{br}" in r]
    return found


@contextlib.contextmanager
def dev_stack(prefix, **env_extra):
    """A development stack (dev-up.sh with env_extra, e.g. TESSERA_DEV_NODES) in
    a fresh temporary state dir: yields its environment (<state>/env as a
    dict). Afterwards dev-down.sh, and a check that none of its processes,
    session containers or node network survived. Skips when there are no
    binaries, or when nodes are asked for (TESSERA_DEV_NODES > 1) without root."""
    if not os.path.isdir(BIN_DIR):
        pytest.skip(f"{BIN_DIR} does not exist: build first (make)")
    if int(env_extra.get("TESSERA_DEV_NODES", "1")) > 1 and os.geteuid() != 0:
        pytest.skip("a multi-node stack needs root (network namespaces)")
    state_dir = tempfile.mkdtemp(prefix=prefix)
    up = None
    env = {}
    try:
        up = _run_script(DEV_UP, state_dir, timeout=180, **env_extra)
        if up.returncode != 0:
            pytest.fail(f"dev-up.sh failed (exit {up.returncode}); state dir {state_dir}:\n{up.stdout}",
                        pytrace=False)
        env = parse_env_file(os.path.join(state_dir, "env"))
        yield env
    finally:
        # Read the recorded pids before dev-down (it keeps <state>/services, but
        # be independent of that), stop, then check that nothing survived.
        recorded = {pid for pid, _ in parse_services_file(os.path.join(state_dir, "services")).values()}
        run_dir = os.path.join(state_dir, "run")
        if os.path.isdir(run_dir):
            for f in os.listdir(run_dir):
                if f.endswith(".pid"):
                    try:
                        with open(os.path.join(run_dir, f), encoding="utf-8") as fh:
                            recorded.add(int(fh.read().split()[0]))
                    except (OSError, ValueError, IndexError):
                        pass
        pids = {}
        for pid in recorded:
            st = _proc_stat(pid)
            if st and st[0] != "Z":
                pids[pid] = st[1]
        kernel_ids = set()
        for agent_dir in ["agent"] + [d + "/agent" for d in os.listdir(state_dir) if re.fullmatch(r"node\d+", d)]:
            kernels_dir = os.path.join(state_dir, agent_dir, "kernels")
            if os.path.isdir(kernels_dir):
                kernel_ids |= set(os.listdir(kernels_dir))
        down = _run_script(DEV_DOWN, state_dir, timeout=120)
        left = []
        deadline = time.monotonic() + 5
        while True:
            left = survivors(state_dir, pids)
            if not left or time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        problems = []
        if down.returncode != 0:
            problems.append(f"dev-down.sh failed (exit {down.returncode}):\n{down.stdout}")
        if left:
            problems.append("processes survived dev-down:\n" +
                            "\n".join(f"  {pid}: {cmd}" for pid, cmd in left))
        kernel_left = kernel_leftovers(kernel_ids)
        if kernel_left:
            problems.append("session containers survived dev-down:\n" +
                            "\n".join(f"  {x}" for x in kernel_left))
        net_left = node_network_leftovers(env)
        if net_left:
            problems.append("the node network survived dev-down:\n" + "\n".join(f"  {x}" for x in net_left))
        if problems:
            pytest.fail(f"stack teardown ({state_dir}, kept for inspection):\n" + "\n".join(problems),
                        pytrace=False)
        keep = (os.environ.get("TESSERA_KEEP_STATE") == "1" or _failed_tests
                or up is None or up.returncode != 0)
        if keep:
            print(f"\ntessera stack state (logs) kept in {state_dir}")
        else:
            shutil.rmtree(state_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def stack():
    """The running development stack: a dict of its environment (<state>/env):
    TESSERA_STATE_DIR, TESSERA_<SERVICE>_URL, KAFKA_BOOTSTRAP, TESSERA_PG_DSN,
    TESSERA_REDIS_URL, TESSERA_OCI_REGISTRY, ... The processes are listed in
    parse_services_file(<TESSERA_STATE_DIR>/services). Logs: <state>/logs/, kept
    when a test fails or TESSERA_KEEP_STATE=1."""
    with dev_stack("tessera-it-") as env:
        yield env


@pytest.fixture(scope="module")
def cluster_stack():
    """A stack of three nodes (TESSERA_DEV_NODES=3, deploy/dev/nodes.sh): each
    node a network namespace with an agent of its own (node1..node3), the
    control plane on the node network's address. Its environment adds
    TESSERA_NODE_NETWORK, TESSERA_CONTROL_PLANE_ADDR and TESSERA_NODE_<k>_NAME,
    _ADDR, _NETNS, _AGENT_URL. One per module that uses it: start it once."""
    with dev_stack("tessera-cl-", TESSERA_DEV_NODES="3") as env:
        yield env
