"""The development bus keeps what consumers have not read (issue 35): a
consumer held while messages flow, then resumed, finds every one of them.

tessera-devbus keeps devbus.retention (256 MiB) on each partition
(tools/devbus/retention.h); librdkafka's mock cluster alone keeps 5 MiB and
drops the oldest beyond it, read or not, which a consumer a few seconds behind
under load overran (its position reset: "Offset out of range"). Here a
consumer group is held (it has read nothing since it joined) while more than
5 MiB flow to one partition, then resumed: it reads all of them, from its
committed position on. The same flow on a devbus with devbus.retention = 0
(the mock's own cap) loses the oldest: the control that shows the test can
fail.

TESSERA_TEST_BUS_HOLD_S (default 4) spreads the flow over that many seconds
while the consumer is held; the issue's slow run is 120."""
import os
import subprocess
import tempfile
import time

import pytest

from conftest import free_port, wait_until

HOLD_S = float(os.environ.get("TESSERA_TEST_BUS_HOLD_S", "4"))
RECORDS = 8000          # x ~1 KiB: 8 MiB on one partition, past the mock's 5 MiB
RECORD = "x" * 1000
TOPIC = "tessera.audit.v1"


def devbus(bin_dir, tmp, name, retention=None):
    boot = os.path.join(tmp, name + ".bootstrap")
    env = dict(os.environ, TESSERA_HTTP_LISTEN=f"127.0.0.1:{free_port()}",
               TESSERA_DEVBUS_BOOTSTRAP_FILE=boot, TESSERA_LOG_LEVEL="info")
    if retention is not None:
        env["TESSERA_DEVBUS_RETENTION"] = retention
    log = open(os.path.join(tmp, name + ".log"), "w")
    p = subprocess.Popen([os.path.join(bin_dir, "tessera-devbus")], stdout=log, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, env=env)
    wait_until(lambda: p.poll() is None and os.path.exists(boot) and open(boot).read().strip(), 30,
               message=f"devbus {name}")
    return p, open(boot).read().strip()


def kcat(*args, input=None, timeout=120):
    return subprocess.run(["kcat", *args], input=input, capture_output=True, text=True, timeout=timeout)


# the group rejoins after the hold without waiting out the last member's
# session (the mock takes a leave as a timeout)
GROUP_OPTS = ["-X", "auto.offset.reset=earliest", "-X", "session.timeout.ms=3000",
              "-X", "heartbeat.interval.ms=500", "-X", "fetch.wait.max.ms=10"]


def flow_past_a_held_consumer(kafka, group):
    """One record, read by group (its position is committed past it); then
    RECORDS to the same partition over HOLD_S seconds while the group reads
    nothing; then the group resumes: the offsets it gets."""
    p = kcat("-b", kafka, "-P", "-t", TOPIC, "-K", ":", input="held:first\n")
    assert p.returncode == 0, p.stderr
    r = kcat("-b", kafka, "-G", group, *GROUP_OPTS, "-e", "-q", "-f", "%o\n", TOPIC, timeout=60)
    assert r.returncode == 0 and r.stdout.split() == ["0"], (r.stdout, r.stderr)
    rounds = max(1, int(HOLD_S))
    per = RECORDS // rounds
    for i in range(rounds):
        lines = "".join(f"held:{RECORD}{i}-{j}\n" for j in range(per))
        p = kcat("-b", kafka, "-P", "-t", TOPIC, "-K", ":", input=lines)
        assert p.returncode == 0, p.stderr
        time.sleep(HOLD_S / rounds)
    r = kcat("-b", kafka, "-G", group, *GROUP_OPTS, "-e", "-f", "%o\n", TOPIC, timeout=180)
    return [int(x) for x in r.stdout.split()], r.stderr, per * rounds


@pytest.fixture
def tmp():
    d = tempfile.mkdtemp(prefix="tessera-bus-retention-")
    yield d
    print(f"\ndevbus logs: {d}")


def test_held_consumer_loses_no_message(bin_dir, tmp):
    p, kafka = devbus(bin_dir, tmp, "kept")
    try:
        offsets, err, sent = flow_past_a_held_consumer(kafka, "held")
        assert len(offsets) == sent, f"{sent - len(offsets)} of {sent} lost: {err[-500:]}"
        assert min(offsets) == 1 and max(offsets) == sent
        assert "Offset out of range" not in err
    finally:
        p.terminate()
        p.wait(timeout=15)


def test_mock_cap_alone_loses_the_oldest(bin_dir, tmp):
    p, kafka = devbus(bin_dir, tmp, "capped", retention="0")
    try:
        offsets, err, sent = flow_past_a_held_consumer(kafka, "held")
        assert 0 < len(offsets) < sent, f"the mock's 5 MiB cap kept {len(offsets)} of {sent}"
        assert min(offsets) > 1
    finally:
        p.terminate()
        p.wait(timeout=15)


def test_bad_retention_is_refused(bin_dir, tmp):
    r = subprocess.run([os.path.join(bin_dir, "tessera-devbus")], capture_output=True, text=True,
                       timeout=30, env=dict(os.environ, TESSERA_HTTP_LISTEN=f"127.0.0.1:{free_port()}",
                                            TESSERA_DEVBUS_RETENTION="lots"))
    assert r.returncode == 2
    assert "devbus.retention" in r.stderr
