"""deploy/systemd: the units `make install` ships, checked with systemd's own
parser (systemd-analyze verify) after the same @BINDIR@ substitution.

What `systemd-analyze verify` (systemd 252, Debian 12) does and does not check,
found out on these machines: it parses every directive and prints "Unknown key
...", "Unknown section ...", "Failed to parse ..., ignoring" as warnings while
still exiting 0, so the test reads its output; it fails (exit 1) when ExecStart=
is not executable, hence the real build/bin. It does not resolve User=tessera
(no such user is needed here) and does not look at the --config path. It needs
no running systemd (works in a container, as root or not).
"""
import os
import re
import shutil
import subprocess

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
UNIT_SRC = os.path.join(REPO, "deploy", "systemd")
BIN_DIR = os.path.abspath(os.environ.get("TESSERA_BIN_DIR") or os.path.join(REPO, "build", "bin"))
SERVICES = ["gateway", "auth", "registry", "scheduler", "agent", "vfolder", "wsproxy"]
UNITS = [f"tessera-{s}.service" for s in SERVICES] + ["tessera.target"]

# Lines of `systemd-analyze verify` that mean a unit is wrong.
PROBLEM = re.compile(r"Unknown key|Unknown section|Unknown lvalue|Failed to parse|[Ii]gnoring|"
                     r"not executable|bad unit file|Refusing|[Ii]nvalid|deprecated|Missing")


def parse_unit(path):
    """A unit file as {section: [(key, value), ...]} (keys may repeat)."""
    sections = {}
    current = None
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("[") and line.endswith("]"):
                current = sections.setdefault(line[1:-1], [])
                continue
            key, sep, value = line.partition("=")
            assert sep and current is not None, f"{path}: bad line {raw!r}"
            current.append((key.strip(), value.strip()))
    return sections


def last(sections, section, key, default=None):
    values = [v for k, v in sections.get(section, []) if k == key]
    return values[-1] if values else default


def all_values(sections, section, key):
    out = []
    for k, v in sections.get(section, []):
        if k == key:
            out.extend(v.split())
    return out


def install_units(dest, bin_dir):
    """Copy the units to dest with @BINDIR@ replaced, as `make install` does."""
    paths = []
    for name in UNITS:
        with open(os.path.join(UNIT_SRC, name), encoding="utf-8") as f:
            text = f.read().replace("@BINDIR@", bin_dir)
        path = os.path.join(dest, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        paths.append(path)
    return paths


def verify(paths):
    """Run systemd-analyze verify; return (exit code, output lines, problem lines
    about our units)."""
    exe = shutil.which("systemd-analyze")
    assert exe, "systemd-analyze is missing (Debian package systemd: tools/deps.sh)"
    p = subprocess.run([exe, "verify", *paths], capture_output=True, text=True, timeout=120,
                       cwd=os.path.dirname(paths[0]))
    lines = [l for l in (p.stdout + p.stderr).splitlines() if l.strip()]
    ours = [os.path.basename(x) for x in paths]
    problems = [l for l in lines if PROBLEM.search(l) and any(u in l for u in ours)]
    return p.returncode, lines, problems


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    if not os.path.isdir(BIN_DIR):
        pytest.skip(f"{BIN_DIR} does not exist: build first (make); verify needs the binaries")
    missing = [s for s in SERVICES if not os.access(os.path.join(BIN_DIR, f"tessera-{s}"), os.X_OK)]
    assert not missing, f"binaries missing in {BIN_DIR}: {missing}"
    dest = tmp_path_factory.mktemp("units")
    return install_units(str(dest), BIN_DIR)


def test_every_unit_is_there():
    present = sorted(f for f in os.listdir(UNIT_SRC) if f.startswith("tessera"))
    assert present == sorted(UNITS)


def test_systemd_analyze_verify_is_clean(installed):
    rc, lines, problems = verify(installed)
    assert rc == 0, "\n".join(lines)
    assert problems == [], "\n".join(lines)
    for path in installed:
        with open(path, encoding="utf-8") as f:
            assert "@BINDIR@" not in f.read()


def test_a_misspelled_directive_is_caught(installed, tmp_path):
    """The check above can fail: a doctored unit makes verify complain."""
    with open(installed[1], encoding="utf-8") as f:  # tessera-auth.service
        text = f.read()
    assert "\nRestart=on-failure\n" in text
    bad = tmp_path / os.path.basename(installed[1])
    bad.write_text(text.replace("\nRestart=on-failure\n", "\nRestrat=on-failure\n"))
    rc, lines, problems = verify([str(bad)])
    assert any("Unknown key" in l and "Restrat" in l for l in problems), "\n".join(lines)

    # A misspelled value and a missing binary are caught too.
    bad.write_text(text.replace("\nType=notify\n", "\nType=notfy\n"))
    assert verify([str(bad)])[2], "Type=notfy not reported"
    bad.write_text(text.replace(BIN_DIR + "/tessera-auth", "/nonexistent/tessera-auth"))
    rc, lines, _ = verify([str(bad)])
    assert rc != 0, "\n".join(lines)


@pytest.mark.parametrize("svc", SERVICES)
def test_service_unit_contract(svc):
    u = parse_unit(os.path.join(UNIT_SRC, f"tessera-{svc}.service"))
    s = "Service"
    assert last(u, s, "Type") == "notify"
    assert last(u, s, "ExecStart") == f"@BINDIR@/tessera-{svc} --config /etc/tessera/{svc}.conf"
    assert last(u, s, "ExecReload") == "/bin/kill -HUP $MAINPID"
    assert last(u, s, "Restart") == "on-failure"
    assert last(u, s, "RestartSec") == "2"
    assert last(u, s, "TimeoutStopSec") == "30"
    assert last(u, s, "KillSignal") == "SIGTERM"
    assert "network-online.target" in all_values(u, "Unit", "After")
    assert "network-online.target" in all_values(u, "Unit", "Wants")
    # Local databases are soft dependencies: they may run on other hosts.
    assert not all_values(u, "Unit", "Requires"), "use Wants=/After=, not Requires="
    for dep in all_values(u, "Unit", "Wants"):
        assert dep in all_values(u, "Unit", "After"), f"Wants={dep} without After={dep}"
    assert "tessera.target" in all_values(u, "Install", "WantedBy")
    assert "tessera.target" in all_values(u, "Unit", "PartOf")


@pytest.mark.parametrize("svc,deps", [
    ("auth", {"postgresql.service"}),
    ("registry", {"postgresql.service", "redis-server.service"}),
    ("scheduler", {"redis-server.service"}),
    ("vfolder", {"postgresql.service"}),
    ("wsproxy", {"redis-server.service"}),
    ("gateway", {"redis-server.service"}),
    ("agent", set()),
])
def test_local_dependencies(svc, deps):
    u = parse_unit(os.path.join(UNIT_SRC, f"tessera-{svc}.service"))
    wanted = set(all_values(u, "Unit", "Wants")) - {"network-online.target"}
    assert wanted == deps


def runs_as_root(u):
    user = last(u, "Service", "User", "root")
    dynamic = last(u, "Service", "DynamicUser", "no") in ("yes", "true", "1", "on")
    return user in ("root", "0") and not dynamic


def test_only_the_agent_runs_as_root():
    root = [s for s in SERVICES
            if runs_as_root(parse_unit(os.path.join(UNIT_SRC, f"tessera-{s}.service")))]
    assert root == ["agent"]


@pytest.mark.parametrize("svc", [s for s in SERVICES if s != "agent"])
def test_unprivileged_services_are_sandboxed(svc):
    u = parse_unit(os.path.join(UNIT_SRC, f"tessera-{svc}.service"))
    s = "Service"
    assert last(u, s, "CapabilityBoundingSet") == ""
    expect = {
        "NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
        "PrivateTmp": "yes", "ProtectKernelTunables": "yes", "ProtectKernelModules": "yes",
        "ProtectControlGroups": "yes", "LockPersonality": "yes", "MemoryDenyWriteExecute": "yes",
        "RestrictRealtime": "yes", "SystemCallArchitectures": "native",
    }
    for key, value in expect.items():
        assert last(u, s, key) == value, key
    assert sorted(all_values(u, s, "RestrictAddressFamilies")) == ["AF_INET", "AF_INET6", "AF_UNIX"]


def test_agent_unit_delegates_cgroups():
    u = parse_unit(os.path.join(UNIT_SRC, "tessera-agent.service"))
    assert last(u, "Service", "Delegate") == "yes"
    # Restrictions that runc and the containers would inherit, or that would hide
    # the agent's mounts from the host, are absent.
    for key in ("NoNewPrivileges", "ProtectSystem", "PrivateTmp", "SystemCallFilter",
                "MemoryDenyWriteExecute", "ProtectControlGroups", "RestrictNamespaces"):
        assert last(u, "Service", key) is None, key


def test_security_exposure_of_unprivileged_services(installed):
    """systemd's own scoring (offline): the sandboxed services score OK."""
    exe = shutil.which("systemd-analyze")
    for path in installed:
        name = os.path.basename(path)
        if not name.endswith(".service") or name == "tessera-agent.service":
            continue
        p = subprocess.run([exe, "security", "--offline=true", "--no-pager", path],
                           capture_output=True, text=True, timeout=120, cwd=os.path.dirname(path))
        m = re.search(r"Overall exposure level for \S+: ([0-9.]+)", p.stdout + p.stderr)
        assert m, p.stdout + p.stderr
        assert float(m.group(1)) <= 2.5, f"{name}: exposure {m.group(1)}\n{p.stdout}"
