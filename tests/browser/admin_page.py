"""admin_page.py: what the browser tests of the console's admin pages share:
a login by e-mail, the confirmation dialog, screenshots without toasts, form
fields, and a superadmin's browser for a module."""
from selenium.webdriver.common.by import By

from conftest import PASSWORD, new_driver, shot, wait_until
from console_page import click, el, login


class Login:
    """An e-mail and password to log in with (console_page.login)."""

    def __init__(self, email, password=PASSWORD):
        self.email, self.password = email, password


def confirm(d):
    click(d, "[data-test=confirm]")
    wait_until(lambda: not d.find_elements(By.CSS_SELECTOR, "[data-test=confirm]"), timeout=20,
               message="the confirmation dialog to close")


def clean_shot(d, name, top=False):
    """A screenshot without the toasts of earlier actions (top: of the page's
    top, the window scrolled up first)."""
    d.execute_script("document.querySelectorAll('.toast .btn').forEach(b => b.click())")
    wait_until(lambda: not d.find_elements(By.CSS_SELECTOR, ".toast"), timeout=5,
               message="the toasts to go")
    if top:
        d.execute_script("window.scrollTo(0, 0)")
    shot(d, name)


def typed(d, css, text):
    """Replace what the input css holds with text."""
    e = el(d, css)
    e.clear()
    e.send_keys(text)


def form_closes(d, form):
    wait_until(lambda: not d.find_elements(By.CSS_SELECTOR, f"[data-test={form}]"), timeout=15,
               message=f"the {form} to close")


def login_in_domain(d, console_url, email, domain):
    """Log in as a user of another domain than default (the login page's
    "Another domain" field)."""
    d.get(console_url)
    el(d, "#login-username").send_keys(email)
    el(d, "#login-password").send_keys(PASSWORD)
    click(d, ".login-domain summary")
    el(d, "#login-domain").send_keys(domain)
    click(d, "#login-submit")


def admin_driver(downloads, console_url, person):
    """A browser logged in as person (an administrator), once the Admin link
    shows: a module fixture's body (`yield from admin_driver(...)`)."""
    d = new_driver(downloads)
    try:
        login(d, console_url, person)
        el(d, "[data-nav=admin]")
        yield d
    finally:
        d.quit()
