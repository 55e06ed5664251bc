"""TESSERA_DEV_PG_OPTIONS: server options dev-up adds to its PostgreSQL's own.
A good option is in effect (SHOW); an unknown one stops dev-up with
"PostgreSQL did not start" and PostgreSQL's own words about the option, and
dev-down cleans up either way. Only the infrastructure is started
(TESSERA_DEV_SERVICES empty)."""
import os
import shutil
import subprocess
import tempfile

from conftest import DEV_DOWN, DEV_UP, _run_script, parse_env_file


def _up(state, options):
    old = {k: os.environ.get(k) for k in ("TESSERA_DEV_SERVICES", "TESSERA_DEV_PG_OPTIONS")}
    os.environ["TESSERA_DEV_SERVICES"] = ""
    os.environ["TESSERA_DEV_PG_OPTIONS"] = options
    try:
        return _run_script(DEV_UP, state, timeout=300)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_a_good_option_is_in_effect():
    state = tempfile.mkdtemp(prefix="tessera-pgopt-")
    try:
        up = _up(state, "-c work_mem=7MB")
        assert up.returncode == 0, up.stdout
        env = parse_env_file(os.path.join(state, "env"))
        url = env["TESSERA_PG_DSN"]
        show = subprocess.run(["psql", url, "-XAtc", "SHOW work_mem"], capture_output=True,
                              text=True, timeout=30)
        assert show.stdout.strip() == "7MB", show.stdout + show.stderr
    finally:
        down = _run_script(DEV_DOWN, state, timeout=120)
        shutil.rmtree(state, ignore_errors=True)
    assert down.returncode == 0, down.stdout


def test_an_unknown_option_stops_dev_up_clearly():
    state = tempfile.mkdtemp(prefix="tessera-pgopt-")
    try:
        up = _up(state, "-c no_such_setting_tessera=1")
        assert up.returncode != 0, up.stdout
        assert "PostgreSQL did not start" in up.stdout, up.stdout
        assert "no_such_setting_tessera" in up.stdout, up.stdout
    finally:
        down = _run_script(DEV_DOWN, state, timeout=120)
        shutil.rmtree(state, ignore_errors=True)
    assert down.returncode == 0, down.stdout
