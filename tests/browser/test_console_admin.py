"""The console's admin pages, in headless Chromium against the dev stack: a
superadmin creates a user in the Users page, who logs in, sees no Admin
section and gets "not permitted" on an admin route; the superadmin issues
that user a keypair and deactivates it; a domain admin of a second domain
sees only its domain's users and sessions and is not offered the superadmin
role; the Agents page shows a running session's GPU share on the device that
holds it; All sessions force-terminates another user's session (the
Information page: test_console_info.py). Each UI action is checked against what the API says afterwards."""
import uuid

import pytest
from selenium.webdriver.common.by import By

from admin_page import Login, admin_driver, clean_shot, confirm, login_in_domain
from conftest import PASSWORD, Person, new_driver, shot, wait_until
from console_page import choose, click, el, go, login, text_in

TAG = uuid.uuid4().hex[:6]
GPU_SESSION = f"gpu-{TAG}"
LIVE = ("PENDING", "SCHEDULED", "PREPARING", "PULLING", "RUNNING", "RESTARTING", "TERMINATING")


def session_status(person, name):
    r = person.api.get(f"/session/{name}")
    return r.json().get("status") if r.status_code == 200 else None


@pytest.fixture(scope="module")
def boss(admin, stack):
    return Person(admin, stack["TESSERA_GATEWAY_URL"], "boss", role="superadmin")


@pytest.fixture(scope="module")
def boss_page(downloads, console_url, boss):
    yield from admin_driver(downloads, console_url, boss)


@pytest.fixture(scope="module")
def gpu_session(alice, demo_image):
    """A RUNNING session of Alice's holding half a GPU (cuda.shares 0.5)."""
    r = alice.api.post("/session", {"image": demo_image, "name": GPU_SESSION, "maxWaitSeconds": 60,
                                    "config": {"resources": {"cpu": "1", "mem": "256m",
                                                             "cuda.shares": "0.5"}}},
                       timeout=90)
    assert r.status_code == 201, r.text
    wait_until(lambda: session_status(alice, GPU_SESSION) == "RUNNING", timeout=90,
               message=f"{GPU_SESSION} RUNNING")
    yield GPU_SESSION
    alice.api.delete(f"/session/{GPU_SESSION}")


# ---- users -----------------------------------------------------------------------------------

def test_an_admin_creates_a_user_who_sees_no_admin_section(boss_page, console_url, admin,
                                                          downloads):
    d = boss_page
    name = f"newbie-{TAG}"
    email = f"{name}@example.com"
    go(d, console_url, "/admin/users")
    el(d, "[data-admin-tab=users][aria-current=page]")
    click(d, "[data-test=create-user]")
    el(d, "#user-email").send_keys(email)
    el(d, "#user-username").send_keys(name)
    el(d, "#user-fullname").send_keys("New Bie")
    el(d, "#user-password").send_keys(PASSWORD)
    choose(d, "#user-role", "user")
    click(d, "input[data-project=default]")
    shot(d, "admin-user-create")
    click(d, "[data-test=user-submit]")
    el(d, f"tr[data-user=\"{email}\"]")
    users = admin.get("/admin/users", params={"q": name}).json()["items"]
    assert [u["email"] for u in users] == [email]
    u = users[0]
    assert u["role"] == "user" and u["status"] == "active" and u["full_name"] == "New Bie"
    projects = {p["name"]: p["id"] for p in admin.get("/admin/projects",
                                                      params={"limit": 1000}).json()["items"]}
    assert projects["default"] in u["projects"]
    clean_shot(d, "admin-users")

    # the new user logs in: no Admin section, and "not permitted" on an admin route
    n = new_driver(downloads)
    try:
        login(n, console_url, Login(email))
        el(n, "[data-nav=summary]")
        assert not n.find_elements(By.CSS_SELECTOR, "[data-nav=admin]")
        for route in ("/admin/users", "/admin/agents", "/admin/sessions", "/admin/info"):
            go(n, console_url, route)
            text_in(n, "[data-test=not-permitted]", "Not permitted")
            assert not n.find_elements(By.CSS_SELECTOR, "[data-test=admin-tabs]")
        shot(n, "admin-not-permitted")
    finally:
        n.quit()

    # search, then edit: full name and out of the project default
    el(d, "#user-search").send_keys(name)
    wait_until(lambda: [e.get_attribute("data-user") for e in
                        d.find_elements(By.CSS_SELECTOR, "tr[data-user]")] == [email],
               timeout=15, message="the search to leave only the new user")
    click(d, f"tr[data-user=\"{email}\"] [data-test=edit-user]")
    full = el(d, "#user-fullname")
    full.clear()
    full.send_keys("Renamed Bie")
    click(d, "input[data-project=default]")
    click(d, "[data-test=user-submit]")
    wait_until(lambda: not d.find_elements(By.CSS_SELECTOR, "[data-test=user-form]"), timeout=15,
               message="the form to close")
    u2 = admin.get(f"/admin/users/{u['id']}").json()
    assert u2["full_name"] == "Renamed Bie" and projects["default"] not in u2["projects"], u2
    text_in(d, f"tr[data-user=\"{email}\"]", "Renamed Bie")

    # the superadmin issues it a keypair, then deactivates it
    click(d, f"tr[data-user=\"{email}\"] [data-test=user-keypairs]")
    click(d, "[data-test=issue-keypair]")
    ak = el(d, "[data-test=new-access-key]").text.strip()
    r = admin.get(f"/admin/keypairs/{ak}")
    assert r.status_code == 200 and r.json()["is_active"] and r.json()["user_id"] == u["id"]
    el(d, f"[data-keypair=\"{ak}\"]")
    click(d, f"[data-keypair=\"{ak}\"] [data-test=revoke-keypair]")
    confirm(d)
    text_in(d, f"[data-keypair=\"{ak}\"]", "revoked")
    assert not admin.get(f"/admin/keypairs/{ak}").json()["is_active"]
    click(d, ".modal .btn.primary")
    click(d, f"tr[data-user=\"{email}\"] [data-test=deactivate-user]")
    confirm(d)
    el(d, f"tr[data-user=\"{email}\"] [data-user-status=inactive]")
    assert admin.get(f"/admin/users/{u['id']}").json()["status"] == "inactive"


def test_a_domain_admin_sees_only_its_domain(downloads, console_url, admin, alice, gpu_session):
    dom = f"dom-{TAG}"
    r = admin.post("/admin/domains", {"name": dom})
    assert r.status_code in (200, 201), r.text
    made = {}
    for label, role in (("dadmin", "admin"), ("dmember", "user")):
        email = f"{label}-{TAG}@example.com"
        r = admin.post("/admin/users", {"email": email, "username": f"{label}-{TAG}",
                                        "password": PASSWORD, "role": role, "domain_name": dom})
        assert r.status_code in (200, 201), r.text
        made[label] = email
        if not admin.get("/admin/keypairs", params={"user": r.json()["id"]}).json()["items"]:
            assert admin.post("/admin/keypairs", {"user_id": r.json()["id"]}).status_code in (200, 201)
    d = new_driver(downloads)
    try:
        login(d, console_url, Login(made["dadmin"]))  # domain "default": refused
        text_in(d, "#login-error", "wrong domain")
        login_in_domain(d, console_url, made["dadmin"], dom)
        el(d, "[data-nav=admin]")
        text_in(d, ".who-name", "(admin)")
        click(d, "[data-nav=admin]")
        go(d, console_url, "/admin/users")
        el(d, f"tr[data-user=\"{made['dmember']}\"]")
        shown = [e.get_attribute("data-user") for e in d.find_elements(By.CSS_SELECTOR, "tr[data-user]")]
        assert set(shown) == {made["dadmin"], made["dmember"]}, shown
        assert alice.email not in shown
        text_in(d, ".page", f"You manage the users of domain {dom}")
        shot(d, "admin-users-domain-admin")
        click(d, "[data-test=create-user]")
        roles = [o.get_attribute("value") for o in d.find_elements(By.CSS_SELECTOR, "#user-role option")]
        assert roles == ["user", "admin"], roles  # no superadmin: the API refuses it
        assert not el(d, "#user-domain").is_enabled()
        assert el(d, "#user-domain").get_attribute("value") == dom
        click(d, ".modal .dialog-close")
        # All sessions: Alice's (domain default) is not there; the superadmin's view has it
        go(d, console_url, "/admin/sessions")
        el(d, ".page .empty, table.admin-sessions")
        assert not d.find_elements(By.CSS_SELECTOR, f"tr[data-session=\"{gpu_session}\"]")
        listed = admin.get("/session", params={"all": "true", "limit": 1000}).json()["items"]
        assert gpu_session in [s["sessionId"] for s in listed]
        # Agents: readable by domain admins (the API allows it), Alice's session not named
        go(d, console_url, "/admin/agents")
        el(d, "[data-agent]")
        assert not d.find_elements(By.CSS_SELECTOR, f"[data-agent-session=\"{gpu_session}\"]")
    finally:
        d.quit()


# ---- agents ----------------------------------------------------------------------------------

def test_the_agents_page_shows_a_gpu_share_on_its_device(boss_page, console_url, admin, alice,
                                                        gpu_session):
    d = boss_page
    info = alice.api.get(f"/session/{gpu_session}").json()
    agent_id = info["kernels"][0]["agent"]
    a = admin.get(f"/admin/agents/{agent_id}").json()
    held = [x for x in a["devices"] if x.get("slot_name") == "cuda.device"
            and float(x.get("occupied_shares") or 0) >= 0.5]
    assert held, a["devices"]
    go(d, console_url, "/admin/agents")
    card = f"[data-agent=\"{agent_id}\"]"
    el(d, f"{card} [data-agent-session=\"{gpu_session}\"]")
    bar = f"{card} [data-bar=\"gpu-{held[0]['device_id']}\"]"
    el(d, bar)
    wait_until(lambda: float(d.find_element(By.CSS_SELECTOR, bar).get_attribute("data-used")) >= 0.5,
               timeout=15, message="the GPU bar to show the share")
    used = float(d.find_element(By.CSS_SELECTOR, bar).get_attribute("data-used"))
    assert used == float(held[0]["occupied_shares"])
    assert float(d.find_element(By.CSS_SELECTOR, f"{card} [data-bar=cpu]").get_attribute("data-used")) >= 1
    text_in(d, card, "heartbeat")
    clean_shot(d, "admin-agents")
    # it refreshes by itself, in place: the card stays the same element
    node = d.find_element(By.CSS_SELECTOR, card)
    before = d.find_element(By.CSS_SELECTOR, ".page-head [role=status]").text
    wait_until(lambda: d.find_element(By.CSS_SELECTOR, ".page-head [role=status]").text != before,
               timeout=15, message="the agents page to refresh")
    assert d.find_element(By.CSS_SELECTOR, card) == node


def test_a_superadmin_drains_and_undrains_an_agent(boss_page, console_url, admin):
    d = boss_page
    agent_id = admin.get("/admin/agents", params={"status": "ALIVE"}).json()["items"][0]["id"]
    card = f"[data-agent=\"{agent_id}\"]"
    go(d, console_url, "/admin/agents")
    el(d, card)
    assert not d.find_elements(By.CSS_SELECTOR, f"{card} [data-test=agent-drained]")
    try:
        click(d, f"{card} [data-test=agent-drain]")
        confirm(d)
        el(d, f"{card} [data-test=agent-drained]")
        assert admin.get(f"/admin/agents/{agent_id}").json()["schedulable"] is False
        text_in(d, f"{card} [data-test=agent-drain]", "Undrain")
        click(d, f"{card} [data-test=agent-drain]")
        wait_until(lambda: not d.find_elements(By.CSS_SELECTOR, f"{card} [data-test=agent-drained]"),
                   timeout=15, message="the drained badge to go")
        assert admin.get(f"/admin/agents/{agent_id}").json()["schedulable"] is True
    finally:
        admin.post(f"/admin/agents/{agent_id}/undrain", {})


# ---- all sessions ----------------------------------------------------------------------------

def test_force_terminate_from_all_sessions(boss_page, console_url, alice, gpu_session):
    d = boss_page
    go(d, console_url, "/admin/sessions")
    row = f"tr[data-session=\"{gpu_session}\"]"
    el(d, row)
    text_in(d, row, alice.email)
    choose(d, "#admin-session-agent", el(d, f"{row} td.mono").text.split(",")[0].strip())
    el(d, row)
    clean_shot(d, "admin-sessions")
    click(d, f"{row} [data-test=force-terminate]")
    confirm(d)
    wait_until(lambda: session_status(alice, gpu_session) not in LIVE, timeout=30,
               message=f"{gpu_session} to end")
    wait_until(lambda: not d.find_elements(By.CSS_SELECTOR, f"{row} [data-test=force-terminate]"),
               timeout=15, message="the row to leave the active list")


# ---- information: tests/browser/test_console_info.py ---------------------------------------

# ---- environments ----------------------------------------------------------------------------

def test_environments_list_and_delete(boss_page, console_url, admin, demo_image):
    d = boss_page
    ref = f"example.test/admin-{TAG}:1.0"
    r = admin.post("/admin/images", {"reference": ref, "architecture": "x86_64", "labels": {
        "ai.backend.resource.min.cpu": "2", "ai.backend.resource.min.mem": "1g",
        "ai.backend.service-ports": "jupyter:http:8888,ttyd:http:7681"}})
    assert r.status_code in (200, 201), r.text
    go(d, console_url, "/admin/images")
    row = f"tr[data-image=\"{ref}\"]"
    el(d, f"tr[data-image=\"{demo_image}\"]")
    text_in(d, row, "CPU 2")
    text_in(d, row, "1.0 GiB")
    assert [e.get_attribute("data-app") for e in
            d.find_elements(By.CSS_SELECTOR, f"{row} [data-app]")] == ["jupyter", "ttyd"]
    clean_shot(d, "admin-images")
    click(d, "[data-test=scan-images]")
    el(d, "[data-test=scan-result]")
    text_in(d, "[data-test=scan-result]", "registered")
    assert demo_image in [i["reference"] for i in
                          admin.get("/admin/images", params={"limit": 1000}).json()["items"]]
    click(d, f"{row} [data-test=delete-image]")
    confirm(d)
    wait_until(lambda: not d.find_elements(By.CSS_SELECTOR, row), timeout=15,
               message="the image row to go")
    refs = [i["reference"] for i in admin.get("/admin/images", params={"limit": 1000}).json()["items"]]
    assert ref not in refs and demo_image in refs


# ---- resource groups -------------------------------------------------------------------------

def test_resource_groups_create_and_edit(boss_page, console_url, admin):
    d = boss_page
    name = f"rg-{TAG}"
    go(d, console_url, "/admin/groups")
    el(d, "[data-group=default] [data-bar=cpu]")  # the dev agent serves default
    assert int(el(d, "[data-group=default] [data-group-agents]").text) >= 1
    click(d, "[data-test=create-group]")
    el(d, "#group-name").send_keys(name)
    el(d, "#group-description").send_keys("made in the console")
    choose(d, "#group-scheduler", "drf")
    click(d, "[data-test=group-submit]")
    el(d, f"[data-group=\"{name}\"]")
    g = admin.get(f"/admin/resource-groups/{name}").json()
    assert g["scheduler"] == "drf" and g["description"] == "made in the console" and g["is_active"]
    click(d, f"[data-group=\"{name}\"] [data-test=edit-group]")
    click(d, "#group-active")
    click(d, "[data-session-type=batch]")
    click(d, "[data-test=group-submit]")
    text_in(d, f"[data-group=\"{name}\"]", "inactive")
    g = admin.get(f"/admin/resource-groups/{name}").json()
    assert not g["is_active"] and g["allowed_session_types"] == ["interactive"], g
    clean_shot(d, "admin-groups")
    assert admin.delete(f"/admin/resource-groups/{name}").status_code == 200
