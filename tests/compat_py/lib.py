"""What the runner (run.py) gives each case: Backend.AI's `backend.ai` CLI
called in this process (click's CliRunner, so a command costs milliseconds,
not a Python start-up), in either endpoint type, as any user; a command in
the background (a local proxy, an event stream); the SDK; signed REST calls
for set-up and for checking what a command did; and the verdicts.

A case passes when its command exits 0 with no failure mark and its checks
hold. Otherwise it is one of:
  refused  a clear error: the client printed the server's message (or its
           own) and exited non-zero, no Python traceback
  crash    the client raised something it did not handle (a traceback), or
           an SDK call raised anything but BackendAPIError/BackendClientError
"""
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
import bai_signer  # noqa: E402  (the integration tests' independent signer)

CRASH_MARKS = ("*** Traceback ***", "Traceback (most recent call last)")
FAIL_MARKS = ("\u2718", "\u2717")  # the client's print_error / print_fail marks


class Outcome(Exception):
    """Raised by a check: kind is "refused" or "crash"; detail says why."""

    def __init__(self, kind, detail):
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


def refused(detail):
    return Outcome("refused", detail)


def crash(detail):
    return Outcome("crash", detail)


def _last_lines(text, n=3):
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " / ".join(lines[-n:])[:400]


def _error_line(text):
    """The client's error message from its output, for the table."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for i, ln in enumerate(lines):
        if ln.startswith(FAIL_MARKS):
            more = [x for x in lines[i + 1:i + 4] if not x.startswith("***")]
            return " ".join([ln] + more)[:400]
    return _last_lines(text)


class Result:
    """What a CLI command did: exit code, its output (stdout and stderr)."""

    def __init__(self, argv, code, output, exc):
        self.argv, self.code, self.output, self.exc = argv, code, output, exc

    @property
    def crashed(self):
        if self.exc is not None and not isinstance(self.exc, SystemExit):
            return True
        return any(m in self.output for m in CRASH_MARKS)

    def verdict(self):
        """Raise the outcome of a failed command (crash or refused)."""
        if self.crashed:
            exc = f"{type(self.exc).__name__}: {self.exc}" if self.exc is not None and \
                not isinstance(self.exc, SystemExit) else _error_line(self.output)
            raise crash(exc[:400])
        raise refused(_error_line(self.output) or f"exit {self.code}")

    def ok(self, *patterns, code=0):
        """Exit `code`, no failure mark, each regex in the output; else the
        outcome. Returns self."""
        if self.crashed or self.code != code or any(m in self.output for m in FAIL_MARKS):
            self.verdict()
        for p in patterns:
            if not re.search(p, self.output, re.M):
                raise refused(f"output lacks /{p}/: {_last_lines(self.output, 4)}")
        return self

    def grep(self, pattern):
        m = re.search(pattern, self.output, re.M)
        if not m:
            raise refused(f"output lacks /{pattern}/: {_last_lines(self.output, 4)}")
        return m


class Background:
    """A `backend.ai` command left running (local proxies, event streams):
    its own process (these never return), output to a file."""

    def __init__(self, ctx, argv, env):
        self.path = os.path.join(ctx.tmp, f"bg-{uuid.uuid4().hex[:8]}.log")
        self.fh = open(self.path, "wb")
        code = ("import getpass, sys; sys.path[:0] = %r; "
                "import ai.backend.client.cli; from ai.backend.cli.main import main; "
                "sys.argv = ['backend.ai'] + %r; main()") % (ctx.client_path, list(argv))
        self.p = subprocess.Popen([sys.executable, "-c", code], stdout=self.fh, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, env=env, start_new_session=True)

    def output(self):
        if not self.fh.closed:
            self.fh.flush()
        with open(self.path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait_for(self, pattern, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self.output()
            if re.search(pattern, out, re.M):
                return out
            if self.p.poll() is not None:
                break
            time.sleep(0.1)
        out = self.output()
        if any(m in out for m in CRASH_MARKS):
            raise crash(_error_line(out))
        raise refused(f"no /{pattern}/ within {timeout}s: {_last_lines(out, 4)}")

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(5)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(5)
        if not self.fh.closed:
            self.fh.close()
        return self.output()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def argv_of(cmd):
    return shlex.split(cmd) if isinstance(cmd, str) else list(cmd)


def signed(endpoint, ak, sk):
    return bai_signer.Client(endpoint, ak, sk)
