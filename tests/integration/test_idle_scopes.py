"""Idle reclamation's scopes (docs/sessions.md, "Idle reclamation";
services/registry/idle_scopes.h): the keypair policy's idle_timeout (0 never,
-1 undefined: the resource group's default), the resource group's default,
the project's and the domain's caps; the strictest wins and idleChecks names
the level that set it. A change of any scope applies to the scope's running
sessions (a policy lowered while a session runs: it is reclaimed at the new
deadline). Who may set what: superadmins everything, a domain admin its own
domain's and projects' (not another domain's, not a resource group's); bad
values are 400 problems."""
import uuid

import pytest

from conftest import wait_until
from test_apps import _running
from test_cli import admin_env, base_env
from test_cli import fails as cli_fails
from test_cli import ok as cli_ok
from test_graphql import mutate
from test_sessions_api import _new_user, admin, gw, image, image_registered, okj  # noqa: F401

import bai_signer

TAG = uuid.uuid4().hex[:6]


def _net(client, sid):
    return okj(client.get(f"/session/{sid}"))["idleChecks"]["network_timeout"]


def _level(client, sid):
    extra = _net(client, sid)["extra"] or {}
    return extra.get("level"), extra.get("timeout")


@pytest.fixture(scope="module")
def cli_admin(stack, tmp_path_factory):
    """The superadmin's environment for the CLI."""
    return admin_env(stack, tmp_path_factory.mktemp("idle-home"))


def _problem(r, status=400):
    assert r.status_code == status, r.text
    assert r.headers.get("Content-Type", "").startswith("application/problem+json"), r.headers
    return r.json()


def test_strictest_wins_and_changes_apply_to_running_sessions(admin, gw, image_registered,  # noqa: F811
                                                               bin_dir, cli_admin, stack, tmp_path):
    client, user = _new_user(admin, gw, "idle-s")
    policy = f"idle-s-{TAG}"
    okj(admin.post("/admin/keypair-resource-policies", {"name": policy, "idle_timeout": -1}),
        200, 201)
    okj(admin.patch(f"/admin/keypairs/{client.access_key}", {"resource_policy": policy}))
    project = okj(admin.post("/admin/projects", {"name": f"idle-s-{TAG}",
                                                 "domain_name": user["domain_name"]}), 200, 201)
    okj(admin.post(f"/admin/projects/{project['id']}/members", {"user_ids": [user["id"]]}),
        200, 201)
    domain = user["domain_name"]
    env = cli_admin
    sname = f"idle-s-{TAG}"
    try:
        # the policy leaves it undefined: the resource group's default (set by the CLI)
        out = cli_ok(bin_dir, env, "admin", "resource-group", "update", "default",
                     "--idle-timeout", "900")
        assert "900" in out, out
        sid = _running(client, image_registered, sname, group_name=project["name"])["sessionUuid"]
        assert _level(client, sid) == ("resource_group", 900)
        assert 880 < _net(client, sid)["remaining"] <= 900
        # the project's cap (GraphQL) is stricter: applies to the running session
        r = mutate(admin, """mutation($gid: UUID!, $input: ModifyGroupInput!) {
            modify_group(gid: $gid, props: $input) { ok msg } }""",
                   {"gid": project["id"], "input": {"idle_timeout": 600}})
        assert r["ok"] is True, r
        wait_until(lambda: _level(client, sid) == ("project", 600), timeout=15,
                   message="the project's cap to reach the running session")
        assert 580 < _net(client, sid)["remaining"] <= 600
        # the domain's, stricter still (REST)
        okj(admin.patch(f"/admin/domains/{domain}", {"idle_timeout": 300}))
        wait_until(lambda: _level(client, sid) == ("domain", 300), timeout=15,
                   message="the domain's cap to reach the running session")
        uenv = base_env(tmp_path, TESSERA_GATEWAY_URL=stack["TESSERA_GATEWAY_URL"],
                        TESSERA_ACCESS_KEY=client.access_key, TESSERA_SECRET_KEY=client.secret_key)
        out = cli_ok(bin_dir, uenv, "session", "info", sname)
        assert "(idle timeout 300 s, domain's)" in out, out
        # a laxer group default changes nothing
        okj(admin.patch("/admin/resource-groups/default", {"idle_timeout": 100000}))
        assert _level(client, sid) == ("domain", 300)
        # the policy lowered to 6 s: the session counts 6 s from its RUNNING and is reclaimed
        okj(admin.patch(f"/admin/keypair-resource-policies/{policy}", {"idle_timeout": 6}))
        wait_until(lambda: okj(client.get(f"/session/{sid}"))["status"] in
                   ("TERMINATING", "TERMINATED"), timeout=30,
                   message="the session to be reclaimed at its new deadline")
        info = okj(client.get(f"/session/{sid}"))
        assert "idle: no app traffic or exec for 6 s" in info["statusInfo"], info
    finally:
        client.delete(f"/session/{sname}")
        okj(admin.patch("/admin/resource-groups/default", {"idle_timeout": 0}))
        okj(admin.patch(f"/admin/domains/{domain}", {"idle_timeout": 0}))


def test_policy_zero_is_never_but_a_cap_still_applies(admin, gw, image_registered):  # noqa: F811
    """0 = never idle for the policy; a project's cap is stricter than never."""
    client, user = _new_user(admin, gw, "idle-z")
    policy = f"idle-z-{TAG}"
    okj(admin.post("/admin/keypair-resource-policies", {"name": policy, "idle_timeout": 0}),
        200, 201)
    okj(admin.patch(f"/admin/keypairs/{client.access_key}", {"resource_policy": policy}))
    project = okj(admin.post("/admin/projects", {"name": f"idle-z-{TAG}", "idle_timeout": 1200,
                                                 "domain_name": user["domain_name"]}), 200, 201)
    assert project["idle_timeout"] == 1200
    okj(admin.post(f"/admin/projects/{project['id']}/members", {"user_ids": [user["id"]]}),
        200, 201)
    s1, s2 = f"idle-z1-{TAG}", f"idle-z2-{TAG}"
    try:
        sid = _running(client, image_registered, s1)["sessionUuid"]  # the default project
        net = _net(client, sid)
        assert net["remaining"] is None and net["extra"] is None, net
        sid = _running(client, image_registered, s2, group_name=project["name"])["sessionUuid"]
        assert _level(client, sid) == ("project", 1200)
    finally:
        client.delete(f"/session/{s1}")
        client.delete(f"/session/{s2}")


def test_inference_sessions_exempt_unless_their_group_says(admin, gw, image_registered):  # noqa: F811
    client, _ = _new_user(admin, gw, "idle-i")
    policy = f"idle-i-{TAG}"
    okj(admin.post("/admin/keypair-resource-policies", {"name": policy, "idle_timeout": 600}),
        200, 201)
    okj(admin.patch(f"/admin/keypairs/{client.access_key}", {"resource_policy": policy}))
    sname = f"idle-i-{TAG}"
    try:
        sid = _running(client, image_registered, sname, type="inference")["sessionUuid"]
        net = _net(client, sid)
        assert net["remaining"] is None and net["extra"] is None, net
        g = okj(admin.patch("/admin/resource-groups/default", {"idle_inference": True}))
        assert g["idle_inference"] is True
        wait_until(lambda: _level(client, sid) == ("keypair_policy", 600), timeout=15,
                   message="the running inference session to be checked")
        assert 580 < _net(client, sid)["remaining"] <= 600
    finally:
        client.delete(f"/session/{sname}")
        okj(admin.patch("/admin/resource-groups/default", {"idle_inference": False}))


def test_who_may_set_what_and_bad_values(admin, gw):  # noqa: F811
    # a domain admin of a domain of its own, and another domain with a project
    mine = okj(admin.post("/admin/domains", {"name": f"idle-m-{TAG}"}), 200, 201)["name"]
    theirs = okj(admin.post("/admin/domains", {"name": f"idle-t-{TAG}"}), 200, 201)["name"]
    their_project = okj(admin.post("/admin/projects", {"name": "p", "domain_name": theirs}),
                        200, 201)
    my_project = okj(admin.post("/admin/projects", {"name": "p", "domain_name": mine}), 200, 201)
    uname = f"idle-da-{TAG}"
    u = okj(admin.post("/admin/users", {"email": f"{uname}@example.com", "username": uname,
                                        "password": "idle-Passw0rd-1", "role": "admin",
                                        "domain_name": mine}), 200, 201)
    k = okj(admin.post("/admin/keypairs", {"user_id": u["id"]}), 200, 201)
    dadmin = bai_signer.Client(gw, k["access_key"], k["secret_key"])

    # its own domain and project: yes
    assert okj(dadmin.patch(f"/admin/domains/{mine}", {"idle_timeout": 120}))["idle_timeout"] == 120
    assert okj(dadmin.patch(f"/admin/projects/{my_project['id']}",
                            {"idle_timeout": 60}))["idle_timeout"] == 60
    # but not the domain's other settings alongside
    assert dadmin.patch(f"/admin/domains/{mine}",
                        {"idle_timeout": 120, "is_active": False}).status_code == 403
    # another domain's, or its project's: not found, unchanged
    assert dadmin.patch(f"/admin/domains/{theirs}", {"idle_timeout": 1}).status_code == 404
    assert dadmin.patch(f"/admin/projects/{their_project['id']}",
                        {"idle_timeout": 1}).status_code == 404
    assert okj(admin.get(f"/admin/domains/{theirs}"))["idle_timeout"] == 0
    assert okj(admin.get(f"/admin/projects/{their_project['id']}"))["idle_timeout"] == 0
    # resource groups and keypair policies are the superadmin's
    assert dadmin.patch("/admin/resource-groups/default", {"idle_timeout": 1}).status_code == 403
    assert okj(admin.get("/admin/resource-groups/default"))["idle_timeout"] == 0
    assert dadmin.patch("/admin/keypair-resource-policies/default",
                        {"idle_timeout": 1}).status_code == 403

    # bad values: a problem naming the field, nothing changed
    for path in (f"/admin/domains/{mine}", f"/admin/projects/{my_project['id']}",
                 "/admin/resource-groups/default"):
        for bad in (-1, "60", 1.5, 10 ** 12):
            p = _problem(admin.patch(path, {"idle_timeout": bad}))
            assert "idle_timeout" in (p.get("msg") or p.get("title") or ""), p
    assert okj(admin.get(f"/admin/domains/{mine}"))["idle_timeout"] == 120
    # a policy takes -1 (undefined), not below
    pol = f"idle-p-{TAG}"
    assert okj(admin.post("/admin/keypair-resource-policies",
                          {"name": pol, "idle_timeout": -1}), 200, 201)["idle_timeout"] == -1
    _problem(admin.patch(f"/admin/keypair-resource-policies/{pol}", {"idle_timeout": -2}))


def test_cli_flags(bin_dir, cli_admin):
    env = cli_admin
    dom = f"idle-c-{TAG}"
    out = cli_ok(bin_dir, env, "admin", "domain", "create", dom, "--idle-timeout", "1800")
    assert "1800" in out, out
    for what in (["domain"], ["project"], ["resource-group"], ["policy", "keypair"]):
        assert "--idle-timeout" in cli_ok(bin_dir, env, "admin", *what, "update", "--help")
    cli_fails(bin_dir, env, "admin", "domain", "update", dom, "--idle-timeout", "-5", status=400)
