"""Backend.AI's JavaScript SDK (npm backend.ai-client 21.3.1) against a
temporary Tessera stack: tests/compat/run.mjs calls each public method and
compares the outcome with tests/compat/expected.txt (README.md beside it).
This test fails when run.mjs reports anything unexpected: a method listed
`ok` that fails, one listed `not-served` that works, or a method missing
from the list. The table is printed at the end of the report either way."""
import os
import re
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRESS = re.compile(r"^compat: \S+: (ok|fail)\b")


def test_sdk_methods_as_expected(stack, compat_report):
    node = shutil.which("node")
    if not node:
        pytest.fail("node is missing: run tools/deps.sh", pytrace=False)
    if not os.path.isfile(os.path.join(HERE, "node_modules", "backend.ai-client", "package.json")):
        pytest.fail("tests/compat/node_modules is missing: run make compat (npm ci)", pytrace=False)
    env = dict(os.environ)
    env.update(stack)
    r = subprocess.run([node, os.path.join(HERE, "run.mjs")], cwd=HERE, env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900)
    compat_report.append(r.stdout)
    if r.returncode != 0:
        # the table follows at the end of the report; here what went wrong
        out = r.stdout
        cut = out.find("\nunexpected:\n")
        what = out[cut:] if cut >= 0 else out[-4000:]
        # stderr: one progress line per method (the table has them) and what
        # the SDK itself printed; the latter only
        sdk = [ln for ln in r.stderr.splitlines() if not PROGRESS.match(ln)]
        pytest.fail(f"run.mjs exited {r.returncode}:{what}\n--- its other stderr (last lines) ---\n"
                    + "\n".join(sdk[-30:]), pytrace=False)
