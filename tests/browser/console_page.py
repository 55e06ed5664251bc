"""console_page.py: what the browser tests do on the console's pages:
wait for an element, click, read text, pick from a <select>, navigate by
hash route, log in, read a session's status from the list."""
import time

import pytest
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from conftest import console_errors, wait_until


def el(d, css, timeout=20, visible=True):
    cond = EC.visibility_of_element_located if visible else EC.presence_of_element_located
    try:
        return WebDriverWait(d, timeout).until(cond((By.CSS_SELECTOR, css)))
    except TimeoutException:
        pytest.fail(f"no {css} on {d.current_url} within {timeout} s; page text: "
                    f"{d.find_element(By.TAG_NAME, 'body').text[:500]!r}; "
                    f"errors: {console_errors(d)}", pytrace=False)


def click(d, css, timeout=20):
    """Click css once it is clickable. An element the page re-rendered
    between finding and clicking (a list filtered as one types) is found
    again, until timeout."""
    deadline = time.monotonic() + timeout
    while True:
        e = WebDriverWait(d, max(1, deadline - time.monotonic())).until(
            EC.element_to_be_clickable((By.CSS_SELECTOR, css)))
        try:
            d.execute_script("arguments[0].scrollIntoView({block: 'center'})", e)
            e.click()
            return e
        except StaleElementReferenceException:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.1)


def text_in(d, css, text, timeout=30):
    def seen(_):
        return any(text in e.text for e in d.find_elements(By.CSS_SELECTOR, css))
    try:
        WebDriverWait(d, timeout).until(seen)
    except TimeoutException:
        pytest.fail(f"{text!r} not in {css} on {d.current_url} within {timeout} s; page text: "
                    f"{d.find_element(By.TAG_NAME, 'body').text[:800]!r}", pytrace=False)


def go(d, console_url, route):
    d.get(console_url + "#" + route)


def login(d, console_url, person, password=None):
    d.get(console_url)
    el(d, "#login-username").send_keys(person.email)
    el(d, "#login-password").send_keys(password or person.password)
    click(d, "#login-submit")


def choose(d, css, value, timeout=30, what=None):
    """Select value in the <select> css once it is enabled and offers it (the
    element may be replaced while its options load)."""
    def ready():
        return d.execute_script(
            "const s = document.querySelector(arguments[0]);"
            "if (!s || s.tagName !== 'SELECT' || s.disabled) return false;"
            "if (![...s.options].some(o => o.value === arguments[1])) return false;"
            "s.value = arguments[1];"
            "s.dispatchEvent(new Event('change', {bubbles: true}));"
            "return s.value === arguments[1];", css, value)
    wait_until(ready, timeout=timeout, message=what or f"{css} to offer {value}")


def status_of(d, name):
    """The status the sessions list shows for session name (or None)."""
    return d.execute_script(
        "const r = document.querySelector(`[data-session=\"${arguments[0]}\"]`);"
        "if (!r) return null;"
        "const s = r.hasAttribute('data-status') ? r : r.querySelector('[data-status]');"
        "return s ? (s.getAttribute('data-status') || s.textContent).trim() : null;", name)
