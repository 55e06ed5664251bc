"""`tessera resource presets|check`, `tessera scaling-groups` and `tessera admin
resource-preset` (docs/cli.md), black-box against the stack, logged in as the
bootstrap superadmin (test_cli.py's fixtures)."""
import re

import pytest

from test_cli import admin, base_env, fails, gw, header_row, js, ok, run, unique  # noqa: F401


def test_help(bin_dir, tmp_path):
    env = base_env(tmp_path)
    top = ok(bin_dir, env, "--help")
    assert re.search(r"^  resource\s", top, re.M) and re.search(r"^  scaling-groups\s", top, re.M)
    assert "presets" in ok(bin_dir, env, "resource", "--help")
    assert ok(bin_dir, env, "resource", "check", "--help").startswith(
        "Usage: tessera resource check")
    assert "--resource-group" in ok(bin_dir, env, "resource", "check", "--help")
    assert ok(bin_dir, env, "scaling-groups", "--help").startswith("Usage: tessera scaling-groups")
    for verb in ("list", "get", "create", "update", "delete"):
        out = ok(bin_dir, env, "admin", "resource-preset", verb, "--help")
        assert out.startswith(f"Usage: tessera admin resource-preset {verb}")
    assert "--slots" in ok(bin_dir, env, "admin", "resource-preset", "create", "--help")


@pytest.mark.parametrize("args", [["resource"], ["resource", "nope"],
                                  ["resource", "presets", "extra"],
                                  ["resource", "check", "--bogus"],
                                  ["scaling-groups", "extra"]])
def test_usage_errors(bin_dir, tmp_path, args):
    r = run(bin_dir, base_env(tmp_path), *args)
    assert r.returncode == 2, (r.stdout, r.stderr)


def test_presets_and_check(bin_dir, admin):
    out = ok(bin_dir, admin, "resource", "presets")
    assert header_row(out) == ["NAME", "SLOTS", "SHARED", "MEMORY"]
    assert "cpu1-mem1g" in out and "gpu-half" in out
    body = js(bin_dir, admin, "resource", "presets")
    assert "gpu1" in {p["name"] for p in body["presets"]}
    out = ok(bin_dir, admin, "resource", "check", "--group", "default")
    assert "keypair" in out and "RESOURCE GROUP" in out and "ALLOCATABLE" in out
    c = js(bin_dir, admin, "resource", "check", "--resource-group", "default")
    assert list(c["scaling_groups"]) == ["default"]
    fails(bin_dir, admin, "resource", "check", "--resource-group", unique("none"), status=404)
    fails(bin_dir, admin, "resource", "check", "--group", unique("none"), status=404)
    assert "default" in {g["name"] for g in js(bin_dir, admin, "scaling-groups")["scaling_groups"]}
    assert "NAME" in ok(bin_dir, admin, "scaling-groups", "--group", "default")


def test_admin_preset_round_trip(bin_dir, admin):
    name = unique("cli-preset")
    p = js(bin_dir, admin, "admin", "resource-preset", "create", name, "--slots", "cpu=2,mem=2g",
           "--shared-memory", "64m")
    assert p["resource_slots"] == {"cpu": "2", "mem": str(2 << 30)}
    assert p["shared_memory"] == str(64 << 20)
    p = js(bin_dir, admin, "admin", "resource-preset", "update", name, "--slots", "cpu=1,mem=1g")
    assert p["resource_slots"] == {"cpu": "1", "mem": str(1 << 30)}
    assert name in ok(bin_dir, admin, "admin", "resource-preset", "list", "--limit", "1000")
    fails(bin_dir, admin, "admin", "resource-preset", "create", name, "--slots", "cpu=1",
          status=409)
    fails(bin_dir, admin, "admin", "resource-preset", "create", unique("p"), "--slots", "bogus=1",
          status=400)
    ok(bin_dir, admin, "admin", "resource-preset", "delete", name)
    fails(bin_dir, admin, "admin", "resource-preset", "get", name, status=404)
