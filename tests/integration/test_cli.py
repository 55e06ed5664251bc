"""The `tessera` CLI, black-box: credentials (environment, login file), signed
admin round trips through the real gateway and auth, the messages for the
API's errors (exit 1), usage errors (exit 2), and --help on every command."""
import json
import os
import pty
import re
import select
import socket
import stat
import subprocess
import time
import uuid

import pytest

from conftest import parse_env_file

CRED_VARS = ("TESSERA_ACCESS_KEY", "TESSERA_SECRET_KEY", "BACKEND_ACCESS_KEY",
             "BACKEND_SECRET_KEY", "TESSERA_GATEWAY_URL", "BACKEND_ENDPOINT", "XDG_CONFIG_HOME")

# What the CLI must offer: resource -> verbs (issue 3, part 5).
EXPECTED = {
    "user": {"list", "get", "create", "update", "delete"},
    "keypair": {"list", "issue", "revoke", "update"},
    "domain": {"list", "get", "create", "update", "delete"},
    "project": {"list", "get", "create", "update", "delete", "members", "add-member",
                "remove-member"},
    "policy keypair": {"list", "get", "create", "update", "delete"},
    "policy user": {"list", "get", "create", "update", "delete"},
    "rg-access": {"list", "add", "remove"},
    "resource-preset": {"list", "get", "create", "update", "delete"},
    "access-log": {"list"},
    "agent": {"list", "get", "drain", "undrain"},
}
COMMANDS = ["version", "status", "login", "logout", "whoami", "password", "user-config",
            "ssh-keypair", "admin", "resource", "scaling-groups", "graphql"]


def base_env(home, **extra):
    """The process environment without any credentials, HOME and the config dir
    in a temporary place."""
    env = {k: v for k, v in os.environ.items() if k not in CRED_VARS}
    env["HOME"] = str(home)
    env["XDG_CONFIG_HOME"] = os.path.join(str(home), "xdg")
    env.update(extra)
    return env


def admin_env(stack, home):
    """The superadmin's CLI environment on stack (HOME in home); a skip where
    the stack has no superadmin keys."""
    env = dict(stack)
    creds = os.path.join(stack["TESSERA_STATE_DIR"], "auth", "admin-credentials")
    if "TESSERA_ADMIN_ACCESS_KEY" not in env and os.path.exists(creds):
        env.update(parse_env_file(creds))
    if "TESSERA_ADMIN_ACCESS_KEY" not in env:
        pytest.skip("no superadmin keys in the stack's env")
    return base_env(home, TESSERA_GATEWAY_URL=stack["TESSERA_GATEWAY_URL"],
                    TESSERA_ACCESS_KEY=env["TESSERA_ADMIN_ACCESS_KEY"],
                    TESSERA_SECRET_KEY=env["TESSERA_ADMIN_SECRET_KEY"])


def run(bin_dir, env, *args, stdin=None, timeout=30):
    return subprocess.run([os.path.join(bin_dir, "tessera"), *args], env=env, input=stdin,
                          capture_output=True, text=True, timeout=timeout)


def ok(bin_dir, env, *args, stdin=None):
    r = run(bin_dir, env, *args, stdin=stdin)
    assert r.returncode == 0, f"tessera {' '.join(args)}: exit {r.returncode}\n{r.stderr}"
    return r.stdout


def js(bin_dir, env, *args):
    return json.loads(ok(bin_dir, env, "--json", *args))


def fails(bin_dir, env, *args, status=None, code=1, stdin=None):
    """Exit `code` with a one-line message; API errors name the HTTP status."""
    r = run(bin_dir, env, *args, stdin=stdin)
    assert r.returncode == code, (
        f"tessera {' '.join(args)}: exit {r.returncode}, wanted {code}\n{r.stdout}{r.stderr}")
    assert r.stderr.startswith("tessera"), r.stderr
    if status is not None:
        assert re.search(r"^tessera: [^:]+: .+ \(HTTP %d\)$" % status, r.stderr.strip(), re.M), \
            r.stderr
    return r.stderr


def header_row(out):
    return out.splitlines()[0].split()


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---- without the stack ----------------------------------------------------------------


def admin_tree(bin_dir, tmp_path):
    """resource -> verbs, read from `tessera admin --help` (and the groups' help)."""
    out = ok(bin_dir, base_env(tmp_path), "admin", "--help")
    tree = {}
    lines = out.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^  (\S+(?: \S+)?)\s{2,}\S", line)
        if m and i + 1 < len(lines):
            verbs = lines[i + 1].strip()
            if re.fullmatch(r"[a-z-]+(\|[a-z-]+)*", verbs):
                tree[m.group(1)] = set(verbs.split("|"))
    return tree


def test_help_on_every_command(bin_dir, tmp_path):
    env = base_env(tmp_path)
    top = ok(bin_dir, env, "--help")
    for cmd in COMMANDS:
        assert re.search(r"^  %s\s" % cmd, top, re.M), f"{cmd} missing from tessera --help"
        out = ok(bin_dir, env, cmd, "--help")
        assert "Usage: tessera " + cmd in out
    tree = admin_tree(bin_dir, tmp_path)
    for res, verbs in EXPECTED.items():
        assert verbs <= tree.get(res, set()), f"admin {res}: {verbs - tree.get(res, set())}"
    for res, verbs in tree.items():
        words = res.split()
        if len(words) == 2:
            assert res in ok(bin_dir, env, "admin", words[0], "--help")
        out = ok(bin_dir, env, "admin", *words, "--help")
        assert "Usage: tessera admin " + res in out
        for verb in verbs:
            out = ok(bin_dir, env, "admin", *words, verb, "--help")
            assert out.startswith(f"Usage: tessera admin {res} {verb}"), out
            assert "--json" in out
            # -h anywhere among the flags works too
            ok(bin_dir, env, "admin", *words, verb, "--json", "-h")


def test_help_shows_the_flags_of_the_api_fields(bin_dir, tmp_path):
    env = base_env(tmp_path)
    out = ok(bin_dir, env, "admin", "policy", "keypair", "create", "--help")
    for flag in ("--slots", "--max-concurrent-sessions", "--idle-timeout", "--vfolder-hosts"):
        assert flag in out
    out = ok(bin_dir, env, "admin", "access-log", "--help")
    for flag in ("--access-key", "--user", "--method", "--path-prefix", "--status", "--since",
                 "--until", "--limit", "--offset"):
        assert flag in out
    assert "--limit" in ok(bin_dir, env, "admin", "user", "list", "--help")


@pytest.mark.parametrize("args", [
    [],
    ["frobnicate"],
    ["status", "extra"],
    ["--bogus", "status"],
    ["login", "extra"],
    ["login", "--password-stdin"],          # needs --username
    ["login", "--bogus"],
    ["logout", "now"],
    ["whoami", "--bogus"],
    ["password", "x"],
    ["admin"],
    ["admin", "nope", "list"],
    ["admin", "user"],
    ["admin", "user", "frob"],
    ["admin", "user", "get"],
    ["admin", "user", "get", "a", "b"],
    ["admin", "user", "list", "--bogus"],
    ["admin", "user", "list", "--limit", "many"],
    ["admin", "user", "list", "--offset", "-1"],
    ["admin", "user", "create", "--email", "a@b", "--username", "a"],  # --password missing
    ["admin", "user", "update", "00000000-0000-4000-8000-000000000000"],  # nothing to change
    ["admin", "keypair", "issue"],
    ["admin", "keypair", "update", "AK", "--rate-limit", "fast"],
    ["admin", "keypair", "update", "AK", "--active=maybe"],
    ["admin", "domain", "create"],
    ["admin", "domain", "create", "d", "--slots", "cpu"],
    ["admin", "domain", "create", "d", "--slots", "=8"],
    ["admin", "domain", "create", "d", "--slots"],
    ["admin", "policy"],
    ["admin", "policy", "frob", "list"],
    ["admin", "policy", "user", "create", "p", "--max-quota-scope-size", "lots"],
    ["admin", "project", "add-member", "p"],
    ["admin", "rg-access", "add", "--resource-group", "g"],
    ["admin", "access-log", "--status", "ok"],
])
def test_usage_errors_exit_2(bin_dir, tmp_path, args):
    # keys set: a usage error is found before any request (the endpoint is closed)
    env = base_env(tmp_path, TESSERA_ACCESS_KEY="A" * 20, TESSERA_SECRET_KEY="s" * 40,
                   TESSERA_GATEWAY_URL=f"http://127.0.0.1:{closed_port()}")
    r = run(bin_dir, env, *args)
    assert r.returncode == 2, f"{args}: exit {r.returncode}\n{r.stdout}{r.stderr}"
    assert r.stderr.strip(), "a usage error says what is wrong"
    assert "Traceback" not in r.stderr and "Segmentation" not in r.stderr


def test_half_set_credentials_are_a_usage_error(bin_dir, tmp_path):
    env = base_env(tmp_path, TESSERA_ACCESS_KEY="A" * 20)
    assert "TESSERA_SECRET_KEY" in fails(bin_dir, env, "admin", "domain", "list", code=2)


def test_no_credentials(bin_dir, tmp_path):
    env = base_env(tmp_path)
    assert "tessera login" in fails(bin_dir, env, "admin", "user", "list")
    assert "tessera login" in fails(bin_dir, env, "whoami")


def test_unreachable_gateway_is_named(bin_dir, tmp_path):
    url = f"http://127.0.0.1:{closed_port()}"
    env = base_env(tmp_path, TESSERA_ACCESS_KEY="A" * 20, TESSERA_SECRET_KEY="s" * 40)
    err = fails(bin_dir, env, "--endpoint", url, "admin", "domain", "list")
    assert "cannot reach" in err and url in err
    env = base_env(tmp_path, BACKEND_ENDPOINT=url)  # Backend.AI's variable is read too
    assert url in fails(bin_dir, env, "version")
    assert "bad endpoint" in fails(bin_dir, env, "--endpoint", "nourl", "version", code=2)


def test_logout_without_login(bin_dir, tmp_path):
    assert "Not logged in" in ok(bin_dir, base_env(tmp_path), "logout")


# ---- against the stack -------------------------------------------------------------------


@pytest.fixture(scope="module")
def gw(stack):
    if not stack.get("TESSERA_ADMIN_EMAIL"):
        pytest.fail("the stack's env has no TESSERA_ADMIN_EMAIL (auth bootstrap)")
    return stack["TESSERA_GATEWAY_URL"]


@pytest.fixture(scope="module")
def admin(bin_dir, stack, gw, tmp_path_factory):
    """An environment logged in as the bootstrap superadmin through `tessera
    login` (keys only in the credentials file)."""
    home = tmp_path_factory.mktemp("admin-home")
    env = base_env(home, TESSERA_GATEWAY_URL=gw)
    out = ok(bin_dir, env, "login", "--username", stack["TESSERA_ADMIN_EMAIL"],
             "--password-stdin", stdin=stack["TESSERA_ADMIN_PASSWORD"] + "\n")
    assert "Logged in" in out and stack["TESSERA_ADMIN_PASSWORD"] not in out
    return env


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_login_file_whoami_logout(bin_dir, stack, gw, tmp_path):
    env = base_env(tmp_path, TESSERA_GATEWAY_URL=gw)
    ok(bin_dir, env, "login", "-u", stack["TESSERA_ADMIN_EMAIL"], "--domain", "default",
       "--password-stdin", stdin=stack["TESSERA_ADMIN_PASSWORD"] + "\n")
    path = os.path.join(env["XDG_CONFIG_HOME"], "tessera", "credentials")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path) as f:
        text = f.read()
    assert re.search(r"^access_key = [A-Z0-9]{20}$", text, re.M)
    me = js(bin_dir, env, "whoami")
    assert me["user"]["email"] == stack["TESSERA_ADMIN_EMAIL"]
    assert me["role"]["global_role"] == "superadmin"
    assert me["credentials"] == path
    out = ok(bin_dir, env, "whoami")
    assert re.search(r"^email\s+" + re.escape(stack["TESSERA_ADMIN_EMAIL"]), out, re.M)
    assert "secret" not in out
    # without XDG_CONFIG_HOME: ~/.config/tessera/credentials; stdin not a tty is read too
    env2 = dict(env)
    del env2["XDG_CONFIG_HOME"]
    ok(bin_dir, env2, "login", stdin=f"{stack['TESSERA_ADMIN_EMAIL']}\n"
                                     f"{stack['TESSERA_ADMIN_PASSWORD']}\n")
    assert os.path.exists(os.path.join(str(tmp_path), ".config", "tessera", "credentials"))
    ok(bin_dir, env2, "whoami")
    assert "Logged out" in ok(bin_dir, env, "logout")
    assert not os.path.exists(path)
    fails(bin_dir, env, "whoami")


def test_env_keys_win_over_the_file(bin_dir, stack, gw, admin):
    env = dict(admin, BACKEND_ACCESS_KEY="A" * 20, BACKEND_SECRET_KEY="s" * 40)
    fails(bin_dir, env, "whoami", status=401)
    env = dict(env, TESSERA_ACCESS_KEY=stack["TESSERA_ADMIN_ACCESS_KEY"],
               TESSERA_SECRET_KEY=stack["TESSERA_ADMIN_SECRET_KEY"])
    me = js(bin_dir, env, "whoami")
    assert me["credentials"] == "$TESSERA_ACCESS_KEY"
    # Backend.AI's three variables alone are a complete configuration
    env = {k: v for k, v in admin.items() if k != "TESSERA_GATEWAY_URL"}
    env.update(BACKEND_ENDPOINT=gw, BACKEND_ACCESS_KEY=stack["TESSERA_ADMIN_ACCESS_KEY"],
               BACKEND_SECRET_KEY=stack["TESSERA_ADMIN_SECRET_KEY"], HOME="/nonexistent",
               XDG_CONFIG_HOME="/nonexistent")
    assert js(bin_dir, env, "whoami")["access_key"] == stack["TESSERA_ADMIN_ACCESS_KEY"]


def test_login_wrong_password(bin_dir, stack, gw, tmp_path):
    env = base_env(tmp_path, TESSERA_GATEWAY_URL=gw)
    fails(bin_dir, env, "login", "-u", stack["TESSERA_ADMIN_EMAIL"], "--password-stdin",
          stdin="not-the-password\n", status=401)
    assert not os.path.exists(os.path.join(env["XDG_CONFIG_HOME"], "tessera", "credentials"))


def test_domain_round_trip(bin_dir, admin):
    name = unique("cli-dom")
    d = js(bin_dir, admin, "admin", "domain", "create", name, "--description", "made by the CLI",
           "--slots", "cpu=8,mem=32g,cuda.shares=2")
    assert d["name"] == name and d["is_active"] is True
    assert set(d["total_resource_slots"]) == {"cpu", "mem", "cuda.shares"}
    out = ok(bin_dir, admin, "admin", "domain", "list", "--limit", "1000")
    assert header_row(out)[:2] == ["NAME", "ACTIVE"]
    assert any(line.split()[0] == name for line in out.splitlines()[1:])
    out = ok(bin_dir, admin, "admin", "domain", "get", name)
    assert re.search(r"^description\s+made by the CLI$", out, re.M)
    d = js(bin_dir, admin, "admin", "domain", "update", name, "--description", "changed")
    assert d["description"] == "changed"
    assert "deactivated" in ok(bin_dir, admin, "admin", "domain", "delete", name)
    assert js(bin_dir, admin, "admin", "domain", "get", name)["is_active"] is False
    inactive = js(bin_dir, admin, "admin", "domain", "list", "--no-active", "--limit", "1000")
    assert name in [d["name"] for d in inactive["items"]]
    assert all(d["is_active"] is False for d in inactive["items"])
    # list with --json is the API's page
    page = js(bin_dir, admin, "admin", "domain", "list", "--limit", "1", "--offset", "0")
    assert page["limit"] == 1 and len(page["items"]) == 1 and page["total"] >= 2


def test_project_user_keypair_round_trip(bin_dir, admin, gw, tmp_path):
    dom = unique("cli-dom")
    ok(bin_dir, admin, "admin", "domain", "create", dom)
    pname = unique("cli-proj")
    p = js(bin_dir, admin, "admin", "project", "create", pname, "--domain", dom,
           "--description", "p")
    assert p["domain_name"] == dom and uuid.UUID(p["id"])
    out = ok(bin_dir, admin, "admin", "project", "list", "--domain", dom)
    assert header_row(out)[:3] == ["ID", "NAME", "DOMAIN"] and pname in out
    # a project by name or by id
    assert js(bin_dir, admin, "admin", "project", "get", pname)["id"] == p["id"]

    email = unique("cli-user") + "@example.com"
    u = js(bin_dir, admin, "admin", "user", "create", "--email", email, "--username",
           email.split("@")[0], "--password", "first-pass-123", "--domain", dom,
           "--full-name", "CLI User")
    assert u["email"] == email and u["role"] == "user" and "password" not in u
    assert js(bin_dir, admin, "admin", "user", "get", email)["id"] == u["id"]
    out = ok(bin_dir, admin, "admin", "user", "list", "--domain", dom)
    assert header_row(out)[:2] == ["ID", "EMAIL"] and email in out
    u2 = js(bin_dir, admin, "admin", "user", "update", email, "--full-name", "Renamed")
    assert u2["full_name"] == "Renamed"

    assert "added to project" in ok(bin_dir, admin, "admin", "project", "add-member", pname,
                                    email)
    members = js(bin_dir, admin, "admin", "project", "members", p["id"])
    assert [m["email"] for m in members["items"]] == [email]
    out = ok(bin_dir, admin, "admin", "project", "members", pname)
    assert header_row(out)[:2] == ["ID", "EMAIL"]
    ok(bin_dir, admin, "admin", "project", "remove-member", pname, u["id"])
    assert js(bin_dir, admin, "admin", "project", "members", pname)["items"] == []

    kp = js(bin_dir, admin, "admin", "keypair", "issue", "--user", email, "--rate-limit", "600")
    ak, sk = kp["access_key"], kp["secret_key"]
    assert re.fullmatch(r"[A-Z0-9]{20}", ak) and len(sk) == 40 and kp["user_id"] == u["id"]
    mine = js(bin_dir, admin, "admin", "keypair", "list", "--user", email)["items"]
    assert ak in [k["access_key"] for k in mine] and {k["user_id"] for k in mine} == {u["id"]}
    out = ok(bin_dir, admin, "admin", "keypair", "list", "--user", email)
    assert header_row(out)[:2] == ["ACCESS", "KEY"] and ak in out and sk not in out
    shown = ok(bin_dir, admin, "admin", "keypair", "get", ak)
    assert ak in shown and sk not in shown
    assert js(bin_dir, admin, "admin", "keypair", "update", ak, "--rate-limit",
              "700")["rate_limit"] == 700

    # the plain user's own keypair: itself yes, admin work no (403, exit 1)
    user_env = base_env(tmp_path, TESSERA_GATEWAY_URL=gw, TESSERA_ACCESS_KEY=ak,
                        TESSERA_SECRET_KEY=sk)
    me = js(bin_dir, user_env, "whoami")
    assert me["user"]["email"] == email and me["role"]["global_role"] == "user"
    fails(bin_dir, user_env, "admin", "domain", "create", unique("nope"), status=403)
    fails(bin_dir, user_env, "admin", "user", "create", "--email", unique("x") + "@e.com",
          "--username", unique("x"), "--password", "whatever-123", status=403)

    # the user changes its password; the new one logs in
    ok(bin_dir, user_env, "password", "--password-stdin",
       stdin="first-pass-123\nsecond-pass-456\nsecond-pass-456\n")
    fails(bin_dir, user_env, "password", "--password-stdin",
          stdin="second-pass-456\na-new-one-789\ndifferent-000\n")
    login_env = base_env(tmp_path / "u", TESSERA_GATEWAY_URL=gw)
    ok(bin_dir, login_env, "login", "--domain", dom, "-u", email, "--password-stdin",
       stdin="second-pass-456\n")
    assert js(bin_dir, login_env, "whoami")["user"]["id"] == u["id"]

    assert "revoked" in ok(bin_dir, admin, "admin", "keypair", "revoke", ak)
    assert js(bin_dir, admin, "admin", "keypair", "get", ak)["is_active"] is False
    assert "deleted" in ok(bin_dir, admin, "admin", "user", "delete", email)
    assert js(bin_dir, admin, "admin", "user", "get", u["id"])["status"] == "deleted"
    ok(bin_dir, admin, "admin", "project", "delete", p["id"])


def test_project_update(bin_dir, admin):
    pname = unique("cli-proj")
    p = js(bin_dir, admin, "admin", "project", "create", pname, "--domain", "default")
    assert js(bin_dir, admin, "admin", "project", "update", p["id"], "--description",
              "q")["description"] == "q"
    out = ok(bin_dir, admin, "admin", "project", "update", pname, "--no-active")
    assert re.search(r"^is_active\s+false$", out, re.M)


def test_api_errors_become_messages(bin_dir, admin):
    fails(bin_dir, admin, "admin", "user", "get", str(uuid.uuid4()), status=404)
    err = fails(bin_dir, admin, "admin", "user", "get", "nobody-" + uuid.uuid4().hex + "@x.org")
    assert "not found" in err
    name = unique("cli-dup")
    ok(bin_dir, admin, "admin", "domain", "create", name)
    fails(bin_dir, admin, "admin", "domain", "create", name, status=409)
    fails(bin_dir, admin, "admin", "domain", "create", unique("cli-bad"), "--slots",
          "cpu=lots", status=400)
    fails(bin_dir, admin, "admin", "policy", "keypair", "create", unique("cli-bad"), "--slots",
          "mem=-1", status=400)
    fails(bin_dir, admin, "admin", "domain", "get", unique("cli-none"), status=404)


def test_policies_round_trip(bin_dir, admin):
    name = unique("cli-kpp")
    p = js(bin_dir, admin, "admin", "policy", "keypair", "create", name, "--slots",
           "cpu=4,mem=8g", "--max-concurrent-sessions", "3", "--idle-timeout", "600")
    assert p["name"] == name and p["max_concurrent_sessions"] == 3
    out = ok(bin_dir, admin, "admin", "policy", "keypair", "list")
    assert header_row(out)[:2] == ["NAME", "SLOTS"] and name in out
    p = js(bin_dir, admin, "admin", "policy", "keypair", "update", name,
           "--max-concurrent-sessions", "5")
    assert p["max_concurrent_sessions"] == 5
    assert "deleted" in ok(bin_dir, admin, "admin", "policy", "keypair", "delete", name)
    fails(bin_dir, admin, "admin", "policy", "keypair", "get", name, status=404)

    name = unique("cli-up")
    p = js(bin_dir, admin, "admin", "policy", "user", "create", name, "--max-vfolder-count", "7",
           "--max-quota-scope-size", "10g")
    assert p["max_vfolder_count"] == 7 and p["max_quota_scope_size"] == 10 * 1024 ** 3
    out = ok(bin_dir, admin, "admin", "policy", "user", "get", name)
    assert re.search(r"^max_vfolder_count\s+7$", out, re.M)
    ok(bin_dir, admin, "admin", "policy", "user", "delete", name)


def test_rg_access_and_access_log(bin_dir, admin):
    rg = unique("cli-rg")
    args = ["--resource-group", rg, "--scope-type", "domain", "--scope-id", "default"]
    assert "added" in ok(bin_dir, admin, "admin", "rg-access", "add", *args)
    page = js(bin_dir, admin, "admin", "rg-access", "list", "--resource-group", rg)
    assert [(i["scope_type"], i["scope_id"]) for i in page["items"]] == [("domain", "default")]
    out = ok(bin_dir, admin, "admin", "rg-access", "list", "--resource-group", rg)
    assert header_row(out)[:2] == ["RESOURCE", "GROUP"]
    ok(bin_dir, admin, "admin", "rg-access", "remove", *args)
    assert js(bin_dir, admin, "admin", "rg-access", "list", "--resource-group", rg)["items"] == []

    # the requests above are in the access log (it arrives through the bus)
    deadline = time.monotonic() + 20
    while True:
        page = js(bin_dir, admin, "admin", "access-log", "--path-prefix",
                  "/admin/resource-group-access", "--method", "POST", "--limit", "5")
        if page["items"] or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert page["items"] and all(i["method"] == "POST" for i in page["items"])
    out = ok(bin_dir, admin, "admin", "access-log", "list", "--status", "200", "--limit", "3")
    assert header_row(out)[:2] == ["TIME", "ACCESS"]
    assert len(out.splitlines()) <= 4


def test_login_prompts_on_a_terminal_without_echo(bin_dir, stack, gw, tmp_path):
    """On a terminal: prompts for domain, user and password; the password is not echoed."""
    env = base_env(tmp_path, TESSERA_GATEWAY_URL=gw)
    master, slave = pty.openpty()
    p = subprocess.Popen([os.path.join(bin_dir, "tessera"), "login"], env=env, stdin=slave,
                         stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    seen = b""

    def expect(text, timeout=10):
        nonlocal seen
        deadline = time.monotonic() + timeout
        while text.encode() not in seen and time.monotonic() < deadline:
            r, _, _ = select.select([master], [], [], 0.2)
            if r:
                try:
                    seen += os.read(master, 4096)
                except OSError:
                    break
        assert text.encode() in seen, seen

    password = stack["TESSERA_ADMIN_PASSWORD"]
    expect("Domain [default]: ")
    os.write(master, b"\n")
    expect("Email or username: ")
    os.write(master, stack["TESSERA_ADMIN_EMAIL"].encode() + b"\n")
    expect("Password: ")
    os.write(master, password.encode() + b"\n")
    expect("Logged in")
    assert p.wait(timeout=10) == 0
    os.close(master)
    assert password.encode() not in seen
    assert os.path.exists(os.path.join(env["XDG_CONFIG_HOME"], "tessera", "credentials"))
