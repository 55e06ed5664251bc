"""The caller's own settings, Backend.AI's (issue 20; docs/sessions.md "Your
bootstrap script and dotfiles"): POST /auth/update-full-name, GET|PATCH|POST
/auth/ssh-keypair, POST /auth/signout, /user-config/bootstrap-script (applied
to new sessions without a script of their own), /user-config/dotfiles, and
GET|POST /manager/announcement. Every route is checked for who calls: user B
never reads or changes user A's settings; bad input gets a 4xx problem."""
import os
import shutil
import subprocess
import uuid

import pytest
import requests

from conftest import wait_until
from test_console_login import Browser
from test_sessions_api import (PASSWORD, _new_user, admin, gw, image, image_registered,  # noqa: F401
                               okj, problem)

TAG = uuid.uuid4().hex[:6]


@pytest.fixture(scope="module")
def a_pair(admin, gw):  # noqa: F811
    return _new_user(admin, gw, "ucfg-a")


@pytest.fixture(scope="module")
def b_pair(admin, gw):  # noqa: F811
    return _new_user(admin, gw, "ucfg-b")


# ---- full name --------------------------------------------------------------------------


def test_update_full_name_own_only(admin, a_pair, b_pair):  # noqa: F811
    (a, ua), (b, ub) = a_pair, b_pair
    assert okj(a.post("/auth/update-full-name", {"email": ua["email"], "full_name": "Ada A"})) == {}
    assert okj(admin.get(f"/admin/users/{ua['id']}"))["full_name"] == "Ada A"
    # another user's email: refused, nothing changed
    problem(b.post("/auth/update-full-name", {"email": ua["email"], "full_name": "Mallory"}), 403)
    assert okj(admin.get(f"/admin/users/{ua['id']}"))["full_name"] == "Ada A"
    for body in ({"email": ua["email"]}, {"email": ua["email"], "full_name": 3},
                 {"email": ua["email"], "full_name": "x" * 65},
                 {"email": ua["email"], "full_name": "a", "role": "superadmin"}):
        problem(a.post("/auth/update-full-name", body), 400)


# ---- SSH keypair ------------------------------------------------------------------------


def _ssh_public_of(tmp_path, private):
    if not shutil.which("ssh-keygen"):
        pytest.skip("ssh-keygen is not installed (openssh-client, tools/deps.sh)")
    f = tmp_path / "id"
    f.write_text(private)
    f.chmod(0o600)
    out = subprocess.run(["ssh-keygen", "-y", "-f", str(f)], capture_output=True, text=True, timeout=10)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_ssh_keypair_generate_read_and_openssh_accepts_it(a_pair, b_pair, tmp_path):
    (a, _), (b, _) = a_pair, b_pair
    assert okj(a.get("/auth/ssh-keypair")) == {"ssh_public_key": ""}
    made = okj(a.patch("/auth/ssh-keypair"))
    assert made["ssh_public_key"].startswith("ssh-ed25519 AAAA")
    assert made["ssh_private_key"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    assert okj(a.get("/auth/ssh-keypair")) == {"ssh_public_key": made["ssh_public_key"]}
    # OpenSSH reads the private key and derives the same public key
    derived = _ssh_public_of(tmp_path, made["ssh_private_key"])
    assert derived.split()[:2] == made["ssh_public_key"].split()[:2]
    # B never sees A's
    assert okj(b.get("/auth/ssh-keypair")) == {"ssh_public_key": ""}
    again = okj(a.patch("/auth/ssh-keypair"))
    assert again["ssh_public_key"] != made["ssh_public_key"]


def test_ssh_keypair_upload_checks_the_pair(a_pair, b_pair, tmp_path):
    (a, _), (b, _) = a_pair, b_pair
    if not shutil.which("ssh-keygen"):
        pytest.skip("ssh-keygen is not installed")
    key = tmp_path / "up"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "upload", "-f", str(key)],
                   check=True, timeout=10)
    pub, priv = (tmp_path / "up.pub").read_text(), key.read_text()
    got = okj(b.post("/auth/ssh-keypair", {"pubkey": pub, "privkey": priv}))
    assert got == {"ssh_public_key": pub.rstrip() + "\n", "ssh_private_key": priv.rstrip() + "\n"}
    assert okj(b.get("/auth/ssh-keypair"))["ssh_public_key"] == pub.rstrip() + "\n"
    # an RSA key in OpenSSH's format is taken too (its public part must match)
    rsa = tmp_path / "rsa"
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", str(rsa)],
                   check=True, timeout=30)
    okj(b.post("/auth/ssh-keypair", {"pubkey": (tmp_path / "rsa.pub").read_text(),
                                     "privkey": rsa.read_text()}))
    a_pub = okj(a.patch("/auth/ssh-keypair"))["ssh_public_key"]
    for body in ({"pubkey": a_pub, "privkey": priv},            # not the pair
                 {"pubkey": pub, "privkey": "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n"},
                 {"pubkey": "garbage", "privkey": priv},
                 {"pubkey": pub}, {"pubkey": 1, "privkey": priv},
                 {"pubkey": pub, "privkey": priv + "x" * 20000}):
        problem(b.post("/auth/ssh-keypair", body), 400)
    assert okj(a.get("/auth/ssh-keypair"))["ssh_public_key"] == a_pub


# ---- bootstrap script -------------------------------------------------------------------


def test_bootstrap_script_own_only_and_bad_input(a_pair, b_pair):
    (a, _), (b, _) = a_pair, b_pair
    assert okj(b.get("/user-config/bootstrap-script")) == ""
    assert okj(a.post("/user-config/bootstrap-script", {"script": "echo a\n"})) == {}
    assert okj(a.get("/user-config/bootstrap-script")) == "echo a\n"
    assert okj(b.get("/user-config/bootstrap-script")) == ""
    for body in ({}, {"script": 5}, {"script": None}, {"script": "x" * 65537},
                 {"script": "a", "owner_access_key": "X"}):
        problem(a.post("/user-config/bootstrap-script", body), 400)
    assert okj(a.get("/user-config/bootstrap-script")) == "echo a\n"


def _run(client, sname, image, **extra):
    body = {"image": image, "name": sname, "maxWaitSeconds": 30,
            "config": {"resources": {"cpu": "1", "mem": "256m"}}}
    body.update(extra)
    r = client.post("/session", body, timeout=45)
    assert r.status_code == 201, r.text
    if r.json()["status"] != "RUNNING":
        client.delete(f"/session/{sname}")
        pytest.fail(f"not RUNNING in 30 s: {r.json()}")


def _cat(client, sname, path):
    r = okj(client.post(f"/session/{sname}", {"mode": "batch", "options": {"exec": f"cat {path}"}},
                        timeout=80))
    return "".join(c[1] for c in r["result"]["console"] if c[0] == "stdout")


def test_bootstrap_script_runs_in_new_sessions(a_pair, image_registered):  # noqa: F811
    a, _ = a_pair
    marker = f"boot-{TAG}"
    okj(a.post("/user-config/bootstrap-script",
               {"script": f"echo {marker} > /tmp/user-bootstrap.txt\n"}))
    mine, own = f"ubs-{TAG}", f"ubs-own-{TAG}"
    _run(a, mine, image_registered)
    try:
        # the script runs after RUNNING: wait for its file
        wait_until(lambda: marker in _cat(a, mine, "/tmp/user-bootstrap.txt"), timeout=20,
                   message="the user's bootstrap script to run")
        # a session with its own script runs that one instead
        _run(a, own, image_registered, bootstrap_script="echo own > /tmp/own.txt")
        wait_until(lambda: "own" in _cat(a, own, "/tmp/own.txt"), timeout=20,
                   message="the session's own script to run")
        assert marker not in _cat(a, own, "/tmp/user-bootstrap.txt")
    finally:
        a.delete(f"/session/{mine}")
        a.delete(f"/session/{own}")


# ---- dotfiles ---------------------------------------------------------------------------


def test_dotfiles_crud_and_isolation(a_pair, b_pair):
    (a, _), (b, _) = a_pair, b_pair
    assert okj(a.get("/user-config/dotfiles")) == []
    assert okj(a.post("/user-config/dotfiles",
                      {"path": ".bashrc", "data": "export A=1\n", "permission": "644"})) == {}
    assert okj(a.post("/user-config/dotfiles",
                      {"path": ".config/x/y.conf", "data": "k=v\n", "permission": "600"})) == {}
    assert okj(a.get("/user-config/dotfiles")) == [
        {"path": ".bashrc", "permission": "644", "data": "export A=1\n"},
        {"path": ".config/x/y.conf", "permission": "600", "data": "k=v\n"}]
    assert okj(a.get("/user-config/dotfiles", params={"path": ".bashrc"})) == {
        "path": ".bashrc", "perm": "644", "data": "export A=1\n"}
    problem(a.post("/user-config/dotfiles", {"path": ".bashrc", "data": "", "permission": "644"}), 400)
    assert okj(a.patch("/user-config/dotfiles",
                       {"path": ".bashrc", "data": "export A=2\n", "permission": "755"})) == {}
    assert okj(a.get("/user-config/dotfiles", params={"path": ".bashrc"}))["data"] == "export A=2\n"
    problem(a.patch("/user-config/dotfiles", {"path": ".nope", "data": "", "permission": "644"}), 404)
    problem(a.get("/user-config/dotfiles", params={"path": ".nope"}), 404)
    # B sees none of A's and cannot change or delete them
    assert okj(b.get("/user-config/dotfiles")) == []
    problem(b.get("/user-config/dotfiles", params={"path": ".bashrc"}), 404)
    problem(b.patch("/user-config/dotfiles", {"path": ".bashrc", "data": "x", "permission": "644"}), 404)
    problem(b.delete("/user-config/dotfiles", params={"path": ".bashrc"}), 404)
    problem(b.post("/user-config/dotfiles", {"path": ".bashrc", "data": "x", "permission": "644",
                                             "owner_access_key": a.access_key}), 403)
    assert len(okj(a.get("/user-config/dotfiles"))) == 2
    # delete by query (the reference) and by body (the SDK)
    assert okj(a.delete("/user-config/dotfiles", params={"path": ".bashrc"})) == {"success": True}
    assert okj(a.delete("/user-config/dotfiles", json={"path": ".config/x/y.conf"})) == {"success": True}
    assert okj(a.get("/user-config/dotfiles")) == []
    problem(a.delete("/user-config/dotfiles"), 400)


def _sh(client, sname, script):
    r = okj(client.post(f"/session/{sname}", {"mode": "batch", "options": {"exec": script}},
                        timeout=80))
    return "".join(c[1] for c in r["result"]["console"] if c[0] == "stdout")


def _context_drops(stack):
    """How many times the registry has dropped cached session contexts on
    tessera.auth.v1 events (every scope)."""
    text = requests.get(stack["TESSERA_REGISTRY_URL"] + "/metrics", timeout=10).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("tessera_registry_context_cache_invalidations_total"))


def test_dotfiles_and_ssh_key_are_in_new_sessions(stack, admin, gw, b_pair, image_registered):  # noqa: F811
    """A keypair's dotfiles and SSH public key are written into the home of its
    new sessions (owned by the session's user, with their permissions); another
    user's session gets none of them."""
    c, _ = _new_user(admin, gw, "ucfg-c")
    b, _ = b_pair
    okj(c.post("/user-config/dotfiles", {"path": ".compat_rc", "data": f"export C={TAG}\n",
                                         "permission": "600"}))
    okj(c.post("/user-config/dotfiles", {"path": ".config/t/x.conf", "data": "k=v\n",
                                         "permission": "755"}))
    key = okj(c.patch("/auth/ssh-keypair"))["ssh_public_key"]
    mine, again, theirs = f"udot-{TAG}", f"udot2-{TAG}", f"udot-b-{TAG}"
    _run(c, mine, image_registered)
    try:
        out = _sh(c, mine, "cd /home/work && cat .compat_rc .ssh/authorized_keys .config/t/x.conf"
                           " && stat -c '%n %a %u' .compat_rc .ssh .ssh/authorized_keys"
                           " .config/t/x.conf . && id -u")
        lines = out.splitlines()
        assert lines[0] == f"export C={TAG}", out
        assert lines[1] == key.strip(), out
        assert lines[2] == "k=v", out
        uid = lines[-1]
        assert lines[3:8] == [f".compat_rc 600 {uid}", f".ssh 755 {uid}",
                              f".ssh/authorized_keys 600 {uid}", f".config/t/x.conf 755 {uid}",
                              f". 755 {uid}"], out
    finally:
        c.delete(f"/session/{mine}")
    # a change reaches the next session once the registry has dropped the
    # cached session context (KeypairChanged on the bus: a fraction of a
    # second, longer on a loaded machine)
    drops = _context_drops(stack)
    okj(c.patch("/user-config/dotfiles", {"path": ".compat_rc", "data": "export C=2\n",
                                          "permission": "600"}))
    wait_until(lambda: _context_drops(stack) > drops, timeout=20,
               message="the registry dropping the cached session context")
    _run(c, again, image_registered)
    try:
        assert _sh(c, again, "cat /home/work/.compat_rc") == "export C=2\n"
    finally:
        c.delete(f"/session/{again}")
    # B's session has B's key (if B made one), never C's files
    _run(b, theirs, image_registered)
    try:
        other = _sh(b, theirs, "ls -a /home/work; cat /home/work/.ssh/authorized_keys 2>/dev/null")
        assert ".compat_rc" not in other and key.split()[1] not in other, other
    finally:
        b.delete(f"/session/{theirs}")


@pytest.mark.parametrize("body", [
    {"path": "/etc/passwd", "data": "", "permission": "644"},
    {"path": "../escape", "data": "", "permission": "644"},
    {"path": "a/../../b", "data": "", "permission": "644"},
    {"path": "./a", "data": "", "permission": "644"},
    {"path": "a//b", "data": "", "permission": "644"},
    {"path": "a/", "data": "", "permission": "644"},
    {"path": "~/.bashrc", "data": "", "permission": "644"},
    {"path": "", "data": "", "permission": "644"},
    {"path": "a" * 256, "data": "", "permission": "644"},
    {"path": ".x", "data": "", "permission": "844"},
    {"path": ".x", "data": "", "permission": "0644"},
    {"path": ".x", "data": "", "permission": 644},
    {"path": ".x", "data": 1, "permission": "644"},
    {"path": ".x", "data": "x" * 65537, "permission": "644"},
    {"path": ".x", "permission": "644"},
    {"path": 7, "data": "", "permission": "644"},
])
def test_dotfiles_bad_input(a_pair, body):
    a, _ = a_pair
    problem(a.post("/user-config/dotfiles", body), 400)


def test_dotfiles_total_size_and_count_limits(b_pair):
    b, _ = b_pair
    okj(b.post("/user-config/dotfiles", {"path": ".big1", "data": "x" * 40000, "permission": "644"}))
    problem(b.post("/user-config/dotfiles", {"path": ".big2", "data": "x" * 40000, "permission": "644"}), 400)
    okj(b.delete("/user-config/dotfiles", params={"path": ".big1"}))
    for i in range(100):
        okj(b.post("/user-config/dotfiles", {"path": f".f{i}", "data": "", "permission": "644"}))
    problem(b.post("/user-config/dotfiles", {"path": ".f100", "data": "", "permission": "644"}), 400)
    assert len(okj(b.get("/user-config/dotfiles"))) == 100


# ---- announcement -----------------------------------------------------------------------


def test_announcement_superadmin_sets_everyone_reads(admin, a_pair):  # noqa: F811
    a, _ = a_pair
    got = okj(a.get("/manager/announcement"))
    assert set(got) == {"enabled", "message"}
    problem(a.post("/manager/announcement", {"enabled": True, "message": "mine"}), 403)
    assert okj(a.get("/manager/announcement")) == got
    r = admin.post("/manager/announcement", {"enabled": True, "message": f"maintenance {TAG}"})
    assert r.status_code == 204, r.text
    assert okj(a.get("/manager/announcement")) == {"enabled": True, "message": f"maintenance {TAG}"}
    for body in ({"enabled": "yes"}, {"enabled": True}, {"enabled": True, "message": 3},
                 {"enabled": True, "message": "x" * 8193}, {"enabled": False, "color": "red"}):
        problem(admin.post("/manager/announcement", body), 400)
    assert admin.post("/manager/announcement", {"enabled": False, "message": None}).status_code == 204
    assert okj(a.get("/manager/announcement")) == {"enabled": False, "message": ""}


# ---- the console's session mode ----------------------------------------------------------


def test_routes_work_through_the_console_session(gw, admin):  # noqa: F811
    _, u = _new_user(admin, gw, "ucfg-web")
    browser = Browser(gw, u["email"], PASSWORD)
    assert browser.login.status_code == 200, browser.login.text
    r = browser.func("POST", "/user-config/bootstrap-script", json={"script": "echo web"})
    assert r.status_code == 200, r.text
    assert browser.func("GET", "/user-config/bootstrap-script").json() == "echo web"
    assert browser.func("GET", "/manager/announcement").status_code == 200
    assert browser.func("PATCH", "/auth/ssh-keypair").json()["ssh_public_key"].startswith("ssh-ed25519 ")


# ---- sign-out (last: it deactivates its user) --------------------------------------------------


def test_signout_deactivates_own_account_only(admin, gw, a_pair):  # noqa: F811
    a, ua = a_pair
    w, uw = _new_user(admin, gw, "ucfg-w")
    problem(w.post("/auth/signout", {"email": uw["email"], "password": "wrong-password"}), 401)
    problem(w.post("/auth/signout", {"email": ua["email"], "password": PASSWORD}), 403)
    problem(w.post("/auth/signout", {"password": PASSWORD}), 400)
    problem(w.post("/auth/signout", {"email": uw["email"], "password": 5}), 400)
    assert okj(a.get("/auth/ssh-keypair"))  # A is untouched
    # the SDK sends the email as "username"
    assert okj(w.post("/auth/signout", {"username": uw["email"], "password": PASSWORD})) == {}
    assert okj(admin.get(f"/admin/users/{uw['id']}"))["status"] == "inactive"
    keys = okj(admin.get("/admin/keypairs", params={"user": uw["id"]}))["items"]
    assert keys and not any(k["is_active"] for k in keys)
    wait_until(lambda: w.get("/user-config/bootstrap-script").status_code == 401, timeout=10,
               message="the signed-out keypair to be refused")
    assert okj(a.get("/user-config/bootstrap-script")) is not None


# ---- the CLI ----------------------------------------------------------------------------


def test_cli_user_config_ssh_keypair_and_announcement(stack, bin_dir, tmp_path, admin, gw):  # noqa: F811
    from test_cli import base_env, fails, ok, run
    c, _ = _new_user(admin, gw, "ucfg-cli")
    env = base_env(tmp_path, TESSERA_GATEWAY_URL=gw, TESSERA_ACCESS_KEY=c.access_key,
                   TESSERA_SECRET_KEY=c.secret_key)
    su = base_env(tmp_path, TESSERA_GATEWAY_URL=gw,
                  TESSERA_ACCESS_KEY=stack["TESSERA_ADMIN_ACCESS_KEY"],
                  TESSERA_SECRET_KEY=stack["TESSERA_ADMIN_SECRET_KEY"])
    for args in (["user-config", "--help"], ["ssh-keypair", "--help"],
                 ["admin", "announcement", "--help"]):
        assert ok(bin_dir, env, *args).startswith("Usage: tessera ")
    script = tmp_path / "boot.sh"
    script.write_text("echo from-cli\n")
    ok(bin_dir, env, "user-config", "bootstrap-script", "set", str(script))
    assert ok(bin_dir, env, "user-config", "bootstrap-script", "get") == "echo from-cli\n"
    assert okj(c.get("/user-config/bootstrap-script")) == "echo from-cli\n"
    ok(bin_dir, env, "user-config", "dotfile", "add", ".vimrc", str(script), "--mode", "600")
    assert ".vimrc" in ok(bin_dir, env, "user-config", "dotfile", "list")
    assert ok(bin_dir, env, "user-config", "dotfile", "get", ".vimrc") == "echo from-cli\n"
    fails(bin_dir, env, "user-config", "dotfile", "add", "../x", str(script), status=400)
    ok(bin_dir, env, "user-config", "dotfile", "delete", ".vimrc")
    fails(bin_dir, env, "user-config", "bootstrap-script", "nope", code=2)
    key = tmp_path / "id_ed25519"
    pub = ok(bin_dir, env, "ssh-keypair", "refresh", "--private-key-file", str(key))
    assert pub.startswith("ssh-ed25519 ") and oct(key.stat().st_mode & 0o777) == "0o600"
    assert ok(bin_dir, env, "ssh-keypair", "show") == pub
    if shutil.which("ssh-keygen"):
        assert _ssh_public_of(tmp_path, key.read_text()).split()[:2] == pub.split()[:2]
    fails(bin_dir, env, "admin", "announcement", "set", "hi", status=403)
    ok(bin_dir, su, "admin", "announcement", "set", f"cli {TAG}")
    assert ok(bin_dir, env, "admin", "announcement", "get").strip() == f"enabled: cli {TAG}"
    ok(bin_dir, su, "admin", "announcement", "disable")
    assert ok(bin_dir, env, "admin", "announcement", "get").strip() == "disabled"
    assert run(bin_dir, env, "--json", "ssh-keypair", "show").returncode == 0
