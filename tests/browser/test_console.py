"""The web console as a person uses it, in headless Chromium against the dev
stack: log in (and fail with a wrong password), start a session from the
launcher with a folder mounted, see it RUNNING, type a command into the
terminal app and read its answer off the terminal's screen, upload a file
and download it back byte for byte, share a folder with a second user who
accepts it, destroy the session, log out, and find the old cookie refused.
Each page is photographed (conftest.shot); the account page and the narrow
window are checked for what they show. The tests run in file order and
build on each other (one person's browser for the module)."""
import os
import time
import uuid

import pytest
import requests
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

from conftest import console_errors, new_driver, shot, wait_until
from console_page import choose, click, el, go, login, status_of, text_in

TAG = uuid.uuid4().hex[:6]
FOLDER = f"data-{TAG}"
SESSION = f"web-{TAG}"
UPLOAD_NAME = f"hello-{TAG}.bin"


@pytest.fixture(scope="module")
def folder(alice):
    r = alice.api.post("/folders", {"name": FOLDER})
    assert r.status_code == 201, r.text
    return FOLDER


# ---- tests -----------------------------------------------------------------------------------

def test_a_wrong_password_shows_an_error(browser, console_url, alice):
    browser.get(console_url)
    el(browser, "#login-username")
    shot(browser, "login")
    login(browser, console_url, alice, password="not-the-password")
    text_in(browser, "[role=alert]", "password")
    shot(browser, "login-error")
    assert not browser.find_elements(By.CSS_SELECTOR, "[data-nav=summary]")


def test_login_lands_on_the_summary(page, console_url, alice):
    el(page, "[data-nav=sessions]")
    text_in(page, "body", alice.email.split("@")[0])
    shot(page, "summary")


def test_start_a_session_from_the_launcher_with_a_folder(page, console_url, alice, folder,
                                                         demo_image):
    go(page, console_url, "/sessions")
    el(page, "[data-test=launch]")
    shot(page, "sessions-empty")
    click(page, "[data-test=launch]")
    choose(page, "#launch-image", demo_image, what="the launcher to list the demo image")
    name = el(page, "#launch-name")
    name.clear()
    name.send_keys(SESSION)
    for css, value in (("#launch-cpu", "1"), ("#launch-mem", "256m")):
        f = page.find_elements(By.CSS_SELECTOR, css)
        if f and f[0].tag_name == "input":
            f[0].clear()
            f[0].send_keys(value)
        elif f:
            Select(f[0]).select_by_value(value)
    box = el(page, f"[data-mount=\"{folder}\"]")
    if not box.is_selected():
        box.click()
    # the user's project by its name (users list the projects they belong to)
    project = el(page, "#launch-project")
    if project.tag_name == "select":
        assert "default" in [o.text for o in Select(project).options], project.get_attribute("outerHTML")
    shot(page, "launcher")
    click(page, "[data-test=launch-submit]")
    wait_until(lambda: status_of(page, SESSION) == "RUNNING", timeout=90,
               message=f"session {SESSION} RUNNING in the list")
    shot(page, "sessions")
    # It really mounts the folder: ask the session itself.
    r = alice.api.post(f"/session/{SESSION}", {"mode": "batch", "runId": "m1", "code": "",
                                                "options": {"exec": f"ls -d /home/work/{folder}"}},
                       timeout=90)
    assert r.status_code == 200, r.text
    assert r.json()["result"]["exitCode"] == 0, r.text


def test_the_terminal_app_runs_a_command(page, console_url):
    go(page, console_url, f"/sessions/{SESSION}")
    el(page, "[data-app=ttyd]")
    text_in(page, "body", "RUNNING")
    shot(page, "session-detail")
    before = set(page.window_handles)
    click(page, "[data-app=ttyd]")
    wait_until(lambda: len(set(page.window_handles) - before) == 1, timeout=20,
               message="the terminal to open in a new tab")
    main = page.current_window_handle
    page.switch_to.window((set(page.window_handles) - before).pop())
    try:
        el(page, ".xterm-rows", timeout=30, visible=False)
        wait_until(lambda: page.execute_script(
            "return document.querySelector('.xterm-rows').textContent.trim().length") > 0,
            timeout=30, message="a shell prompt in the terminal")
        area = el(page, ".xterm-helper-textarea", visible=False)
        page.execute_script("arguments[0].focus()", area)
        area.send_keys("echo $((6*7))" + Keys.ENTER)

        def answered():
            rows = page.execute_script(
                "return [...document.querySelectorAll('.xterm-rows > div')]"
                ".map(r => r.textContent.trim())")
            return "42" in rows
        wait_until(answered, timeout=20, message="42 on a line of the terminal's screen")
        shot(page, "terminal")
    finally:
        page.close()
        page.switch_to.window(main)


def test_upload_a_file_and_download_it(page, console_url, folder, downloads, alice, tmp_path):
    data = os.urandom(200_000) + b"tessera\n"
    src = tmp_path / UPLOAD_NAME
    src.write_bytes(data)
    go(page, console_url, "/data")
    el(page, f"[data-folder=\"{folder}\"]")
    shot(page, "data")
    go(page, console_url, f"/data/{folder}")
    el(page, "#upload-input", visible=False).send_keys(str(src))
    el(page, f"[data-file=\"{UPLOAD_NAME}\"]", timeout=60)
    shot(page, "files")
    listed = alice.api.get(f"/folders/{folder}/files", params={"path": "."})
    assert listed.status_code == 200 and UPLOAD_NAME in listed.text, listed.text
    row = el(page, f"[data-file=\"{UPLOAD_NAME}\"]")
    btn = row.find_elements(By.CSS_SELECTOR, "[data-test=download]")
    assert btn, "no download button on the file's row"
    page.execute_script("arguments[0].scrollIntoView({block: 'center'})", btn[0])
    btn[0].click()
    target = os.path.join(downloads, UPLOAD_NAME)
    wait_until(lambda: os.path.exists(target) and os.path.getsize(target) == len(data),
               timeout=30, message="the download to finish")
    with open(target, "rb") as f:
        assert f.read() == data


def test_share_a_folder_with_a_second_user_who_accepts(page, console_url, folder, bob, downloads):
    go(page, console_url, f"/data/{folder}")
    click(page, "[data-test=share]")
    el(page, "#invite-emails").send_keys(bob.email)
    click(page, "[data-test=invite-submit]")
    text_in(page, "body", "invit")
    wait_until(lambda: bob.api.get("/folders/invitations/list").json().get("invitations"),
               timeout=20, message="bob's invitation")
    other = new_driver(downloads)
    try:
        login(other, console_url, bob)
        el(other, "[data-nav=data]")
        go(other, console_url, "/data")
        shot(other, "invitations")
        click(other, "[data-test=accept-invitation]")
        el(other, f"[data-folder=\"{folder}\"]", timeout=20)
    finally:
        other.quit()
    names = {f["name"] for f in bob.api.get("/folders").json()}
    assert folder in names


def test_my_account(page, console_url, alice):
    """The account page says who is signed in, with which keypair, and lists
    that keypair as this login's."""
    go(page, console_url, "/account")
    el(page, "[data-test=logout-here]")
    you = el(page, "[aria-labelledby=acc-me] dl.info").text
    assert alice.email.split("@")[0] in you, you
    assert alice.api.access_key in you, you
    row = el(page, f"[data-keypair=\"{alice.api.access_key}\"]")
    assert "this login" in row.text and "active" in row.text, row.text
    shot(page, "account")


def test_the_session_shows_when_idle_reclamation_ends_it(page, console_url, alice):
    """Under the default policy (idle_timeout 3600 s) a RUNNING session shows
    the time left before it is reclaimed unless used, on its page and in the
    list (docs/sessions.md "Idle reclamation")."""
    go(page, console_url, f"/sessions/{SESSION}")
    idle = el(page, "[data-test=idle]").text
    assert "reclaimed in" in idle and "unless used" in idle and "idle timeout 3600 s" in idle, idle
    go(page, console_url, "/sessions")
    row = el(page, f"[data-session=\"{SESSION}\"] [data-test=idle]")
    assert row.text.startswith("idle: reclaimed in"), row.text


def test_destroy_the_session(page, console_url, alice):
    go(page, console_url, f"/sessions/{SESSION}")
    click(page, "[data-test=destroy]")
    try:
        WebDriverWait(page, 3).until(EC.alert_is_present()).accept()
    except TimeoutException:
        confirm = page.find_elements(By.CSS_SELECTOR, "[data-test=confirm]")
        if confirm:
            confirm[0].click()

    def gone():
        r = alice.api.get(f"/session/{SESSION}")
        return r.status_code == 404 or r.json().get("status") in ("TERMINATED", "TERMINATING")
    wait_until(gone, timeout=60, message="the session to end")


def test_narrow_window(page, console_url):
    """In a phone-wide window nothing scrolls sideways, the navigation folds
    behind the menu button and opens from it."""
    page.set_window_size(420, 860)
    try:
        go(page, console_url, "/sessions")
        launch = el(page, "[data-test=launch]")
        width = page.execute_script("return window.innerWidth")
        assert launch.rect["x"] >= 0 and launch.rect["x"] + launch.rect["width"] <= width, launch.rect
        assert page.execute_script("return document.documentElement.scrollWidth") <= width
        sessions_link = el(page, "[data-nav=sessions]", visible=False)
        assert not sessions_link.is_displayed(), "the navigation shows beside a narrow page"
        click(page, ".menu-toggle")
        wait_until(sessions_link.is_displayed, timeout=5, message="the menu button to open the navigation")
        assert el(page, ".menu-toggle").get_attribute("aria-expanded") == "true"
        shot(page, "narrow")
    finally:
        page.set_window_size(1280, 800)


def test_log_out_and_the_old_cookie_is_refused(page, console_url, stack):
    gw = stack["TESSERA_GATEWAY_URL"]
    csrf = page.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/server/login-check').then(r => r.json()).then(j => done(j.csrf_token));")
    cookie = page.get_cookie("tessera_sid")
    assert cookie and cookie["httpOnly"] and cookie.get("sameSite") == "Strict"
    jar = {"tessera_sid": cookie["value"]}
    hdr = {"X-CSRF-Token": csrf}
    assert requests.get(f"{gw}/func/folders", cookies=jar, headers=hdr, timeout=10).status_code == 200
    go(page, console_url, "/account")
    click(page, "[data-test=logout]")
    el(page, "#login-username")
    time.sleep(0.5)
    r = requests.get(f"{gw}/func/folders", cookies=jar, headers=hdr, timeout=10)
    assert r.status_code == 401, r.text
    assert console_errors(page) == [] or all("401" in m or "Failed to load" in m
                                             for m in console_errors(page))
