"""The admin console's remaining pieces, in headless Chromium against the dev
stack: an image registered by its reference from the stack's OCI registry
(with its minimum and maximum resources and apps shown), a reference the
registry does not have (the 404 shown in the form) and one whose registry does
not answer (502), an image deleted; a keypair issued with a chosen policy and
another keypair's policy changed, the secret shown once with a copy button; a
domain admin's limits on those pages; the current admin tab kept in view in
a 420 px window; and a superadmin's day run from the browser alone: register
an image, create a resource group, a keypair policy and a user with a keypair
of that policy, the user launches a session in its own browser, the admin
sees it on Agents and All sessions and force-terminates it.
Each UI action is checked against what the API says afterwards."""
import os
import subprocess
import sys
import uuid

import pytest
from selenium.webdriver.common.by import By

import suitekit
from admin_page import Login, admin_driver, clean_shot, confirm, form_closes, login_in_domain, typed
from conftest import PASSWORD, REPO, Person, new_driver, shot, wait_until
from console_page import choose, click, el, go, login, status_of, text_in

TAG = uuid.uuid4().hex[:6]
LIVE = ("PENDING", "SCHEDULED", "PREPARING", "PULLING", "RUNNING", "RESTARTING", "TERMINATING")


def push_image(stack, tmp, repo, labels=()):
    """The busybox test image with labels, pushed to the stack's OCI registry
    as <registry>/<repo>:1 (nothing registered in Tessera yet)."""
    tool = os.path.join(REPO, "tools", "oci-image.py")
    out = str(tmp / repo.replace("/", "_"))
    cmd = [sys.executable, tool, "busybox", out, "--marker", repo]
    for lab in labels:
        cmd += ["--label", lab]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    ref = f"{stack['TESSERA_OCI_REGISTRY']}/{repo}:1"
    r = subprocess.run([sys.executable, tool, "push", out, ref, "--insecure"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return ref


def image_refs(admin):
    return [i["reference"] for i in
            admin.get("/admin/images", params={"limit": 1000}).json()["items"]]


@pytest.fixture(scope="module")
def boss(admin, stack):
    return Person(admin, stack["TESSERA_GATEWAY_URL"], "gapboss", role="superadmin")


@pytest.fixture(scope="module")
def boss_page(downloads, console_url, boss):
    yield from admin_driver(downloads, console_url, boss)


@pytest.fixture(scope="module")
def kp_policy(admin):
    """A keypair policy other than default."""
    name = f"kpg-{TAG}"
    r = admin.post("/admin/keypair-resource-policies", {"name": name, "max_concurrent_sessions": 4})
    assert r.status_code in (200, 201), r.text
    return name


# ---- environments ----------------------------------------------------------------------------

def test_register_an_image_by_reference_and_delete_it(boss_page, console_url, admin, stack,
                                                      tmp_path):
    d = boss_page
    ref = push_image(stack, tmp_path, f"tessera/gaps-{TAG}", labels=(
        "ai.backend.resource.min.cpu=0.5", "ai.backend.resource.min.mem=64m",
        "ai.backend.service-ports=jupyter:http:8888,ttyd:http:7681"))
    missing = f"{stack['TESSERA_OCI_REGISTRY']}/tessera/nothing-{TAG}:1"
    go(d, console_url, "/admin/images")
    el(d, "[data-admin-tab=images][aria-current=page]")

    # a reference its registry does not have: the 404 in the form, nothing registered
    typed(d, "#image-reference", missing)
    click(d, "[data-test=register-image]")
    text_in(d, "[data-test=register-error]", "Not found (404)")
    text_in(d, "[data-test=register-error]", f"{missing}: not found in its registry")
    assert missing not in image_refs(admin)
    clean_shot(d, "admin-images-register-404")

    # a registry that does not answer: 502, said so
    typed(d, "#image-reference", f"127.0.0.1:9/tessera/x-{TAG}:1")
    click(d, "[data-test=register-image]")
    text_in(d, "[data-test=register-error]", "did not answer (502)")

    # the real one: registered from its labels, its limits and apps shown
    typed(d, "#image-reference", ref)
    click(d, "[data-test=register-image]")
    row = f"tr[data-image=\"{ref}\"]"
    el(d, row)
    assert not d.find_elements(By.CSS_SELECTOR, "[data-test=register-error]")
    assert el(d, "#image-reference").get_attribute("value") == ""
    img = admin.get(f"/admin/images/{ref.replace('/', '%2F')}").json()
    assert img["source"] == "oci" and img["min_slots"].get("cpu") in ("0.5", 0.5), img
    text_in(d, f"{row} [data-test=image-min]", "CPU 0.5")
    text_in(d, f"{row} [data-test=image-min]", "64 MiB")
    text_in(d, f"{row} [data-test=image-max]", "no limit")
    assert [e.get_attribute("data-app") for e in
            d.find_elements(By.CSS_SELECTOR, f"{row} [data-app]")] == ["jupyter", "ttyd"]
    text_in(d, f"{row} [data-app=jupyter]", "8888")

    # a maximum set in the configuration store shows too
    host, path = ref.split("/", 1)
    name, tag = path.rsplit(":", 1)
    r = admin.post("/config/set", {"key": f"images/{host}/{name}/{tag}/resource/cpu/max",
                                   "value": "4"})
    assert r.status_code == 200, r.text
    d.refresh()
    text_in(d, f"{row} [data-test=image-max]", "CPU 4")
    clean_shot(d, "admin-images")

    click(d, f"{row} [data-test=delete-image]")
    confirm(d)
    wait_until(lambda: not d.find_elements(By.CSS_SELECTOR, row), timeout=15,
               message="the image row to go")
    assert ref not in image_refs(admin)


# ---- users: keypairs -------------------------------------------------------------------------

def test_issue_a_keypair_of_a_policy_and_change_anothers(boss_page, console_url, admin, stack,
                                                          kp_policy):
    d = boss_page
    who = Person(admin, stack["TESSERA_GATEWAY_URL"], "kpuser")
    other = who.api.access_key
    go(d, console_url, "/admin/users")
    typed(d, "#user-search", who.email)
    click(d, f"tr[data-user=\"{who.email}\"] [data-test=user-keypairs]")
    el(d, f"[data-keypair=\"{other}\"]")
    # a user's keypairs may not be admin keypairs (the API refuses): not offered
    assert not d.find_elements(By.CSS_SELECTOR, "#keypair-admin")
    choose(d, "#keypair-policy", kp_policy)
    click(d, "[data-test=issue-keypair]")
    ak = el(d, "[data-test=new-access-key]").text.strip()
    secret = el(d, "[data-test=new-secret-key]").text.strip()
    got = admin.get(f"/admin/keypairs/{ak}").json()
    assert got["user_id"] == who.user_id and got["resource_policy"] == kp_policy, got
    assert "secret_key" not in got and len(secret) >= 32
    text_in(d, "[data-test=issued-keypair]", kp_policy)
    click(d, "[data-test=copy-secret]")
    text_in(d, "[data-test=copy-secret]", "Copied")
    el(d, f"[data-keypair=\"{ak}\"][data-policy-of=\"{kp_policy}\"]")

    # the other keypair's policy changed in its row
    choose(d, f"[data-keypair=\"{other}\"] [data-test=keypair-policy]", kp_policy)
    el(d, f"[data-keypair=\"{other}\"][data-policy-of=\"{kp_policy}\"]")
    assert admin.get(f"/admin/keypairs/{other}").json()["resource_policy"] == kp_policy
    clean_shot(d, "admin-user-keypairs")
    # and back to default
    choose(d, f"[data-keypair=\"{other}\"] [data-test=keypair-policy]", "default")
    el(d, f"[data-keypair=\"{other}\"][data-policy-of=default]")
    assert admin.get(f"/admin/keypairs/{other}").json()["resource_policy"] == "default"

    # the secret is shown once: not after the dialog is opened again
    click(d, ".modal .btn.primary")
    click(d, f"tr[data-user=\"{who.email}\"] [data-test=user-keypairs]")
    el(d, f"[data-keypair=\"{ak}\"]")
    assert not d.find_elements(By.CSS_SELECTOR, "[data-test=new-secret-key]")
    assert secret not in d.find_element(By.CSS_SELECTOR, ".modal").text
    click(d, ".modal .btn.primary")


def test_a_domain_admins_limits_on_environments_and_keypairs(downloads, console_url, admin,
                                                             kp_policy, demo_image):
    dom = f"gdom-{TAG}"
    assert admin.post("/admin/domains", {"name": dom}).status_code in (200, 201)
    made = {}
    for label, role in (("gadmin", "admin"), ("gmember", "user")):
        email = f"{label}-{TAG}@example.com"
        r = admin.post("/admin/users", {"email": email, "username": f"{label}-{TAG}",
                                        "password": PASSWORD, "role": role, "domain_name": dom})
        assert r.status_code in (200, 201), r.text
        made[label] = (email, r.json()["id"])
        if not admin.get("/admin/keypairs", params={"user": r.json()["id"]}).json()["items"]:
            assert admin.post("/admin/keypairs", {"user_id": r.json()["id"]}).status_code in (200, 201)
    d = new_driver(downloads)
    try:
        login_in_domain(d, console_url, made["gadmin"][0], dom)
        el(d, "[data-nav=admin]")

        # Environments: the list, no writing (the API lets only superadmins write)
        go(d, console_url, "/admin/images")
        el(d, f"tr[data-image=\"{demo_image}\"]")
        for css in ("#image-reference", "[data-test=register-image]", "[data-test=scan-images]",
                    "[data-test=delete-image]"):
            assert not d.find_elements(By.CSS_SELECTOR, css), css
        text_in(d, ".page", "Only superadmins register, scan and delete images")

        # Keypairs of its domain's user: issued with a chosen policy, no admin keypair
        go(d, console_url, "/admin/users")
        member, member_id = made["gmember"]
        click(d, f"tr[data-user=\"{member}\"] [data-test=user-keypairs]")
        el(d, "[data-keypair]")
        assert not d.find_elements(By.CSS_SELECTOR, "#keypair-admin")
        choose(d, "#keypair-policy", kp_policy)
        click(d, "[data-test=issue-keypair]")
        ak = el(d, "[data-test=new-access-key]").text.strip()
        got = admin.get(f"/admin/keypairs/{ak}").json()
        assert got["user_id"] == member_id and got["resource_policy"] == kp_policy, got
        choose(d, f"[data-keypair=\"{ak}\"] [data-test=keypair-policy]", "default")
        el(d, f"[data-keypair=\"{ak}\"][data-policy-of=default]")
        assert admin.get(f"/admin/keypairs/{ak}").json()["resource_policy"] == "default"
        shot(d, "admin-user-keypairs-domain-admin")
        click(d, ".modal .btn.primary")
        # an administrator of its domain (itself) may get an admin keypair
        click(d, f"tr[data-user=\"{made['gadmin'][0]}\"] [data-test=user-keypairs]")
        el(d, "#keypair-admin")
        click(d, ".modal .btn.primary")
        assert not d.find_elements(By.CSS_SELECTOR, ".page > [role=alert]")
    finally:
        d.quit()


# ---- a narrow window -------------------------------------------------------------------------

def test_the_current_admin_tab_stays_in_view_on_a_narrow_window(downloads, console_url, boss):
    d = new_driver(downloads, width=420, height=800)
    js = ("const n = document.querySelector('[data-test=admin-tabs]');"
          "const a = n.querySelector('[aria-current=page]');"
          "const r = a.getBoundingClientRect(), b = n.getBoundingClientRect();"
          "return [a.getAttribute('data-admin-tab'), r.left - b.left, b.right - r.right,"
          " n.scrollWidth > n.clientWidth];")
    try:
        login(d, console_url, boss)
        el(d, ".menu-toggle")
        for tab, ready in (("info", "[data-version=gateway]"), ("groups", "[data-group=default]"),
                           ("images", "table.images, .page .empty"), ("agents", "[data-agent]")):
            go(d, console_url, "/admin/" + tab)
            el(d, ready)
            el(d, f"[data-admin-tab={tab}][aria-current=page]")
            cur, left, right, scrolls = d.execute_script(js)
            assert cur == tab
            assert scrolls, "the tab strip fits 420 px: nothing to test"
            assert left >= -1 and right >= -1, f"tab {tab} is out of the strip's view ({left}, {right})"
            if tab == "info":
                shot(d, "narrow-admin-tabs")
            if tab == "images":  # the register form and the table fit too
                el(d, "#image-reference")
                over = d.execute_script(
                    "return document.documentElement.scrollWidth - window.innerWidth")
                shot(d, "narrow-images")
                assert over <= 1, f"the images page is {over} px wider than the window"
        go(d, console_url, "/admin/users")
        typed(d, "#user-search", boss.email)
        click(d, f"tr[data-user=\"{boss.email}\"] [data-test=user-keypairs]")
        el(d, "#keypair-admin")  # a superadmin's keypair may be an admin one
        over = d.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        shot(d, "narrow-user-keypairs")
        assert over <= 1, f"the keypairs dialog is {over} px wider than the window"
    finally:
        d.quit()


# ---- the issue's "done when" -----------------------------------------------------------------

def test_a_superadmin_runs_the_cluster_from_the_browser(boss_page, console_url, admin, stack,
                                                        downloads, tmp_path):
    d = boss_page
    ref = suitekit.push_busybox_image(stack, str(tmp_path / "day"), f"tessera/day-{TAG}", "1",
                                      f"day-{TAG}")
    group, policy = f"day-{TAG}", f"day-{TAG}"
    email, uname, session = f"day-{TAG}@example.com", f"day-{TAG}", f"day-{TAG}"

    # 1. register the image from the stack's registry
    go(d, console_url, "/admin/images")
    typed(d, "#image-reference", ref)
    click(d, "[data-test=register-image]")
    el(d, f"tr[data-image=\"{ref}\"]")
    assert ref in image_refs(admin)

    # 2. a resource group
    go(d, console_url, "/admin/groups")
    click(d, "[data-test=create-group]")
    el(d, "#group-name").send_keys(group)
    el(d, "#group-description").send_keys("the admin's day")
    click(d, "[data-test=group-submit]")
    el(d, f"[data-group=\"{group}\"]")
    assert admin.get(f"/admin/resource-groups/{group}").json()["description"] == "the admin's day"

    # 3. a keypair policy
    go(d, console_url, "/admin/policies")
    click(d, "[data-test=create-policy]")
    el(d, "#policy-name").send_keys(policy)
    el(d, "#policy-max_concurrent_sessions").send_keys("2")
    click(d, "[data-test=policy-submit]")
    form_closes(d, "policy-form")
    assert admin.get(f"/admin/keypair-resource-policies/{policy}").json()[
        "max_concurrent_sessions"] == 2

    # 4. a user (role user, project default), with a keypair of that policy only
    go(d, console_url, "/admin/users")
    click(d, "[data-test=create-user]")
    el(d, "#user-email").send_keys(email)
    el(d, "#user-username").send_keys(uname)
    el(d, "#user-password").send_keys(PASSWORD)
    choose(d, "#user-role", "user")
    click(d, "input[data-project=default]")
    click(d, "[data-test=user-submit]")
    el(d, f"tr[data-user=\"{email}\"]")
    u = admin.get("/admin/users", params={"q": uname}).json()["items"][0]
    assert u["role"] == "user"
    click(d, f"tr[data-user=\"{email}\"] [data-test=user-keypairs]")
    el(d, "[data-test=issue-keypair]")
    choose(d, "#keypair-policy", policy)
    click(d, "[data-test=issue-keypair]")
    ak = el(d, "[data-test=new-access-key]").text.strip()
    el(d, f"[data-keypair=\"{ak}\"]")
    for row in d.find_elements(By.CSS_SELECTOR, "[data-keypair]"):  # the others revoked
        other = row.get_attribute("data-keypair")
        if other != ak and row.find_elements(By.CSS_SELECTOR, "[data-test=revoke-keypair]"):
            click(d, f"[data-keypair=\"{other}\"] [data-test=revoke-keypair]")
            confirm(d)
            text_in(d, f"[data-keypair=\"{other}\"]", "revoked")
    active = admin.get("/admin/keypairs", params={"user": u["id"], "is_active": "true"}).json()
    assert [(k["access_key"], k["resource_policy"]) for k in active["items"]] == [(ak, policy)]
    click(d, ".modal .btn.primary")

    # 5. the user launches a session in its own browser
    n = new_driver(downloads)
    try:
        login(n, console_url, Login(email))
        el(n, "[data-nav=summary]")
        go(n, console_url, "/sessions")
        click(n, "[data-test=launch]")
        choose(n, "#launch-image", ref, what="the launcher to list the registered image")
        typed(n, "#launch-name", session)
        for css, value in (("#launch-cpu", "1"), ("#launch-mem", "256m")):
            f = n.find_elements(By.CSS_SELECTOR, css)
            if f and f[0].tag_name == "input":
                typed(n, css, value)
        click(n, "[data-test=launch-submit]")
        wait_until(lambda: status_of(n, session) == "RUNNING", timeout=120,
                   message=f"session {session} RUNNING in the user's list")
    finally:
        n.quit()
    mine = [s for s in admin.get("/session", params={"all": "true", "limit": 1000}).json()["items"]
            if s["sessionId"] == session]
    assert len(mine) == 1 and mine[0]["accessKey"] == ak and mine[0]["image"] == ref, mine

    # 6. the admin sees it on its agent and in All sessions, and force-terminates it
    go(d, console_url, "/admin/agents")
    el(d, f"[data-agent-session=\"{session}\"]")
    go(d, console_url, "/admin/sessions")
    row = f"tr[data-session=\"{session}\"]"
    el(d, row)
    text_in(d, row, email)
    clean_shot(d, "admin-day-sessions")
    click(d, f"{row} [data-test=force-terminate]")
    confirm(d)

    def ended():
        r = admin.get("/session", params={"all": "true", "limit": 1000}).json()["items"]
        return all(s["status"] not in LIVE for s in r if s["sessionId"] == session)
    wait_until(ended, timeout=60, message=f"{session} to end")
    wait_until(lambda: not d.find_elements(By.CSS_SELECTOR, f"{row} [data-test=force-terminate]"),
               timeout=15, message="the row to leave the active list")
    admin.delete(f"/admin/resource-groups/{group}")
