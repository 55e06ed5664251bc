"""The Python compatibility suite's fixtures: the integration tests' `stack`
(one temporary development stack, tests/integration/conftest.py loaded
through suitekit), and the table run.py printed, repeated at the end of
pytest's report."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
IT_DIR = os.path.abspath(os.path.join(HERE, "..", "integration"))
if IT_DIR not in sys.path:
    sys.path.insert(1, IT_DIR)  # suitekit

import suitekit  # noqa: E402

_it = suitekit.integration_conftest()
stack = _it.stack

# run.py and its modules run in a process of their own (they import the client)
collect_ignore = ["run.py", "cases.py", "lib.py"]

REPORT = []


@pytest.fixture(scope="session")
def compat_py_report():
    """A list to append run.py's output to: printed after the tests."""
    return REPORT


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if outcome.get_result().failed:
        _it._failed_tests.append(item.nodeid)  # the stack's logs are kept


def pytest_terminal_summary(terminalreporter):
    if not REPORT:
        return
    terminalreporter.write_sep("=", "Backend.AI Python client compatibility (tests/compat_py)")
    for line in REPORT[-1].rstrip("\n").split("\n"):
        terminalreporter.write_line(line)
