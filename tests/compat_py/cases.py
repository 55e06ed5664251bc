"""The cases: every command of Backend.AI's `backend.ai` CLI 24.09 (and SDK
calls the CLI does not make), in the order a person uses them, each
checked the way its user would read the result. Run by run.py in API mode
and again in session mode; a case's name is the command it calls (with a
[variant] when it calls it more than once).

Set-up (Ctx.setup) is made over Tessera's REST API: the demo image's
registration, a plain user U (with a keypair and a password) and V (for
invitations). Objects the CLI makes are named cpy<tag><what><a|s>, a|s the
endpoint type, so both runs and a second run against the same stack never
collide."""
import hashlib
import json
import os
import re
import sys
import time
import uuid

import requests

from lib import Background, Result, argv_of, crash, free_port, refused, signed, wait_port

# The client (sys.path is set by run.py)
from ai.backend.client.config import APIConfig, set_config  # noqa: E402
import ai.backend.client.cli  # noqa: E402,F401  (registers the commands)
from ai.backend.cli.main import main as cli_main  # noqa: E402
from ai.backend.client.exceptions import BackendAPIError, BackendClientError  # noqa: E402
from ai.backend.client.session import Session  # noqa: E402
from click.testing import CliRunner  # noqa: E402

PASSWORD = "compat-py-Passw0rd"
CASES = []


class Case:
    def __init__(self, name, fn, modes, note):
        self.name, self.fn, self.modes, self.note = name, fn, modes, note


def case(name, modes=("api", "session"), note=None):
    def wrap(fn):
        CASES.append(Case(name, fn, modes, note))
        return fn
    return wrap


API = ("api",)
SESSION = ("session",)


class Ctx:
    def __init__(self, env, tmp, client_path):
        self.env = dict(env)
        self.tmp = tmp
        self.client_path = client_path
        self.gw = env["TESSERA_GATEWAY_URL"].rstrip("/")
        self.image = env.get("TESSERA_DEMO_IMAGE", "")
        self.tag = uuid.uuid4().hex[:4]
        self.admin_ak = env["TESSERA_ADMIN_ACCESS_KEY"]
        self.admin_sk = env["TESSERA_ADMIN_SECRET_KEY"]
        self.admin_email = env.get("TESSERA_ADMIN_EMAIL", "")
        self.admin_password = env.get("TESSERA_ADMIN_PASSWORD", "")
        self.admin = signed(self.gw, self.admin_ak, self.admin_sk)
        self.runner = CliRunner(mix_stderr=True)
        self.mode = "api"
        self.who = "admin"
        self.s = {}  # what cases leave for later ones
        self.bgs = []
        self.sessions = set()  # ids to destroy at the end

    # ---- names, identities, modes ----------------------------------------------------------

    def n(self, what):
        return f"cpy{self.tag}{what}{self.mode[0]}"

    def _config(self, ak, sk, endpoint_type):
        os.environ["BACKEND_ENDPOINT"] = self.gw
        os.environ["BACKEND_ENDPOINT_TYPE"] = endpoint_type
        os.environ["BACKEND_ACCESS_KEY"] = ak
        os.environ["BACKEND_SECRET_KEY"] = sk
        set_config(APIConfig())

    def use_mode(self, mode):
        self.mode = mode
        self.restore_identity()

    def as_user(self, who="u"):
        """Sign as the plain user U (API mode only: a login is one user)."""
        if self.mode != "api":
            raise refused("as_user is for API mode")
        u = self.s["users"][who]
        self.who = who
        self._config(u["ak"], u["sk"], "api")

    def restore_identity(self):
        self.who = "admin"
        self._config(self.admin_ak, self.admin_sk, self.mode)

    def user_rest(self, who="u"):
        u = self.s["users"][who]
        return signed(self.gw, u["ak"], u["sk"])

    # ---- calling the client --------------------------------------------------------------

    def cli(self, cmd, input=None):
        argv = argv_of(cmd)
        # as a fresh process: the client shows a server announcement once per
        # process (a module global)
        import ai.backend.client.cli.announcement as ann
        ann._printed_announcement = False
        try:
            r = self.runner.invoke(cli_main, argv, input=input, catch_exceptions=True)
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # CancelledError and friends escape CliRunner
            return Result(argv, 1, f"*** Traceback *** {type(e).__name__}: {e}", e)
        return Result(argv, r.exit_code, r.output, r.exception)

    def proc(self, cmd, input=None, timeout=60):
        """A command in a process of its own, as a person runs it (for what
        keeps state between commands: the announcement the CLI showed)."""
        import subprocess
        code = ("import sys; sys.path[:0] = %r; import ai.backend.client.cli; "
                "from ai.backend.cli.main import main; sys.argv = ['backend.ai'] + %r; main()"
                ) % (self.client_path, argv_of(cmd))
        r = subprocess.run([sys.executable, "-c", code], input=input, capture_output=True,
                           text=True, timeout=timeout, env=dict(os.environ))
        return Result(argv_of(cmd), r.returncode, r.stdout + r.stderr, None)

    def bg(self, cmd):
        env = dict(os.environ)
        b = Background(self, argv_of(cmd), env)
        self.bgs.append(b)
        return b

    def sdk(self, fn):
        """fn(session) with the SDK; its exceptions as outcomes."""
        try:
            with Session() as s:
                return fn(s)
        except BackendAPIError as e:
            raise refused(f"BackendAPIError {e.args[0]}: {json.dumps(e.args[2])[:300]}")
        except BackendClientError as e:
            raise refused(f"BackendClientError: {e}")
        except Exception as e:
            raise crash(f"{type(e).__name__}: {e}")

    # ---- set-up ---------------------------------------------------------------------------

    def rest_ok(self, r, *codes):
        if r.status_code not in (codes or (200, 201, 204)):
            raise RuntimeError(f"set-up: {r.request.method} {r.url}: {r.status_code} {r.text[:300]}")
        return r.json() if r.content else None

    def setup(self):
        a = self.admin
        # the integration tests' busybox image with small minimums (so that
        # several sessions fit a 2-core machine), and a second tag to forget
        if self.env.get("TESSERA_OCI_REGISTRY"):
            import suitekit
            refs = []
            for t in ("a", "forget"):
                refs.append(suitekit.push_busybox_image(
                    self.env, os.path.join(self.tmp, f"image-{t}"), "tessera/compat-py",
                    f"{self.tag}{t}", f"compat-py-{t}"))
            self.image, self.s["forget_image"] = refs
        for ref in (self.image, self.s.get("forget_image")):
            if not ref:
                continue
            r = a.post("/admin/images", {"reference": ref})
            if r.status_code not in (200, 201, 409):
                raise RuntimeError(f"set-up: registering {ref}: {r.status_code} {r.text[:200]}")
        projects = self.rest_ok(a.get("/admin/projects", params={"domain": "default"}))
        self.s["project"] = next(p for p in projects["items"] if p["name"] == "default")
        self.s["users"] = {}
        for who in ("u", "v"):
            name = f"cpy{self.tag}{who}"
            u = self.rest_ok(a.post("/admin/users", {
                "email": f"{name}@example.com", "username": name, "password": PASSWORD,
                "role": "user", "domain_name": "default", "projects": [self.s["project"]["id"]]}))
            for k in self.rest_ok(a.get("/admin/keypairs", params={"user": u["id"]}))["items"]:
                a.delete(f"/admin/keypairs/{k['access_key']}")
            k = self.rest_ok(a.post("/admin/keypairs", {"user_id": u["id"]}))
            self.s["users"][who] = {"id": u["id"], "email": u["email"], "ak": k["access_key"],
                                    "sk": k["secret_key"]}
        # a file to move around, made of random bytes (compared byte for byte)
        self.s["blob"] = os.path.join(self.tmp, "blob.bin")
        with open(self.s["blob"], "wb") as f:
            f.write(os.urandom(300 * 1024 + 7))
        with open(os.path.join(self.tmp, "hello.txt"), "w") as f:
            f.write("hello from compat-py\n")

    def upload_form(self, folder, path, data):
        """A file into a folder over REST (the legacy multipart upload)."""
        import bai_signer
        boundary = "cpy" + uuid.uuid4().hex
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"src\"; filename=\"{path}\"\r\n"
                f"Content-Type: application/octet-stream\r\n\r\n").encode() + data + \
            f"\r\n--{boundary}--\r\n".encode()
        url = f"{self.gw}/folders/{folder}/upload"
        h = bai_signer.signed_headers(self.admin_ak, self.admin_sk, "POST", url,
                                      content_type=f"multipart/form-data; boundary={boundary}")
        r = requests.post(url, data=body, headers=h, timeout=30)
        if r.status_code not in (200, 201):
            raise refused(f"set-up upload: {r.status_code} {r.text[:200]}")

    def event_streams(self):
        """How many event streams the gateway holds open (its /metrics)."""
        for line in requests.get(self.gw + "/metrics", timeout=5).text.splitlines():
            if line.startswith("tessera_gateway_event_streams "):
                return int(float(line.split()[1]))
        return -1

    def streams_settled(self, timeout=5):
        """The count of open event streams once those of earlier cases are
        gone (a closed one is noticed within a second): the baseline."""
        deadline = time.monotonic() + timeout
        n = self.event_streams()
        while n > 0 and time.monotonic() < deadline:
            time.sleep(0.2)
            n = self.event_streams()
        return n

    def wait_stream_opened(self, before, b, timeout=20):
        """Until the gateway holds more event streams than before (the
        command in the background has connected)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.event_streams() > before:
                return
            if b.p.poll() is not None:
                break
            time.sleep(0.1)
        out = b.output()
        raise refused(f"no event stream opened: {out.strip()[-300:]}")

    def teardown(self):
        for b in self.bgs:
            b.stop()
        for sid in self.sessions:
            self.admin.delete(f"/session/{sid}", params={"forced": "true"})

    # ---- helpers the cases share -----------------------------------------------------------

    def session_named(self, name):
        r = self.admin.get("/session", params={"all": "true", "limit": 100})
        for s in r.json().get("items", []):
            if s["sessionName"] == name and s["status"] not in ("TERMINATED", "CANCELLED", "ERROR"):
                return s
        return None

    def running(self, key="sess"):
        """The RUNNING session a case made under self.s[key] (its name), or
        one made here over REST so that the case still tests its command."""
        name = self.s.get(key + self.mode)
        if not name or not self.session_named(name):
            name = self.n(key + "r")
            if not self.session_named(name):
                r = self.admin.post("/session", {"image": self.image, "name": name,
                                                 "config": {"resources": {"cpu": "0.25", "mem": "128m"}},
                                                 "maxWaitSeconds": 30})
                if r.status_code not in (200, 201):
                    raise refused(f"no session to test with: {r.status_code} {r.text[:200]}")
                self.sessions.add(r.json()["sessionUuid"])
            self.s[key + self.mode] = name
        for _ in range(100):
            s = self.session_named(name)
            if s and s["status"] == "RUNNING":
                return s
            time.sleep(0.2)
        raise refused(f"session {name} is not RUNNING")


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


RES = "-r cpu=0.25 -r mem=128m"
UUID_RE = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def untested_commands():
    """Leaf commands of the CLI that no case's name starts with."""
    import click
    names = {c.name.split(" [")[0] for c in CASES}
    out = []

    def walk(cmd, path):
        if isinstance(cmd, click.Group):
            for n, c in sorted(cmd.commands.items()):
                walk(c, path + [n])
        elif " ".join(path) not in names:
            out.append(" ".join(path))
    walk(cli_main, [])
    return out


# =====================================================================================
# Start: the client's own configuration, and the login of session mode
# =====================================================================================

@case("login", SESSION)
def _(c):
    c.cli("login", input=f"{c.admin_email}\n{c.admin_password}\n").ok(r"Login succeeded")


@case("login [api mode]", API)
def _(c):
    # API mode: the client itself says login is for session mode (exit 1)
    c.cli("login", input="x\ny\n").ok(r'endpoint type must be "session"', code=1)


@case("config")
def _(c):
    c.cli("config").ok(r"Server version: 24\.09\.0\+tessera", r"Negotiated API version: \(8, '20240915'\)")


# =====================================================================================
# Virtual folders
# =====================================================================================

@case("vfolder list-hosts")
def _(c):
    c.cli("vfolder list-hosts").ok(r"Default vfolder host: local", r"Usable hosts: .*local")


@case("vfolder list-allowed-types")
def _(c):
    c.cli("vfolder list-allowed-types").ok(r"'user'", r"'group'")


@case("vfolder create")
def _(c):
    name = c.n("f")
    c.cli(f"vfolder create {name} local --cloneable").ok(rf'"{name}" is created')
    c.s["f" + c.mode] = name


@case("vfolder create [project]")
def _(c):
    name = c.n("p")
    c.cli(f"vfolder create {name} local --group default").ok(rf'"{name}" is created')
    c.s["p" + c.mode] = name


@case("vfolder list")
def _(c):
    c.cli("vfolder list").ok(re.escape(c.s["f" + c.mode]))


@case("vfolder list-own")
def _(c):
    r = c.cli("vfolder list-own").ok(re.escape(c.s["f" + c.mode]))
    if c.s["p" + c.mode] in r.output:
        raise refused("the project folder is listed as the caller's own")


@case("vfolder list-project")
def _(c):
    c.cli("vfolder list-project").ok(re.escape(c.s["p" + c.mode]))


@case("vfolder info")
def _(c):
    c.cli(f"vfolder info {c.s['f' + c.mode]}").ok(r"Ownership Type: user", r"Permission: rw")


@case("vfolder mkdir")
def _(c):
    c.cli(f"vfolder mkdir {c.s['f' + c.mode]} d1 d2 -p").ok(r"Successfully created", r"^d1$", r"^d2$")


@case("vfolder upload")
def _(c):
    c.cli(f"vfolder upload {c.s['f' + c.mode]} blob.bin hello.txt").ok(r"Done")


@case("vfolder ls")
def _(c):
    c.cli(f"vfolder ls {c.s['f' + c.mode]}").ok(r"blob\.bin\s+307207", r"hello\.txt", r"^d1 ")


@case("vfolder download")
def _(c):
    dest = os.path.join(c.tmp, "dl-" + c.mode)
    os.makedirs(dest, exist_ok=True)
    c.cli(f"vfolder download {c.s['f' + c.mode]} blob.bin -b {dest}").ok(r"Done")
    got = os.path.join(dest, "blob.bin")
    if not os.path.exists(got) or sha(got) != sha(c.s["blob"]):
        raise refused("the downloaded file differs from the uploaded one")


@case("vfolder request-download")
def _(c):
    c.cli(f"vfolder request-download {c.s['f' + c.mode]} hello.txt").ok(r"token|url")


@case("vfolder rename-file")
def _(c):
    f = c.s["f" + c.mode]
    c.cli(f"vfolder rename-file {f} hello.txt hello2.txt").ok(r"Renamed")
    c.cli(f"vfolder ls {f}").ok(r"hello2\.txt")


@case("vfolder mv")
def _(c):
    f = c.s["f" + c.mode]
    c.cli(f"vfolder mv {f} hello2.txt d1/hello2.txt").ok(r"Moved")
    c.cli(f"vfolder ls {f} d1").ok(r"hello2\.txt")


@case("vfolder cp")
def _(c):
    # the client's cp is an unimplemented stub
    c.cli(f"vfolder cp {c.s['f' + c.mode]}:d1/hello2.txt x").ok()


@case("vfolder rm")
def _(c):
    f = c.s["f" + c.mode]
    c.cli(f"vfolder rm {f} d2 -r", input="y\n").ok(r"Done")
    r = c.cli(f"vfolder ls {f}").ok()
    if re.search(r"^d2 ", r.output, re.M):
        raise refused("d2 is still there")


@case("vfolder update-options")
def _(c):
    f = c.s["f" + c.mode]
    c.cli(f"vfolder update-options {f} --permission ro --set-cloneable true").ok(r"Updated")
    c.cli(f"vfolder info {f}").ok(r"Permission: ro")


@case("vfolder clone")
def _(c):
    c.cli(f"vfolder clone {c.s['f' + c.mode]} {c.n('c')} local").ok(r"[Cc]lon")
    c.cli("vfolder list").ok(re.escape(c.n("c")))


@case("vfolder rename")
def _(c):
    old, new = c.n("c"), c.n("c2")
    c.cli(f"vfolder rename {old} {new}").ok(r"Renamed")
    c.s["c" + c.mode] = new


@case("vfolder invite")
def _(c):
    c.cli(f"vfolder invite {c.s['c' + c.mode]} {c.s['users']['v']['email']} -p ro").ok(r"[Ii]nvit")


@case("vfolder invitations", API)
def _(c):
    c.as_user("v")
    # the command is interactive: it lists, asks which one, then what to do
    r = c.cli("vfolder invitations", input="1\nA\n")
    r.ok(re.escape(c.s["c" + c.mode]))


@case("vfolder list-invited", API)
def _(c):
    c.as_user("v")
    c.cli("vfolder list-invited").ok(re.escape(c.s["c" + c.mode]))


@case("vfolder leave", API)
def _(c):
    c.as_user("v")
    c.cli(f"vfolder leave {c.s['c' + c.mode]}", input="y\n").ok(r"[Ll]eft")


@case("vfolder share")
def _(c):
    c.cli(f"vfolder share {c.s['p' + c.mode]} {c.s['users']['v']['email']} -p ro").ok()


@case("vfolder unshare")
def _(c):
    c.cli(f"vfolder unshare {c.s['p' + c.mode]} {c.s['users']['v']['email']}", input="y\n").ok()


@case("vfolder delete")
def _(c):
    c.cli(f"vfolder delete {c.s['c' + c.mode]}").ok(r"Deleted")


@case("vfolder restore")
def _(c):
    c.cli(f"vfolder restore {c.s['c' + c.mode]}").ok(r"Restored")
    c.cli("vfolder list").ok(re.escape(c.s["c" + c.mode]))


@case("vfolder recover")
def _(c):
    f = c.s["c" + c.mode]
    c.cli(f"vfolder delete {f}").ok()
    c.cli(f"vfolder recover {f}").ok(r"Restored|Recovered")


@case("vfolder delete-trash")
def _(c):
    f = c.s["c" + c.mode]
    c.cli(f"vfolder delete {f}").ok()
    c.cli(f"vfolder delete-trash {f}").ok(r"Delete")


@case("vfolder purge")
def _(c):
    f = c.n("pu")
    c.cli(f"vfolder create {f} local").ok()
    c.cli(f"vfolder delete {f}").ok()
    c.cli(f"vfolder purge {f}").ok(r"Purged")


# =====================================================================================
# Sessions
# =====================================================================================

@case("image list")
def _(c):
    c.cli("image list").ok(re.escape(c.image.split("/", 1)[1].rsplit(":", 1)[0]))


@case("session create")
def _(c):
    name = c.n("sess")
    r = c.cli(f"session create {c.image} --name {name} {RES}")
    r.ok(r"is created and ready", r"app services: .*ttyd")
    c.s["sess" + c.mode] = name
    s = c.session_named(name)
    if s:
        c.sessions.add(s["sessionUuid"])


@case("session create [mount]")
def _(c):
    name = c.n("mnt")
    r = c.cli(f"session create {c.image} --name {name} {RES} -m {c.s['f' + c.mode]} --enqueue-only")
    s = c.session_named(name)
    if s:
        c.sessions.add(s["sessionUuid"])
        c.admin.delete(f"/session/{s['sessionUuid']}")
    r.ok()


@case("create")
def _(c):
    name = c.n("cr")
    c.cli(f"create {c.image} --name {name} {RES} --enqueue-only").ok(r"enqueued|created")
    s = c.session_named(name)
    if s:
        c.sessions.add(s["sessionUuid"])
    c.s["cr" + c.mode] = name


@case("session list")
def _(c):
    c.cli("session list").ok(re.escape(c.s.get("sess" + c.mode, "?")))


@case("ps")
def _(c):
    c.cli("ps --name-only").ok(re.escape(c.s.get("sess" + c.mode, "?")))


@case("session ls")
def _(c):
    s = c.running()
    c.cli(f"session ls {s['sessionName']} .").ok(r"Retri")


@case("session info")
def _(c):
    s = c.running()
    c.cli(f"session info {s['sessionUuid']}").ok(r"RUNNING", re.escape(s["sessionName"]))


@case("info")
def _(c):
    s = c.running()
    c.cli(f"info {s['sessionUuid']}").ok(r"RUNNING")


@case("admin session info")
def _(c):
    s = c.running()
    c.cli(f"admin session info {s['sessionUuid']}").ok(r"RUNNING")


@case("admin session list")
def _(c):
    c.cli("admin session list --all").ok(re.escape(c.running()["sessionName"]))


@case("run")
def _(c):
    c.cli(f"run --rm {c.image} {RES} -c 'echo compat-$((6*7))'").ok(r"^compat-42$", r"exit code = 0")


@case("session upload")
def _(c):
    s = c.running()
    c.cli(f"session upload {s['sessionName']} blob.bin").ok(r"Uploaded")


@case("session download")
def _(c):
    s = c.running()
    dest = os.path.join(c.tmp, "sdl-" + c.mode)
    os.makedirs(dest, exist_ok=True)
    c.cli(f"session download {s['sessionName']} blob.bin --dest {dest}").ok(r"Downloaded to")
    got = os.path.join(dest, "blob.bin")
    if not os.path.exists(got) or sha(got) != sha(c.s["blob"]):
        raise refused("the downloaded file differs from the uploaded one")


@case("session logs")
def _(c):
    s = c.running()
    c.cli(f"session logs {s['sessionName']}").ok(r"End of logs")


@case("task-logs")
def _(c):
    s = c.running()
    c.cli(f"task-logs {s['sessionUuid']}").ok()


@case("session status-history")
def _(c):
    s = c.running()
    c.cli(f"session status-history {s['sessionName']}").ok(r"Actual Resource Allocation Time")


@case("apps")
def _(c):
    s = c.running()
    c.cli(f"apps {s['sessionName']} ttyd --list-names").ok(r"ttyd")


@case("app")
def _(c):
    """The CLI's local proxy to an app: an HTTP GET through it reaches ttyd."""
    s = c.running()
    port = free_port()
    b = c.bg(f"app {s['sessionName']} ttyd -b 127.0.0.1:{port}")
    try:
        b.wait_for(r"127\.0\.0\.1:%d" % port, timeout=20)
        if not wait_port(port):
            raise refused("the local proxy does not listen")
        r = requests.get(f"http://127.0.0.1:{port}/", timeout=10)
        if r.status_code != 200 or "<title>Terminal</title>" not in r.text:
            raise refused(f"through the proxy: {r.status_code} {r.text[:100]}")
    finally:
        b.stop()


@case("events")
def _(c):
    """The session's event stream, while a session is made and destroyed."""
    name = c.n("ev")
    before = c.streams_settled()
    b = c.bg(f"events {name}")
    try:
        c.wait_stream_opened(before, b)
        r = c.admin.post("/session", {"image": c.image, "name": name, "enqueueOnly": True,
                                      "config": {"resources": {"cpu": "0.25", "mem": "128m"}}})
        if r.status_code != 201:
            raise refused(f"set-up: {r.status_code} {r.text[:200]}")
        c.sessions.add(r.json()["sessionUuid"])
        b.wait_for(r"session_started", timeout=30)
        c.admin.delete(f"/session/{r.json()['sessionUuid']}")
        b.wait_for(r"session_terminated", timeout=30)
    finally:
        b.stop()


@case("session events")
def _(c):
    s = c.running()
    before = c.streams_settled()
    b = c.bg(f"session events {s['sessionName']} --scope '*'")
    try:
        c.wait_stream_opened(before, b)
        c.admin.post(f"/session/{s['sessionUuid']}/rename", {"session_name": s["sessionName"] + "x"})
        c.admin.post(f"/session/{s['sessionUuid']}/rename", {"session_name": s["sessionName"]})
        out = b.stop()
        if any(m in out for m in ("Traceback", "\u2718")):
            raise crash(out.strip().splitlines()[-1][:300])
    finally:
        b.stop()


@case("session watch")
def _(c):
    name = c.n("wa")
    r = c.admin.post("/session", {"image": c.image, "name": name, "enqueueOnly": True,
                                  "config": {"resources": {"cpu": "0.25", "mem": "128m"}}})
    if r.status_code != 201:
        raise refused(f"set-up: {r.status_code} {r.text[:200]}")
    c.sessions.add(r.json()["sessionUuid"])
    before = c.streams_settled()
    b = c.bg(f"session watch {name} --max-wait 30")
    try:
        c.wait_stream_opened(before, b)
        c.admin.delete(f"/session/{r.json()['sessionUuid']}")
        b.wait_for(r"session_terminated|terminated", timeout=30)
    finally:
        b.stop()


@case("watch")
def _(c):
    s = c.running()
    b = c.bg(f"watch {s['sessionName']} --max-wait 1")
    try:
        b.p.wait(15)
    except Exception:
        pass
    out = b.stop()
    if "Traceback" in out:
        raise crash(out.strip().splitlines()[-1][:300])


@case("session rename")
def _(c):
    s = c.running()
    new = s["sessionName"] + "n"
    c.cli(f"session rename {s['sessionName']} {new}").ok(r"renamed")
    c.s["sess" + c.mode] = new


@case("session set-priority")
def _(c):
    s = c.running()
    c.cli(f"session set-priority {s['sessionName']} 10").ok()


@case("session restart")
def _(c):
    s = c.running()
    c.cli(f"session restart {s['sessionName']}").ok(r"Done|restart")


@case("restart")
def _(c):
    s = c.running()
    c.cli(f"restart {s['sessionName']}").ok(r"Done|restart")


@case("session commit")
def _(c):
    c.cli(f"session commit {c.running()['sessionName']}").ok()


@case("session convert-to-image")
def _(c):
    c.cli(f"session convert-to-image {c.running()['sessionName']} {c.n('img')}").ok()


@case("session abuse-history")
def _(c):
    c.cli(f"session abuse-history {c.running()['sessionName']}").ok()


@case("session show-graph")
def _(c):
    s = c.running()
    c.cli(f"session show-graph {s['sessionUuid']} -t").ok(re.escape(s["sessionName"]), r"RUNNING")


@case("session show-graph [tree]")
def _(c):
    c.cli(f"session show-graph {c.running()['sessionUuid']}").ok()


@case("session ssh")
def _(c):
    c.cli(f"session ssh {c.running()['sessionName']}").ok()


@case("ssh")
def _(c):
    c.cli(f"ssh {c.running()['sessionName']}").ok()


@case("session scp")
def _(c):
    c.cli(f"session scp {c.running()['sessionName']} hello.txt work:hello.txt").ok()


@case("scp")
def _(c):
    c.cli(f"scp {c.running()['sessionName']} hello.txt work:hello.txt").ok()


@case("session destroy")
def _(c):
    name = c.running()["sessionName"]
    c.cli(f"session destroy {name}").ok(r"Done")
    c.s.pop("sess" + c.mode, None)


@case("destroy")
def _(c):
    name = c.s.get("cr" + c.mode) or c.running("cr")["sessionName"]
    c.cli(f"destroy {name}").ok(r"Done")


@case("session create [batch]")
def _(c):
    name = c.n("ba")
    c.cli(f"session create {c.image} --name {name} --type batch {RES} "
          f"-c 'echo batch-done'").ok(r"enqueued|created|ready")
    s = c.session_named(name)
    if s:
        c.sessions.add(s["sessionUuid"])


# ---- templates and dotfiles ----------------------------------------------------------------

TEMPLATE = """
api_version: v1
kind: task_template
metadata:
  name: %s
  tag: compat
spec:
  session_type: interactive
  kernel:
    image: %s
    architecture: x86_64
  resources:
    cpu: "0.25"
    mem: 128m
"""


def _template_file(c):
    path = os.path.join(c.tmp, f"tpl-{c.mode}.json")
    t = {"api_version": "v1", "kind": "task_template",
         "metadata": {"name": c.n("tpl"), "tag": "compat"},
         "spec": {"session_type": "interactive",
                  "kernel": {"image": c.image, "architecture": "x86_64"},
                  "resources": {"cpu": "0.25", "mem": "128m"}}}
    with open(path, "w") as f:
        json.dump(t, f)
    return path


@case("session-template create")
def _(c):
    r = c.cli(f"session-template create -f {_template_file(c)}").ok()
    m = re.search(r"(" + UUID_RE + r"|[0-9a-f]{32})", r.output)
    if not m:
        raise refused(f"no template id in: {r.output[-200:]}")
    c.s["tpl" + c.mode] = m.group(1)


@case("session-template list")
def _(c):
    c.cli("session-template list").ok(re.escape(c.s["tpl" + c.mode]))


@case("session-template get")
def _(c):
    c.cli(f"session-template get {c.s['tpl' + c.mode]} -f json").ok(re.escape(c.image))


@case("session-template update")
def _(c):
    c.cli(f"session-template update {c.s['tpl' + c.mode]} -f {_template_file(c)}").ok()


@case("session create-from-template")
def _(c):
    name = c.n("ft")
    c.cli(f"session create-from-template {c.s['tpl' + c.mode]} --name {name} --enqueue-only").ok()
    s = c.session_named(name)
    if not s:
        raise refused("no session made")
    c.sessions.add(s["sessionUuid"])
    c.admin.delete(f"/session/{s['sessionUuid']}")


@case("create-from-template")
def _(c):
    name = c.n("ft2")
    c.cli(f"create-from-template {c.s['tpl' + c.mode]} --name {name} --enqueue-only").ok()
    s = c.session_named(name)
    if s:
        c.sessions.add(s["sessionUuid"])
        c.admin.delete(f"/session/{s['sessionUuid']}")


@case("session-template delete")
def _(c):
    c.cli(f"session-template delete {c.s['tpl' + c.mode]}", input="y\n").ok()


@case("dotfile create")
def _(c):
    path = os.path.join(c.tmp, "dot.rc")
    with open(path, "w") as f:
        f.write("export COMPAT=1\n")
    c.cli(f"dotfile create .cpy{c.mode}rc -f {path}").ok()


@case("dotfile list")
def _(c):
    c.cli("dotfile list").ok(rf"\.cpy{c.mode}rc")


@case("dotfile get")
def _(c):
    c.cli(f"dotfile get .cpy{c.mode}rc").ok(r"COMPAT=1")


@case("dotfile update")
def _(c):
    path = os.path.join(c.tmp, "dot2.rc")
    with open(path, "w") as f:
        f.write("export COMPAT=2\n")
    c.cli(f"dotfile update .cpy{c.mode}rc -f {path}").ok()
    c.cli(f"dotfile get .cpy{c.mode}rc").ok(r"COMPAT=2")


@case("dotfile delete")
def _(c):
    c.cli(f"dotfile delete .cpy{c.mode}rc", input="y\n").ok()


# =====================================================================================
# Administration
# =====================================================================================

@case("admin user list")
def _(c):
    c.cli("admin user list").ok(re.escape(c.s["users"]["u"]["email"]))


@case("admin user info")
def _(c):
    c.cli(f"admin user info -e {c.s['users']['u']['email']}").ok(r"Groups\s+default")


@case("admin user add")
def _(c):
    email = f"{c.n('nu')}@example.com"
    c.cli(f"admin user add default {email} {PASSWORD} -u {c.n('nu')}").ok()
    c.s["nu" + c.mode] = email


@case("admin user update")
def _(c):
    c.cli(f"admin user update {c.s['nu' + c.mode]} -n 'Compat User'").ok()
    c.cli(f"admin user info -e {c.s['nu' + c.mode]}").ok(r"Compat User")


@case("admin keypair add")
def _(c):
    r = c.cli(f"admin keypair add {c.s['nu' + c.mode]} default").ok()
    m = re.search(r"\b([A-Z0-9]{20})\b", r.output)
    if not m:
        raise refused(f"no access key in: {r.output[-200:]}")
    c.s["ak" + c.mode] = m.group(1)


@case("admin keypair list")
def _(c):
    c.cli(f"admin keypair list -u {c.s['nu' + c.mode]}").ok(re.escape(c.s["ak" + c.mode]))


@case("admin keypair info")
def _(c):
    c.cli("admin keypair info").ok(re.escape(c.admin_ak) if c.mode == "api" else r"Access Key")


@case("admin keypair update")
def _(c):
    c.cli(f"admin keypair update {c.s['ak' + c.mode]} -r 5000").ok()


@case("admin keypair deactivate")
def _(c):
    c.cli(f"admin keypair deactivate {c.s['ak' + c.mode]}").ok()


@case("admin keypair activate")
def _(c):
    c.cli(f"admin keypair activate {c.s['ak' + c.mode]}").ok()


@case("admin keypair delete")
def _(c):
    c.cli(f"admin keypair delete {c.s['ak' + c.mode]}").ok()


@case("admin user delete")
def _(c):
    c.cli(f"admin user delete {c.s['nu' + c.mode]}").ok()


@case("admin user purge")
def _(c):
    c.cli(f"admin user purge {c.s['nu' + c.mode]}", input="y\n").ok()


@case("admin domain list")
def _(c):
    c.cli("admin domain list").ok(r"^default ")


@case("admin domain info")
def _(c):
    c.cli("admin domain info default").ok(r"default")


@case("admin domain add")
def _(c):
    c.cli(f"admin domain add {c.n('dom')} -d compat").ok()


@case("admin domain update")
def _(c):
    c.cli(f"admin domain update {c.n('dom')} --description changed").ok()
    c.cli(f"admin domain info {c.n('dom')}").ok(r"changed")


@case("admin domain delete")
def _(c):
    c.cli(f"admin domain delete {c.n('dom')}").ok()


@case("admin domain purge")
def _(c):
    c.cli(f"admin domain purge {c.n('dom')}", input="y\n").ok()


@case("admin group list")
def _(c):
    c.cli("admin group list").ok(r"default")


@case("admin group info")
def _(c):
    c.cli(f"admin group info {c.s['project']['id']}").ok(r"default")


@case("admin group add")
def _(c):
    r = c.cli(f"admin group add default {c.n('grp')} -d compat").ok()
    m = re.search(UUID_RE, r.output)
    if m:
        c.s["grp" + c.mode] = m.group(0)
    else:
        got = c.admin.get("/admin/projects", params={"domain": "default"}).json()["items"]
        c.s["grp" + c.mode] = next(p["id"] for p in got if p["name"] == c.n("grp"))


@case("admin group update")
def _(c):
    c.cli(f"admin group update {c.s['grp' + c.mode]} -d changed").ok()


@case("admin group add-users")
def _(c):
    c.cli(f"admin group add-users {c.s['grp' + c.mode]} {c.s['users']['u']['id']}").ok()


@case("admin group remove-users")
def _(c):
    c.cli(f"admin group remove-users {c.s['grp' + c.mode]} {c.s['users']['u']['id']}").ok()


@case("admin group delete")
def _(c):
    c.cli(f"admin group delete {c.s['grp' + c.mode]}").ok()


@case("admin group purge")
def _(c):
    c.cli(f"admin group purge {c.s['grp' + c.mode]}", input="y\n").ok()


@case("admin keypair-resource-policy list")
def _(c):
    c.cli("admin keypair-resource-policy list").ok(r"default")


@case("admin keypair-resource-policy info")
def _(c):
    c.cli("admin keypair-resource-policy info default").ok(r"default")


@case("admin keypair-resource-policy add")
def _(c):
    c.cli(f"admin keypair-resource-policy add {c.n('pol')} --max-concurrent-sessions 3").ok()


@case("admin keypair-resource-policy update")
def _(c):
    c.cli(f"admin keypair-resource-policy update {c.n('pol')} --max-concurrent-sessions 4").ok()


@case("admin keypair-resource-policy delete")
def _(c):
    c.cli(f"admin keypair-resource-policy delete {c.n('pol')}", input="y\n").ok()


@case("admin scaling-group list")
def _(c):
    c.cli("admin scaling-group list").ok(r"^default ")


@case("admin scaling-group info")
def _(c):
    c.cli("admin scaling-group info default").ok(r"default")


@case("admin scaling-group get-available")
def _(c):
    c.cli("admin scaling-group get-available default").ok(r"default")


@case("admin scaling-group add")
def _(c):
    c.cli(f"admin scaling-group add {c.n('sg')} -d compat").ok()


@case("admin scaling-group update")
def _(c):
    c.cli(f"admin scaling-group update {c.n('sg')} -d changed").ok()


@case("admin scaling-group associate-scaling-group")
def _(c):
    c.cli(f"admin scaling-group associate-scaling-group {c.n('sg')} default").ok()


@case("admin scaling-group dissociate-scaling-group")
def _(c):
    c.cli(f"admin scaling-group dissociate-scaling-group {c.n('sg')} default").ok()


@case("admin scaling-group delete")
def _(c):
    c.cli(f"admin scaling-group delete {c.n('sg')}").ok()


@case("admin agent list")
def _(c):
    r = c.cli("admin agent list").ok(r"ALIVE")
    m = re.search(r"^(\S+)\s+ALIVE", r.output, re.M)
    c.s["agent"] = m.group(1) if m else ""


@case("admin agent info")
def _(c):
    c.cli(f"admin agent info {c.s.get('agent', '')}").ok(r"ALIVE")


@case("admin image list")
def _(c):
    c.cli("admin image list").ok(re.escape(c.image.split("/", 1)[1].rsplit(":", 1)[0]))


@case("admin image alias")
def _(c):
    c.cli(f"admin image alias {c.n('alias')} {c.image}").ok()


@case("admin image dealias")
def _(c):
    c.cli(f"admin image dealias {c.n('alias')}").ok()


@case("admin image rescan")
def _(c):
    c.cli(f"admin image rescan -r {c.image.split('/')[0]}").ok()


@case("image forget")
def _(c):
    ref = c.s.get("forget_image")
    if not ref or c.mode != "api":
        # the second run: forget what the first left (re-registered here)
        ref = ref or c.image
        c.admin.post("/admin/images", {"reference": ref})
    c.cli(f"image forget {ref} --arch x86_64").ok()


@case("admin storage list")
def _(c):
    c.cli("admin storage list").ok(r"^local ")


@case("admin storage info")
def _(c):
    c.cli("admin storage info local").ok(r"local")


@case("admin vfolder list")
def _(c):
    c.cli("admin vfolder list").ok(re.escape(c.s["f" + c.mode]))


@case("admin vfolder list-hosts")
def _(c):
    c.cli("admin vfolder list-hosts").ok(r"local")


@case("admin vfolder perf-metric")
def _(c):
    c.cli("admin vfolder perf-metric local").ok()


@case("admin vfolder get-fstab-contents")
def _(c):
    c.cli(f"admin vfolder get-fstab-contents -a {c.s.get('agent', 'x')}").ok()


@case("admin vfolder list-mounts")
def _(c):
    c.cli("admin vfolder list-mounts").ok()


@case("admin vfolder mount-host")
def _(c):
    c.cli("admin vfolder mount-host /tmp/nowhere compat").ok()


@case("admin vfolder umount-host")
def _(c):
    c.cli("admin vfolder umount-host compat").ok()


def _shared_folder(c):
    """U's folder shared with V (ro), made over REST: (folder id, V's id)."""
    key = "shared" + c.mode
    if key not in c.s:
        u = c.user_rest("u")
        name = c.n("sh")
        f = u.post("/folders", {"name": name})
        inv = u.post(f"/folders/{name}/invite", {"perm": "ro", "emails": [c.s["users"]["v"]["email"]]})
        v = c.user_rest("v")
        v.post("/folders/invitations/accept", {"inv_id": inv.json()["invited_ids"][0]})
        c.s[key] = f.json()["id"]
    return c.s[key], c.s["users"]["v"]["id"]


@case("admin vfolder list-shared-vfolders")
def _(c):
    fid, _ = _shared_folder(c)
    c.cli("admin vfolder list-shared-vfolders").ok()


@case("admin vfolder shared-vfolder-info")
def _(c):
    fid, _ = _shared_folder(c)
    c.cli(f"admin vfolder shared-vfolder-info {fid}").ok()


@case("admin vfolder update-shared-vf-permission")
def _(c):
    fid, vid = _shared_folder(c)
    c.cli(f"admin vfolder update-shared-vf-permission {fid} {vid} -p rw").ok()


@case("admin vfolder remove-shared-vf-permission")
def _(c):
    fid, vid = _shared_folder(c)
    c.cli(f"admin vfolder remove-shared-vf-permission {fid} {vid}").ok()


@case("admin vfolder change-vfolder-ownership")
def _(c):
    fid, _ = _shared_folder(c)
    c.cli(f"admin vfolder change-vfolder-ownership {fid} {c.s['users']['v']['email']}").ok()


@case("admin resource query-slots")
def _(c):
    c.cli("admin resource query-slots").ok(r"cpu")


@case("admin resource vfolder-types")
def _(c):
    c.cli("admin resource vfolder-types").ok(r"user")


@case("admin resource recalculate-usage")
def _(c):
    c.cli("admin resource recalculate-usage").ok()


@case("admin resource usage-per-month")
def _(c):
    c.cli(f"admin resource usage-per-month {time.strftime('%Y%m')} {c.s['project']['id']}").ok()


@case("admin resource usage-per-period")
def _(c):
    today = time.strftime("%Y%m%d")
    c.cli(f"admin resource usage-per-period {c.s['project']['id']} {today} {today}").ok()


@case("admin resource container-registries")
def _(c):
    c.cli("admin resource container-registries").ok()


@case("admin etcd set")
def _(c):
    c.cli(f"admin etcd set config/compat/{c.mode} hello").ok()


@case("admin etcd get")
def _(c):
    c.cli(f"admin etcd get config/compat/{c.mode}").ok(r"hello")


@case("admin etcd delete")
def _(c):
    c.cli(f"admin etcd delete config/compat/{c.mode}").ok()


@case("admin announcement update")
def _(c):
    c.cli("admin announcement update -m 'compat says hi'").ok()


@case("admin announcement get")
def _(c):
    c.proc("admin announcement get").ok(r"compat says hi")


@case("admin announcement dismiss")
def _(c):
    c.proc("admin announcement dismiss", input="y\n").ok(r"Dismissed")


@case("admin announcement delete")
def _(c):
    c.cli("admin announcement delete", input="y\n").ok()


@case("admin quota-scope get")
def _(c):
    c.cli(f"admin quota-scope get local {c.s['users']['u']['email']} -t user").ok()


@case("admin quota-scope set")
def _(c):
    c.cli(f"admin quota-scope set local {c.s['users']['u']['email']} 1g -t user").ok()


@case("admin quota-scope unset")
def _(c):
    c.cli(f"admin quota-scope unset local {c.s['users']['u']['email']} -t user").ok()


@case("admin permission list")
def _(c):
    c.cli("admin permission list").ok(r"mount-in-session")


@case("admin license show")
def _(c):
    c.cli("admin license show").ok()


@case("admin manager status")
def _(c):
    c.cli("admin manager status").ok()


@case("admin manager freeze")
def _(c):
    c.cli("admin manager freeze").ok()


@case("admin manager unfreeze")
def _(c):
    c.cli("admin manager unfreeze").ok()


@case("admin manager scheduler exclude-agents")
def _(c):
    c.cli(f"admin manager scheduler exclude-agents {c.s.get('agent', 'x')}").ok()


@case("admin manager scheduler include-agents")
def _(c):
    c.cli(f"admin manager scheduler include-agents {c.s.get('agent', 'x')}").ok()


@case("admin watcher status")
def _(c):
    c.cli(f"admin watcher status {c.s.get('agent', 'x')}").ok()


@case("admin watcher agent-start")
def _(c):
    c.cli(f"admin watcher agent-start {c.s.get('agent', 'x')}").ok()


@case("admin watcher agent-stop")
def _(c):
    c.cli(f"admin watcher agent-stop {c.s.get('agent', 'x')}").ok()


@case("admin watcher agent-restart")
def _(c):
    c.cli(f"admin watcher agent-restart {c.s.get('agent', 'x')}").ok()


@case("server-logs list")
def _(c):
    c.cli("server-logs list").ok()


# ---- model serving (Backend.AI's inference endpoints) --------------------------------------

@case("model create")
def _(c):
    c.cli(f"model create {c.n('mdl')} local").ok()
    f = c.admin.get(f"/folders/{c.n('mdl')}").json()
    c.s["mdl" + c.mode] = f.get("id", "")


@case("model list")
def _(c):
    c.cli("model list").ok(re.escape(c.n("mdl")))


@case("model info")
def _(c):
    c.cli(f"model info {c.n('mdl')}").ok(re.escape(c.n("mdl")))


@case("model upload")
def _(c):
    c.cli(f"model upload {c.n('mdl')} hello.txt v1").ok()


@case("model download")
def _(c):
    dest = os.path.join(c.tmp, "mdl-" + c.mode)
    os.makedirs(dest, exist_ok=True)
    c.cli(f"model download {c.n('mdl')} hello.txt v1 -b {dest}").ok()
    with open(os.path.join(dest, "hello.txt"), "rb") as f:
        if f.read() != b"hello from compat-py\n":
            raise refused("the downloaded model file differs")


@case("model rm")
def _(c):
    c.cli(f"model rm {c.n('mdl')}", input="y\n").ok()


@case("service list")
def _(c):
    c.cli("service list").ok()


@case("service create")
def _(c):
    c.cli(f"service create {c.image} {c.n('mdl')} 1 -t {c.n('svc')}").ok()


@case("service info")
def _(c):
    c.cli(f"service info {c.n('svc')}").ok()


@case("service get-endpoint")
def _(c):
    c.cli(f"service get-endpoint {c.n('svc')}").ok()


@case("service generate-token")
def _(c):
    c.cli(f"service generate-token {c.n('svc')} 3600").ok()


@case("service scale")
def _(c):
    c.cli(f"service scale {c.n('svc')} 2").ok()


@case("service sync")
def _(c):
    c.cli(f"service sync {c.n('svc')}").ok()


@case("service try-start")
def _(c):
    c.cli(f"service try-start {c.image} {c.n('mdl')}").ok()


@case("service update-traffic-ratio")
def _(c):
    c.cli(f"service update-traffic-ratio {c.n('svc')} {uuid.uuid4()} 0.5").ok()


@case("service downscale-route")
def _(c):
    c.cli(f"service downscale-route {c.n('svc')} {uuid.uuid4()} 1").ok()


@case("service rm")
def _(c):
    c.cli(f"service rm {c.n('svc')}").ok()


# =====================================================================================
# The API proxy, passwords, the end of the login
# =====================================================================================

@case("proxy", API)
def _(c):
    """The CLI's unauthenticated local API proxy, which signs for its callers."""
    port = free_port()
    b = c.bg(f"proxy --bind 127.0.0.1 -p {port}")
    try:
        if not wait_port(port, 20):
            b.wait_for(r"never", timeout=1)
        r = requests.get(f"http://127.0.0.1:{port}/folders", timeout=10)
        if r.status_code != 200 or not isinstance(r.json(), list):
            raise refused(f"through the proxy: {r.status_code} {r.text[:200]}")
    finally:
        b.stop()


@case("update-password", SESSION)
def _(c):
    new = c.admin_password + "-2"
    c.cli(f"update-password {c.admin_password} {new} {new}").ok(r"[Uu]pdated")
    c.cli(f"update-password {new} {c.admin_password} {c.admin_password}").ok()


@case("update-password [api mode]", API)
def _(c):
    c.cli("update-password a b b").ok(r'endpoint type must be "session"', code=1)


@case("update-password-no-auth")
def _(c):
    c.cli(f"update-password-no-auth default {c.s['users']['u']['email']} {PASSWORD} {PASSWORD}-x").ok()


# =====================================================================================
# The SDK: calls the CLI does not make
# =====================================================================================

@case("sdk ComputeSession.get_or_create")
def _(c):
    name = c.n("sdk")

    def go(s):
        cs = s.ComputeSession.get_or_create(c.image, name=name, resources={"cpu": "0.25", "mem": "128m"},
                                            enqueue_only=True)
        c.sessions.add(str(cs.id))
        again = s.ComputeSession.get_or_create(c.image, name=name, enqueue_only=True)
        if again.id != cs.id or again.created:
            raise refused(f"reuse: {again.id} created={again.created}")
        cs.destroy()
    c.sdk(go)


@case("sdk ComputeSession mounts")
def _(c):
    """A folder mounted through the SDK (the CLI's --mount needs pydantic 2)."""
    name = c.n("sm")

    def go(s):
        cs = s.ComputeSession.get_or_create(c.image, name=name, mounts=[c.s["f" + c.mode]],
                                            resources={"cpu": "0.25", "mem": "128m"}, max_wait=30)
        c.sessions.add(str(cs.id))
        try:
            out = cs.execute(mode="batch", code="", opts={"exec": f"ls /home/work/{c.s['f' + c.mode]}"})
            text = "".join(x[1] for x in out.get("console", []))
            if "blob.bin" not in text:
                raise refused(f"the folder is not mounted: {out}")
        finally:
            cs.destroy()
    c.sdk(go)


@case("sdk Resource.list")
def _(c):
    r = c.sdk(lambda s: s.Resource.list())
    if "presets" not in r:
        raise refused(f"{r}")


@case("sdk Resource.check_presets")
def _(c):
    r = c.sdk(lambda s: s.Resource.check_presets())
    if "keypair_remaining" not in r:
        raise refused(f"no keypair_remaining in {list(r)[:8]}")


@case("sdk VFolder.list")
def _(c):
    r = c.sdk(lambda s: s.VFolder.list())
    if not isinstance(r, list):
        raise refused("not a list")


@case("sdk Admin.query")
def _(c):
    r = c.sdk(lambda s: s.Admin.query("{ keypair { access_key } }"))
    if not r.get("keypair"):
        raise refused(f"{r}")


@case("sdk ScalingGroup.list_available")
def _(c):
    r = c.sdk(lambda s: s.ScalingGroup.list_available(c.s["project"]["id"]))
    if not any(g["name"] == "default" for g in r):
        raise refused(f"{r}")


@case("sdk KeyPair.info [user]", API)
def _(c):
    c.as_user("u")
    r = c.sdk(lambda s: s.KeyPair(c.s["users"]["u"]["ak"]).info())
    if r.get("access_key") != c.s["users"]["u"]["ak"]:
        raise refused(f"{r}")


@case("sdk Group.from_name")
def _(c):
    r = c.sdk(lambda s: s.Group.from_name("default"))
    if not r or r[0]["name"] != "default":
        raise refused(f"{r}")


@case("sdk User.detail [user]", API)
def _(c):
    c.as_user("u")
    r = c.sdk(lambda s: s.User.detail())
    if r.get("email") != c.s["users"]["u"]["email"]:
        raise refused(f"{r}")


@case("sdk Session.System.get_versions")
def _(c):
    r = c.sdk(lambda s: s.System.get_versions())
    if not str(r.get("version", "")).startswith("v8"):
        raise refused(f"{r}")


@case("sdk BackgroundTask.listen_events", API)
def _(c):
    """A background task (rescan) followed on /events/background-task."""
    import asyncio
    from ai.backend.client.session import AsyncSession

    async def go():
        async with AsyncSession() as s:
            r = await s.Image.rescan_images(c.image.split("/")[0])
            task = r["task_id"]
            seen = []
            async with s.BackgroundTask(task).listen_events() as resp:
                async for ev in resp:
                    seen.append(ev.event)
                    if ev.event.startswith("bgtask_done") or ev.event.startswith("bgtask_failed"):
                        break
            return seen
    try:
        seen = asyncio.run(asyncio.wait_for(go(), 60))
    except BackendAPIError as e:
        raise refused(f"BackendAPIError {e.args[0]}: {json.dumps(e.args[2])[:300]}")
    except Exception as e:
        raise crash(f"{type(e).__name__}: {e}")
    if "bgtask_done" not in seen:
        raise refused(f"events: {seen}")


# ---- the end of the login (last: the SDK cases above use it) ----------------------------------

@case("logout", SESSION)
def _(c):
    c.cli("logout").ok(r"Logout done")
    r = c.cli("vfolder list-hosts")
    if r.code == 0:
        raise refused("still logged in after logout")


@case("logout [api mode]", API)
def _(c):
    c.cli("logout").ok(r'endpoint type must be "session"', code=1)
