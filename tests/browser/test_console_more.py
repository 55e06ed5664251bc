"""More of the web console, in headless Chromium against the dev stack (the
flows the old puppeteer smoke test walked through, now on the real stack):
a session's logs (and following them), restarting a RUNNING session, an app
of a session that is not running, a new directory, a directory and a whole
folder downloaded as zip (members and bytes checked), renaming and deleting
a file, renaming a folder, the trash (restore, purge), the keypairs on the
account page (an administrator issues one, sees its secret once, revokes
it), changing the password and back, signing out everywhere, a reload that
keeps the login, a 401 that sends the page back to the login page, and the
narrow layout's menu. Each UI action is checked against what the API says
afterwards. The tests run in file order and build on each other (one browser
of Alice's for the module)."""
import io
import os
import time
import uuid
import zipfile

import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

import bai_signer
from conftest import Person, new_driver, shot, wait_until
from console_page import click, el, go, login, text_in

TAG = uuid.uuid4().hex[:6]
SESSION = f"more-{TAG}"
LATER = f"later-{TAG}"
MARK = f"logs-mark-{TAG}"
FOLDER = f"files-{TAG}"
FOLDER2 = f"files-{TAG}-b"
SUB = "sub"
INNER = "inner.bin"
TOP = "top.txt"
DATA = {INNER: os.urandom(50_000) + b"inner\n", TOP: b"top of the folder\n" * 100}


# ---- helpers ---------------------------------------------------------------------------------

def confirm(d):
    """Accept the console's confirmation dialog and wait for it to close."""
    click(d, "[data-test=confirm]")
    wait_until(lambda: not d.find_elements(By.CSS_SELECTOR, "[data-test=confirm]"), timeout=20,
               message="the confirmation dialog to close")


def retype(e, text):
    """Replace an input's text as a person does (select all, type)."""
    e.send_keys(Keys.CONTROL, "a")
    e.send_keys(text)


def file_names(person, folder, path="."):
    r = person.api.get(f"/folders/{folder}/files", params={"path": path})
    assert r.status_code == 200, r.text
    j = r.json()
    return {f["name"]: f for f in (j.get("items") or [])}


def folder_names(person, trash=False):
    r = person.api.get("/folders", params={"status": "trash"} if trash else None)
    assert r.status_code == 200, r.text
    return {f["name"] for f in r.json()}


def session_status(person, name):
    r = person.api.get(f"/session/{name}")
    return r.json().get("status") if r.status_code == 200 else None


def wait_download(downloads, name, timeout=30):
    """The bytes of downloads/name once Chromium has finished writing it."""
    target = os.path.join(downloads, name)
    state = {}

    def done():
        if not os.path.exists(target) or os.path.exists(target + ".crdownload"):
            return False
        size = os.path.getsize(target)
        stable = size > 0 and state.get("size") == size
        state["size"] = size
        return stable
    wait_until(done, timeout=timeout, interval=0.3,
               message=f"{name} in {downloads} ({os.listdir(downloads)})")
    with open(target, "rb") as f:
        return f.read()


def zip_members(blob):
    z = zipfile.ZipFile(io.BytesIO(blob))
    assert z.testzip() is None
    return {n: z.read(n) for n in z.namelist() if not n.endswith("/")}


def authorize(person, password):
    return requests.post(f"{person.gateway}/auth/authorize",
                         json={"type": "keypair", "domain": "default",
                               "username": person.email, "password": password}, timeout=10)


def cookie_and_csrf(d):
    csrf = d.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/server/login-check').then(r => r.json()).then(j => done(j.csrf_token));")
    return {"tessera_sid": d.get_cookie("tessera_sid")["value"]}, {"X-CSRF-Token": csrf}


def resource_count(d, part):
    return d.execute_script(
        "return performance.getEntriesByType('resource')"
        ".filter(e => e.name.includes(arguments[0])).length", part)


# ---- fixtures --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def running(alice, demo_image):
    """A RUNNING session of Alice's."""
    r = alice.api.post("/session", {"image": demo_image, "name": SESSION, "maxWaitSeconds": 60,
                                    "config": {"resources": {"cpu": "1", "mem": "256m"}}},
                                   timeout=90)
    assert r.status_code == 201, r.text
    wait_until(lambda: session_status(alice, SESSION) == "RUNNING", timeout=90,
               message=f"{SESSION} RUNNING")
    yield SESSION
    alice.api.delete(f"/session/{SESSION}")


@pytest.fixture(scope="module")
def chatty(alice, demo_image):
    """A RUNNING batch session of Alice's whose command writes a numbered line
    (MARK-<n>) to its output every second."""
    name = f"logs-{TAG}"
    r = alice.api.post("/session", {
        "image": demo_image, "name": name, "type": "batch", "maxWaitSeconds": 60,
        "config": {"resources": {"cpu": "1", "mem": "256m"}},
        "startupCommand": (f"i=0; while [ $i -lt 600 ]; do echo {MARK}-$i; i=$((i+1));"
                           " sleep 1; done")},
        timeout=90)
    assert r.status_code == 201, r.text
    wait_until(lambda: session_status(alice, name) == "RUNNING", timeout=90,
               message=f"{name} RUNNING")
    yield name
    alice.api.delete(f"/session/{name}")


def last_mark(text):
    """The highest n of the MARK-<n> lines in text (-1 without any)."""
    ns = [int(w[len(MARK) + 1:]) for w in text.split() if w.startswith(MARK + "-")
          and w[len(MARK) + 1:].isdigit()]
    return max(ns, default=-1)


@pytest.fixture(scope="module")
def folder(alice):
    r = alice.api.post("/folders", {"name": FOLDER})
    assert r.status_code == 201, r.text
    return FOLDER


@pytest.fixture(scope="module")
def carol(admin, stack):
    """A user of her own for the password and sign-out tests (Alice's browser
    stays logged in)."""
    return Person(admin, stack["TESSERA_GATEWAY_URL"], "carol")


# ---- sessions --------------------------------------------------------------------------------

def test_session_logs_and_follow(page, console_url, alice, chatty):
    def api_logs():
        return alice.api.get(f"/session/{chatty}/logs").json()["result"]["logs"]

    def page_logs():
        return el(page, "pre[data-test=logs]").get_attribute("textContent")

    wait_until(lambda: last_mark(api_logs()) >= 1, timeout=30,
               message="the command's lines in the session's logs (API)")
    go(page, console_url, f"/sessions/{chatty}")
    text_in(page, "pre[data-test=logs]", MARK + "-")
    follow = el(page, "#logs-follow")
    assert not follow.is_selected()
    # not following: the logs shown stay as loaded while the command writes on
    page.execute_script("performance.clearResourceTimings()")
    shown = last_mark(page_logs())
    assert shown >= 0
    time.sleep(4)
    assert resource_count(page, f"/session/{chatty}/logs") == 0, "logs polled without follow"
    assert last_mark(page_logs()) == shown
    assert last_mark(api_logs()) > shown
    # following: the new lines show up without a reload
    follow.click()
    assert el(page, "#logs-follow").is_selected()
    target = last_mark(api_logs()) + 2
    wait_until(lambda: last_mark(page_logs()) >= target, timeout=20,
               message=f"{MARK}-{target} in the page's logs while following")
    assert resource_count(page, f"/session/{chatty}/logs") >= 2
    page.execute_script("document.querySelector('pre[data-test=logs]')"
                        ".scrollIntoView({block: 'center'})")
    shot(page, "session-logs")


def test_restart_a_running_session(page, console_url, alice, running):
    before = alice.api.get(f"/session/{running}/history").json()["items"]
    go(page, console_url, f"/sessions/{running}")
    el(page, "h1 [data-status=RUNNING]")
    click(page, "[data-test=restart]")
    el(page, "[data-test=confirm]")
    shot(page, "session-restart-confirm")
    confirm(page)
    text_in(page, ".toast", f"Session {running}")

    def restarted():
        items = alice.api.get(f"/session/{running}/history").json()["items"]
        new = items[len(before):]
        return (any(h["status"] == "RESTARTING" for h in new)
                and session_status(alice, running) == "RUNNING")
    wait_until(restarted, timeout=90, message="a RESTARTING entry in the history, then RUNNING")
    el(page, "h1 [data-status=RUNNING]", timeout=30)
    text_in(page, ".history", "RESTARTING")
    shot(page, "session-restarted")


def test_an_app_of_a_session_not_running_shows_its_error(page, console_url, alice, demo_image):
    r = alice.api.post("/session", {"image": demo_image, "name": LATER, "type": "batch",
                                    "startupCommand": "sleep 60", "starts_at": "1h",
                                    "enqueueOnly": True})
    assert r.status_code == 201, r.text
    try:
        assert alice.api.post(f"/session/{LATER}/start-service",
                              {"app": "ttyd"}).status_code == 409
        go(page, console_url, f"/sessions/{LATER}")
        el(page, "h1 [data-status]")
        for b in page.find_elements(By.CSS_SELECTOR, "[data-app]"):
            assert not b.is_enabled(), "an app button of a session that is not RUNNING"
        go(page, console_url, f"/terminal/{LATER}")
        state = el(page, "[data-test=terminal-state][data-phase=error]", timeout=30)
        assert "RUNNING" in state.text, state.text
        assert state.get_attribute("role") == "alert"
        el(page, "[data-test=reconnect]")
        shot(page, "terminal-error")
    finally:
        alice.api.delete(f"/session/{LATER}")


# ---- files -----------------------------------------------------------------------------------

def test_mkdir_and_upload_into_it(page, console_url, alice, folder, tmp_path):
    go(page, console_url, f"/data/{folder}")
    click(page, "[data-test=mkdir]")
    el(page, "#file-name-input").send_keys(SUB)
    shot(page, "files-mkdir-dialog")
    click(page, "[data-test=name-submit]")
    el(page, f"[data-file=\"{SUB}\"][data-type=DIRECTORY]")
    assert file_names(alice, folder).get(SUB, {}).get("type") == "DIRECTORY"
    for path, name in ((SUB, INNER), ("", TOP)):
        src = tmp_path / name
        src.write_bytes(DATA[name])
        go(page, console_url, f"/data/{folder}" + (f"?path={path}" if path else ""))
        el(page, "[data-test=mkdir]")
        el(page, "#upload-input", visible=False).send_keys(str(src))
        el(page, f"[data-file=\"{name}\"]", timeout=60)
        wait_until(lambda: file_names(alice, folder, path or ".").get(name, {}).get("size")
                   == len(DATA[name]), timeout=30, message=f"{name} uploaded (API)")
    shot(page, "files-with-subdir")


def test_download_a_directory_as_zip(page, console_url, folder, downloads):
    target = os.path.join(downloads, f"{SUB}.zip")
    if os.path.exists(target):
        os.remove(target)
    go(page, console_url, f"/data/{folder}")
    click(page, f"[data-file=\"{SUB}\"] [data-test=download]")
    members = zip_members(wait_download(downloads, f"{SUB}.zip"))
    inner = [n for n in members if n.rstrip("/").split("/")[-1] == INNER]
    assert inner and set(members) <= {INNER, f"{SUB}/{INNER}"}, members.keys()
    assert members[inner[0]] == DATA[INNER]


def test_download_the_whole_folder_as_zip(page, console_url, folder, downloads):
    go(page, console_url, f"/data/{folder}")
    el(page, f"[data-file=\"{TOP}\"]")
    before = set(os.listdir(downloads))
    click(page, "[data-test=download-folder]")

    def fresh():
        new = [f for f in set(os.listdir(downloads)) - before
               if not f.endswith(".crdownload") and f.endswith(".zip")]
        return new[0] if new else None
    wait_until(fresh, timeout=30, message="the folder's zip to arrive")
    name = fresh()
    members = zip_members(wait_download(downloads, name))
    # the members are relative to the folder (maybe under one top directory)
    strip = {n.split("/", 1)[1] if n.startswith(folder + "/") else n: b
             for n, b in members.items()}
    assert strip.get(TOP) == DATA[TOP], members.keys()
    assert strip.get(f"{SUB}/{INNER}") == DATA[INNER], members.keys()


def test_rename_and_delete_a_file(page, console_url, alice, folder):
    go(page, console_url, f"/data/{folder}")
    click(page, f"[data-file=\"{TOP}\"] [data-test=rename]")
    box = el(page, "#file-name-input")
    assert box.get_attribute("value") == TOP
    retype(box, "renamed.txt")
    shot(page, "file-rename-dialog")
    click(page, "[data-test=name-submit]")
    el(page, "[data-file=\"renamed.txt\"]")
    names = file_names(alice, folder)
    assert "renamed.txt" in names and TOP not in names, names.keys()
    assert names["renamed.txt"]["size"] == len(DATA[TOP])
    click(page, "[data-file=\"renamed.txt\"] [data-test=delete]")
    confirm(page)
    wait_until(lambda: not page.find_elements(By.CSS_SELECTOR, "[data-file=\"renamed.txt\"]"),
               timeout=20, message="the file's row to go")
    assert "renamed.txt" not in file_names(alice, folder)
    shot(page, "files-after-delete")


def test_rename_a_folder(page, console_url, alice, folder):
    go(page, console_url, "/data")
    click(page, f"[data-folder=\"{folder}\"] [data-test=rename-folder]")
    retype(el(page, "#rename-folder-name"), FOLDER2)
    shot(page, "folder-rename-dialog")
    click(page, "[data-test=rename-submit]")
    el(page, f"[data-folder=\"{FOLDER2}\"]")
    names = folder_names(alice)
    assert FOLDER2 in names and folder not in names, names
    assert file_names(alice, FOLDER2, SUB).get(INNER, {}).get("size") == len(DATA[INNER])


def test_trash_restore_and_purge(page, console_url, alice):
    go(page, console_url, "/data")
    click(page, f"[data-folder=\"{FOLDER2}\"] [data-test=delete-folder]")
    confirm(page)
    wait_until(lambda: not page.find_elements(By.CSS_SELECTOR, f"[data-folder=\"{FOLDER2}\"]"),
               timeout=20, message="the folder's row to go")
    assert FOLDER2 not in folder_names(alice) and FOLDER2 in folder_names(alice, trash=True)
    click(page, "[data-tab=trash]")
    el(page, f"[data-trash=\"{FOLDER2}\"]")
    shot(page, "trash")
    click(page, f"[data-trash=\"{FOLDER2}\"] [data-test=restore-folder]")
    wait_until(lambda: not page.find_elements(By.CSS_SELECTOR, f"[data-trash=\"{FOLDER2}\"]"),
               timeout=20, message="the trash row to go")
    assert FOLDER2 in folder_names(alice) and FOLDER2 not in folder_names(alice, trash=True)
    assert file_names(alice, FOLDER2, SUB).get(INNER, {}).get("size") == len(DATA[INNER])
    click(page, "[data-tab=folders]")
    click(page, f"[data-folder=\"{FOLDER2}\"] [data-test=delete-folder]")
    confirm(page)
    click(page, "[data-tab=trash]")
    click(page, f"[data-trash=\"{FOLDER2}\"] [data-test=purge-folder]")
    el(page, "[data-test=confirm]")
    shot(page, "trash-purge-confirm")
    confirm(page)
    wait_until(lambda: not page.find_elements(By.CSS_SELECTOR, f"[data-trash=\"{FOLDER2}\"]"),
               timeout=20, message="the purged folder's row to go")
    assert FOLDER2 not in folder_names(alice) and FOLDER2 not in folder_names(alice, trash=True)


# ---- account ---------------------------------------------------------------------------------

def test_keypairs_on_the_account_page(page, console_url, alice):
    go(page, console_url, "/account")
    row = el(page, f"[data-keypair=\"{alice.api.access_key}\"]")
    assert "active" in row.text
    listed = {e.get_attribute("data-keypair")
              for e in page.find_elements(By.CSS_SELECTOR, "[data-keypair]")}
    r = alice.api.get("/admin/keypairs", params={"user": alice.user_id, "limit": 100})
    assert r.status_code == 200, r.text
    assert listed == {k["access_key"] for k in r.json()["items"]}
    # only administrators issue keypairs
    assert not page.find_elements(By.CSS_SELECTOR, "[data-test=issue-keypair]")
    shot(page, "account-keypairs")


def test_an_admin_issues_a_keypair_and_revokes_it(downloads, console_url, admin, stack):
    boss = Person(admin, stack["TESSERA_GATEWAY_URL"], "boss", role="superadmin")
    d = new_driver(downloads)
    try:
        login(d, console_url, boss)
        el(d, "[data-nav=account]")
        go(d, console_url, "/account")
        click(d, "[data-test=issue-keypair]")
        secret = el(d, "[data-test=new-secret-key]").text.strip()
        ak = el(d, "[data-test=new-access-key]").text.strip()
        assert len(secret) >= 20 and ak
        shot(d, "keypair-issued")
        r = admin.get(f"/admin/keypairs/{ak}")
        assert r.status_code == 200 and r.json()["is_active"], r.text
        issued = bai_signer.Client(boss.gateway, ak, secret)
        assert issued.get("/folders").status_code == 200  # the secret shown is the real one
        click(d, ".modal .btn.primary")
        el(d, f"[data-keypair=\"{ak}\"] [data-test=revoke-keypair]")
        assert secret not in d.find_element(By.TAG_NAME, "body").text  # shown once
        click(d, f"[data-keypair=\"{ak}\"] [data-test=revoke-keypair]")
        confirm(d)
        wait_until(lambda: not d.find_elements(
            By.CSS_SELECTOR, f"[data-keypair=\"{ak}\"] [data-test=revoke-keypair]"),
            timeout=20, message="the revoke button to go")
        text_in(d, f"[data-keypair=\"{ak}\"]", "revoked")
        shot(d, "keypair-revoked")
        assert not admin.get(f"/admin/keypairs/{ak}").json()["is_active"]
        wait_until(lambda: issued.get("/folders").status_code == 401, timeout=10,
                   message="the revoked keypair refused")
    finally:
        d.quit()


def test_change_the_password_and_back(downloads, console_url, carol):
    d = new_driver(downloads)
    try:
        login(d, console_url, carol)
        el(d, "[data-nav=account]")
        go(d, console_url, "/account")
        new = carol.password + "-2"
        for old, to in ((carol.password, new), (new, carol.password)):
            for css, value in (("#pw-old", old), ("#pw-new", to), ("#pw-new2", to)):
                retype(el(d, css), value)
            click(d, "[data-test=password-submit]")
            text_in(d, ".banner.success", "changed")
            if to == new:
                shot(d, "password-changed")
            assert authorize(carol, to).status_code == 200
            assert authorize(carol, old).status_code == 401
    finally:
        d.quit()


def test_sign_out_everywhere(downloads, console_url, carol, stack):
    gw = stack["TESSERA_GATEWAY_URL"]
    d1, d2 = new_driver(downloads), new_driver(downloads)
    try:
        for d in (d1, d2):
            login(d, console_url, carol)
            el(d, "[data-nav=account]")
        jar, hdr = cookie_and_csrf(d2)
        assert requests.get(f"{gw}/func/folders", cookies=jar, headers=hdr,
                            timeout=10).status_code == 200
        go(d1, console_url, "/account")
        click(d1, "[data-test=logout-everywhere]")
        el(d1, "[data-test=confirm]")
        shot(d1, "sign-out-everywhere-confirm")
        confirm(d1)
        el(d1, "#login-username")
        d1.refresh()  # a reload stays logged out
        el(d1, "#login-username")
        assert not d1.find_elements(By.CSS_SELECTOR, "[data-nav=summary]")
        assert requests.get(f"{gw}/func/folders", cookies=jar, headers=hdr,
                            timeout=10).status_code == 401
        # the other browser learns it on its next API call: a click, or its
        # own polling if that came first (the login form is then up already)
        d2.execute_script("const n = document.querySelector('[data-nav=sessions]');"
                          " if (n) n.click();")
        el(d2, "#login-username", timeout=20)
        text_in(d2, "[role=status], [role=alert]", "login has ended")
        shot(d2, "signed-out-elsewhere")
    finally:
        d1.quit()
        d2.quit()


def test_a_reload_keeps_the_login(page, console_url, alice):
    go(page, console_url, "/data")
    el(page, "[data-test=create-folder]")
    page.refresh()
    el(page, "[data-test=create-folder]")
    assert not page.find_elements(By.CSS_SELECTOR, "#login-username")
    text_in(page, ".who-name", alice.email.split("@")[0])


def test_a_401_goes_back_to_the_login_page(page, console_url, alice):
    go(page, console_url, "/sessions")
    el(page, "[data-test=launch]")
    page.delete_cookie("tessera_sid")
    click(page, "[data-nav=data]")
    el(page, "#login-username", timeout=20)
    text_in(page, "[role=status], [role=alert]", "login has ended")
    shot(page, "login-ended")
    el(page, "#login-username").send_keys(alice.email)
    el(page, "#login-password").send_keys(alice.password)
    click(page, "#login-submit")
    el(page, "[data-test=logout]")


def test_the_narrow_layout_menu(page, console_url):
    page.set_window_size(390, 800)
    try:
        go(page, console_url, "/sessions")
        el(page, "[data-test=launch]")
        toggle = el(page, ".menu-toggle")
        assert toggle.get_attribute("aria-expanded") == "false"
        assert not page.find_element(By.CSS_SELECTOR, "[data-nav=data]").is_displayed()
        shot(page, "narrow")
        toggle.click()
        wait_until(lambda: page.find_element(By.CSS_SELECTOR, "[data-nav=data]").is_displayed(),
                   timeout=10, message="the menu to open")
        assert toggle.get_attribute("aria-expanded") == "true"
        shot(page, "narrow-menu")
        click(page, "[data-nav=data]")
        el(page, "[data-test=create-folder]")
        wait_until(lambda: page.find_element(By.CSS_SELECTOR, ".menu-toggle")
                   .get_attribute("aria-expanded") == "false", timeout=10,
                   message="the menu to close after choosing a page")
    finally:
        page.set_window_size(1280, 800)


def test_the_announcement_shows_above_every_page(page, console_url, admin):
    """An administrator's announcement (POST /manager/announcement) appears on
    the console's pages while it is enabled, and a user may hide it."""
    msg = f"Maintenance tonight at 22:00 ({uuid.uuid4().hex[:6]})"
    r = admin.post("/manager/announcement", {"enabled": True, "message": msg})
    assert r.status_code in (200, 204), r.text
    try:
        go(page, console_url, "/sessions")  # (a page opened before: read again on the way)
        text_in(page, "[data-test=announcement]", msg)
        shot(page, "announcement")
        go(page, console_url, "/data")
        text_in(page, "[data-test=announcement]", msg)
        click(page, "[data-test=announcement] button")
        wait_until(lambda: not page.find_elements(By.CSS_SELECTOR, "[data-test=announcement]"),
                   timeout=10, message="the announcement hidden")
    finally:
        admin.post("/manager/announcement", {"enabled": False, "message": ""})
    page.refresh()
    el(page, "[data-test=create-folder]")
    assert not page.find_elements(By.CSS_SELECTOR, "[data-test=announcement]")


def _sso_token(stack, email, **extra):
    import base64
    import hashlib
    import hmac
    import json

    def b(x):
        return base64.urlsafe_b64encode(x).rstrip(b"=").decode()
    with open(stack["TESSERA_SSO_SECRET_FILE"], "rb") as f:
        secret = f.read().strip()
    now = int(time.time())
    claims = {"email": email, "jti": str(uuid.uuid4()), "iat": now, "exp": now + 120, **extra}
    hc = b(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()) + "." + b(json.dumps(claims).encode())
    return hc + "." + b(hmac.new(secret, hc.encode(), hashlib.sha256).digest())


def test_single_sign_on_from_the_identity_providers_link(downloads, console_url, alice, stack):
    """An identity provider sends the browser to the console with ?sToken=...:
    it is signed in without a password, and the token leaves the address bar;
    a refused token shows why on the login page."""
    d = new_driver(downloads)
    try:
        d.get(console_url + "?sToken=" + _sso_token(stack, alice.email) + "#/summary")
        el(d, "[data-nav=summary]")
        assert "sToken" not in d.current_url, d.current_url
        text_in(d, "body", alice.email.split("@")[0])
        shot(d, "sso-signed-in")
        # signed out: an expired token does not sign in, and says why
        d.delete_all_cookies()
        d.get(console_url + "?sToken=" + _sso_token(stack, alice.email, exp=int(time.time()) - 600))
        text_in(d, "body", "Single sign-on failed")
        text_in(d, "body", "expired")
        el(d, "#login-username")
        assert "sToken" not in d.current_url, d.current_url
        shot(d, "sso-refused")
    finally:
        d.quit()
