"""`make dev-down` leaves nothing behind, session containers included: a
kernel still running when the stack stops is destroyed (agent.destroy_on_stop),
with its processes, cgroups, runc state, mounts and its disk's loop device."""
import json
import os
import subprocess
import tempfile
import time
import uuid

import pytest
import requests

import svc_signer

from conftest import (BIN_DIR, DEV_DOWN, DEV_UP, _run_script, kernel_leftovers,
                      parse_env_file, parse_services_file, survivors)

TESTCTL = os.path.join(os.path.dirname(BIN_DIR), "tests", "tessera-agent-testctl")


def test_dev_down_destroys_running_kernels():
    if not os.path.exists(TESTCTL):
        pytest.skip(f"{TESTCTL} is not built (make)")
    state = tempfile.mkdtemp(prefix="tessera-devdown-")
    up = _run_script(DEV_UP, state, timeout=300)
    try:
        assert up.returncode == 0, up.stdout
        env = parse_env_file(os.path.join(state, "env"))
        agent_url = parse_services_file(os.path.join(state, "services"))["agent"][1]
        agent_id = svc_signer.call(env, "registry", "GET", agent_url + "/v1/agent", timeout=5).json()["agent_id"]
        kid = "k" + uuid.uuid4().hex[:20]
        cmd = {"session_id": "s-" + kid, "kernel_id": kid, "agent_id": agent_id,
               "session_type": 1, "image": env["TESSERA_DEMO_IMAGE"], "cluster_role": "main",
               "cluster_idx": 0, "cluster_size": 1, "access_key": "AKIATESTDEVDOWN00000",
               "slots": [{"name": "cpu", "amount": "1"}, {"name": "mem", "amount": "128m"}]}
        p = subprocess.run([TESTCTL, "publish", f"tessera.agent.cmd.{agent_id}", kid, "CreateKernel",
                            json.dumps(cmd)], env=dict(os.environ, KAFKA_BOOTSTRAP=env["KAFKA_BOOTSTRAP"]),
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        deadline = time.monotonic() + 60
        state_name = None
        while time.monotonic() < deadline:
            r = svc_signer.call(env, "registry", "GET", f"{agent_url}/v1/kernels/{kid}", timeout=5)
            if r.status_code == 200 and r.json().get("status") == "running":
                state_name = "RUNNING"
                break
            time.sleep(0.2)
        assert state_name == "RUNNING", r.text
        pids = {pid: None for pid, _ in parse_services_file(os.path.join(state, "services")).values()}
    finally:
        down = _run_script(DEV_DOWN, state, timeout=120)
    assert down.returncode == 0, down.stdout
    deadline = time.monotonic() + 10
    left = kernel_leftovers({kid})
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = kernel_leftovers({kid})
    assert not left, left
    assert not os.path.exists(os.path.join(state, "agent", "kernels", kid))
    # nothing left mounted under the state dir (the kernel's overlay and its
    # disk), and no loop device for the disk's image
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        assert not [ln for ln in f if f" {state}/" in ln]
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True, timeout=10).stdout
    assert state not in loops, loops
    assert not [x for x in survivors(state, {}) if x[0] in pids]
