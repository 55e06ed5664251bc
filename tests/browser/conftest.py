"""The browser suite's fixtures: the web console driven by a real headless
Chromium (Debian's chromium + chromium-driver through python3-selenium)
against the development stack, as a person would use it.

The stack comes from tests/integration/conftest.py (its `stack` fixture,
loaded under a name of its own: one stack for the suite). Screenshots go to
$TESSERA_SCREENSHOT_DIR (default build/console-screenshots/); docs/console/
keeps the ones the docs show (copied from there by hand after looking at
them)."""
import os
import shutil
import sys
import time
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
IT_DIR = os.path.abspath(os.path.join(HERE, "..", "integration"))
if IT_DIR not in sys.path:
    sys.path.insert(1, IT_DIR)  # bai_signer, suitekit

import bai_signer  # noqa: E402
import suitekit  # noqa: E402

_it = suitekit.integration_conftest()
stack = _it.stack
bin_dir = _it.bin_dir
wait_until = _it.wait_until
REPO = _it.REPO

SHOT_DIR = os.environ.get("TESSERA_SCREENSHOT_DIR") or os.path.join(REPO, "build",
                                                                      "console-screenshots")
PASSWORD = "browser-pass-1234"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if outcome.get_result().failed:
        _it._failed_tests.append(item.nodeid)  # the stack's logs are kept
        # what the browser showed: <SHOT_DIR>/failed-<test>.png
        for name in ("page", "browser"):
            d = item.funcargs.get(name) if hasattr(item, "funcargs") else None
            if d is not None:
                try:
                    os.makedirs(SHOT_DIR, exist_ok=True)
                    d.save_screenshot(os.path.join(SHOT_DIR, f"failed-{item.name}.png"))
                except Exception:  # noqa: BLE001 - the browser may be gone
                    pass


def _chrome_paths():
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    return browser, driver


@pytest.fixture(scope="session")
def console_url(stack):
    url = stack.get("TESSERA_CONSOLE_URL")
    assert url, "dev-up wrote no TESSERA_CONSOLE_URL"
    if not os.path.exists(os.path.join(REPO, "build", "console", "index.html")):
        pytest.fail("the console is not built (build/console/index.html): run make", pytrace=False)
    return url


@pytest.fixture(scope="session")
def admin(stack):
    return bai_signer.Client(stack["TESSERA_GATEWAY_URL"], stack["TESSERA_ADMIN_ACCESS_KEY"],
                             stack["TESSERA_ADMIN_SECRET_KEY"])


class Person:
    """A user of the console: e-mail, password, and a signed client of its
    keypair (to check what the console did through the API)."""

    def __init__(self, admin, gw, label, role="user"):
        self.gateway = gw
        name = f"{label}-{uuid.uuid4().hex[:6]}"
        r = admin.post("/admin/users", {"email": f"{name}@example.com", "username": name,
                                        "password": PASSWORD, "role": role,
                                        "full_name": label.capitalize()})
        assert r.status_code in (200, 201), r.text
        self.user_id = r.json()["id"]
        self.email = f"{name}@example.com"
        self.password = PASSWORD
        for old in admin.get("/admin/keypairs", params={"user": self.user_id}).json()["items"]:
            assert admin.delete(f"/admin/keypairs/{old['access_key']}").status_code in (200, 204)
        k = admin.post("/admin/keypairs", {"user_id": self.user_id})
        assert k.status_code in (200, 201), k.text
        self.api = bai_signer.Client(gw, k.json()["access_key"], k.json()["secret_key"])
        # a member of the default project, as an admin makes a new user
        projects = admin.get("/admin/projects", params={"limit": 1000}).json()["items"]
        default = next(p["id"] for p in projects if p["name"] == "default")
        r = admin.post(f"/admin/projects/{default}/members", {"user_ids": [self.user_id]})
        assert r.status_code in (200, 201, 204), r.text


@pytest.fixture(scope="session")
def alice(admin, stack):
    return Person(admin, stack["TESSERA_GATEWAY_URL"], "alice")


@pytest.fixture(scope="session")
def bob(admin, stack):
    return Person(admin, stack["TESSERA_GATEWAY_URL"], "bob")


@pytest.fixture(scope="session")
def demo_image(admin, stack):
    """The stack's busybox image, registered so that the launcher lists it."""
    ref = stack.get("TESSERA_DEMO_IMAGE")
    assert ref, "dev-up wrote no TESSERA_DEMO_IMAGE"
    r = admin.post("/admin/images", {"reference": ref})
    assert r.status_code in (200, 201), r.text
    return ref


@pytest.fixture(scope="session")
def downloads(tmp_path_factory):
    return str(tmp_path_factory.mktemp("downloads"))


def new_driver(downloads, width=1280, height=800):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver = _chrome_paths()
    if not browser or not os.path.exists(driver):
        pytest.fail("chromium or chromedriver is missing: run tools/deps.sh", pytrace=False)
    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              f"--window-size={width},{height}", "--lang=en-US", "--hide-scrollbars"):
        opts.add_argument(a)
    opts.add_experimental_option("prefs", {"download.default_directory": downloads,
                                           "download.prompt_for_download": False})
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(driver), options=opts)
    d.set_window_size(width, height)
    d.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
    d.implicitly_wait(0)
    return d


@pytest.fixture()
def browser(downloads):
    d = new_driver(downloads)
    yield d
    d.quit()


def shot(driver, name):
    """Save a screenshot of the page as <SHOT_DIR>/<name>.png."""
    os.makedirs(SHOT_DIR, exist_ok=True)
    time.sleep(0.3)  # let transitions settle
    driver.save_screenshot(os.path.join(SHOT_DIR, f"{name}.png"))


def console_errors(driver):
    """Severe console messages of the page (uncaught errors)."""
    try:
        return [m["message"] for m in driver.get_log("browser") if m.get("level") == "SEVERE"]
    except Exception:  # noqa: BLE001 - the log is optional
        return []


@pytest.fixture(scope="module")
def page(downloads, console_url, alice):
    """Alice's browser, logged in, for the whole test module."""
    from console_page import el, login

    d = new_driver(downloads)
    login(d, console_url, alice)
    el(d, "[data-nav=summary]")
    yield d
    d.quit()
