"""Big bodies both ways through tessera-wsproxy to an app inside a real
container (docs/wsproxy.md): busybox httpd in a busybox session serves a
64 MiB file and a CGI that counts the bytes it is sent; the download and a
32 MiB upload go through the proxy streamed, byte counts checked; destroying
the session in the middle of a slow download ends that download."""
import threading
import time
import uuid

import pytest
import requests

from conftest import wait_until
from test_apps import _running, start_when_listening
from test_sessions_api import admin, gw, image, image_registered, user  # noqa: F401

TAG = uuid.uuid4().hex[:6]
BIG_MIB = 64
UP_MIB = 32
BOOTSTRAP = ("mkdir -p /tmp/www/cgi-bin && "
             f"dd if=/dev/zero of=/tmp/www/big bs=1048576 count={BIG_MIB} 2>/dev/null && "
             "printf '#!/bin/sh\\necho Content-Type: text/plain\\necho\\nwc -c\\n' "
             "> /tmp/www/cgi-bin/count && chmod +x /tmp/www/cgi-bin/count && "
             "busybox httpd -p 8080 -h /tmp/www")


def _open_app(user, sname):  # noqa: F811
    """start-service for the image's echo app; (wsproxy base URL, app cookies)."""
    body = start_when_listening(user, sname)
    first = requests.get(body["url"], timeout=10, allow_redirects=False)
    cookies = {c.name: c.value for c in first.cookies if c.name.startswith("tessera_app_")}
    assert cookies, first.headers
    return body["wsproxy_addr"], cookies


@pytest.fixture(scope="module")
def app(user, image_registered):  # noqa: F811
    sname = f"stream-{TAG}"
    _running(user, image_registered, sname, bootstrap_script=BOOTSTRAP)
    base, cookies = _open_app(user, sname)
    yield base, cookies
    user.delete(f"/session/{sname}")


def test_download_streams_a_big_file(app):
    base, cookies = app
    wait_until(lambda: requests.head(base + "/big", cookies=cookies, timeout=10).status_code == 200,
               timeout=30, message="the big file to be there")
    got = 0
    with requests.get(base + "/big", cookies=cookies, stream=True, timeout=60) as r:
        assert r.status_code == 200
        assert int(r.headers["Content-Length"]) == BIG_MIB << 20
        for chunk in r.iter_content(1 << 20):
            assert chunk.count(0) == len(chunk)
            got += len(chunk)
    assert got == BIG_MIB << 20
    # a range of it, through the proxy
    r = requests.get(base + "/big", cookies=cookies, headers={"Range": "bytes=100-199"},
                     timeout=30)
    assert r.status_code == 206 and len(r.content) == 100


def test_upload_streams_a_big_body(app):
    base, cookies = app
    size = UP_MIB << 20

    class Body:  # read as it is sent (with a length: Content-Length, not chunked)
        def __init__(self):
            self.left = size

        def __len__(self):
            return self.left

        def read(self, n=-1):
            n = self.left if n is None or n < 0 else min(n, self.left)
            self.left -= n
            return b"x" * n
    r = requests.post(base + "/cgi-bin/count", data=Body(), cookies=cookies,
                      headers={"Content-Type": "application/octet-stream"}, timeout=120)
    assert r.status_code == 200, r.text[:200]
    assert r.text.strip() == str(size)


def test_destroy_mid_download_ends_it(user, image_registered):  # noqa: F811
    sname = f"stream2-{TAG}"
    _running(user, image_registered, sname, bootstrap_script=BOOTSTRAP)
    try:
        base, cookies = _open_app(user, sname)
        wait_until(lambda: requests.head(base + "/big", cookies=cookies,
                                         timeout=10).status_code == 200,
                   timeout=30, message="the big file to be there")
        state = {"got": 0, "ended": None, "error": None}
        started = threading.Event()

        def slow_reader():
            try:
                with requests.get(base + "/big", cookies=cookies, stream=True, timeout=30) as r:
                    for chunk in r.iter_content(64 << 10):
                        state["got"] += len(chunk)
                        started.set()
                        time.sleep(0.05)  # about 1.3 MB/s: the whole file would take ~50 s
            except requests.RequestException as e:
                state["error"] = repr(e)
            state["ended"] = time.monotonic()
        t = threading.Thread(target=slow_reader, daemon=True)
        t.start()
        assert started.wait(20), "the download did not start"
        t0 = time.monotonic()
        assert user.delete(f"/session/{sname}").status_code == 200
        t.join(30)
        assert state["ended"] is not None, "the download went on after the session ended"
        assert state["ended"] - t0 < 15, state
        assert state["got"] < BIG_MIB << 20, state
    finally:
        user.delete(f"/session/{sname}")
