"""deploy/dev/smoke.sh, which `make dev-up` runs: one session end to end with the
CLI (create, RUNNING, exec, destroy) on the stack."""
import os
import subprocess

from conftest import REPO


def test_smoke_runs_a_session_end_to_end(stack, bin_dir):
    env = dict(os.environ, TESSERA_STATE_DIR=stack["TESSERA_STATE_DIR"], TESSERA_BIN_DIR=bin_dir)
    r = subprocess.run(["sh", os.path.join(REPO, "deploy", "dev", "smoke.sh")], env=env,
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "a session ran end to end" in r.stdout
    assert "hello from" in r.stdout


def test_smoke_without_a_stack_says_so(tmp_path, bin_dir):
    env = dict(os.environ, TESSERA_STATE_DIR=str(tmp_path), TESSERA_BIN_DIR=bin_dir)
    r = subprocess.run(["sh", os.path.join(REPO, "deploy", "dev", "smoke.sh")], env=env,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "make dev-up" in r.stderr
