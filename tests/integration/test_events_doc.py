"""docs/events.md lists every message of proto/tessera/v1 under its topic,
and the checker notices when it does not."""

import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "tools", "check-events-doc.py")
DOC = os.path.join(ROOT, "docs", "events.md")
PROTO_DIR = os.path.join(ROOT, "proto", "tessera", "v1")


def run_check(*args):
    return subprocess.run([sys.executable, CHECK, *args], capture_output=True, text=True,
                          timeout=60)


def test_doc_matches_protos():
    r = run_check()
    assert r.returncode == 0, r.stderr


def test_fails_when_doc_misses_a_message(tmp_path):
    text = open(DOC, encoding="utf-8").read()
    doctored, n = re.subn(r"^- `SessionPulling`.*\n", "", text, flags=re.M)
    assert n == 1
    bad = tmp_path / "events.md"
    bad.write_text(doctored, encoding="utf-8")
    r = run_check("--doc", str(bad))
    assert r.returncode == 1
    assert "SessionPulling" in r.stderr and "missing" in r.stderr


def test_fails_when_doc_lists_an_unknown_message(tmp_path):
    text = open(DOC, encoding="utf-8").read()
    doctored = text.replace("- `KernelStarted`", "- `KernelPaused`: not real.\n- `KernelStarted`")
    bad = tmp_path / "events.md"
    bad.write_text(doctored, encoding="utf-8")
    r = run_check("--doc", str(bad))
    assert r.returncode == 1
    assert "KernelPaused" in r.stderr


def test_fails_when_topic_differs(tmp_path):
    protos = tmp_path / "proto"
    shutil.copytree(PROTO_DIR, protos)
    p = protos / "audit.proto"
    p.write_text(p.read_text().replace("// topic: tessera.audit.v1", "// topic: tessera.audit.v2"))
    r = run_check("--proto-dir", str(protos))
    assert r.returncode == 1
    assert "tessera.audit.v2" in r.stderr and "ApiAccess" in r.stderr
