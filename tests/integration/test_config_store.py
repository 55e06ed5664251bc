"""Backend.AI's configuration store, POST /config/get|set|delete (docs/api.md
"Configuration store"; registry config_store.h): superadmins only; each key
family has its meaning:

  config/docker/registry/<host>  container registries: listed (the built-in
                                 one too, read-only), scanned, pulled from
  images/<reg>/<name>/<tag>/...  an image's min/max slots (enforced at
                                 session create) and label overrides (the
                                 service ports of new sessions; a rescan keeps
                                 them)
  config/<other>                 a settings store that clients share

Bad keys, values and types are 400 problems, never a 500."""
import uuid

import pytest

import bai_signer
from conftest import wait_until
from test_graphql import gql
from test_sessions_api import (_new_user, admin, destroy_quietly, gw, image,  # noqa: F401
                               image_registered, okj, problem)

TAG = uuid.uuid4().hex[:6]
PASSWORD = "config-store-pw-1"


def cget(client, key, prefix=False):
    return client.post("/config/get", {"key": key, "prefix": prefix})


def cset(client, key, value):
    return client.post("/config/set", {"key": key, "value": value})


def cdel(client, key, prefix=False):
    return client.post("/config/delete", {"key": key, "prefix": prefix})


def result(r):
    return okj(r)["result"]


def image_key(image):
    """images/<registry with %3A>/<name with %2F>/<tag>, as the SDK's modifyResource writes it."""
    host, rest = image.split("/", 1)
    name, tag = rest.rsplit(":", 1)
    return f"images/{host.replace(':', '%3A')}/{name.replace('/', '%2F')}/{tag}"


@pytest.fixture(scope="module")
def user(admin, gw):
    return _new_user(admin, gw, "cfg-user")[0]


@pytest.fixture(scope="module")
def domain_admin(admin, gw):
    uname = f"cfg-dadmin-{TAG}"
    u = okj(admin.post("/admin/users", {"email": f"{uname}@example.com", "username": uname,
                                        "password": PASSWORD, "role": "admin"}), 200, 201)
    k = okj(admin.post("/admin/keypairs", {"user_id": u["id"]}), 200, 201)
    return bai_signer.Client(gw, k["access_key"], k["secret_key"])


# ---- settings ---------------------------------------------------------------------------------


def test_settings_round_trip_with_prefix(admin):
    base = f"config/it-{TAG}"
    assert result(cset(admin, f"{base}/theme", "dark")) == "ok"
    assert result(cset(admin, f"{base}/ui", {"lang": "ko", "panel": {"width": 300, "open": True}})) == "ok"
    assert result(cget(admin, f"{base}/theme")) == "dark"
    assert result(cget(admin, f"{base}/ui/panel/width")) == "300"
    assert result(cget(admin, f"{base}/ui", prefix=True)) == {
        "lang": "ko", "panel": {"width": "300", "open": "true"}}
    # the SDK's setting.list(''): everything under config/, registries included
    everything = result(cget(admin, "config", prefix=True))
    assert everything[f"it-{TAG}"]["theme"] == "dark"
    assert "registry" in everything["docker"]
    # a value under a key that has one: {"": value, children}
    assert result(cset(admin, f"{base}/theme/variant", "high-contrast")) == "ok"
    assert result(cget(admin, f"{base}/theme", prefix=True)) == {"": "dark", "variant": "high-contrast"}
    assert result(cget(admin, f"{base}/theme")) == "dark"
    # delete one key, then the rest by prefix
    assert result(cdel(admin, f"{base}/ui/lang")) == "ok"
    assert result(cget(admin, f"{base}/ui/lang")) is None
    assert result(cget(admin, f"{base}/ui/panel/open")) == "true"
    assert result(cdel(admin, base, prefix=True)) == "ok"
    assert result(cget(admin, base, prefix=True)) == {}
    assert result(cget(admin, f"{base}/theme")) is None


def test_settings_prefix_is_by_segment(admin):
    okj(cset(admin, f"config/seg-{TAG}/a", "1"))
    okj(cset(admin, f"config/seg-{TAG}x/b", "2"))
    assert result(cget(admin, f"config/seg-{TAG}", prefix=True)) == {"a": "1"}
    okj(cdel(admin, f"config/seg-{TAG}", prefix=True))
    assert result(cget(admin, f"config/seg-{TAG}x/b")) == "2"
    okj(cdel(admin, f"config/seg-{TAG}x", prefix=True))


# ---- container registries -----------------------------------------------------------------------


def test_registries_list_add_delete(admin, stack):
    builtin = stack["TESSERA_OCI_REGISTRY"]
    regs = result(cget(admin, "config/docker/registry", prefix=True))
    assert regs[builtin][""].endswith("://" + builtin) and regs[builtin]["type"] == "docker"
    name = f"cr-{TAG}.example.com"
    # the SDK's registry.add: the name percent-encoded, the value an object
    okj(cset(admin, f"config/docker/registry/{name}", {"": f"https://{name}", "type": "harbor2",
                                                        "project": "team"}))
    regs = result(cget(admin, "config/docker/registry", prefix=True))
    assert regs[name] == {"": f"https://{name}", "type": "harbor2", "project": "team"}
    assert result(cget(admin, f"config/docker/registry/{name}")) == f"https://{name}"
    assert result(cget(admin, f"config/docker/registry/{name}/type")) == "harbor2"
    # one field at a time
    okj(cset(admin, f"config/docker/registry/{name}/type", "docker"))
    assert result(cget(admin, f"config/docker/registry/{name}", prefix=True))["type"] == "docker"
    # an encoded name (host:port) is the same registry
    port_name = f"cr-{TAG}.example.com:5443"
    okj(cset(admin, "config/docker/registry/" + port_name.replace(":", "%3A"),
             {"": f"https://{port_name}"}))
    assert port_name in result(cget(admin, "config/docker/registry", prefix=True))
    okj(cdel(admin, "config/docker/registry/" + port_name.replace(":", "%3A"), prefix=True))
    # credentials are refused, not stored unused
    p = problem(cset(admin, f"config/docker/registry/{name}", {"": f"https://{name}", "username": "u",
                                                               "password": "p"}), 400)
    assert "not supported" in p["msg"]
    # the built-in one is read-only
    p = problem(cset(admin, f"config/docker/registry/{builtin}", {"": f"https://{builtin}"}), 400)
    assert "built-in" in p["msg"]
    p = problem(cdel(admin, f"config/docker/registry/{builtin}", prefix=True), 400)
    assert "built-in" in p["msg"]
    # the URL must name the registry; a new one needs its URL; a bad type
    problem(cset(admin, f"config/docker/registry/other-{TAG}.example.com",
                 {"": f"https://{name}"}), 400)
    problem(cset(admin, f"config/docker/registry/new-{TAG}.example.com", {"type": "docker"}), 400)
    problem(cset(admin, f"config/docker/registry/{name}", {"type": "quay"}), 400)
    problem(cset(admin, f"config/docker/registry/{name}", {"": "ftp://x"}), 400)
    # Backend.AI's deprecated listing: {name: url}
    listing = okj(admin.get("/config/docker-registries"))
    assert listing[name] == f"https://{name}" and listing[builtin].endswith("://" + builtin), listing
    okj(cdel(admin, f"config/docker/registry/{name}", prefix=True))
    assert name not in result(cget(admin, "config/docker/registry", prefix=True))
    assert name not in okj(admin.get("/config/docker-registries"))
    problem(cdel(admin, f"config/docker/registry/{name}", prefix=True), 404)


def test_registered_registry_is_scanned_and_its_images_run(admin, user, stack, image_registered):
    """The development registry registered again as localhost:<port>: a scan of
    that name registers its images under it, and a session runs from one (the
    agent pulls over http as the URL says)."""
    builtin = stack["TESSERA_OCI_REGISTRY"]
    port = builtin.rsplit(":", 1)[1]
    alias = f"localhost:{port}"
    okj(cset(admin, "config/docker/registry/" + alias.replace(":", "%3A"),
             {"": f"http://{alias}", "type": "docker"}))
    try:
        body = okj(admin.post("/admin/images/scan", {"registry": alias}, timeout=60))
        ref = alias + "/" + image_registered.split("/", 1)[1]
        assert ref in body["registered"], body
        assert all(r.startswith(alias + "/") for r in body["registered"]), body
        # a scan without a registry covers the built-in and the registered ones
        body = okj(admin.post("/admin/images/scan", {}, timeout=60))
        assert ref in body["registered"] and image_registered in body["registered"], body
        # GraphQL's rescan_images(registry) scans that one (a background task)
        enc = "/admin/images/" + ref.replace("/", "%2F")
        okj(admin.delete(enc), 200, 204)
        problem(admin.get(enc), 404)
        r = okj(gql(admin, "mutation($r: String) { rescan_images(registry: $r) { ok msg task_id } }",
                    {"r": alias}))
        assert r["data"]["rescan_images"]["ok"] is True, r
        wait_until(lambda: admin.get(enc).status_code == 200, timeout=30,
                   message=f"the background scan of {alias} did not register {ref}")
        sname = f"cfg-reg-{TAG}"
        r = user.post("/session", {"image": ref, "name": sname, "maxWaitSeconds": 40,
                                   "config": {"resources": {"cpu": "1", "mem": "256m"}}}, timeout=60)
        try:
            b = okj(r, 201)
            info = user.get(f"/session/{sname}").json()
            assert b["status"] == "RUNNING", info
        finally:
            destroy_quietly(user, sname)
    finally:
        okj(cdel(admin, "config/docker/registry/" + alias, prefix=True))


# ---- images: limits and labels --------------------------------------------------------------------


def test_image_limits_round_trip_and_enforced(admin, user, image_registered):
    key = image_key(image_registered)
    try:
        # the SDK's modifyResource: one set per slot and bound
        okj(cset(admin, f"{key}/resource/cpu/min", "0.5"))
        okj(cset(admin, f"{key}/resource/cpu/max", "1"))
        okj(cset(admin, f"{key}/resource/mem/max", "512m"))
        # the SDK's image.get: the name unencoded, a trailing "/"
        host, rest = image_registered.split("/", 1)
        name, tag = rest.rsplit(":", 1)
        res = result(cget(admin, f"images/{host.replace(':', '%3A')}/{name}/{tag}/resource/", prefix=True))
        assert res["cpu"] == {"min": "0.5", "max": "1"}, res
        assert res["mem"]["max"] == str(512 << 20), res
        whole = result(cget(admin, key, prefix=True))
        assert whole[""].startswith("sha256:") and whole["resource"] == res
        assert whole["labels"]["ai.backend.resource.min.cpu"] == "0.5"
        # REST and GraphQL show them
        info = okj(admin.get("/admin/images/" + image_registered.replace("/", "%2F")))
        assert info["max_slots"]["cpu"] == "1" and info["min_slots"]["cpu"] == "0.5", info
        g = okj(gql(admin, "{ images { name registry tag resource_limits { key min max } } }"))
        mine = [i for i in g["data"]["images"]
                if f"{i['registry']}/{i['name']}:{i['tag']}" == image_registered]
        assert mine, g
        lim = {x["key"]: x for x in mine[0]["resource_limits"]}
        assert lim["cpu"]["min"] == "0.5" and lim["cpu"]["max"] == "1", lim
        # enforced at create: above the maximum, below the minimum
        body = {"image": image_registered, "enqueueOnly": True}
        p = problem(user.post("/session", dict(body, name=f"cfg-max-{TAG}",
                                               config={"resources": {"cpu": "2", "mem": "256m"}})), 400)
        assert "above the image's maximum" in p["msg"] and "cpu" in p["msg"], p
        p = problem(user.post("/session", dict(body, name=f"cfg-maxm-{TAG}",
                                               config={"resources": {"cpu": "1", "mem": "1g"}})), 400)
        assert "above the image's maximum" in p["msg"] and "mem" in p["msg"], p
        p = problem(user.post("/session", dict(body, name=f"cfg-min-{TAG}",
                                               config={"resources": {"cpu": "0.25", "mem": "256m"}})), 400)
        assert "below the image's minimum" in p["msg"], p
        ok_name = f"cfg-ok-{TAG}"
        okj(user.post("/session", dict(body, name=ok_name,
                                       config={"resources": {"cpu": "1", "mem": "256m"}})), 201)
        destroy_quietly(user, ok_name)
        # a minimum above the maximum is refused; bad amounts too
        p = problem(cset(admin, f"{key}/resource/cpu/min", "2"), 400)
        assert "above its maximum" in p["msg"], p
        problem(cset(admin, f"{key}/resource/cpu/max", "lots"), 400)
        problem(cset(admin, f"{key}/resource/mem/max", "-1"), 400)
        problem(cset(admin, f"{key}/resource/bogus/max", "1"), 400)
    finally:
        okj(cdel(admin, f"{key}/resource", prefix=True))
    res = result(cget(admin, f"{key}/resource", prefix=True))
    assert all("max" not in v for v in res.values()), res
    assert "cpu" not in res or res["cpu"]["min"] != "0.5", res


def test_label_override_changes_new_sessions_and_survives_rescan(admin, user, image_registered):
    key = image_key(image_registered)
    label = "ai.backend.service-ports"
    original = result(cget(admin, f"{key}/labels/{label}"))
    assert original == "echo:http:8080,tcpecho:tcp:9000"
    sname = f"cfg-lbl-{TAG}"
    try:
        okj(cset(admin, f"{key}/labels/{label}", "echo:http:8080,extra:tcp:9100"))
        okj(cset(admin, f"{key}/labels/ai.backend.compat", "yes"))
        assert result(cget(admin, f"{key}/labels", prefix=True))[label] == "echo:http:8080,extra:tcp:9100"
        info = okj(admin.get("/admin/images/" + image_registered.replace("/", "%2F")))
        assert info["labels"][label] == "echo:http:8080,extra:tcp:9100"
        assert info["labels"]["ai.backend.compat"] == "yes"
        assert {p["name"] for p in info["service_ports"]} == {"echo", "extra"}, info
        # a rescan (registration again from the OCI registry) keeps the overrides
        okj(admin.post("/admin/images", {"reference": image_registered}), 200, 201)
        assert result(cget(admin, f"{key}/labels/{label}")) == "echo:http:8080,extra:tcp:9100"
        # a new session gets the overridden ports
        r = user.post("/session", {"image": image_registered, "name": sname, "maxWaitSeconds": 40,
                                   "config": {"resources": {"cpu": "1", "mem": "256m"}}}, timeout=60)
        b = okj(r, 201)
        assert b["status"] == "RUNNING", b
        ports = {p["name"] for p in user.get(f"/session/{sname}").json()["servicePorts"]}
        assert "extra" in ports and "tcpecho" not in ports, ports
        # a malformed service-ports label is refused
        problem(cset(admin, f"{key}/labels/{label}", "not a port list"), 400)
    finally:
        destroy_quietly(user, sname)
        cdel(admin, f"{key}/labels/{label}")
        cdel(admin, f"{key}/labels/ai.backend.compat")
    assert result(cget(admin, f"{key}/labels/{label}")) == original
    # the image's own labels are overridden, not deleted
    problem(cdel(admin, f"{key}/labels/ai.backend.runtime-path"), 404)


# ---- who may call, bad input -----------------------------------------------------------------------


@pytest.mark.parametrize("who", ["user", "domain_admin"])
def test_only_superadmins(request, admin, who):
    client = request.getfixturevalue(who)
    okj(cset(admin, f"config/acl-{TAG}", "secret"))
    try:
        for r in (cget(client, f"config/acl-{TAG}"), cget(client, "config/docker/registry", True),
                  cset(client, f"config/acl-{TAG}", "mine"), cdel(client, f"config/acl-{TAG}"),
                  cset(client, "config/docker/registry/x.example.com", {"": "https://x.example.com"}),
                  client.get("/config/docker-registries")):
            problem(r, 403)
        assert result(cget(admin, f"config/acl-{TAG}")) == "secret"
    finally:
        okj(cdel(admin, f"config/acl-{TAG}"))


BAD_KEYS = ["", "/", "config//a", "/config/a", "config/a b", "config/\u00e9", "config/" + "a" * 300,
            "foo/bar", "etc", "images", "images/reg", "images/reg/name"]


@pytest.mark.parametrize("key", BAD_KEYS)
def test_bad_keys(admin, key):
    for r in (cget(admin, key), cset(admin, key, "v"), cdel(admin, key)):
        problem(r, 400)


def test_settings_store_limits(admin):
    base = f"config/lim-{TAG}"
    # 4097 keys in one set: refused as a whole (one transaction)
    p = problem(cset(admin, base, {f"k{i}": "v" for i in range(4097)}), 400)
    assert "at most 4096 keys" in p["msg"], p
    assert result(cget(admin, base, prefix=True)) == {}
    # 8 MiB of values in all
    big = "x" * 65000
    try:
        refused = None
        for i in range(140):
            r = cset(admin, f"{base}/v{i}", big)
            if r.status_code != 200:
                refused = problem(r, 400)
                break
        assert refused and "MiB" in refused["msg"], refused
        assert 120 <= i <= 130, i
    finally:
        okj(cdel(admin, base, prefix=True))


def test_unknown_prefix_names_the_known_ones(admin):
    p = problem(cset(admin, "resources/x", "1"), 400)
    assert "config/" in p["msg"] and "images/" in p["msg"], p


def test_bad_values_and_types(admin, image_registered):
    k = f"config/bad-{TAG}"
    problem(cset(admin, k, "x" * 70000), 400)
    problem(cset(admin, k, {"a": "x" * 40000, "b": "y" * 40000}), 400)
    problem(cset(admin, k, ["a"]), 400)
    problem(cset(admin, k, None), 400)
    problem(cset(admin, k, {}), 400)
    problem(cset(admin, k, {"a": [1]}), 400)
    problem(admin.post("/config/set", {"key": k}), 400)
    problem(admin.post("/config/set", {"key": 5, "value": "x"}), 400)
    problem(admin.post("/config/get", {"key": k, "prefix": "yes"}), 400)
    problem(admin.post("/config/get", {"key": k, "extra": 1}), 400)
    problem(admin.post("/config/get", {}), 400)
    # nothing was stored by the refused sets
    assert result(cget(admin, k, prefix=True)) == {}
    # images: unknown image, a value set on a non-leaf
    problem(cget(admin, f"images/none.example.com/x%2Fy/latest", prefix=True), 404)
    problem(cset(admin, f"images/none.example.com/x/latest/resource/cpu/max", "1"), 404)
    problem(cset(admin, image_key(image_registered) + "/resource/cpu", "1"), 400)
    problem(cdel(admin, image_key(image_registered)), 400)


# ---- the CLI: tessera admin config / registry -------------------------------------------------------


@pytest.fixture(scope="module")
def cli_env(bin_dir, stack, gw, tmp_path_factory):
    from test_cli import base_env, ok as cli_ok
    home = tmp_path_factory.mktemp("cfg-cli-home")
    env = base_env(home, TESSERA_GATEWAY_URL=gw)
    cli_ok(bin_dir, env, "login", "--username", stack["TESSERA_ADMIN_EMAIL"], "--password-stdin",
           stdin=stack["TESSERA_ADMIN_PASSWORD"] + "\n")
    return env


def test_cli_config_and_registry(bin_dir, cli_env, stack):
    from test_cli import fails, header_row, js, ok as cli_ok
    key = f"config/cli-{TAG}"
    assert cli_ok(bin_dir, cli_env, "admin", "config", "set", f"{key}/a", "hello").strip() == "ok"
    cli_ok(bin_dir, cli_env, "admin", "config", "set", f"{key}/b", '{"c": "1", "d": 2}', "--json-value")
    assert cli_ok(bin_dir, cli_env, "admin", "config", "get", f"{key}/a").strip() == "hello"
    assert js(bin_dir, cli_env, "admin", "config", "get", key, "--prefix") == {
        "a": "hello", "b": {"c": "1", "d": "2"}}
    cli_ok(bin_dir, cli_env, "admin", "config", "delete", key, "--prefix")
    fails(bin_dir, cli_env, "admin", "config", "get", f"{key}/a")
    fails(bin_dir, cli_env, "admin", "config", "set", "nowhere/x", "1", status=400)
    name = f"cli-{TAG}.example.com"
    cli_ok(bin_dir, cli_env, "admin", "registry", "add", name, f"https://{name}", "--type", "harbor2",
           "--project", "team")
    out = cli_ok(bin_dir, cli_env, "admin", "registry", "list")
    assert header_row(out) == ["NAME", "URL", "TYPE", "PROJECT"]
    assert name in out and stack["TESSERA_OCI_REGISTRY"] in out
    assert js(bin_dir, cli_env, "admin", "registry", "list")[name]["type"] == "harbor2"
    fails(bin_dir, cli_env, "admin", "registry", "delete", stack["TESSERA_OCI_REGISTRY"], status=400)
    cli_ok(bin_dir, cli_env, "admin", "registry", "delete", name)
    assert name not in cli_ok(bin_dir, cli_env, "admin", "registry", "list")
    out = cli_ok(bin_dir, cli_env, "admin", "registry", "scan", stack["TESSERA_OCI_REGISTRY"])
    assert "registered" in out
    for sub in ("config", "registry"):
        assert "Usage: tessera admin " + sub in cli_ok(bin_dir, cli_env, "admin", sub, "--help")
