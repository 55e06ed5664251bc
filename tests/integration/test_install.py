"""`make install` puts binaries, systemd units and example configs in place."""
import os
import subprocess

from conftest import REPO

SERVICES = ["gateway", "auth", "registry", "scheduler", "agent", "vfolder", "wsproxy"]


def test_make_install_into_destdir(bin_dir, tmp_path):
    build = os.path.dirname(bin_dir)
    r = subprocess.run(["make", "--no-print-directory", "-C", REPO, f"BUILD={build}", "install",
                        f"DESTDIR={tmp_path}", "PREFIX=/usr"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    for svc in SERVICES + ["devbus"]:
        exe = tmp_path / "usr/bin" / f"tessera-{svc}"
        assert exe.is_file() and os.access(exe, os.X_OK), exe
    assert os.access(tmp_path / "usr/bin/tessera", os.X_OK)
    # tessera-term next to tessera-agent, where agent.term_path's default looks
    term = tmp_path / "usr/bin/tessera-term"
    assert term.is_file() and os.access(term, os.X_OK), term
    assert b"ELF" in term.read_bytes()[:4]
    # tessera-portmap (the CNI port plugin) there too, where agent.cni_portmap's default looks
    portmap = tmp_path / "usr/bin/tessera-portmap"
    assert portmap.is_file() and os.access(portmap, os.X_OK), portmap
    assert b"ELF" in portmap.read_bytes()[:4]
    # tessera-sup, the kernel supervisor the agent starts from there
    sup = tmp_path / "usr/bin/tessera-sup"
    assert sup.is_file() and os.access(sup, os.X_OK), sup
    # and tessera-bridge, where agent.cni_bridge's default looks
    bridge = tmp_path / "usr/bin/tessera-bridge"
    assert bridge.is_file() and os.access(bridge, os.X_OK), bridge
    assert b"ELF" in bridge.read_bytes()[:4]
    agent_conf = (tmp_path / "etc/tessera/agent.conf").read_text()
    assert "term_path = \"\"" in agent_conf  # agent.term_path, at its default
    assert "cni_portmap = \"tessera-portmap\"" in agent_conf
    assert "cni_bridge = \"tessera-bridge\"" in agent_conf
    # every service's key and the trust file, as an operator makes them (docs/operations.md)
    keys = tmp_path / "keys"
    keys.mkdir()
    with open(keys / "trusted", "w") as trusted:
        for svc in SERVICES:
            mk = subprocess.run([os.path.join(bin_dir, f"tessera-{svc}"), "--new-service-key",
                                 str(keys / f"{svc}.key")], capture_output=True, text=True, timeout=30)
            assert mk.returncode == 0, mk.stderr
            trusted.write(mk.stdout)
    for svc in SERVICES:
        unit = (tmp_path / "usr/lib/systemd/system" / f"tessera-{svc}.service").read_text()
        assert f"ExecStart=/usr/bin/tessera-{svc} --config /etc/tessera/{svc}.conf" in unit
        assert "@BINDIR@" not in unit
        conf = tmp_path / "etc/tessera" / f"{svc}.conf"
        # The example config is the service's own table, and loads as is with
        # the service credentials the unit names (made above, under tmp_path).
        env = dict(os.environ)
        for line in unit.splitlines():
            if line.startswith("Environment=TESSERA_SERVICE_AUTH_"):
                name, path = line[len("Environment="):].split("=", 1)
                assert path.startswith("/etc/tessera/keys/"), line
                env[name] = str(keys / os.path.basename(path))
        chk = subprocess.run([os.path.join(bin_dir, f"tessera-{svc}"), "--config", str(conf),
                              "--check-config"], capture_output=True, text=True, timeout=30, env=env)
        assert chk.returncode == 0, chk.stderr
    assert (tmp_path / "usr/lib/systemd/system/tessera.target").is_file()
    # the CUDA shim, when the build made it (a CUDA toolkit was there), where
    # agent.cuda_shim_path points by default for PREFIX=/usr/local
    if os.path.exists(os.path.join(build, "lib", "libtessera-cuda.so")):
        assert (tmp_path / "usr/lib/tessera/libtessera-cuda.so").is_file()
