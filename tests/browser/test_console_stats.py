"""The console's Statistics and Access log admin pages, in headless Chromium
against the dev stack:
- a session of Alice's burns CPU for a few seconds and is destroyed; a
  superadmin opens Statistics for this month and finds Alice with non-zero
  CPU-hours in the table and a bar of hers in the chart; the CSV download
  saves a file with her row, and the API's CSV that the button downloads
  answers it too;
- a domain admin of another domain sees no usage of Alice's (the API scopes
  it): "No usage in this period", and no row of hers by user;
- the Access log lists the superadmin's own recent requests, and the method
  and status filters narrow it; "Load more" pages on, newest first;
- both pages fit a 420 px window."""
import csv
import glob
import io
import os
import time
import uuid

import pytest
from selenium.webdriver.common.by import By

from admin_page import admin_driver, login_in_domain
from conftest import PASSWORD, Person, new_driver, shot, wait_until
from console_page import choose, click, el, go, text_in

TAG = uuid.uuid4().hex[:6]
BURN = ("sh -c 'e=$(( $(date +%s) + 6 )); while [ $(date +%s) -lt $e ]; do :; done'; echo burned")


def page_text(d, css):
    """The text of the element css, read in one go (the page may re-render it)."""
    return d.execute_script("const e = document.querySelector(arguments[0]); return e ? e.innerText : ''", css)


def usage_of(admin, user_id):
    items = admin.get("/usage", params={"group_by": "user"}).json()["items"]
    return next((i for i in items if i["user"] == user_id), None)


@pytest.fixture(scope="module")
def boss(admin, stack):
    return Person(admin, stack["TESSERA_GATEWAY_URL"], "statboss", role="superadmin")


@pytest.fixture(scope="module")
def boss_page(downloads, console_url, boss):
    yield from admin_driver(downloads, console_url, boss)


@pytest.fixture(scope="module")
def burned(admin, alice, demo_image):
    """A session of Alice's that burned about 6 CPU-seconds, then destroyed;
    its usage is stored (GET /usage shows it)."""
    name = f"burn-{TAG}"
    r = alice.api.post("/session", {"image": demo_image, "name": name, "maxWaitSeconds": 60,
                                    "config": {"resources": {"cpu": "1", "mem": "256m"}}}, timeout=90)
    assert r.status_code == 201 and r.json()["status"] == "RUNNING", r.text
    try:
        r = alice.api.post(f"/session/{name}", {"mode": "batch", "options": {"exec": BURN}}, timeout=120)
        assert r.status_code == 200, r.text
        # the agent samples every heartbeat (3 s): two more after the burn
        time.sleep(7)
    finally:
        alice.api.delete(f"/session/{name}")
    wait_until(lambda: (usage_of(admin, alice.user_id) or {}).get("cpu_seconds", 0) >= 1, timeout=60,
               message="Alice's burned CPU in GET /usage")
    return usage_of(admin, alice.user_id)


def test_the_statistics_page_shows_the_usage_of_a_finished_session(boss_page, console_url, alice, burned,
                                                                    downloads, admin):
    d = boss_page
    go(d, console_url, "/admin/stats")
    el(d, "a[data-admin-tab=stats][aria-current=page]")
    text_in(d, "[data-test=usage-period]", time.strftime("%Y-%m-01", time.gmtime()))
    # by project: the default project has the usage; then by user: Alice's row
    el(d, "tr[data-usage-row=default]")
    choose(d, "#stats-group", "user")
    row = el(d, f"tr[data-usage-row=\"{alice.email}\"]")
    cpu_h = float(row.find_element(By.CSS_SELECTOR, "[data-cpu-hours]").get_attribute("data-cpu-hours"))
    assert cpu_h > 0 and abs(cpu_h - burned["cpu_seconds"] / 3600) < 0.01, (cpu_h, burned)
    assert row.find_element(By.CSS_SELECTOR, "td.num").text.strip() != "0"  # sessions
    # the chart has a bar of Alice's on a day her session ran (the days from the
    # API, not the clock, which may have passed midnight since), in the legend too
    items = admin.get("/usage", params={"group_by": "user", "bucket": "day"}).json()["items"]
    ran = {x["day"] for i in items if i["user"] == alice.user_id for x in i["days"]}
    bars = d.find_elements(By.CSS_SELECTOR, f"[data-test=usage-chart] rect[data-bar-group=\"{alice.email}\"]")
    assert bars, "no bar of Alice's in the chart"
    assert ran & {b.get_attribute("data-bar-day") for b in bars}, (ran, bars)
    assert float(bars[-1].get_attribute("data-value")) > 0
    assert float(bars[-1].get_attribute("height")) >= 1
    text_in(d, "[data-test=usage-legend]", alice.email)
    shot(d, "admin-stats")
    # GPU-hours as the chart's metric: the page still shows the table (0 GPU-hours here)
    choose(d, "#stats-metric", "gpu")
    el(d, f"tr[data-usage-row=\"{alice.email}\"]")
    choose(d, "#stats-metric", "cpu")
    # the day her session last ran (Today, or Yesterday just after midnight), by hour:
    # a bar in each hour in which it used CPU, as the API has them
    last = max(ran)
    day_preset = "today" if last == time.strftime("%Y-%m-%d", time.gmtime()) else "yesterday"
    hours = admin.get("/usage", params={"group_by": "user", "bucket": "hour", "start": last, "end": last}).json()
    used = {h["hour"] for i in hours["items"] if i["user"] == alice.user_id for h in i["hours"]
            if h["cpu_seconds"] > 0}
    choose(d, "#stats-period", day_preset)
    el(d, "[data-test=usage-chart][data-bucket=hour]")
    text_in(d, "[data-test=usage-period]", f"Usage from {last} to {last}")
    bars = d.find_elements(By.CSS_SELECTOR, f"[data-test=usage-chart] rect[data-bar-group=\"{alice.email}\"]")
    assert used and {b.get_attribute("data-bar-hour") for b in bars} == used, (used, bars)
    shot(d, "admin-stats-hours")
    choose(d, "#stats-period", "this-month")
    el(d, "[data-test=usage-chart][data-bucket=day]")

    # CSV: the button saves a file with Alice's row ...
    before = set(glob.glob(os.path.join(downloads, "usage-user-*.csv")))
    click(d, "[data-test=usage-csv]")

    def saved():
        new = [f for f in glob.glob(os.path.join(downloads, "usage-user-*.csv")) if f not in before]
        return new[0] if new and os.path.getsize(new[0]) > 0 else None
    wait_until(saved, timeout=20, message="the CSV file to be saved")
    rows = list(csv.DictReader(open(saved(), newline="")))
    mine = [r for r in rows if r["user"] == alice.user_id]
    assert len(mine) == 1 and float(mine[0]["cpu_seconds"]) > 0, rows
    # ... and the API URL it downloads answers CSV with the same cookie
    href = el(d, "[data-test=usage-csv]").get_attribute("data-href")
    status, ctype, text = d.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/server/login-check').then(r => r.json())"
        ".then(j => fetch(arguments[0], {headers: {'X-CSRF-Token': j.csrf_token}}))"
        ".then(r => r.text().then(t => done([r.status, r.headers.get('content-type'), t])))"
        ".catch(e => done([0, '', String(e)]));", href)
    assert status == 200 and ctype.startswith("text/csv"), (status, ctype, text)
    got = [r for r in csv.DictReader(io.StringIO(text)) if r["user"] == alice.user_id]
    assert len(got) == 1 and float(got[0]["cpu_seconds"]) > 0, text

    # a period without usage says so
    choose(d, "#stats-period", "custom")
    for css, v in (("#stats-start", "2001-01-01"), ("#stats-end", "2001-01-31")):
        d.execute_script("const e = document.querySelector(arguments[0]);"
                         "Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set.call(e, arguments[1]);"
                         "e.dispatchEvent(new Event('change', {bubbles: true}));", css, v)
    el(d, "[data-test=usage-empty]")
    assert "No usage in this period" in page_text(d, "[data-test=usage-empty]")
    assert "2001-01-01 to 2001-01-31" in page_text(d, "[data-test=usage-period]")
    assert not d.find_elements(By.CSS_SELECTOR, "[data-test=usage-chart]")


def test_a_domain_admins_statistics_show_only_its_domain(downloads, console_url, admin, alice, burned):
    dom = f"sdom-{TAG}"
    r = admin.post("/admin/domains", {"name": dom})
    assert r.status_code in (200, 201), r.text
    email = f"sdadmin-{TAG}@example.com"
    r = admin.post("/admin/users", {"email": email, "username": f"sdadmin-{TAG}", "password": PASSWORD,
                                    "role": "admin", "domain_name": dom})
    assert r.status_code in (200, 201), r.text
    if not admin.get("/admin/keypairs", params={"user": r.json()["id"]}).json()["items"]:
        assert admin.post("/admin/keypairs", {"user_id": r.json()["id"]}).status_code in (200, 201)
    d = new_driver(downloads)
    try:
        login_in_domain(d, console_url, email, dom)
        el(d, "[data-nav=admin]")
        go(d, console_url, "/admin/stats")
        text_in(d, "[data-test=usage-period]", f"of the sessions of domain {dom}")
        for by in ("project", "user"):
            choose(d, "#stats-group", by)
            el(d, f"[data-test=usage-empty][data-group-by={by}]")
            assert "No usage in this period" in page_text(d, "[data-test=usage-empty]")
            assert not d.find_elements(By.CSS_SELECTOR, f"tr[data-usage-row=\"{alice.email}\"]")
        shot(d, "admin-stats-domain-admin")
    finally:
        d.quit()
    # the superadmin's view of the same period has Alice's usage
    assert usage_of(admin, alice.user_id)["cpu_seconds"] > 0


def test_the_access_log_lists_own_requests_and_filters_narrow_it(boss_page, console_url, boss):
    d = boss_page
    missing = f"/session/no-such-{TAG}"
    assert boss.api.get(missing).status_code == 404
    assert boss.api.delete(missing).status_code == 404
    assert boss.api.get("/usage").status_code == 200
    go(d, console_url, "/admin/access-log")
    el(d, "a[data-admin-tab=access-log][aria-current=page]")

    def listed(path, method):
        return d.find_elements(By.CSS_SELECTOR, f"tr[data-path=\"{path}\"][data-method={method}]")

    def refreshed_until(cond, what):
        def ok():
            if cond():
                return True
            d.find_element(By.XPATH, "//button[normalize-space()='Refresh']").click()
            time.sleep(1)
            return cond()
        wait_until(ok, timeout=30, message=what)

    # newest first, unfiltered: the DELETE (made after the GET) above the GET
    refreshed_until(lambda: listed(missing, "GET") and listed(missing, "DELETE"), "the boss's requests in the log")
    rows = d.find_elements(By.CSS_SELECTOR, "tr[data-access-row]")
    paths = [(r.get_attribute("data-method"), r.get_attribute("data-path")) for r in rows]
    assert paths.index(("DELETE", missing)) < paths.index(("GET", missing)), paths
    row = listed(missing, "GET")[0]
    assert row.get_attribute("data-status") == "404"
    assert row.find_element(By.CSS_SELECTOR, "[data-status-class]").get_attribute("data-status-class") == "http-4xx"
    ms = row.find_element(By.CSS_SELECTOR, "[data-latency-ms]")
    assert float(ms.text) >= 0 and float(ms.get_attribute("data-latency-ms")) >= 0
    assert boss.api.access_key in row.text
    text_in(d, "[data-test=access-count]", "newest first")
    shot(d, "admin-access-log")

    # path prefix + method: only the DELETE
    el(d, "#al-path_prefix").send_keys(missing)
    choose(d, "#al-method", "DELETE")
    click(d, "[data-test=access-apply]")
    wait_until(lambda: not listed(missing, "GET") and listed(missing, "DELETE"), timeout=20,
               message="the method filter to leave the DELETE only")
    methods = {r.get_attribute("data-method") for r in d.find_elements(By.CSS_SELECTOR, "tr[data-access-row]")}
    assert methods == {"DELETE"}, methods
    # status: 200 under that prefix matches nothing; 404 with any method both
    choose(d, "#al-method", "")
    el(d, "#al-status").send_keys("200")
    click(d, "[data-test=access-apply]")
    text_in(d, "[data-test=access-empty]", "No requests match")
    st = el(d, "#al-status")
    st.clear()
    st.send_keys("404")
    click(d, "[data-test=access-apply]")
    wait_until(lambda: listed(missing, "GET") and listed(missing, "DELETE"), timeout=20,
               message="both 404s")
    assert {r.get_attribute("data-status") for r in d.find_elements(By.CSS_SELECTOR, "tr[data-access-row]")} == {"404"}
    # a status the API refuses: its message, not a blank page
    st.clear()
    st.send_keys("99")
    click(d, "[data-test=access-apply]")
    el(d, ".page [role=alert]")
    click(d, "[data-test=access-reset]")
    el(d, "tr[data-access-row]")


def test_the_access_log_pages_with_load_more(boss_page, console_url, boss):
    d = boss_page
    prefix = f"/session/page-{TAG}-"
    for i in range(57):
        assert boss.api.get(f"{prefix}{i:02d}").status_code == 404
    go(d, console_url, "/admin/access-log")
    el(d, "#al-path_prefix").send_keys(prefix)
    click(d, "[data-test=access-apply]")

    def rows():
        return d.execute_script("return [...document.querySelectorAll('tr[data-access-row]')]"
                                ".map(r => [r.dataset.accessRow, r.dataset.path])")

    def first_page():
        if len(rows()) == 50 and "50 of 57" in (page_text(d, "[data-test=access-count]") or ""):
            return True
        click(d, "[data-test=access-apply]")  # the log lags the requests a little
        time.sleep(1)
        return False
    wait_until(first_page, timeout=30, message="the first page of 50 of 57")
    # newest first: the last request on top
    assert rows()[0][1] == f"{prefix}56", rows()[:3]
    click(d, "[data-test=access-more]")
    wait_until(lambda: len(rows()) == 57, timeout=20, message="all 57 after Load more")
    got = rows()
    assert len({r[0] for r in got}) == 57  # no record twice
    assert [r[1] for r in got] == [f"{prefix}{i:02d}" for i in range(56, -1, -1)]
    assert not d.find_elements(By.CSS_SELECTOR, "[data-test=access-more]")
    assert "57 of 57" in page_text(d, "[data-test=access-count]")


def test_both_pages_fit_a_narrow_window(boss_page, console_url, burned):
    """At 420 px the page does not scroll sideways (the tables scroll in
    their own box, the chart shrinks)."""
    d = boss_page
    d.set_window_size(420, 800)
    try:
        for route, ready in (("/admin/stats", "[data-test=usage-chart] rect"),
                             ("/admin/access-log", "tr[data-access-row]")):
            go(d, console_url, route)
            el(d, ready, visible=False)
            wide = d.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
            assert wide[0] <= wide[1] + 1, (route, wide)
            svg = d.find_elements(By.CSS_SELECTOR, "[data-test=usage-chart] svg")
            if svg:
                assert svg[0].size["width"] <= 420, svg[0].size
        go(d, console_url, "/admin/stats")
        el(d, "[data-test=usage-chart] rect", visible=False)
        shot(d, "admin-stats-narrow")
    finally:
        d.set_window_size(1280, 800)
