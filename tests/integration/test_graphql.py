"""Backend.AI's GraphQL endpoints (docs/api.md "GraphQL"): POST /admin/gql
(GraphQL's response format) and POST /admin/graphql (the legacy form:
the data itself, errors as a 400 problem), through the signed gateway and a
console login.

The queries Backend.AI's clients send answer with the reference's field
names; the language features they use work (variables with defaults,
aliases, fragments, inline fragments, __typename, directives); scoping
follows the REST API: a user reads only its own sessions, keypairs, user
record and folders, whatever the query asks, and may not read admin lists;
malformed or hostile documents are refused at once with a GraphQL error,
never a 5xx."""
import base64
import json
import time
import uuid

import pytest
import requests

from conftest import wait_until
from test_sessions_api import _new_user, admin, gw, image, image_registered, okj, problem  # noqa: F401

TAG = uuid.uuid4().hex[:6]


@pytest.fixture(scope="module")
def alice(admin, gw):
    return _new_user(admin, gw, "gql-alice")


@pytest.fixture(scope="module")
def bob(admin, gw):
    return _new_user(admin, gw, "gql-bob")


def gql(client, query, variables=None, legacy=False, **extra):
    body = {"query": query}
    if variables is not None:
        body["variables"] = variables
    body.update(extra)
    return client.post("/admin/graphql" if legacy else "/admin/gql", body)


def data(client, query, variables=None):
    """The data of a query that must succeed (checked on both endpoints)."""
    r = gql(client, query, variables)
    body = okj(r)
    assert "errors" not in body, body
    legacy = okj(gql(client, query, variables, legacy=True))
    assert set(legacy) == set(body["data"]), (legacy, body)
    return body["data"]


def errors(client, query, variables=None, **extra):
    """The errors of a query that must fail: 200 with errors on /admin/gql,
    a 400 graphql-error problem holding the same list on /admin/graphql."""
    r = gql(client, query, variables, **extra)
    body = okj(r)
    assert body.get("errors"), body
    for e in body["errors"]:
        assert isinstance(e["message"], str) and e["message"], e
    p = problem(gql(client, query, variables, legacy=True, **extra), 400)
    assert p["type"].endswith("/graphql-error"), p
    assert [e["message"] for e in p["data"]] == [e["message"] for e in body["errors"]]
    return body


@pytest.fixture(scope="module")
def alice_session(alice, image_registered):
    client, _ = alice
    name = f"gql-{TAG}"
    r = client.post("/session", {"image": image_registered, "name": name, "enqueueOnly": True,
                                 "config": {"resources": {"cpu": "1", "mem": "64m"}}})
    info = okj(r, 201)
    yield info["sessionUuid"], name
    client.delete(f"/session/{name}", params={"forced": "false"})


# ---- shapes: the SDK's own queries -------------------------------------------------------------


def test_compute_session_list_as_the_sdk_asks(alice, alice_session):
    client, user = alice
    sid, name = alice_session
    q = """query($limit:Int!, $offset:Int!, $ak:String, $group_id:String, $status:String) {
      compute_session_list(limit:$limit, offset:$offset, access_key:$ak, group_id:$group_id, status:$status) {
        items { id name image created_at terminated_at status status_info occupied_slots
                containers {live_stat last_stat} }
        total_count
      }
    }"""
    st = "RUNNING,RESTARTING,TERMINATING,PENDING,SCHEDULED,PREPARING,PULLING,TERMINATED,CANCELLED,ERROR"
    d = data(client, q, {"limit": 30, "offset": 0, "status": st})
    lst = d["compute_session_list"]
    assert lst["total_count"] >= 1
    mine = [s for s in lst["items"] if s["id"] == sid]
    assert mine and mine[0]["name"] == name, lst
    s = mine[0]
    assert set(s) == {"id", "name", "image", "created_at", "terminated_at", "status",
                      "status_info", "occupied_slots", "containers"}
    assert isinstance(s["occupied_slots"], str) and isinstance(json.loads(s["occupied_slots"]), dict)
    assert isinstance(s["containers"], list)
    # total_count alone, as ComputeSession.total_count asks
    d = data(client, """query($limit:Int!, $offset:Int!, $status:String) {
      compute_session_list(limit:$limit, offset:$offset, status:$status) { total_count } }""",
             {"limit": 1, "offset": 0, "status": st})
    assert d["compute_session_list"]["total_count"] == lst["total_count"]


def test_compute_session_by_id(alice, alice_session):
    client, user = alice
    sid, name = alice_session
    d = data(client, """query($session_uuid: UUID!) { compute_session(id:$session_uuid) {
        id session_name name status access_key user_id group_id domain_name scaling_group
        requested_slots service_ports type } }""", {"session_uuid": sid})
    s = d["compute_session"]
    assert s["id"] == sid and s["name"] == name and s["session_name"] == name
    assert s["access_key"] == client.access_key and s["user_id"] == user["id"]
    assert json.loads(s["requested_slots"])["cpu"]


def test_keypair_and_user_of_the_caller(alice):
    client, user = alice
    d = data(client, "query { keypair { access_key is_active is_admin user_id resource_policy rate_limit } }")
    k = d["keypair"]
    assert k["access_key"] == client.access_key and k["is_admin"] is False
    assert k["user_id"] == user["email"]  # Backend.AI's KeyPair.user_id is the e-mail
    d = data(client, "query { user { email username domain_name role is_active groups { id name } } }")
    u = d["user"]
    assert u["email"] == user["email"] and u["role"] == "user" and u["is_active"] is True
    assert isinstance(u["groups"], list)


def test_admin_lists(admin):
    d = data(admin, """query($offset:Int!, $limit:Int!, $is_active:Boolean) {
        keypair_list(offset:$offset, limit:$limit, is_active:$is_active) {
          items { access_key is_active user_id created_at } total_count } }""",
             {"offset": 0, "limit": 100, "is_active": True})
    assert d["keypair_list"]["total_count"] >= 1
    assert all(k["is_active"] for k in d["keypair_list"]["items"])
    d = data(admin, """query($offset:Int!, $limit:Int!, $is_active:Boolean) {
        user_list(offset:$offset, limit:$limit, is_active:$is_active) {
          items { email username role groups {id name} } total_count } }""",
             {"offset": 0, "limit": 100, "is_active": True})
    assert any(u["role"] == "superadmin" for u in d["user_list"]["items"])
    d = data(admin, 'query { images { name tag registry digest installed labels { key value } '
                    'resource_limits { key min max } } }')
    assert d["images"] and all(i["name"] and i["tag"] for i in d["images"])
    d = data(admin, 'query($status: String) { agents(status: $status) { id status available_slots '
                    'occupied_slots first_contact } }', {"status": "ALIVE"})
    assert d["agents"] and isinstance(json.loads(d["agents"][0]["available_slots"]), dict)
    d = data(admin, "query { domains { name is_active total_resource_slots } "
                    "groups(is_active: true) { id name domain_name } "
                    "scaling_groups { name is_active scheduler driver } "
                    "keypair_resource_policies { name max_concurrent_sessions total_resource_slots } "
                    "user_resource_policies { name } project_resource_policies { name } "
                    "resource_presets { name resource_slots shared_memory } }")
    assert {"default"} <= {x["name"] for x in d["domains"]}
    assert {"default"} <= {x["name"] for x in d["scaling_groups"]}
    assert "cpu1-mem1g" in {p["name"] for p in d["resource_presets"]}
    d = data(admin, "query($offset:Int!, $limit:Int!) { storage_volume_list(limit:$limit, offset:$offset) "
                    "{ items { id backend capabilities } total_count } }", {"offset": 0, "limit": 20})
    assert d["storage_volume_list"]["total_count"] >= 1


def test_relay_connection(admin, alice_session):
    d = data(admin, "query { compute_session_nodes(first: 1) { count edges { cursor node { id row_id name } } "
                    "pageInfo { hasNextPage endCursor } } }")
    c = d["compute_session_nodes"]
    assert c["count"] >= 1 and len(c["edges"]) == 1
    if c["pageInfo"]["hasNextPage"]:
        after = c["pageInfo"]["endCursor"]
        d2 = data(admin, "query($a: String) { compute_session_nodes(first: 1, after: $a) "
                         "{ edges { node { row_id } } } }", {"a": after})
        assert d2["compute_session_nodes"]["edges"][0]["node"]["row_id"] != c["edges"][0]["node"]["row_id"]
    errors(admin, 'query { compute_session_nodes(after: "bm90LWEtY3Vyc29y") { count } }')


def test_relay_cursor_bad_input(admin, alice_session):
    """A cursor is standard, padded base64 of "cursor:<offset>" as the server
    writes it; anything else is an error naming the argument."""
    q = "query($a: String) { compute_session_nodes(first: 1, after: $a) { count } }"
    good = base64.b64encode(b"cursor:0").decode()
    assert good == "Y3Vyc29yOjA="
    assert isinstance(data(admin, q, {"a": good})["compute_session_nodes"]["count"], int)
    for bad in ["Y3Vyc29yOjA",                             # no padding
                "Y3Vyc29yOjB=",                            # stray low bits: not canonical
                "Y3Vy=29yOjA=",                            # padding inside
                "Y3Vy c29yOjA",                            # a blank
                "Y3Vyc29yOjA=Y3Vy",                        # something after the padding
                "Y3Vyc29y_jA=",                            # the URL-safe alphabet
                base64.b64encode(b"cursor:").decode(),     # no offset
                base64.b64encode(b"cursor:1\x00").decode(),  # a NUL inside
                base64.b64encode(b"cursor:-1").decode(),   # not a number
                base64.b64encode(b"offset:1").decode()]:   # not a cursor
        body = errors(admin, q, {"a": bad})
        assert "after: not a cursor of this connection" in body["errors"][0]["message"], (bad, body)


# ---- the language ------------------------------------------------------------------------------


def test_language_features(alice, alice_session):
    client, _ = alice
    sid, name = alice_session
    q = """
    query Mine($limit: Int = 10, $withImage: Boolean = false) {
      a: compute_session_list(limit: $limit, offset: 0) { ...Page }
      b: compute_session_list(limit: 1, offset: 0) { total_count, __typename }
      __typename
    }
    fragment Page on ComputeSessionList {
      total_count
      items {
        ... on ComputeSession { sid: id }
        ... @include(if: $withImage) { image }
        name @skip(if: false)
      }
    }"""
    d = data(client, q)
    assert d["__typename"] == "Query"
    assert d["b"]["__typename"] == "ComputeSessionList"
    item = next(i for i in d["a"]["items"] if i["sid"] == sid)
    assert set(item) == {"sid", "name"}
    d = data(client, q, {"withImage": True})
    assert all("image" in i for i in d["a"]["items"])
    # one of two operations, by name
    r = okj(gql(client, "query A { __typename } query B { keypair { access_key } }",
                operation_name="B"))
    assert r["data"] == {"keypair": {"access_key": client.access_key}}


@pytest.mark.parametrize("query,needle", [
    ("query { nope }", 'Cannot query field "nope" on type "Query"'),
    ("query { keypair { nope } }", 'Cannot query field "nope" on type "KeyPair"'),
    ("query { keypair }", "must have a selection"),
    ("query { keypair { access_key { x } } }", "must not have a selection"),
    ("query { compute_session_list(offset: 0) { total_count } }", 'argument "limit" is required'),
    ("query { keypair(bogus: 1) { access_key } }", 'Unknown argument "bogus"'),
    ("query { ...F }", 'Unknown fragment "F"'),
    ("query { ...F } fragment F on Query { ...G } fragment G on Query { ...F }", "within itself"),
    ("query { keypair { ... on User { email } } }", "can never be of type"),
    ("query($x: Int) { keypair { access_key } }", 'Variable "$x" is never used'),
    ("query { keypair(access_key: $x) { access_key } }", 'Variable "$x" is not defined'),
    ("query { keypair @bogus { access_key } }", 'Unknown directive "@bogus"'),
    ("query { __schema { types { name } } }", "introspection is not allowed"),
    ("subscription { keypair { access_key } }", "Subscriptions are not served"),
    ("query { keypair { access_key } ", "Syntax Error"),
    ('query { compute_session_list(limit: "ten", offset: 0) { total_count } }', "Int cannot represent"),
    ("query A { __typename } query B { __typename }", "Must provide operation name"),
    ('query { compute_session(id: "not-a-uuid") { id } }', "UUID"),
])
def test_errors_are_graphql_errors(alice, query, needle):
    client, _ = alice
    body = errors(client, query)
    assert any(needle in e["message"] for e in body["errors"]), body


def test_error_has_location_and_path(alice):
    client, _ = alice
    body = errors(client, "query {\n  keypair { nope }\n}")
    e = body["errors"][0]
    assert e["locations"] == [{"line": 2, "column": 13}], e
    body = okj(gql(client, 'query { mine: keypair { access_key } all: agents { id } }'))
    assert body["data"] == {"mine": {"access_key": client.access_key}, "all": None}, body
    assert body["errors"][0]["path"] == ["all"], body


def test_variables_are_checked(alice):
    client, _ = alice
    q = "query($l: Int!, $o: Int!) { compute_session_list(limit:$l, offset:$o) { total_count } }"
    body = errors(client, q, {"l": 1})
    assert 'Variable "$o" of required type "Int!" was not provided' in body["errors"][0]["message"]
    body = errors(client, q, {"l": "x", "o": 0})
    assert "$l" in body["errors"][0]["message"]


# ---- scoping ------------------------------------------------------------------------------------


def test_a_user_never_reads_another_users_things(alice, bob, alice_session):
    """Bob asks for Alice's session, keypair, user record and folders every way
    the schema offers: nothing of hers comes back."""
    bclient, _ = bob
    aclient, auser = alice
    sid, name = alice_session
    d = okj(gql(bclient, "query { compute_session_list(limit: 100, offset: 0, status: \"PENDING,SCHEDULED,"
                         "PREPARING,PULLING,RUNNING,TERMINATING,TERMINATED,CANCELLED,ERROR\") "
                         "{ items { id access_key } total_count } }"))["data"]
    assert all(s["access_key"] == bclient.access_key for s in d["compute_session_list"]["items"])
    d = okj(gql(bclient, 'query($ak: String) { compute_session_list(limit: 100, offset: 0, access_key: $ak) '
                         '{ items { id } total_count } }', {"ak": aclient.access_key}))["data"]
    assert d["compute_session_list"]["total_count"] == 0
    body = okj(gql(bclient, "query($id: UUID!) { compute_session(id: $id) { id name } }", {"id": sid}))
    assert body["data"]["compute_session"] is None and body["errors"], body
    body = okj(gql(bclient, "query($ak: String) { keypair(access_key: $ak) { access_key secret_key } }",
                   {"ak": aclient.access_key}))
    assert body["data"]["keypair"] is None and body["errors"], body
    d = okj(gql(bclient, "query { keypair_list(limit: 100, offset: 0) { items { access_key } total_count } }"))
    assert d["data"]["keypair_list"]["items"] == [{"access_key": bclient.access_key}] or \
        all(k["access_key"] != aclient.access_key for k in d["data"]["keypair_list"]["items"])
    body = okj(gql(bclient, "query($e: String) { user(email: $e) { email } }", {"e": auser["email"]}))
    assert body["data"]["user"] is None and body["errors"], body
    d = okj(gql(bclient, "query { user_list(limit: 100, offset: 0) { items { email } total_count } }"))
    assert [u["email"] for u in d["data"]["user_list"]["items"]] != [] and \
        auser["email"] not in [u["email"] for u in d["data"]["user_list"]["items"]]
    d = okj(gql(bclient, "query { compute_session_nodes(first: 100) { edges { node { row_id } } } }"))
    assert sid not in [e["node"]["row_id"] for e in d["data"]["compute_session_nodes"]["edges"]]


def test_a_user_cannot_read_admin_lists(alice):
    client, _ = alice
    for q in ("query { domains { name } }", "query { agents { id } }",
              "query { scaling_groups { name } }", "query { keypair_resource_policies { name } }",
              "query { storage_volume_list(limit: 10, offset: 0) { total_count } }"):
        body = okj(gql(client, q))
        assert body["errors"] and all(v is None for v in body["data"].values()), (q, body)


# ---- transport and bad input ----------------------------------------------------------------------


def test_needs_a_signature(gw):
    for path in ("/admin/gql", "/admin/graphql"):
        problem(requests.post(gw + path, json={"query": "{ __typename }"}, timeout=10), 401)


@pytest.mark.parametrize("body", [
    {}, {"query": 5}, {"query": "{ __typename }", "variables": [1]},
    {"query": "{ __typename }", "operation_name": 3},
])
def test_bad_request_bodies(alice, body):
    client, _ = alice
    for path in ("/admin/gql", "/admin/graphql"):
        problem(client.post(path, body), 400)


def test_hostile_documents_are_refused_quickly(alice):
    client, _ = alice
    deep = "query { " + "keypair { " * 200 + "access_key" + " }" * 201
    lists = 'query { keypair(access_key: ' + "[" * 5000 + "]" * 5000 + ") { access_key } }"
    big = "query { " + "__typename " * 20000 + "}"
    bomb = ("query { ...A } " + " ".join(
        f"fragment {chr(65 + i)} on Query {{ ...{chr(66 + i)} ...{chr(66 + i)} }}" for i in range(20))
        + " fragment U on Query { __typename }").replace("...U ...U", "__typename")
    for q in (deep, lists, big, bomb):
        t = time.monotonic()
        r = gql(client, q)
        assert time.monotonic() - t < 5
        body = okj(r)
        assert body["data"] is None and body["errors"], body["errors"][:1]


def test_console_login_can_query(admin, gw):
    """The console (session mode) reaches GraphQL through /func, as the login's keypair."""
    from test_console_login import Browser, new_user  # noqa: PLC0415
    email, signed, _ = new_user(admin, gw)
    b = Browser(gw, email)
    assert b.csrf, b.login.text
    r = b.func("POST", "/admin/gql", json={"query": "query { keypair { access_key } user { email } }"})
    body = okj(r)
    assert body["data"] == {"keypair": {"access_key": signed.access_key}, "user": {"email": email}}, body
    # without the CSRF token: refused like any other /func call
    problem(b.func("POST", "/admin/gql", csrf=False, json={"query": "{ __typename }"}), 403)


# ---- mutations ----------------------------------------------------------------------------------


def mutate(client, query, variables):
    """A mutation's result object (the single root field), checked on /admin/gql."""
    body = okj(gql(client, query, variables))
    assert "errors" not in body, body
    (result,) = body["data"].values()
    return result


def test_user_and_keypair_mutations(admin, gw):
    email = f"gql-made-{TAG}@example.com"
    r = mutate(admin, """mutation($email: String!, $input: UserInput!) {
        create_user(email: $email, props: $input) { ok msg user { email username role is_active groups { id } } } }""",
               {"email": email, "input": {"username": f"gql-made-{TAG}", "password": "gql-Passw0rd-1",
                                          "need_password_change": False, "full_name": "Made", "description": "",
                                          "is_active": True, "domain_name": "default", "role": "user"}})
    assert r["ok"] is True and r["user"]["email"] == email and r["user"]["is_active"] is True, r
    # taken: ok false with the service's reason, nothing else changes
    again = mutate(admin, """mutation($email: String!, $input: UserInput!) {
        create_user(email: $email, props: $input) { ok msg } }""",
                   {"email": email, "input": {"username": f"gql-made-{TAG}", "password": "gql-Passw0rd-1",
                                              "need_password_change": False, "domain_name": "default"}})
    assert again["ok"] is False and again["msg"], again
    r = mutate(admin, """mutation($email: String!, $input: ModifyUserInput!) {
        modify_user(email: $email, props: $input) { ok msg } }""",
               {"email": email, "input": {"full_name": "Made Again", "is_active": False}})
    assert r == {"ok": True, "msg": "success"}, r
    d = data(admin, "query($e: String) { user(email: $e) { full_name is_active status } }", {"e": email})
    assert d["user"] == {"full_name": "Made Again", "is_active": False, "status": "inactive"}, d
    r = mutate(admin, """mutation($user_id: String!, $input: KeyPairInput!) {
        create_keypair(user_id: $user_id, props: $input) { ok msg keypair { access_key secret_key is_active
        is_admin resource_policy rate_limit user_id } } }""",
               {"user_id": email, "input": {"is_active": True, "is_admin": False, "resource_policy": "default",
                                            "rate_limit": 1000}})
    assert r["ok"] is True, r
    ak = r["keypair"]["access_key"]
    assert len(ak) == 20 and len(r["keypair"]["secret_key"]) == 40 and r["keypair"]["user_id"] == email
    r = mutate(admin, """mutation($access_key: String!, $input: ModifyKeyPairInput!) {
        modify_keypair(access_key: $access_key, props: $input) { ok msg } }""",
               {"access_key": ak, "input": {"rate_limit": 500}})
    assert r["ok"] is True, r
    assert okj(admin.get(f"/admin/keypairs/{ak}"))["rate_limit"] == 500
    r = mutate(admin, "mutation($access_key: String!) { delete_keypair(access_key: $access_key) { ok msg } }",
               {"access_key": ak})
    assert r["ok"] is True, r
    assert okj(admin.get(f"/admin/keypairs/{ak}"))["is_active"] is False
    r = mutate(admin, "mutation($email: String!) { delete_user(email: $email) { ok msg } }", {"email": email})
    assert r["ok"] is True, r
    r = mutate(admin, "mutation($email: String!) { delete_user(email: $email) { ok msg } }",
               {"email": f"nobody-{TAG}@example.com"})
    assert r["ok"] is False and "no such user" in r["msg"], r


def test_unknown_input_fields_are_errors(admin):
    body = errors(admin, """mutation($email: String!, $input: ModifyUserInput!) {
        modify_user(email: $email, props: $input) { ok msg } }""",
                  {"email": "x@example.com", "input": {"bogus": 1}})
    assert 'Field "bogus" is not defined by type "ModifyUserInput"' in body["errors"][0]["message"]


def test_policy_preset_domain_group_mutations(admin):
    name = f"gql-pol-{TAG}"
    r = mutate(admin, """mutation($name: String!, $input: CreateKeyPairResourcePolicyInput!) {
        create_keypair_resource_policy(name: $name, props: $input) { ok msg resource_policy { name
        max_concurrent_sessions total_resource_slots } } }""",
               {"name": name, "input": {"default_for_unspecified": "UNLIMITED",
                                        "total_resource_slots": json.dumps({"cpu": "4", "mem": "8g"}),
                                        "max_concurrent_sessions": 3, "max_containers_per_session": 1,
                                        "idle_timeout": 600, "max_vfolder_count": 3}})
    assert r["ok"] is True and r["resource_policy"]["max_concurrent_sessions"] == 3, r
    assert json.loads(r["resource_policy"]["total_resource_slots"]) == {"cpu": "4", "mem": "8589934592"}
    r = mutate(admin, """mutation($name: String!, $input: ModifyKeyPairResourcePolicyInput!) {
        modify_keypair_resource_policy(name: $name, props: $input) { ok msg } }""",
               {"name": name, "input": {"max_concurrent_sessions": 5}})
    assert r["ok"] is True, r
    d = data(admin, "query($n: String) { keypair_resource_policy(name: $n) { max_concurrent_sessions } }",
             {"n": name})
    assert d["keypair_resource_policy"]["max_concurrent_sessions"] == 5
    r = mutate(admin, "mutation($name: String!) { delete_keypair_resource_policy(name: $name) { ok msg } }",
               {"name": name})
    assert r["ok"] is True, r
    # presets, as ResourcePreset.add/mutate/delete send them
    p = f"gql-preset-{TAG}"
    r = mutate(admin, """mutation($name: String!, $input: CreateResourcePresetInput!) {
        create_resource_preset(name: $name, props: $input) { ok msg } }""",
               {"name": p, "input": {"resource_slots": json.dumps({"cpu": "1", "mem": "1g"}),
                                     "shared_memory": "64m"}})
    assert r["ok"] is True, r
    r = mutate(admin, """mutation($name: String!, $input: ModifyResourcePresetInput!) {
        modify_resource_preset(name: $name, props: $input) { ok msg } }""",
               {"name": p, "input": {"resource_slots": json.dumps({"cpu": "2", "mem": "1g"})}})
    assert r["ok"] is True, r
    assert okj(admin.get(f"/admin/resource-presets/{p}"))["resource_slots"]["cpu"] == "2"
    r = mutate(admin, "mutation($name: String!) { delete_resource_preset(name: $name) { ok msg } }",
               {"name": p})
    assert r["ok"] is True, r
    # a domain and a project in it
    dom = f"gql-dom-{TAG}"
    r = mutate(admin, """mutation($name: String!, $input: DomainInput!) {
        create_domain(name: $name, props: $input) { ok msg domain { name is_active } } }""",
               {"name": dom, "input": {"description": "made by GraphQL", "is_active": True}})
    assert r["ok"] is True and r["domain"]["name"] == dom, r
    r = mutate(admin, """mutation($name: String!, $input: ModifyDomainInput!) {
        modify_domain(name: $name, props: $input) { ok msg } }""",
               {"name": dom, "input": {"description": "changed"}})
    assert r["ok"] is True, r
    r = mutate(admin, """mutation($name: String!, $input: GroupInput!) {
        create_group(name: $name, props: $input) { ok msg group { id name domain_name } } }""",
               {"name": "team", "input": {"domain_name": dom, "description": "a team"}})
    assert r["ok"] is True and r["group"]["domain_name"] == dom, r
    gid = r["group"]["id"]
    member = okj(admin.get("/admin/users", params={"limit": 1}))["items"][0]
    r = mutate(admin, """mutation($gid: UUID!, $input: ModifyGroupInput!) {
        modify_group(gid: $gid, props: $input) { ok msg } }""",
               {"gid": gid, "input": {"description": "renamed", "user_update_mode": "add",
                                      "user_uuids": [member["id"]]}})
    # the member belongs to another domain: refused, as the REST API refuses it
    assert r["ok"] is False and r["msg"], r
    r = mutate(admin, "mutation($gid: UUID!) { delete_group(gid: $gid) { ok msg } }", {"gid": gid})
    assert r["ok"] is True, r
    r = mutate(admin, "mutation($name: String!) { delete_domain(name: $name) { ok msg } }", {"name": dom})
    assert r["ok"] is True, r


def test_scaling_group_mutations(admin):
    sg = f"gql-sg-{TAG}"
    r = mutate(admin, """mutation($name: String!, $input: CreateScalingGroupInput!) {
        create_scaling_group(name: $name, props: $input) { ok msg } }""",
               {"name": sg, "input": {"description": "", "is_active": True, "driver": "static",
                                      "scheduler": "fifo", "driver_opts": "{}", "scheduler_opts": "{}"}})
    assert r["ok"] is True, r
    r = mutate(admin, """mutation($name: String!, $input: ModifyScalingGroupInput!) {
        modify_scaling_group(name: $name, props: $input) { ok msg } }""",
               {"name": sg, "input": {"description": "changed", "scheduler": "drf"}})
    assert r["ok"] is True, r
    assert okj(admin.get(f"/admin/resource-groups/{sg}"))["scheduler"] == "drf"
    for op in ("associate", "disassociate"):
        r = mutate(admin, f"""mutation($domain: String!, $scaling_group: String!) {{
            {op}_scaling_group_with_domain(domain: $domain, scaling_group: $scaling_group) {{ ok msg }} }}""",
                   {"domain": "default", "scaling_group": sg})
        assert r["ok"] is True, (op, r)
    r = mutate(admin, "mutation($name: String!) { delete_scaling_group(name: $name) { ok msg } }",
               {"name": sg})
    assert r["ok"] is True, r
    r = mutate(admin, "mutation($name: String!) { delete_scaling_group(name: $name) { ok msg } }",
               {"name": "default"})
    assert r["ok"] is False and "cannot be deleted" in r["msg"], r


def test_a_user_cannot_mutate(alice):
    client, user = alice
    for q, v in [
        ("mutation($e: String!, $i: ModifyUserInput!) { modify_user(email: $e, props: $i) { ok } }",
         {"e": user["email"], "i": {"role": "superadmin"}}),
        ("mutation($n: String!, $i: CreateResourcePresetInput!) { create_resource_preset(name: $n, props: $i) { ok } }",
         {"n": "evil", "i": {"resource_slots": "{\"cpu\": \"1\"}"}}),
        ("mutation($u: String!, $i: KeyPairInput!) { create_keypair(user_id: $u, props: $i) { ok } }",
         {"u": user["email"], "i": {"is_admin": True, "resource_policy": "default", "rate_limit": 1}}),
        ("mutation { rescan_images { ok } }", None),
    ]:
        body = okj(gql(client, q, v))
        assert body.get("errors") or body["data"][next(iter(body["data"]))]["ok"] is False, (q, body)
    assert okj(client.get(f"/admin/users/{user['id']}"))["role"] == "user"
    assert okj(client.get("/admin/keypairs"))["total"] == 2  # its own two, none made


# ---- the CLI --------------------------------------------------------------------------------------


def test_cli_graphql(stack, bin_dir, tmp_path, alice):
    from test_cli import base_env, fails, ok, run  # noqa: PLC0415
    client, user = alice
    env = base_env(tmp_path, TESSERA_ACCESS_KEY=client.access_key,
                   TESSERA_SECRET_KEY=client.secret_key, TESSERA_GATEWAY_URL=stack["TESSERA_GATEWAY_URL"])
    out = ok(bin_dir, env, "graphql", "query($e: String) { user(email: $e) { email role } }",
             "--var", f"e={user['email']}")
    assert json.loads(out) == {"user": {"email": user["email"], "role": "user"}}
    # from stdin, with a JSON variable and an operation name
    out = ok(bin_dir, env, "graphql", "-o", "B", "--var", "n=2", "-",
             stdin="query A { __typename } query B($n: Int!) "
                   "{ compute_session_list(limit: $n, offset: 0) { total_count } }")
    assert "total_count" in json.loads(out)["compute_session_list"]
    # errors: on stderr with the place, exit 1
    err = fails(bin_dir, env, "graphql", "{\n keypair { nope } }")
    assert 'Cannot query field "nope" on type "KeyPair". (line 2, column 12)' in err, err
    err = fails(bin_dir, env, "graphql", "{ agents { id } }")
    assert "at agents" in err, err
    # usage errors: exit 2
    for args in (["graphql"], ["graphql", "a", "b"], ["graphql", "--var", "novalue", "{ x }"]):
        r = run(bin_dir, env, *args)
        assert r.returncode == 2 and r.stderr.startswith("tessera"), (args, r.stderr)


# ---- Backend.AI's Python client (issue 32) ------------------------------------------------------

PAGED = """query($limit: Int!, $offset: Int!, $filter: String, $order: String) {
  %s(limit: $limit, offset: $offset, filter: $filter, order: $order) {
    items { %s } total_count } }"""


def test_explicit_nulls_count_as_absent(alice, alice_session):
    """The Python client sends every optional argument, null when unset."""
    client, _ = alice
    q = ("query($limit: Int!, $offset: Int!, $filter: String, $order: String, $g: UUID, $ak: String)"
         " { compute_session_list(limit: $limit, offset: $offset, filter: $filter, order: $order,"
         " group_id: $g, access_key: $ak) { items { name } total_count } }")
    d = data(client, q, {"limit": 10, "offset": 0, "filter": None, "order": None, "g": None, "ak": None})
    assert alice_session[1] in [i["name"] for i in d["compute_session_list"]["items"]]
    d = data(client, "{ vfolder_list(limit: 5, offset: 0, filter: null, access_key: null) { total_count } }")
    assert d["vfolder_list"]["total_count"] >= 0


def test_filter_and_order(admin, alice, alice_session):
    client, _ = alice
    name = alice_session[1]
    d = data(client, PAGED % ("compute_session_list", "name status"),
             {"limit": 10, "offset": 0, "filter": f'name == "{name}" & status != "TERMINATED"'})
    assert [i["name"] for i in d["compute_session_list"]["items"]] == [name]
    assert d["compute_session_list"]["total_count"] == 1
    d = data(client, PAGED % ("compute_session_list", "name"),
             {"limit": 10, "offset": 0, "filter": 'name == "no-such-session"'})
    assert d["compute_session_list"] == {"items": [], "total_count": 0}
    # order over a whole list, paged after
    d = data(admin, PAGED % ("user_list", "email"), {"limit": 100, "offset": 0, "order": "-email"})
    emails = [i["email"] for i in d["user_list"]["items"]]
    assert emails == sorted(emails, reverse=True) and len(emails) >= 2
    d2 = data(admin, PAGED % ("user_list", "email"), {"limit": 1, "offset": 1, "order": "-email"})
    assert [i["email"] for i in d2["user_list"]["items"]] == emails[1:2]
    assert d2["user_list"]["total_count"] == d["user_list"]["total_count"]
    # Backend.AI's enums are upper case: the client lists models with usage_mode == "MODEL"
    fname = f"gql-model-{TAG}"
    okj(client.post("/folders", {"name": fname, "usage_mode": "model"}), 201)
    d = data(client, PAGED % ("vfolder_list", "name usage_mode"),
             {"limit": 10, "offset": 0, "filter": '(usage_mode == "MODEL")'})
    assert [(i["name"], i["usage_mode"]) for i in d["vfolder_list"]["items"]] == [(fname, "model")]


@pytest.mark.parametrize("arg,value,needle", [
    ("filter", "name ==", "value expected"),
    ("filter", 'name ~ "x"', "operator"),
    ("filter", '(name == "x"', "')'"),
    ("order", "name,", "order"),
])
def test_bad_filter_or_order_is_an_error(alice, arg, value, needle):
    client, _ = alice
    body = errors(client, PAGED % ("compute_session_list", "name"), {"limit": 5, "offset": 0, arg: value})
    assert any(needle in e["message"] for e in body["errors"]), body


def test_vfolder_own_invited_project_lists(admin, alice, bob):
    """vfolder_own_list, vfolder_invited_list, vfolder_project_list: the
    caller's own view (also for admins), never another user's folders."""
    a, a_info = alice
    b, b_info = bob
    own = f"gql-own-{TAG}"
    okj(a.post("/folders", {"name": own}), 201)
    inv = okj(a.post(f"/folders/{own}/invite", {"perm": "ro", "emails": [b_info["email"]]}), 201)
    okj(b.post("/folders/invitations/accept", {"inv_id": inv["invited_ids"][0]}))
    names = lambda d, k: [i["name"] for i in d[k]["items"]]  # noqa: E731
    q = "{ %s(limit: 100, offset: 0) { items { name ownership_type } total_count } }"
    assert own in names(data(a, q % "vfolder_own_list"), "vfolder_own_list")
    assert own not in names(data(a, q % "vfolder_invited_list"), "vfolder_invited_list")
    assert own in names(data(b, q % "vfolder_invited_list"), "vfolder_invited_list")
    assert own not in names(data(b, q % "vfolder_own_list"), "vfolder_own_list")
    # the superadmin's own list is its own, not everyone's
    assert own not in names(data(admin, q % "vfolder_own_list"), "vfolder_own_list")
    for item in data(a, q % "vfolder_project_list")["vfolder_project_list"]["items"]:
        assert item["ownership_type"] == "group"


def test_groups_by_name_and_user_groups_names(admin, alice):
    client, info = alice
    d = data(client, '{ groups_by_name(name: "default") { id name } }')
    assert [g["name"] for g in d["groups_by_name"]] == ["default"]
    assert data(client, '{ groups_by_name(name: "no-such-project") { id } }')["groups_by_name"] == []
    d = data(client, "{ user { email groups { id name } } }")
    assert {"id": d["user"]["groups"][0]["id"], "name": "default"} in d["user"]["groups"]
    errors(client, "{ groups_by_name { id } }")


def test_purge_user_as_delete(admin):
    email = f"gql-purge-{TAG}@example.com"
    r = mutate(admin, "mutation($e: String!, $p: UserInput!) { create_user(email: $e, props: $p) "
               "{ ok msg user { email groups { name } } } }",
               {"e": email, "p": {"username": f"gql-purge-{TAG}", "password": "purge-Passw0rd",
                                  "domain_name": "default", "role": "user"}})
    assert r["ok"], r
    r = mutate(admin, "mutation($e: String!, $p: PurgeUserInput) { purge_user(email: $e, props: $p) "
               "{ ok msg } }", {"e": email, "p": {"purge_shared_vfolders": False}})
    assert r["ok"], r
    users = okj(admin.get("/admin/users", params={"q": email}))["items"]
    assert all(u["status"] == "deleted" for u in users if u["email"] == email)


def test_agent_hardware_metadata_and_container_status_changed(admin, alice_session):
    d = data(admin, "{ agent_list(limit: 5, offset: 0) { items { id hardware_metadata } } }")
    for a in d["agent_list"]["items"]:
        hw = json.loads(a["hardware_metadata"]) if isinstance(a["hardware_metadata"], str) \
            else a["hardware_metadata"]
        assert isinstance(hw, dict)
        for kind, v in hw.items():
            assert set(v) == {"status", "status_info", "metadata"} and isinstance(v["metadata"], dict)
    d = data(admin, '{ compute_session(id: "%s") { status_changed containers { status_changed } } }'
             % alice_session[0])
    for k in d["compute_session"]["containers"]:
        assert k["status_changed"] == d["compute_session"]["status_changed"]


def test_vfolder_host_permissions(alice):
    client, _ = alice
    d = data(client, "{ vfolder_host_permissions { vfolder_host_permission_list } }")
    assert "mount-in-session" in d["vfolder_host_permissions"]["vfolder_host_permission_list"]
