"""Backend.AI's Python client 24.09.14 (its `backend.ai` CLI and SDK,
unchanged) against a temporary Tessera stack: tests/compat_py/run.py calls
each command in API and in session mode and compares the outcome with
tests/compat_py/expected.txt (README.md beside it). This test fails when
run.py reports anything unexpected: a case listed `ok` that fails, one
listed as failing that works or fails another way, a case or a command of
the CLI missing from the list. The table is printed at the end either way."""
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRESS = re.compile(r"^compat-py: (api|session): .*: (ok|refused|crash) \(")


def test_python_client_as_expected(stack, compat_py_report):
    client = os.environ.get("BAI_PY_CLIENT") or os.path.join(
        HERE, "..", "..", "..", "shared", "clients", "backend.ai-python-24.09")
    if not os.path.isdir(os.path.join(client, "lib", "ai", "backend", "client")):
        pytest.skip(f"Backend.AI's Python client is not at {client}")
    env = dict(os.environ)
    env.update(stack)
    env["BAI_PY_CLIENT"] = client
    r = subprocess.run([sys.executable, os.path.join(HERE, "run.py")], cwd=HERE, env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900)
    compat_py_report.append(r.stdout)
    if r.returncode == 77:
        pytest.skip(r.stderr.strip())
    if r.returncode != 0:
        out = r.stdout
        cut = out.find("\nunexpected:\n")
        what = out[cut:] if cut >= 0 else out[-4000:]
        other = [ln for ln in r.stderr.splitlines() if not PROGRESS.match(ln)]
        pytest.fail(f"run.py exited {r.returncode}:{what}\n--- its other stderr (last lines) ---\n"
                    + "\n".join(other[-30:]), pytrace=False)
