"""Jupyter from the console: a session of the Jupyter image (deploy/images/
jupyter.sh, built by `make images`) started from the launcher, its jupyter
app opened with one click in a new tab through tessera-wsproxy, a notebook
made there and a cell run on its kernel, the answer read off the page."""
import os
import subprocess
import sys
import uuid

import pytest
from conftest import REPO, new_driver, shot, wait_until
from console_page import choose, click, el, go, login, status_of

IMAGE_DIR = os.path.join(REPO, "build", "images", "jupyter")
NAME = f"nb-{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="module")
def jupyter_image(stack, admin):
    if not os.path.isfile(os.path.join(IMAGE_DIR, "index.json")):
        pytest.fail(f"{IMAGE_DIR} is missing: `make browser` builds it (make images)", pytrace=False)
    ref = f"{stack['TESSERA_OCI_REGISTRY']}/tessera/jupyter:browser"
    r = subprocess.run([sys.executable, os.path.join(REPO, "tools", "oci-image.py"), "push",
                        IMAGE_DIR, ref, "--insecure"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    r = admin.post("/admin/images", {"reference": ref})
    assert r.status_code in (200, 201), r.text
    return ref


def test_open_jupyter_and_run_a_cell(downloads, console_url, alice, jupyter_image):
    d = new_driver(downloads)
    try:
        login(d, console_url, alice)
        el(d, "[data-nav=summary]")
        go(d, console_url, "/sessions")
        click(d, "[data-test=launch]")
        choose(d, "#launch-image", jupyter_image, what="the launcher to list the Jupyter image")
        name = el(d, "#launch-name")
        name.clear()
        name.send_keys(NAME)
        mem = el(d, "#launch-mem")
        mem.clear()
        mem.send_keys("1g")
        click(d, "[data-test=launch-submit]")
        wait_until(lambda: status_of(d, NAME) == "RUNNING", timeout=180,
                   message=f"session {NAME} RUNNING (the image is pulled first)")
        go(d, console_url, f"/sessions/{NAME}")
        before = set(d.window_handles)
        click(d, "[data-app=jupyter]")
        wait_until(lambda: len(set(d.window_handles) - before) == 1, timeout=60,
                   message="Jupyter to open in a new tab")
        d.switch_to.window((set(d.window_handles) - before).pop())
        wait_until(lambda: "/tree" in d.current_url and d.execute_script(
            "return !!(window.Jupyter && document.querySelector('#notebook_list'))"), timeout=60,
            message="Jupyter's tree page through the proxy")
        shot(d, "jupyter-tree")
        path = d.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "const x = (document.cookie.match(/_xsrf=([^;]+)/) || [])[1] || '';"
            "fetch('/api/contents', {method: 'POST', headers: {'X-XSRFToken': decodeURIComponent(x),"
            " 'Content-Type': 'application/json'}, body: JSON.stringify({type: 'notebook'})})"
            ".then(r => r.json()).then(j => done(j.path)).catch(e => done('error: ' + e));")
        assert path and not path.startswith("error"), path
        d.get(d.current_url.split("/tree")[0] + "/notebooks/" + path)
        wait_until(lambda: d.execute_script(
            "return !!(window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel &&"
            " Jupyter.notebook.kernel.is_connected())"), timeout=90,
            message="the notebook's kernel to connect")
        d.execute_script("const c = Jupyter.notebook.get_cell(0); c.set_text('print(6*7)');"
                         "Jupyter.notebook.execute_cell();")
        wait_until(lambda: "42" in d.execute_script(
            "const o = document.querySelector('.output_area pre'); return o ? o.textContent : ''"),
            timeout=60, message="the cell's output 42")
        shot(d, "jupyter-notebook")
    finally:
        d.quit()
        alice.api.delete(f"/session/{NAME}")
