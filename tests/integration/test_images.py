"""Images built here and pulled with the agent's code (issue 5, images).

The development stack pushes the busybox test image to its OCI registry and
names it in <state>/env as TESSERA_DEMO_IMAGE. These tests check that image
in the registry, pull it with the agent's image store (the `pull` mode of
build/tests/agent/test_image: services/agent/image.c and oci_client.c),
pull it again without fetching a blob (the registry's access log counts), and
check that the builder is reproducible and pushes nothing twice."""
import json
import os
import subprocess
import urllib.request

import pytest

from conftest import BIN_DIR, REPO

TOOL = os.path.join(REPO, "tools", "oci-image.py")
PULLER = os.path.join(os.path.dirname(BIN_DIR), "tests", "agent", "test_image")
ACCEPT = ", ".join([
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
])


def _get(url, accept=None):
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, r.headers, r.read()


def _blob_gets(stack):
    path = os.path.join(stack["TESSERA_LOG_DIR"], "oci-registry.log")
    with open(path, encoding="utf-8", errors="replace") as f:
        return sum(1 for line in f if '"GET /v2/' in line and "/blobs/sha256:" in line)


def _demo(stack):
    ref = stack.get("TESSERA_DEMO_IMAGE")
    if not ref:
        pytest.fail("dev-up wrote no TESSERA_DEMO_IMAGE (is busybox-static installed? tools/deps.sh)")
    return ref


def _pull(ref, cache, arch=None):
    if not os.path.exists(PULLER):
        pytest.skip(f"{PULLER} is not built (make)")
    cmd = [PULLER, "pull", ref, str(cache)] + ([arch] if arch else [])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    return p


def test_demo_image_is_in_the_registry(stack):
    ref = _demo(stack)
    host, rest = ref.split("/", 1)
    assert host == stack["TESSERA_OCI_REGISTRY"]
    repo, tag = rest.rsplit(":", 1)
    status, headers, body = _get(f"http://{host}/v2/{repo}/manifests/{tag}", ACCEPT)
    assert status == 200
    manifest = json.loads(body)
    assert manifest["mediaType"] == "application/vnd.oci.image.manifest.v1+json"
    assert len(manifest["layers"]) == 2
    _, _, cfg = _get(f"http://{host}/v2/{repo}/blobs/{manifest['config']['digest']}")
    config = json.loads(cfg)
    labels = config["config"]["Labels"]
    assert labels["ai.backend.service-ports"] == "echo:http:8080,tcpecho:tcp:9000"
    assert labels["ai.backend.runtime-path"] == "/bin/sh"
    assert config["os"] == "linux"
    assert len(config["rootfs"]["diff_ids"]) == 2


def test_pull_then_pull_again_from_the_cache(stack, tmp_path):
    ref = _demo(stack)
    cache = tmp_path / "cache"
    before = _blob_gets(stack)
    p = _pull(ref, cache)
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    assert info["digest"].startswith("sha256:")
    assert len(info["layers"]) == 2
    base = info["layers"][0]
    assert os.access(os.path.join(base, "bin", "busybox"), os.X_OK)
    assert os.readlink(os.path.join(base, "bin", "sh")) == "/bin/busybox"
    with open(os.path.join(base, "etc", "passwd"), encoding="utf-8") as f:
        assert "work:x:1000:1000:" in f.read()
    assert os.stat(os.path.join(base, "home", "work")).st_uid == 1000
    assert info["cmd"] == ["/bin/sh"]
    assert info["labels"]["ai.backend.service-ports"] == "echo:http:8080,tcpecho:tcp:9000"
    last = [line for line in p.stderr.splitlines() if line.startswith("progress ")][-1]
    done, total = last.split()[1].split("/")
    assert done == total and int(total) > 0
    assert _blob_gets(stack) - before == 3  # config + two layers

    before = _blob_gets(stack)
    p2 = _pull(ref, cache)
    assert p2.returncode == 0, p2.stderr
    assert json.loads(p2.stdout)["digest"] == info["digest"]
    assert _blob_gets(stack) == before


def test_missing_image_and_registry_down(stack, tmp_path):
    p = _pull(f"{stack['TESSERA_OCI_REGISTRY']}/tessera/no-such-image:latest", tmp_path / "c1")
    assert p.returncode == 1
    assert "image not found: " in p.stderr
    p = _pull("127.0.0.1:1/tessera/busybox:latest", tmp_path / "c2")
    assert p.returncode == 1
    assert "registry unreachable: 127.0.0.1:1: " in p.stderr
    assert p.stderr.count("retrying") == 2


def test_builder_is_reproducible_and_push_is_idempotent(stack, tmp_path):
    if not os.access("/bin/busybox", os.X_OK):
        pytest.skip("no /bin/busybox (busybox-static)")
    a = subprocess.run(["python3", TOOL, "busybox", str(tmp_path / "a")], capture_output=True, text=True,
                       check=True).stdout.strip()
    b = subprocess.run(["python3", TOOL, "busybox", str(tmp_path / "b")], capture_output=True, text=True,
                       check=True).stdout.strip()
    assert a == b
    ref = f"{stack['TESSERA_OCI_REGISTRY']}/tessera/busybox-copy:latest"
    out1 = subprocess.run(["python3", TOOL, "push", str(tmp_path / "a"), ref, "--insecure"],
                          capture_output=True, text=True, check=True).stdout
    out2 = subprocess.run(["python3", TOOL, "push", str(tmp_path / "a"), ref, "--insecure"],
                          capture_output=True, text=True, check=True).stdout
    assert "0 blob(s) uploaded" in out2, (out1, out2)
