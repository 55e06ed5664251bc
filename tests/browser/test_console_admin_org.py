"""The console's organisation pages, in headless Chromium against the dev
stack: a superadmin creates a user and a project in the browser, adds the user
to the project, grants a resource group to the project, and the new user logs
in and is offered exactly that (the project and the group in the launcher, no
other group, no Admin section); domains are created, limited ("32g", "0.5")
and deactivated; resource policies of each kind are created and edited with
limits the API then reports, and deleting one in use shows the server's 409
message; a domain admin sees only its domain and may not edit policies; the
pages fit a 420 px window.
Each UI action is checked against what the API says afterwards."""
import uuid

import pytest
from selenium.webdriver.common.by import By

from admin_page import Login, admin_driver, clean_shot, confirm, form_closes, login_in_domain, typed
from conftest import PASSWORD, Person, new_driver, shot, wait_until
from console_page import choose, click, el, go, login, text_in

TAG = uuid.uuid4().hex[:6]


def options(d, css):
    return [o.get_attribute("value") for o in d.find_elements(By.CSS_SELECTOR, f"{css} option")]


@pytest.fixture(scope="module")
def boss(admin, stack):
    return Person(admin, stack["TESSERA_GATEWAY_URL"], "orgboss", role="superadmin")


@pytest.fixture(scope="module")
def boss_page(downloads, console_url, boss):
    yield from admin_driver(downloads, console_url, boss)


# ---- the scenario --------------------------------------------------------------------

def test_a_new_users_project_and_granted_group_are_what_it_is_offered(
        boss_page, console_url, admin, downloads):
    d = boss_page
    name, project, granted, other = f"member-{TAG}", f"proj-{TAG}", f"rg-ok-{TAG}", f"rg-no-{TAG}"
    email = f"{name}@example.com"
    for g in (granted, other):
        r = admin.post("/admin/resource-groups", {"name": g, "description": "org test"})
        assert r.status_code in (200, 201), r.text

    # a user, in no project yet
    go(d, console_url, "/admin/users")
    click(d, "[data-test=create-user]")
    el(d, "#user-email").send_keys(email)
    el(d, "#user-username").send_keys(name)
    el(d, "#user-password").send_keys(PASSWORD)
    click(d, "[data-test=user-submit]")
    el(d, f"tr[data-user=\"{email}\"]")
    uid = admin.get("/admin/users", params={"q": name}).json()["items"][0]["id"]

    # a project in domain default, with a limit and a policy
    go(d, console_url, "/admin/domains")
    el(d, "[data-admin-tab=domains][aria-current=page]")
    el(d, "tr[data-domain=default]")
    click(d, "[data-test=create-project]")
    el(d, "#project-name").send_keys(project)
    el(d, "#project-description").send_keys("made in the console")
    el(d, "#project-slot-cpu").send_keys("16")
    el(d, "#project-slot-mem").send_keys("64g")
    choose(d, "#project-policy", "default")
    click(d, "[data-test=project-submit]")
    row = f"tr[data-project-row=\"{project}\"]"
    el(d, row)
    p = next(x for x in admin.get("/admin/projects", params={"limit": 1000}).json()["items"]
             if x["name"] == project)
    assert p["domain_name"] == "default" and p["description"] == "made in the console"
    assert p["total_resource_slots"] == {"cpu": "16", "mem": str(64 << 30)}, p
    text_in(d, row, "Memory 64 GiB")

    # the user joins it (by e-mail)
    click(d, f"{row} [data-test=project-members]")
    el(d, "#member-emails").send_keys(email)
    click(d, "[data-test=add-members]")
    el(d, f"[data-member=\"{email}\"]")
    members = admin.get(f"/admin/projects/{p['id']}/members").json()["items"]
    assert [m["email"] for m in members] == [email]
    clean_shot(d, "admin-project-members", top=True)
    click(d, ".modal .dialog-close")
    clean_shot(d, "admin-domains", top=True)

    # the project may use the granted group
    go(d, console_url, "/admin/groups")
    card = f"[data-group=\"{granted}\"]"
    click(d, f"{card} [data-test=group-access]")
    choose(d, "#access-scope-type", "project")
    choose(d, "#access-scope", p["id"])
    click(d, "[data-test=grant-access]")
    el(d, f".modal [data-access=\"project:{p['id']}\"]")
    rows = admin.get("/admin/resource-group-access", params={"resource_group": granted}).json()["items"]
    assert [(a["scope_type"], a["scope_id"]) for a in rows] == [("project", p["id"])]
    clean_shot(d, "admin-group-access", top=True)
    click(d, ".modal .dialog-close")
    text_in(d, f"{card} [data-access=\"project:{p['id']}\"]", project)
    assert el(d, f"[data-group=\"{other}\"] [data-group-access]").text == "nobody granted"

    # the new user: that project, that group, not the other one, no Admin section
    n = new_driver(downloads)
    try:
        login(n, console_url, Login(email))
        el(n, "[data-nav=summary]")
        assert not n.find_elements(By.CSS_SELECTOR, "[data-nav=admin]")
        go(n, console_url, "/sessions?launch=1")
        el(n, f"#launch-project option[value=\"{project}\"]", visible=False)
        assert [v for v in options(n, "#launch-project") if v] == [project]
        el(n, f"#launch-group option[value=\"{granted}\"]", visible=False)
        assert other not in options(n, "#launch-group")
        shot(n, "launcher-granted-group")
        go(n, console_url, "/admin/domains")
        text_in(n, "[data-test=not-permitted]", "Not permitted")
    finally:
        n.quit()

    # revoke: the grant goes, in the page and in the API
    click(d, f"{card} [data-test=group-access]")
    click(d, f".modal [data-access=\"project:{p['id']}\"] [data-test=revoke-access]")
    confirm(d)
    wait_until(lambda: not d.find_elements(By.CSS_SELECTOR, ".modal [data-access]"), timeout=15,
               message="the grant to go")
    assert admin.get("/admin/resource-group-access",
                     params={"resource_group": granted}).json()["items"] == []
    click(d, ".modal .dialog-close")

    # remove the member, deactivate the project
    go(d, console_url, "/admin/domains")
    click(d, f"{row} [data-test=project-members]")
    click(d, f"[data-member=\"{email}\"] [data-test=remove-member]")
    confirm(d)
    el(d, ".modal .empty")
    assert admin.get(f"/admin/projects/{p['id']}/members").json()["items"] == []
    click(d, ".modal .dialog-close")
    click(d, f"{row} [data-test=deactivate-project]")
    confirm(d)
    el(d, f"{row} [data-active=false]")
    assert admin.get(f"/admin/projects/{p['id']}").json()["is_active"] is False
    assert uid
    for g in (granted, other):
        admin.delete(f"/admin/resource-groups/{g}")


# ---- domains ---------------------------------------------------------------------------------

def test_a_domain_created_limited_and_deactivated(boss_page, console_url, admin):
    d = boss_page
    dom = f"org-{TAG}"
    go(d, console_url, "/admin/domains")
    click(d, "[data-test=create-domain]")
    el(d, "#domain-name").send_keys(dom)
    el(d, "#domain-description").send_keys("lab")
    el(d, "#domain-slot-mem").send_keys("32g")
    el(d, "#domain-slot-cuda\\.shares").send_keys("0.5")
    el(d, "#domain-hosts").send_keys("local: create-vfolder, mount-in-session")
    click(d, "[data-test=domain-submit]")
    row = f"tr[data-domain=\"{dom}\"]"
    el(d, row)
    got = admin.get(f"/admin/domains/{dom}").json()
    assert got["total_resource_slots"] == {"mem": "34359738368", "cuda.shares": "0.5"}, got
    assert got["allowed_vfolder_hosts"] == {"local": ["create-vfolder", "mount-in-session"]}, got
    text_in(d, row, "Memory 32 GiB")

    # a bad amount: the server's message, nothing changed
    click(d, f"{row} [data-test=edit-domain]")
    assert el(d, "#domain-slot-mem").get_attribute("value") == "32g"
    typed(d, "#domain-slot-cpu", "lots")
    click(d, "[data-test=domain-submit]")
    text_in(d, "[data-test=domain-form] [role=alert]", "cpu")
    assert "cpu" not in admin.get(f"/admin/domains/{dom}").json()["total_resource_slots"]
    typed(d, "#domain-slot-cpu", "8")
    typed(d, "#domain-description", "the lab")
    click(d, "[data-test=domain-submit]")
    form_closes(d, "domain-form")
    got = admin.get(f"/admin/domains/{dom}").json()
    assert got["description"] == "the lab" and got["total_resource_slots"]["cpu"] == "8", got

    # its projects: none yet
    click(d, f"{row} [data-test=show-projects]")
    text_in(d, "[data-test=projects]", f"No projects in {dom}")
    click(d, f"{row} [data-test=deactivate-domain]")
    confirm(d)
    el(d, f"{row} [data-active=false]")
    assert admin.get(f"/admin/domains/{dom}").json()["is_active"] is False
    click(d, f"{row} [data-test=activate-domain]")
    el(d, f"{row} [data-active=true]")
    assert admin.get(f"/admin/domains/{dom}").json()["is_active"] is True


# ---- resource policies -----------------------------------------------------------------------

def test_policies_created_edited_and_a_used_one_not_deleted(boss_page, console_url, admin, alice):
    d = boss_page
    kp, up = f"kp-{TAG}", f"up-{TAG}"
    go(d, console_url, "/admin/policies")
    el(d, "[data-policy-kind=keypair][aria-current=page]")
    text_in(d, "[data-test=policy-help]", "how many sessions a keypair may have running at once")
    click(d, "[data-test=create-policy]")
    el(d, "#policy-name").send_keys(kp)
    el(d, "#policy-max_concurrent_sessions").send_keys("3")
    el(d, "#policy-idle_timeout").send_keys("600")
    el(d, "#policy-slot-cpu").send_keys("4")
    el(d, "#policy-slot-mem").send_keys("8g")
    el(d, "#policy-slot-cuda\\.shares").send_keys("0.5")
    text_in(d, "[data-test=policy-form]", "empty = no limit")
    shot(d, "admin-policy-form")
    click(d, "[data-test=policy-submit]")
    form_closes(d, "policy-form")
    row = f"tr[data-policy=\"{kp}\"]"
    el(d, row)
    got = admin.get(f"/admin/keypair-resource-policies/{kp}").json()
    assert got["max_concurrent_sessions"] == 3 and got["idle_timeout"] == 600, got
    assert got["max_pending_session_count"] is None and got["max_session_lifetime"] == 0, got
    assert got["total_resource_slots"] == {"cpu": "4", "mem": str(8 << 30), "cuda.shares": "0.5"}
    assert el(d, f"{row} [data-field=max_concurrent_sessions]").text == "3"

    click(d, f"{row} [data-test=edit-policy]")
    typed(d, "#policy-max_concurrent_sessions", "5")
    typed(d, "#policy-max_pending_session_count", "2")
    click(d, "[data-test=policy-submit]")
    form_closes(d, "policy-form")
    wait_until(lambda: d.find_element(By.CSS_SELECTOR, f"{row} [data-field=max_concurrent_sessions]")
               .text == "5", timeout=15, message="the edited limit")
    got = admin.get(f"/admin/keypair-resource-policies/{kp}").json()
    assert got["max_concurrent_sessions"] == 5 and got["max_pending_session_count"] == 2
    assert got["total_resource_slots"]["mem"] == str(8 << 30)  # unchanged by the edit
    clean_shot(d, "admin-policies", top=True)

    # a user policy, then used by Alice: deleting it shows the server's 409
    click(d, "[data-policy-kind=user]")
    el(d, "[data-policy-kind=user][aria-current=page]")
    click(d, "[data-test=create-policy]")
    el(d, "#policy-name").send_keys(up)
    el(d, "#policy-max_vfolder_count").send_keys("7")
    el(d, "#policy-max_quota_scope_size").send_keys("100g")
    click(d, "[data-test=policy-submit]")
    urow = f"tr[data-policy=\"{up}\"]"
    el(d, urow)
    got = admin.get(f"/admin/user-resource-policies/{up}").json()
    assert got["max_vfolder_count"] == 7 and got["max_quota_scope_size"] == 100 << 30, got
    before = admin.get(f"/admin/users/{alice.user_id}").json()["resource_policy"]
    r = admin.patch(f"/admin/users/{alice.user_id}", {"resource_policy": up})
    assert r.status_code == 200, r.text
    try:
        click(d, f"{urow} [data-test=delete-policy]")
        confirm(d)
        deleted = admin.delete(f"/admin/user-resource-policies/{up}")
        assert deleted.status_code == 409
        text_in(d, ".page > [role=alert]", deleted.json().get("msg") or deleted.json()["title"])
        text_in(d, ".page > [role=alert]", f"{up} was not deleted")
        clean_shot(d, "admin-policy-in-use", top=True)
        assert admin.get(f"/admin/user-resource-policies/{up}").status_code == 200
    finally:
        admin.patch(f"/admin/users/{alice.user_id}", {"resource_policy": before})
    click(d, f"{urow} [data-test=delete-policy]")
    confirm(d)
    wait_until(lambda: not d.find_elements(By.CSS_SELECTOR, urow), timeout=15,
               message="the deleted policy's row to go")
    assert admin.get(f"/admin/user-resource-policies/{up}").status_code == 404

    # project policies: listed, with default
    click(d, "[data-policy-kind=project]")
    el(d, "table.policies[data-kind=project] tr[data-policy=default]")
    go(d, console_url, "/admin/policies")
    click(d, f"tr[data-policy=\"{kp}\"] [data-test=delete-policy]")
    confirm(d)
    wait_until(lambda: not d.find_elements(By.CSS_SELECTOR, f"tr[data-policy=\"{kp}\"]"),
               timeout=15, message="the keypair policy's row to go")
    assert admin.get(f"/admin/keypair-resource-policies/{kp}").status_code == 404


# ---- a domain admin --------------------------------------------------------------------------

def test_a_domain_admin_sees_its_domain_and_reads_policies(downloads, console_url, admin):
    dom = f"dadm-{TAG}"
    assert admin.post("/admin/domains", {"name": dom}).status_code in (200, 201)
    email = f"dadmin-{TAG}@example.com"
    r = admin.post("/admin/users", {"email": email, "username": f"dadmin-{TAG}",
                                    "password": PASSWORD, "role": "admin", "domain_name": dom})
    assert r.status_code in (200, 201), r.text
    if not admin.get("/admin/keypairs", params={"user": r.json()["id"]}).json()["items"]:
        assert admin.post("/admin/keypairs", {"user_id": r.json()["id"]}).status_code in (200, 201)
    r = admin.post("/admin/projects", {"name": f"dp-{TAG}", "domain_name": dom})
    assert r.status_code in (200, 201), r.text
    pid = r.json()["id"]
    group = f"rg-dom-{TAG}"
    assert admin.post("/admin/resource-groups", {"name": group}).status_code in (200, 201)
    d = new_driver(downloads)
    try:
        login_in_domain(d, console_url, email, dom)
        el(d, "[data-nav=admin]")
        go(d, console_url, "/admin/domains")
        el(d, f"tr[data-domain=\"{dom}\"]")
        assert [e.get_attribute("data-domain") for e in
                d.find_elements(By.CSS_SELECTOR, "tr[data-domain]")] == [dom]
        assert not d.find_elements(By.CSS_SELECTOR, "[data-test=create-domain]")
        assert not d.find_elements(By.CSS_SELECTOR, "[data-test=deactivate-domain]")
        el(d, f"tr[data-project-row=\"dp-{TAG}\"]")
        shot(d, "admin-domains-domain-admin")
        click(d, f"tr[data-domain=\"{dom}\"] [data-test=edit-domain]")
        assert not el(d, "#domain-active").is_enabled()
        assert not el(d, "#domain-slot-cpu").is_enabled()
        typed(d, "#domain-description", "ours")
        click(d, "[data-test=domain-submit]")
        form_closes(d, "domain-form")
        assert admin.get(f"/admin/domains/{dom}").json()["description"] == "ours"

        go(d, console_url, "/admin/policies")
        el(d, "tr[data-policy=default]")
        assert not d.find_elements(By.CSS_SELECTOR, "[data-test=edit-policy]")
        assert not d.find_elements(By.CSS_SELECTOR, "[data-test=delete-policy]")
        assert not d.find_elements(By.CSS_SELECTOR, "[data-test=create-policy]")
        text_in(d, ".page", "only a superadmin may change them")
        shot(d, "admin-policies-domain-admin")

        # resource-group access: only its domain's scopes are offered; it grants its project
        go(d, console_url, "/admin/groups")
        card = f"[data-group=\"{group}\"]"
        click(d, f"{card} [data-test=group-access]")
        choose(d, "#access-scope-type", "domain")
        el(d, f"#access-scope option[value=\"{dom}\"]", visible=False)
        assert [v for v in options(d, "#access-scope") if v] == [dom]
        choose(d, "#access-scope-type", "project")
        choose(d, "#access-scope", pid)
        assert [v for v in options(d, "#access-scope") if v] == [pid]
        click(d, "[data-test=grant-access]")
        el(d, f".modal [data-access=\"project:{pid}\"]")
        rows = admin.get("/admin/resource-group-access", params={"resource_group": group}).json()
        assert [(a["scope_type"], a["scope_id"]) for a in rows["items"]] == [("project", pid)]
        click(d, f".modal [data-access=\"project:{pid}\"] [data-test=revoke-access]")
        confirm(d)
        el(d, ".modal .empty")
        assert admin.get("/admin/resource-group-access",
                         params={"resource_group": group}).json()["items"] == []
        assert not d.find_elements(By.CSS_SELECTOR, ".page > [role=alert]")
    finally:
        d.quit()
        admin.delete(f"/admin/resource-groups/{group}")


# ---- a narrow window -------------------------------------------------------------------------

def test_the_pages_fit_a_narrow_window(downloads, console_url, boss):
    d = new_driver(downloads, width=420, height=800)
    try:
        login(d, console_url, boss)
        el(d, ".menu-toggle")
        for route, ready in (("/admin/users", "tr[data-user]"),
                             ("/admin/domains", "tr[data-domain=default]"),
                             ("/admin/policies", "tr[data-policy=default]"),
                             ("/admin/groups", "[data-group=default] [data-group-access]")):
            go(d, console_url, route)
            el(d, ready)
            over = d.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
            shot(d, "narrow-" + route.split("/")[-1])
            assert over <= 1, f"{route} is {over} px wider than the window (it scrolls sideways)"
        click(d, "[data-group=default] [data-test=group-access]")
        el(d, "#access-scope-type")
        over = d.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        assert over <= 1, f"the access dialog is {over} px wider than the window"
        shot(d, "narrow-group-access")
    finally:
        d.quit()
