"""The console's Admin · Information page, in headless Chromium against the
dev stack: a superadmin sees every service (the gateway, the upstreams, the
scheduler, the agent) ready with the release's version and address, and the
dependencies (PostgreSQL's version as the server says it, Redis's, the bus,
the OCI registry); a service that stops answering (SIGSTOP) is shown in red
with its reason on the next refresh, the others still ready, and ready again
once it runs. A domain admin, whom GET /admin/status refuses, gets the
gateway's own checks and the reason, never a blank page."""
import os
import signal
import subprocess

import pytest
from selenium.webdriver.common.by import By

from conftest import Person, new_driver, shot, wait_until
from console_page import click, el, go, login

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
with open(os.path.join(REPO, "VERSION"), encoding="utf-8") as f:
    VERSION = f.read().strip()
SERVICES = ("gateway", "auth", "registry", "vfolder", "wsproxy", "scheduler")


@pytest.fixture(scope="module")
def boss_page(downloads, console_url, admin, stack):
    boss = Person(admin, stack["TESSERA_GATEWAY_URL"], "infoboss", role="superadmin")
    d = new_driver(downloads, height=1000)
    login(d, console_url, boss)
    el(d, "[data-nav=admin]")
    yield d
    d.quit()


def _pid(stack, name):
    with open(os.path.join(stack["TESSERA_STATE_DIR"], "services"), encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] == name:
                return int(parts[1])
    raise AssertionError(f"{name} is not in the stack's services file")


def _state(d, name):
    rows = d.find_elements(By.CSS_SELECTOR, f"tr[data-service=\"{name}\"]")
    return rows[0].get_attribute("data-state") if rows else None


def test_every_service_and_dependency_is_shown(boss_page, console_url, stack, admin):
    d = boss_page
    go(d, console_url, "/admin/info")
    # ready, the agent registered: everything ready (refresh until then)
    def all_ready():
        if el(d, "[data-test=platform-status]").get_attribute("data-status") == "ok" and \
                d.find_elements(By.CSS_SELECTOR, "tr[data-kind=agent][data-state=ready]"):
            return True
        click(d, ".page-head .btn")
        return False
    wait_until(all_ready, timeout=40, interval=1, message="every service ready on the page")
    status = admin.get("/admin/status").json()
    for name in SERVICES:
        assert _state(d, name) == "ready", name
        assert el(d, f"[data-version=\"{name}\"]").text == VERSION
        want = next(s["address"] for s in status["services"] if s["service"] == name)
        row = el(d, f"tr[data-service=\"{name}\"]")
        assert want in row.text, (want, row.text)
    pg = subprocess.run(["psql", stack["TESSERA_PG_DSN"], "-XAtc", "SHOW server_version"],
                        capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    assert el(d, "[data-dep-version=postgresql]").text == pg
    assert el(d, "[data-dep-version=redis]").text == status["dependencies"]["redis"]["version"]
    for dep in ("postgresql", "redis", "kafka", "oci-registry"):
        assert el(d, f"tr[data-dep=\"{dep}\"] [data-health]").get_attribute("data-health") == "ok", dep
    d.execute_script("window.scrollTo(0, 0)")
    shot(d, "admin-info")


def test_an_unreachable_service_is_red_with_its_reason(boss_page, console_url, stack):
    d = boss_page
    go(d, console_url, "/admin/info")
    el(d, "tr[data-service=wsproxy]")
    pid = _pid(stack, "wsproxy")
    os.kill(pid, signal.SIGSTOP)
    try:
        def shown():
            if _state(d, "wsproxy") == "unreachable":
                return True
            click(d, ".page-head .btn")
            return False
        wait_until(shown, timeout=30, interval=3, message="wsproxy unreachable on the page")
        row = el(d, "tr[data-service=wsproxy]")
        reason = row.find_element(By.CSS_SELECTOR, "[data-test=reason]").text
        assert reason.startswith("unreachable: ") and "time" in reason, reason
        color = d.execute_script("return getComputedStyle(arguments[0]).color", row)
        assert color.startswith("rgb(180, 35, 24"), color  # --danger
        for name in ("auth", "registry", "scheduler"):
            assert _state(d, name) == "ready", name
        assert el(d, "[data-test=platform-status]").get_attribute("data-status") == "degraded"
        shot(d, "admin-info-unreachable")
    finally:
        os.kill(pid, signal.SIGCONT)

    def back():
        if _state(d, "wsproxy") == "ready":
            return True
        click(d, ".page-head .btn")
        return False
    wait_until(back, timeout=30, interval=1, message="wsproxy ready again on the page")


def test_a_domain_admin_gets_the_gateway_checks_and_the_reason(downloads, console_url, admin, stack):
    da = Person(admin, stack["TESSERA_GATEWAY_URL"], "infoda", role="admin")
    d = new_driver(downloads)
    try:
        login(d, console_url, da)
        go(d, console_url, "/admin/info")
        refused = el(d, "[data-test=status-refused]").text
        assert "superadmin" in refused, refused
        el(d, "tr[data-check=auth] [data-health]")
        assert not d.find_elements(By.CSS_SELECTOR, "tr[data-service]")
        assert el(d, "[data-version=gateway-root]").text == VERSION
    finally:
        d.quit()
