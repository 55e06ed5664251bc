"""`tessera session ...` and `tessera admin agent|resource-group|image ...`,
black-box: --help on every subcommand, usage errors (exit 2) before any
request, and round trips against the stack with the API's errors mapped to
one-line messages naming the HTTP status (exit 1). `session create` shows its
progress on stderr (a line per change; one updating line on a terminal)."""
import json
import os
import pty
import re
import select
import subprocess
import time
import uuid

import pytest

from conftest import wait_until
from test_cli import admin_env, base_env, closed_port, fails, header_row, js, ok, run

SUBCOMMANDS = ["create", "list", "info", "destroy", "restart", "logs", "exec", "run", "history",
               "upload", "download", "files", "rename", "interrupt"]
ADMIN = {
    "agent": {"list", "get"},
    "resource-group": {"list", "get", "create", "update"},
    "image": {"list", "get", "register", "delete", "scan"},
}
TAG = uuid.uuid4().hex[:6]
_n = [0]


def name(prefix="c"):
    _n[0] += 1
    return f"{prefix}-{TAG}-{_n[0]}"


# ---- without the stack ----------------------------------------------------------------


def test_help_on_every_subcommand(bin_dir, tmp_path):
    env = base_env(tmp_path)
    top = ok(bin_dir, env, "--help")
    assert re.search(r"^  session\s", top, re.M)
    out = ok(bin_dir, env, "session", "--help")
    assert out.startswith("Usage: tessera session")
    for sub in SUBCOMMANDS:
        assert re.search(r"^  %s\s" % sub, out, re.M), f"{sub} missing from session --help"
        h = ok(bin_dir, env, "session", sub, "--help")
        assert h.startswith(f"Usage: tessera session {sub}"), h
        assert "--json" in h
        ok(bin_dir, env, "session", sub, "-h")
    create = ok(bin_dir, env, "session", "create", "--help")
    for flag in ("--name", "--type", "--group", "--resource-group", "-r", "--env",
                 "--startup-command", "--mount", "--port", "--enqueue-only", "--max-wait",
                 "--reuse"):
        assert flag in create
    assert "--all" in ok(bin_dir, env, "session", "list", "--help")
    assert "--forced" in ok(bin_dir, env, "session", "destroy", "--help")


def test_help_on_the_registry_admin_resources(bin_dir, tmp_path):
    env = base_env(tmp_path)
    top = ok(bin_dir, env, "admin", "--help")
    for res, verbs in ADMIN.items():
        m = re.search(r"^  %s\s.*\n\s+(\S+)$" % re.escape(res), top, re.M)
        assert m, f"admin {res} missing from admin --help"
        assert verbs <= set(m.group(1).split("|"))
        assert f"Usage: tessera admin {res}" in ok(bin_dir, env, "admin", res, "--help")
        for verb in verbs:
            h = ok(bin_dir, env, "admin", res, verb, "--help")
            assert h.startswith(f"Usage: tessera admin {res} {verb}") and "--json" in h
    h = ok(bin_dir, env, "admin", "resource-group", "create", "--help")
    for flag in ("--scheduler", "--agent-selector", "--session-types", "--pending-timeout"):
        assert flag in h
    assert "--resource-group" in ok(bin_dir, env, "admin", "agent", "list", "--help")


@pytest.mark.parametrize("args", [
    ["session"],
    ["session", "frob"],
    ["session", "create"],
    ["session", "create", "img", "extra"],
    ["session", "create", "img", "--bogus"],
    ["session", "create", "img", "-r", "cpu"],
    ["session", "create", "img", "-r", "=1"],
    ["session", "create", "img", "-r", ""],
    ["session", "create", "img", "--env", "NOVALUE"],
    ["session", "create", "img", "--type", "party"],
    ["session", "create", "img", "--max-wait", "soon"],
    ["session", "create", "img", "--max-wait", "-1"],
    ["session", "create", "img", "--name"],
    ["session", "list", "extra"],
    ["session", "list", "--limit", "many"],
    ["session", "info"],
    ["session", "info", "a", "b"],
    ["session", "destroy"],
    ["session", "destroy", "a", "--bogus"],
    ["session", "restart"],
    ["session", "logs"],
    ["session", "exec"],
    ["session", "exec", "a"],
    ["session", "exec", "a", "--"],
    ["session", "run", "a"],
    ["session", "run", "a", "b", "c"],
    ["session", "history"],
    ["session", "rename", "a"],
    ["session", "rename", "a", "b", "c"],
    ["session", "interrupt"],
    ["session", "interrupt", "a", "b"],
    ["admin", "agent", "frob"],
    ["admin", "agent", "get"],
    ["admin", "resource-group", "create"],
    ["admin", "resource-group", "update", "g"],
    ["admin", "resource-group", "create", "g", "--pending-timeout", "soon"],
    ["admin", "image", "register"],
    ["admin", "image", "scan", "extra"],
])
def test_usage_errors_exit_2(bin_dir, tmp_path, args):
    env = base_env(tmp_path, TESSERA_ACCESS_KEY="A" * 20, TESSERA_SECRET_KEY="s" * 40,
                   TESSERA_GATEWAY_URL=f"http://127.0.0.1:{closed_port()}")
    r = run(bin_dir, env, *args)
    assert r.returncode == 2, f"{args}: exit {r.returncode}\n{r.stdout}{r.stderr}"
    assert r.stderr.strip() and "cannot reach" not in r.stderr
    assert "Segmentation" not in r.stderr


def test_no_credentials_and_unreachable(bin_dir, tmp_path):
    assert "tessera login" in fails(bin_dir, base_env(tmp_path), "session", "list")
    url = f"http://127.0.0.1:{closed_port()}"
    env = base_env(tmp_path, TESSERA_ACCESS_KEY="A" * 20, TESSERA_SECRET_KEY="s" * 40,
                   TESSERA_GATEWAY_URL=url)
    assert url in fails(bin_dir, env, "session", "info", "x")


# ---- against the stack -------------------------------------------------------------------


@pytest.fixture(scope="module")
def admin(stack, tmp_path_factory):
    return admin_env(stack, tmp_path_factory.mktemp("sess-home"))


@pytest.fixture(scope="module")
def image(stack, bin_dir, admin):
    img = stack.get("TESSERA_DEMO_IMAGE")
    if not img:
        pytest.skip("the stack has no demo image (TESSERA_DEMO_IMAGE)")
    ok(bin_dir, admin, "admin", "image", "register", img)
    return img


def quietly_destroy(bin_dir, env, sname):
    run(bin_dir, env, "session", "destroy", sname)


def test_create_enqueue_only_list_info_history_destroy(bin_dir, admin, image):
    sname = name()
    out = ok(bin_dir, admin, "session", "create", image, "--name", sname, "--enqueue-only",
             "-r", "cpu=1,mem=256m", "--env", "GREETING=hello", "--env", "X=1=2")
    assert re.search(r"^session %s created: \S+" % re.escape(sname), out, re.M), out
    body = js(bin_dir, admin, "session", "info", sname)
    assert body["sessionName"] == sname and body["image"] == image
    assert body["requestedSlots"]["cpu"] in ("1", 1)
    out = ok(bin_dir, admin, "session", "list")
    assert header_row(out)[:3] == ["NAME", "ID", "STATUS"]
    assert any(line.split()[0] == sname for line in out.splitlines()[1:])
    out = ok(bin_dir, admin, "session", "list", "--all", "--limit", "1000")
    assert "OWNER" in header_row(out)
    listed = js(bin_dir, admin, "session", "list", "--status", "TERMINATED")
    assert sname not in [s["sessionName"] for s in listed["items"]]
    out = ok(bin_dir, admin, "session", "info", sname)
    assert re.search(r"^sessionUuid\s+%s$" % body["sessionUuid"], out, re.M)
    out = ok(bin_dir, admin, "session", "history", sname)
    assert header_row(out) == ["TIME", "STATUS", "REASON"]
    assert out.splitlines()[1].split()[2] == "PENDING"
    out = ok(bin_dir, admin, "session", "rename", sname, sname + "-r")
    assert f"session {sname} renamed to {sname}-r" in out
    assert js(bin_dir, admin, "session", "info", sname + "-r")["sessionUuid"] == body["sessionUuid"]
    ok(bin_dir, admin, "session", "rename", sname + "-r", sname)
    out = ok(bin_dir, admin, "session", "destroy", sname)
    assert f"session {sname} destroyed" in out
    wait_until(lambda: js(bin_dir, admin, "session", "info", sname)["status"] in
               {"CANCELLED", "TERMINATED"}, timeout=20)


def test_api_errors_are_one_line_messages(bin_dir, admin, image):
    fails(bin_dir, admin, "session", "info", f"nothing-{TAG}", status=404)
    fails(bin_dir, admin, "session", "destroy", f"nothing-{TAG}", status=404)
    err = fails(bin_dir, admin, "session", "create", "127.0.0.1:1/no/such:img", "--enqueue-only",
                status=400)
    assert "image" in err
    fails(bin_dir, admin, "session", "create", image, "--enqueue-only", "-r", "cpu=100000",
          status=400)
    fails(bin_dir, admin, "session", "create", image, "--enqueue-only", "-r", "cpu=lots",
          status=400)
    fails(bin_dir, admin, "session", "create", image, "--enqueue-only",
          "--resource-group", f"none-{TAG}", status=400)
    sname = name("dup")
    ok(bin_dir, admin, "session", "create", image, "--name", sname, "--enqueue-only")
    fails(bin_dir, admin, "session", "create", image, "--name", sname, "--enqueue-only", status=409)
    again = js(bin_dir, admin, "session", "create", image, "--name", sname, "--enqueue-only",
               "--reuse")
    assert again["created"] is False
    quietly_destroy(bin_dir, admin, sname)


def test_create_waits_with_progress_then_destroy(bin_dir, admin, image):
    sname = name("wait")
    r = run(bin_dir, admin, "session", "create", image, "--name", sname, "--max-wait", "30",
            timeout=60)
    try:
        assert r.returncode == 0, r.stderr
        assert re.search(r"^session %s RUNNING$" % re.escape(sname), r.stdout, re.M), r.stdout
        lines = [ln for ln in r.stderr.splitlines() if sname in ln]
        assert lines and "RUNNING" in lines[-1], r.stderr
        assert all(re.match(r"^\[\s*\d+\.\d+s\] ", ln) for ln in lines), r.stderr
        assert len(lines) == len(set(ln.split("] ", 1)[1] for ln in lines)), "a line per change"
        assert "\r" not in r.stderr  # not a terminal: no updating line
        info = js(bin_dir, admin, "session", "info", sname)
        assert info["status"] == "RUNNING"
        out = ok(bin_dir, admin, "session", "info", sname)
        assert re.search(r"^NAME\s+KERNEL\s+ROLE\s+AGENT\s+STATUS", out, re.M)
        assert re.search(r"^main1\s", out, re.M), out
    finally:
        ok(bin_dir, admin, "session", "destroy", sname)
    wait_until(lambda: js(bin_dir, admin, "session", "info", sname)["status"] == "TERMINATED",
               timeout=30)


def test_gpu_session_gets_the_cuda_shim(bin_dir, admin, image):
    """The whole path: a batch session asking for cuda.shares=0.5 runs in a
    busybox container with the shim preloaded and its memory cap (half of a
    16 GiB mock GPU) in /etc/tessera/cuda-shim.conf; a CPU-only session has no
    /etc/ld.so.preload. Each command fails (and so the session) otherwise."""
    gpu = ("grep -qx /opt/tessera/lib/libtessera-cuda.so /etc/ld.so.preload"
           f" && grep -qx 'mem_limit = 0:{8 << 30}' /etc/tessera/cuda-shim.conf"
           " && grep -qx 'compute_share = 0.50' /etc/tessera/cuda-shim.conf")
    for sname, slots, cmd in ((name("gpu"), "cpu=1,mem=256m,cuda.shares=0.5", gpu),
                              (name("cpu"), "cpu=1,mem=256m", "test ! -e /etc/ld.so.preload")):
        r = run(bin_dir, admin, "session", "create", image, "--name", sname, "--type", "batch",
                "-r", slots, "--startup-command", cmd, "--max-wait", "60", timeout=90)
        try:
            assert r.returncode == 0, (slots, r.stdout, r.stderr)
        finally:
            quietly_destroy(bin_dir, admin, sname)


def test_create_on_a_terminal_updates_one_line(bin_dir, admin, image):
    sname = name("tty")
    master, slave = pty.openpty()
    p = subprocess.Popen([os.path.join(bin_dir, "tessera"), "session", "create", image, "--name",
                          sname, "--max-wait", "30"], env=admin, stdin=slave, stdout=slave,
                         stderr=slave)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        rl, _, _ = select.select([master], [], [], 0.5)
        if rl:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        elif p.poll() is not None:
            break
    p.wait(timeout=10)
    os.close(master)
    quietly_destroy(bin_dir, admin, sname)
    text = out.decode(errors="replace")
    assert p.returncode == 0, text
    assert "\r\x1b[K" in text and "RUNNING" in text, text


def test_json_create_answer_and_enqueue_only(bin_dir, admin, image):
    sname = name("js")
    body = js(bin_dir, admin, "session", "create", image, "--name", sname, "--enqueue-only")
    assert {"sessionId", "sessionUuid", "status", "servicePorts", "created"} <= set(body)
    assert body["created"] is True
    quietly_destroy(bin_dir, admin, sname)


def test_restart_of_a_pending_session_is_refused(bin_dir, admin, image, stack):
    sname = name("rs")
    # a batch session that may start only in an hour stays PENDING
    import bai_signer
    c = bai_signer.Client(stack["TESSERA_GATEWAY_URL"], admin["TESSERA_ACCESS_KEY"],
                          admin["TESSERA_SECRET_KEY"])
    r = c.post("/session", {"image": image, "name": sname, "type": "batch",
                            "startupCommand": "sleep 60", "starts_at": "1h", "enqueueOnly": True})
    assert r.status_code == 201, r.text
    fails(bin_dir, admin, "session", "restart", sname, status=409)
    quietly_destroy(bin_dir, admin, sname)


def _running_session(bin_dir, admin, image, prefix):
    sname = name(prefix)
    r = run(bin_dir, admin, "session", "create", image, "--name", sname, "--max-wait", "30",
            timeout=60)
    if r.returncode != 0 or js(bin_dir, admin, "session", "info", sname)["status"] != "RUNNING":
        quietly_destroy(bin_dir, admin, sname)
        pytest.fail(f"the session did not reach RUNNING: {r.stderr}")
    return sname


@pytest.fixture(scope="module")
def running(bin_dir, admin, image):
    sname = _running_session(bin_dir, admin, image, "run")
    yield sname
    quietly_destroy(bin_dir, admin, sname)


@pytest.fixture
def restartable(bin_dir, admin, image):
    """A session of its own: a failed restart must not break the others'."""
    sname = _running_session(bin_dir, admin, image, "rst")
    yield sname
    quietly_destroy(bin_dir, admin, sname)


def test_restart_running(bin_dir, admin, restartable):
    out = ok(bin_dir, admin, "session", "restart", restartable)
    assert out.startswith(f"session {restartable} restarting")
    wait_until(lambda: js(bin_dir, admin, "session", "info", restartable)["status"] == "RUNNING",
               timeout=15, message="RUNNING again after restart")
    hist = js(bin_dir, admin, "session", "history", restartable)["items"]
    assert "RESTARTING" in [h["status"] for h in hist]


def test_exec_and_run(bin_dir, admin, running):
    r = run(bin_dir, admin, "session", "exec", running, "--", "echo", "hi")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "hi\n"
    r = run(bin_dir, admin, "session", "exec", running, "--", "echo out; echo err >&2; exit 3")
    assert r.returncode == 3 and r.stdout == "out\n" and "err" in r.stderr
    r = run(bin_dir, admin, "session", "exec", running, "--", "echo", "a b", "it's")
    assert r.stdout == "a b it's\n"
    body = js(bin_dir, admin, "session", "exec", running, "--", "echo", "hi")
    assert ["stdout", "hi\n"] in body["result"]["console"]
    r = run(bin_dir, admin, "session", "run", running, "echo from-query")
    assert r.returncode == 0 or "(HTTP" in r.stderr  # query mode needs the image's runtime


def test_logs(bin_dir, admin, running):
    r = run(bin_dir, admin, "session", "logs", running)
    assert r.returncode == 0, r.stderr
    body = js(bin_dir, admin, "session", "logs", running)
    assert r.stdout == body["result"]["logs"]


def test_admin_agent_and_resource_group(bin_dir, admin):
    out = ok(bin_dir, admin, "admin", "agent", "list")
    assert header_row(out)[:2] == ["ID", "STATUS"]
    agents = js(bin_dir, admin, "admin", "agent", "list", "--status", "ALIVE")["items"]
    if agents:
        aid = agents[0]["id"]
        assert js(bin_dir, admin, "admin", "agent", "get", aid)["id"] == aid
        assert re.search(r"^status\s+ALIVE$", ok(bin_dir, admin, "admin", "agent", "get", aid), re.M)
    fails(bin_dir, admin, "admin", "agent", "get", f"no-agent-{TAG}", status=404)
    rg = f"cli-rg-{TAG}"
    g = js(bin_dir, admin, "admin", "resource-group", "create", rg, "--scheduler", "lifo",
           "--session-types", "batch,interactive", "--pending-timeout", "600",
           "--description", "from the CLI")
    assert g["name"] == rg and g["scheduler"] == "lifo" and g["pending_timeout"] == 600
    assert sorted(g["allowed_session_types"]) == ["batch", "interactive"]
    out = ok(bin_dir, admin, "admin", "resource-group", "update", rg, "--agent-selector",
             "roundrobin", "--no-active")
    assert re.search(r"^agent_selector\s+roundrobin$", out, re.M)
    out = ok(bin_dir, admin, "admin", "resource-group", "list")
    assert header_row(out)[:3] == ["NAME", "ACTIVE", "SCHEDULER"]
    assert any(line.split()[0] == rg for line in out.splitlines()[1:])
    assert js(bin_dir, admin, "admin", "resource-group", "get", rg)["is_active"] is False
    fails(bin_dir, admin, "admin", "resource-group", "create", rg, status=409)
    fails(bin_dir, admin, "admin", "resource-group", "create", f"x-{TAG}", "--scheduler", "best",
          status=400)


def test_admin_image(bin_dir, admin, image):
    out = ok(bin_dir, admin, "admin", "image", "list", "--limit", "1000")
    assert header_row(out)[0] == "REFERENCE"
    assert any(line.split()[0] == image for line in out.splitlines()[1:])
    assert js(bin_dir, admin, "admin", "image", "get", image)["reference"] == image
    scanned = js(bin_dir, admin, "admin", "image", "scan")
    assert image in scanned["registered"]
    assert "scan" in ok(bin_dir, admin, "admin", "image", "scan")
    fails(bin_dir, admin, "admin", "image", "get", "127.0.0.1:1/none:x", status=404)
    err = run(bin_dir, admin, "admin", "image", "register", "127.0.0.1:1/none:x")
    assert err.returncode == 1 and re.search(r"\(HTTP [45]\d\d\)$", err.stderr.strip()), err.stderr
    # delete and register again (sessions need it registered)
    assert "deleted" in ok(bin_dir, admin, "admin", "image", "delete", image)
    fails(bin_dir, admin, "admin", "image", "get", image, status=404)
    reg = js(bin_dir, admin, "admin", "image", "register", image)
    assert reg["reference"] == image


def test_preopen_ports_are_published(bin_dir, admin, image):
    """--port (config.preopen_ports): published on host ports like the image's
    own service ports, listed as apps named by the port."""
    sname = name("pp")
    r = run(bin_dir, admin, "session", "create", image, "--name", sname, "--port", "9100",
            "--port", "9200", "--max-wait", "60", timeout=90)
    try:
        assert r.returncode == 0, (r.stdout, r.stderr)
        ports = {p["name"]: p for p in js(bin_dir, admin, "session", "info", sname)["servicePorts"]}
        for port in (9100, 9200):
            assert ports[str(port)]["protocol"] == "preopen", ports
            assert ports[str(port)]["container_ports"] == [port]
            assert ports[str(port)]["host_ports"][0] > 0
    finally:
        quietly_destroy(bin_dir, admin, sname)
    for bad in ("80", "x", "70000", ""):
        r = run(bin_dir, admin, "session", "create", image, "--port", bad)
        assert r.returncode == 2, (bad, r.stdout, r.stderr)
        assert "--port needs a port number from 1024 to 65535" in r.stderr
