"""A cluster session in the console (docs/sessions.md, "Cluster sessions";
docs/console.md): the launcher offers the cluster size and mode, and the
session's page lists its kernels, main1 and sub1, with their node."""
import os
import uuid

import pytest
from selenium.webdriver.common.by import By

import suitekit
from conftest import shot, wait_until
from console_page import choose, click, el, go, status_of, text_in

TAG = uuid.uuid4().hex[:6]
SESSION = f"cl-{TAG}"


@pytest.fixture(scope="module")
def small_image(admin, stack):
    """The busybox image with small minimum slots (two kernels fit beside the
    suite's other sessions)."""
    out = os.path.join(stack["TESSERA_STATE_DIR"], "console-cluster-image")
    ref = suitekit.push_busybox_image(stack, out, "tessera/console-cluster", TAG, "console-cluster")
    r = admin.post("/admin/images", {"reference": ref})
    assert r.status_code in (200, 201), r.text
    return ref


@pytest.fixture(scope="module")
def two_kernels(admin, alice):
    """Alice's keypair may run sessions of two kernels."""
    policy = f"cl2-{TAG}"
    r = admin.post("/admin/keypair-resource-policies", {"name": policy, "max_containers_per_session": 2})
    assert r.status_code in (200, 201), r.text
    r = admin.patch(f"/admin/keypairs/{alice.api.access_key}", {"resource_policy": policy})
    assert r.status_code == 200, r.text
    yield alice
    alice.api.delete(f"/session/{SESSION}")


def test_launch_a_cluster_session_and_see_its_kernels(page, console_url, two_kernels, small_image):
    alice = two_kernels
    go(page, console_url, "/sessions")
    click(page, "[data-test=launch]")
    choose(page, "#launch-image", small_image, what="the launcher to list the image")
    name = el(page, "#launch-name")
    name.clear()
    name.send_keys(SESSION)
    for css, value in (("#launch-cpu", "0.25"), ("#launch-mem", "64m"), ("#launch-cluster-size", "2")):
        f = el(page, css)
        f.clear()
        f.send_keys(value)
    assert el(page, "#launch-cluster-mode").is_enabled()
    text_in(page, "[data-test=launch-cluster-hint]", "2 kernels, main1, sub1")
    page.execute_script("document.querySelector('#launch-cluster-size').scrollIntoView({block: 'center'})")
    shot(page, "launcher-cluster")
    click(page, "[data-test=launch-submit]")
    wait_until(lambda: status_of(page, SESSION) == "RUNNING", timeout=90,
               message=f"session {SESSION} RUNNING in the list")
    info = alice.api.get(f"/session/{SESSION}").json()
    assert info["clusterSize"] == 2 and info["clusterMode"] == "single-node", info
    go(page, console_url, f"/sessions/{SESSION}")
    el(page, "[data-test=kernels]")
    text_in(page, "[data-test=cluster-mode]", "Single node cluster of 2 kernels")
    for k in info["kernels"]:
        row = el(page, f"[data-kernel=\"{k['name']}\"]")
        node = row.find_element(By.CSS_SELECTOR, "[data-test=kernel-node]").text
        assert node == k["agent"] and node, (k, node)
    assert [e.get_attribute("data-kernel") for e in page.find_elements(By.CSS_SELECTOR, "[data-kernel]")] == \
        ["main1", "sub1"]
    page.execute_script("document.querySelector('[data-test=kernels]').scrollIntoView({block: 'center'})")
    shot(page, "session-cluster")
    # the kernels reach each other by name
    r = alice.api.post(f"/session/{SESSION}?kernel=sub1", {"mode": "batch", "runId": "c1", "code": "",
                                                            "options": {"exec": "getent hosts main1 || "
                                                                                "grep main1 /etc/hosts"}},
                       timeout=90)
    assert r.status_code == 200 and "main1" in r.text, r.text
