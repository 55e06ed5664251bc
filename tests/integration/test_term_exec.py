"""tessera-term's /exec WebSocket (services/wsproxy/term/term_exec.h; docs/wsproxy.md,
"The terminal app"): one program per connection with pipes. The built binary is
started here on 127.0.0.1 with --runtime python3 (no stack needed): stdout and
stderr apart and the exit status; query mode runs the runtime, batch mode
/bin/sh; `w` when the program waits for input (in read(2), in poll(2) as
busybox's `read`, in epoll_wait(2)), then `i` feeds it; `x`
interrupts (130), `k` kills (137), `c` closes stdin; a connection closed
while the program runs leaves no process; bad input (an unknown mode or
kind, a frame over 1 MiB) is closed with 1008 / 1009 and runs nothing; two
connections run independently."""
import base64
import contextlib
import os
import shutil
import socket
import struct
import subprocess
import time

import pytest

import wsclient
from conftest import BIN_DIR, free_port, wait_until

RUNTIME = shutil.which("python3") or "/bin/sh"
needs_python = pytest.mark.skipif(not RUNTIME.endswith("python3"), reason="no python3 as the runtime")


@pytest.fixture(scope="module")
def term():
    with _term(RUNTIME) as port:
        yield port


@contextlib.contextmanager
def _term(runtime):
    """A tessera-term on a free port of 127.0.0.1: yields the port, then stops it."""
    path = os.path.join(BIN_DIR, "tessera-term")
    if not os.access(path, os.X_OK):
        pytest.skip(f"{path} not built (make)")
    port = free_port()
    p = subprocess.Popen([path, "--listen", f"127.0.0.1:{port}", "--runtime", runtime],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def up():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False

    try:
        wait_until(up, timeout=10)
        yield port
    finally:
        p.terminate()
        p.wait(timeout=10)
        p.stderr.close()


class Exec:
    """One /exec connection: send messages, read the term's frames."""

    def __init__(self, port, path="/exec"):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                        "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.s.recv(4096)
            assert chunk, head
            head += chunk
        assert b" 101 " in head.split(b"\r\n", 1)[0], head
        self.frames = wsclient.frames(self.s, head.split(b"\r\n\r\n", 1)[1])

    def send(self, data, opcode=wsclient.BINARY):
        wsclient.send_frame(self.s, opcode, data)

    def next(self, timeout=10):
        self.s.settimeout(timeout)
        return next(self.frames)

    def until(self, stop, timeout=15):
        """Frames up to and including the first for which stop(op, payload)
        holds; fails on EOF or timeout before it."""
        got, end = [], time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            assert left > 0, f"timed out, got {got}"
            op, pl = self.next(left)
            assert op is not None, f"EOF, got {got}"
            got.append((op, pl))
            if stop(op, pl):
                return got

    def run_to_end(self, timeout=15):
        """(stdout, stderr, kinds seen, exit status) up to `x`, then the close."""
        got = self.until(lambda op, pl: op == wsclient.BINARY and pl[:1] == b"x", timeout)
        out = b"".join(pl[1:] for op, pl in got if pl[:1] == b"o")
        err = b"".join(pl[1:] for op, pl in got if pl[:1] == b"e")
        kinds = [pl[:1] for op, pl in got if op == wsclient.BINARY]
        status = int(got[-1][1][1:])
        op, pl = self.next()
        assert op == wsclient.CLOSE and struct.unpack(">H", pl[:2])[0] == 1000, (op, pl)
        return out, err, kinds, status

    def close_status(self, timeout=10):
        """The status of the term's close frame (data frames before it skipped)."""
        got = self.until(lambda op, pl: op == wsclient.CLOSE, timeout)
        return struct.unpack(">H", got[-1][1][:2])[0], got

    def wait_w(self, timeout=10):
        got = self.until(lambda op, pl: pl == b"w", timeout)
        return got

    def close(self):
        self.s.close()


def _alive(pid):
    """Whether pid is a process that is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_stdout_stderr_and_exit_status(term):
    c = Exec(term)
    c.send("bprintf out; printf err >&2; exit 3", wsclient.TEXT)
    out, err, kinds, status = c.run_to_end()
    assert (out, err, status) == (b"out", b"err", 3)
    c.close()


def test_batch_runs_sh_and_output_in_order(term):
    c = Exec(term)
    c.send("bfor i in 1 2 3; do echo line$i; done; kill -TERM $$", wsclient.TEXT)
    out, err, kinds, status = c.run_to_end()
    assert out == b"line1\nline2\nline3\n"
    assert status == 128 + 15  # ended by a signal: 128 + its number


@needs_python
def test_query_runs_the_runtime(term):
    c = Exec(term)
    c.send("qimport sys\nprint(6*7)\nprint(sys.executable, file=sys.stderr)", wsclient.TEXT)
    out, err, kinds, status = c.run_to_end()
    assert (out, status) == (b"42\n", 0)
    assert b"python" in err
    c.close()


def test_input_after_w(term):
    c = Exec(term)
    c.send('bread x; echo "got $x"', wsclient.TEXT)
    got = c.wait_w()
    assert not any(pl[:1] == b"x" for op, pl in got)
    c.send(b"iabc\n")
    out, err, kinds, status = c.run_to_end()
    assert (out, status) == (b"got abc\n", 0)
    assert b"w" not in kinds  # once per wait: the read returned, no new wait
    c.close()


@pytest.mark.skipif(not shutil.which("busybox"), reason="no busybox")
def test_input_to_a_program_that_polls_first(term):
    # busybox sh's `read` waits in poll(2) before it reads: `w` as well
    c = Exec(term)
    c.send(f"b{shutil.which('busybox')} sh -c 'read x; echo \"bb $x\"'", wsclient.TEXT)
    c.wait_w()
    c.send(b"iyes\n")
    out, err, kinds, status = c.run_to_end()
    assert (out, status) == (b"bb yes\n", 0)
    c.close()


@needs_python
def test_input_to_a_program_in_epoll_wait(term):
    # selectors' default is epoll: the wait is in epoll_wait(2) (node, asyncio alike)
    c = Exec(term)
    c.send("qimport selectors, sys\ns = selectors.DefaultSelector()\n"
           "s.register(sys.stdin, selectors.EVENT_READ)\ns.select()\n"
           "print(type(s).__name__, sys.stdin.readline().strip())", wsclient.TEXT)
    c.wait_w()
    c.send(b"iok\n")
    out, err, kinds, status = c.run_to_end()
    assert (out, status) == (b"EpollSelector ok\n", 0)
    c.close()


@needs_python
def test_python_input_twice(term):
    c = Exec(term)
    # quiet for a while, then a prompt and a read at once: the prompt goes out before `w`
    c.send('qimport time\ntime.sleep(0.3)\na = input("name? ")\nb = input()\nprint("hi", a, b)',
           wsclient.TEXT)
    got = c.wait_w()
    assert b"".join(pl[1:] for op, pl in got if pl[:1] == b"o") == b"name? "
    assert sum(1 for op, pl in got if pl == b"w") == 1
    c.send(b"ione\n")
    c.wait_w()  # the second input(): a new wait, a new `w`
    c.send(b"itwo\n")
    out, err, kinds, status = c.run_to_end()
    assert (out, status) == (b"hi one two\n", 0)
    c.close()


def test_no_w_for_a_busy_program(term):
    c = Exec(term)
    c.send("bsleep 0.6; echo done", wsclient.TEXT)
    out, err, kinds, status = c.run_to_end()
    assert (out, status, kinds.count(b"w")) == (b"done\n", 0, 0)
    c.close()


def test_interrupt(term):
    c = Exec(term)
    c.send("bsleep 100", wsclient.TEXT)
    time.sleep(0.3)
    t = time.monotonic()
    c.send(b"x")
    out, err, kinds, status = c.run_to_end(timeout=5)
    assert status == 130
    assert time.monotonic() - t < 3
    c.close()


def test_kill(term):
    c = Exec(term)
    c.send("btrap '' INT; sleep 100", wsclient.TEXT)
    time.sleep(0.3)
    c.send(b"k")
    out, err, kinds, status = c.run_to_end(timeout=5)
    assert status == 137
    c.close()


def test_stdin_eof(term):
    c = Exec(term)
    c.send("bcat; echo end", wsclient.TEXT)
    c.send(b"ione ")
    c.send(b"itwo")
    c.send(b"c")
    out, err, kinds, status = c.run_to_end()
    assert (out, status) == (b"one twoend\n", 0)
    c.close()


def test_closed_connection_leaves_no_process(term):
    c = Exec(term)
    c.send("becho $$; sleep 100 & echo $!; wait", wsclient.TEXT)
    out = b""
    end = time.monotonic() + 10
    while len(out.split()) < 2:
        assert time.monotonic() < end, out
        op, pl = c.next()
        assert op == wsclient.BINARY, (op, pl)
        if pl[:1] == b"o":
            out += pl[1:]
    sh_pid, sleep_pid = (int(v) for v in out.split()[:2])
    assert _alive(sh_pid) and _alive(sleep_pid)
    c.close()
    # SIGINT to the group: the shell and its sleep end, and nothing is left a zombie
    wait_until(lambda: not _alive(sh_pid) and not _alive(sleep_pid), timeout=6)
    wait_until(lambda: not os.path.exists(f"/proc/{sleep_pid}") and
               not os.path.exists(f"/proc/{sh_pid}"), timeout=3)


def test_close_frame_while_running_kills_even_a_program_ignoring_sigint(term):
    c = Exec(term)
    c.send("btrap '' INT; echo $$; while :; do sleep 0.1; done", wsclient.TEXT)
    got = c.until(lambda op, pl: pl[:1] == b"o")
    pid = int(got[-1][1][1:].split()[0])
    c.send(struct.pack(">H", 1000), wsclient.CLOSE)
    op, pl = c.next()
    assert op == wsclient.CLOSE  # the close is answered
    c.close()
    time.sleep(1.5)
    assert _alive(pid)  # SIGINT ignored: still there before the 3 s
    wait_until(lambda: not os.path.exists(f"/proc/{pid}"), timeout=6)


def test_unknown_mode_runs_nothing(term, tmp_path):
    marker = tmp_path / "ran"
    c = Exec(term)
    c.send(f"ztouch {marker}", wsclient.TEXT)
    code, got = c.close_status()
    assert code == 1008
    assert not any(op == wsclient.BINARY for op, pl in got)
    c.close()
    c = Exec(term)
    c.send("", wsclient.TEXT)
    assert c.close_status()[0] == 1008
    c.close()
    time.sleep(0.3)
    assert not marker.exists()


def test_unknown_kind_is_refused(term):
    c = Exec(term)
    c.send("becho $$; sleep 100", wsclient.TEXT)
    got = c.until(lambda op, pl: pl[:1] == b"o")
    pid = int(got[-1][1][1:])
    c.send(b"?what")
    code, _ = c.close_status()
    assert code == 1008
    c.close()
    wait_until(lambda: not os.path.exists(f"/proc/{pid}"), timeout=6)


def test_frame_over_1_mib(term):
    c = Exec(term)
    c.send("bcat >/dev/null", wsclient.TEXT)
    c.send(b"i" + b"a" * (1 << 20))  # 1 MiB and 1 byte
    code, _ = c.close_status()
    assert code == 1009
    c.close()
    # exactly 1 MiB is fine
    c = Exec(term)
    c.send("bwc -c", wsclient.TEXT)
    c.send(b"i" + b"a" * ((1 << 20) - 1))
    c.send(b"c")
    out, err, kinds, status = c.run_to_end()
    assert (out.strip(), status) == (str((1 << 20) - 1).encode(), 0)
    c.close()


def test_ping_and_fragmented_input(term):
    c = Exec(term)
    c.send("bread a; echo \"[$a]\"", wsclient.TEXT)
    c.send(b"p1", wsclient.PING)
    got = c.until(lambda op, pl: op == wsclient.PONG)
    assert got[-1][1] == b"p1"
    wsclient.send_frame(c.s, wsclient.BINARY, b"ifra", fin=False)
    wsclient.send_frame(c.s, 0x0, b"gment\n")
    out, err, kinds, status = c.run_to_end()
    assert (out, status) == (b"[fragment]\n", 0)
    c.close()


def test_two_connections_at_once(term):
    a, b = Exec(term), Exec(term)
    a.send("bread x; echo a-$x", wsclient.TEXT)
    b.send("bread x; echo b-$x", wsclient.TEXT)
    a.wait_w()
    b.wait_w()
    b.send(b"i2\n")
    out_b, _, _, st_b = b.run_to_end()
    a.send(b"i1\n")
    out_a, _, _, st_a = a.run_to_end()
    assert (out_a, out_b, st_a, st_b) == (b"a-1\n", b"b-2\n", 0, 0)
    a.close()
    b.close()


def test_ws_still_opens_a_shell(term):
    c = Exec(term, "/ws")
    wsclient.send_text(c.s, "echo hello-$((40+2))\n")
    c.until(lambda op, pl: b"hello-42" in pl)
    c.close()


def test_runtime_looked_up_in_path_or_missing():
    # a runtime without a slash is looked up in PATH, like a command
    with _term("sh") as port:
        c = Exec(port)
        c.send("qecho \"$0\"; exit 4", wsclient.TEXT)
        out, err, kinds, status = c.run_to_end()
        assert (out, status) == (b"sh\n", 4)
        c.close()
        # batch mode is /bin/sh whatever the runtime
        c = Exec(port)
        c.send("becho \"$0\"", wsclient.TEXT)
        assert c.run_to_end()[0] == b"/bin/sh\n"
        c.close()
    # a runtime that is not there: 127 and a line on stderr
    with _term("/nonexistent/python3") as port:
        c = Exec(port)
        c.send("qprint(1)", wsclient.TEXT)
        out, err, kinds, status = c.run_to_end()
        assert (out, status) == (b"", 127)
        assert b"cannot run /nonexistent/python3" in err
        c.close()
