"""suitekit.py: what the suites beside the integration tests (tests/security,
tests/faults) take from them: the integration conftest (its `stack` fixture
and helpers), loaded once under a name of its own, and the small busybox test
image those suites run their sessions from."""
import importlib.util
import os
import subprocess
import sys

IT_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(IT_DIR, "..", ".."))


def integration_conftest():
    """tests/integration/conftest.py as a module (loaded once)."""
    name = "tessera_integration_conftest"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, os.path.join(IT_DIR, "conftest.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def push_busybox_image(stack, out, repo, tag, marker, adds=(), labels=()):
    """Build the busybox test image into out (tools/oci-image.py busybox, with
    small minimum slots so that many kernels fit a 2-core machine, files
    `adds` as "SRC:DEST" and more labels as "KEY=VALUE"), push it to the
    stack's OCI registry as <registry>/<repo>:<tag>. Its reference;
    RuntimeError saying why not."""
    tool = os.path.join(REPO, "tools", "oci-image.py")
    cmd = [sys.executable, tool, "busybox", out, "--marker", marker]
    for a in adds:
        cmd += ["--add", a]
    cmd += ["--label", "ai.backend.resource.min.cpu=0.1",
            "--label", "ai.backend.resource.min.mem=32m",
            "--label", f"org.opencontainers.image.title={repo}"]
    for label in labels:
        cmd += ["--label", label]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"oci-image.py busybox failed: {r.stderr}")
    ref = f"{stack['TESSERA_OCI_REGISTRY']}/{repo}:{tag}"
    # a stack with TLS (TESSERA_DEV_TLS=on) serves its registry on https with
    # its own CA (Python's default context reads SSL_CERT_FILE)
    tls = stack.get("TESSERA_DEV_TLS") == "on"
    env = dict(os.environ, SSL_CERT_FILE=stack["TESSERA_TLS_CA_FILE"]) if tls else None
    r = subprocess.run([sys.executable, tool, "push", out, ref] + ([] if tls else ["--insecure"]),
                       capture_output=True, text=True, timeout=120, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"oci-image.py push failed: {r.stderr}")
    return ref
