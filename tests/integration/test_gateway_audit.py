"""The gateway's access records travel in batches (ApiAccessBatch on
tessera.audit.v1) and tessera-auth stores each record once: every request of
a burst arrives once, a replayed batch stores nothing twice, a bad record of a
batch goes to the DLQ alone while the others are stored, a batch that does not
decode goes to the DLQ whole, and a clean stop (SIGTERM) publishes what the
gateway had buffered."""
import concurrent.futures
import json
import os
import signal
import subprocess
import time
import uuid

import requests

from conftest import second_gateway, wait_until
from pbwire import envelope, field


def psql(stack, sql):
    out = subprocess.run(["psql", stack["TESSERA_PG_DSN"], "-X", "-At", "-v", "ON_ERROR_STOP=1",
                          "-c", sql], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def rows_like(stack, prefix):
    """request_id -> stored rows, for request ids starting with prefix."""
    out = psql(stack, "SELECT request_id, count(*) FROM auth.access_log"
                      f" WHERE request_id LIKE '{prefix}%' GROUP BY request_id")
    return {line.split("|")[0]: int(line.split("|")[1]) for line in out.splitlines() if line}


def metric(url, name, labels=None):
    text = requests.get(url + "/metrics", timeout=5).text
    want = name + ("{" + labels + "}" if labels else "")
    for line in text.splitlines():
        if line.startswith(want + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def auth_url(stack):
    with open(os.path.join(stack["TESSERA_STATE_DIR"], "services")) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[0] == "auth":
                return parts[2]
    raise AssertionError("auth not in the services file")


def kcat(*args, **kw):
    return subprocess.run(["kcat", *args], capture_output=True, timeout=60, **kw)


def dlq_lines(stack, key):
    c = kcat("-b", stack["KAFKA_BOOTSTRAP"], "-C", "-t", "tessera.dlq.v1", "-o", "beginning",
             "-e", "-q", "-f", "%k\t%h\n")
    return [line for line in c.stdout.decode(errors="replace").splitlines()
            if line.startswith(key + "\t")]


def dlq_events(bin_dir, stack, key):
    """The DLQ records with this key, decoded by tessera-busctl (envelope and payload)."""
    p = subprocess.run([os.path.join(bin_dir, "tessera-busctl"), "dump", "-b",
                        stack["KAFKA_BOOTSTRAP"], "-t", "tessera.dlq.v1", "--key", key,
                        "--idle", "2", "--timeout", "20"],
                       capture_output=True, text=True, timeout=60)
    return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]


def publish(bin_dir, stack, msg_type, key, payload):
    p = subprocess.run([os.path.join(bin_dir, "tessera-busctl"), "publish", "-b",
                        stack["KAFKA_BOOTSTRAP"], "-t", "tessera.audit.v1", "-T", msg_type,
                        "-k", key, json.dumps(payload)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr


def produce_raw(stack, tmp_path, key, value):
    f = tmp_path / (key + ".bin")
    f.write_bytes(value)
    p = kcat("-b", stack["KAFKA_BOOTSTRAP"], "-P", "-t", "tessera.audit.v1", "-k", key, str(f))
    assert p.returncode == 0, p.stderr


def get(url, rid):
    r = requests.get(url + "/", headers={"X-Request-ID": rid}, timeout=10)
    assert r.status_code == 200
    return r


def test_records_of_many_requests_arrive_once(stack):
    """600 requests from 8 clients at once: each is stored exactly once, in
    batches of more than one record, under a derived (version 8) id."""
    gw = stack["TESSERA_GATEWAY_URL"]
    auth = auth_url(stack)
    prefix = "burst-" + uuid.uuid4().hex[:12] + "-"
    b0 = metric(gw, "tessera_gateway_audit_batches_total")
    r0 = metric(gw, "tessera_gateway_audit_records_total")
    ab0 = metric(auth, "tessera_auth_access_record_batches_total")
    blocks0 = metric(auth, "tessera_auth_access_blocks_stored_total")
    rids = [f"{prefix}{i}" for i in range(600)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda rid: get(gw, rid), rids))
    assert wait_until(lambda: len(rows_like(stack, prefix)) == len(rids), 30), \
        f"{len(rows_like(stack, prefix))} of {len(rids)} stored"
    time.sleep(1)  # anything stored twice would be by now
    rows = rows_like(stack, prefix)
    assert set(rows) == set(rids)
    assert all(n == 1 for n in rows.values()), {k: n for k, n in rows.items() if n != 1}
    batches = metric(gw, "tessera_gateway_audit_batches_total") - b0
    records = metric(gw, "tessera_gateway_audit_records_total") - r0
    assert records >= len(rids)
    assert 1 <= batches < records / 2, (batches, records)  # batched, not one by one
    assert metric(auth, "tessera_auth_access_record_batches_total") > ab0
    # One block per batch: some, and far fewer than the records.
    blocks = metric(auth, "tessera_auth_access_blocks_stored_total") - blocks0
    assert 1 <= blocks < len(rids) / 2, blocks
    assert metric(gw, "tessera_gateway_audit_records_dropped_total", 'reason="buffer_full"') == 0
    versions = psql(stack, "SELECT DISTINCT substr(event_id::text, 15, 1) FROM auth.access_log"
                           f" WHERE request_id LIKE '{prefix}%'")
    assert versions == "8"


def test_replayed_batch_stores_nothing_twice(stack, tmp_path):
    """The gateway's batch, found on the topic and produced again: its records
    derive the same ids and are all skipped (the duplicate counter grows by
    the batch's records), none is stored twice."""
    gw = stack["TESSERA_GATEWAY_URL"]
    auth = auth_url(stack)
    prefix = "replay-batch-" + uuid.uuid4().hex[:12] + "-"
    rids = [f"{prefix}{i}" for i in range(20)]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda rid: get(gw, rid), rids))
    assert wait_until(lambda: len(rows_like(stack, prefix)) == len(rids), 30)
    boot = stack["KAFKA_BOOTSTRAP"]
    c = kcat("-b", boot, "-C", "-t", "tessera.audit.v1", "-o", "beginning", "-e", "-q",
             "-f", "%o %p\n")
    assert c.returncode == 0
    found = None
    for line in reversed(c.stdout.decode().splitlines()):
        offset, partition = line.split()
        rec = kcat("-b", boot, "-C", "-t", "tessera.audit.v1", "-p", partition, "-o", offset,
                   "-c", "1", "-e", "-q", "-f", "%s")
        if prefix.encode() in rec.stdout and b"tessera.v1.ApiAccessBatch" in rec.stdout:
            found = rec.stdout
            break
    assert found, "no batch of these requests on the topic"
    # ApiAccess.request_id is field 8 (tag 0x42), then its length.
    n_in_batch = sum(bytes([0x42, len(rid)]) + rid.encode() in found for rid in rids)
    assert n_in_batch >= 1
    dup0 = metric(auth, "tessera_auth_access_records_duplicate_total")
    stored0 = metric(auth, "tessera_auth_access_records_stored_total")
    produce_raw(stack, tmp_path, "replay-" + uuid.uuid4().hex, found)
    assert wait_until(
        lambda: metric(auth, "tessera_auth_access_records_duplicate_total") >= dup0 + n_in_batch, 30)
    time.sleep(1)
    rows = rows_like(stack, prefix)
    assert all(n == 1 for n in rows.values()) and len(rows) == len(rids), rows
    assert metric(auth, "tessera_auth_access_records_stored_total") == stored0


def test_bad_records_of_a_batch_go_to_the_dlq_alone(stack, bin_dir):
    """An ApiAccessBatch with a record without a method and one whose time
    PostgreSQL cannot hold, among good records and among other messages: the
    two bad records are dead-lettered alone (ApiAccess envelopes under their
    derived ids, naming the batch), the good ones stored once."""
    gw = stack["TESSERA_GATEWAY_URL"]
    auth = auth_url(stack)
    marker = "bad-in-batch-" + uuid.uuid4().hex
    dl0 = metric(auth, "tessera_auth_access_records_dead_lettered_total")
    around = [f"{marker}-around-{i}" for i in range(6)]
    for rid in around[:3]:
        get(gw, rid)
    records = [
        {"method": "GET", "path": "/ok0", "request_id": f"{marker}-0", "status": 200,
         "occurred_at_ms": 1795304401007},
        {"method": "", "path": "/no-method", "request_id": f"{marker}-1", "status": 200},
        {"method": "GET", "path": "/ok2", "request_id": f"{marker}-2", "status": 201,
         "occurred_at_ms": 1795304401008},
        {"method": "GET", "path": "/far", "request_id": f"{marker}-3", "status": 200,
         "occurred_at_ms": 9_000_000_000_000_000_000},
        {"method": "POST", "path": "/ok4", "request_id": f"{marker}-4", "status": 204},
    ]
    publish(bin_dir, stack, "tessera.v1.ApiAccessBatch", marker, {"records": records})
    for rid in around[3:]:
        get(gw, rid)
    good = [f"{marker}-{i}" for i in (0, 2, 4)] + around
    assert wait_until(lambda: len(rows_like(stack, marker)) == len(good), 30), \
        rows_like(stack, marker)
    assert wait_until(lambda: len(dlq_lines(stack, marker)) >= 2, 30), "bad records not dead-lettered"
    time.sleep(1)
    rows = rows_like(stack, marker)
    assert set(rows) == set(good) and all(n == 1 for n in rows.values()), rows
    lines = dlq_lines(stack, marker)
    assert len(lines) == 2, lines
    reasons = " ".join(lines)
    assert "dlq.reason=rejected: record 1 (id " in reasons and "without a method" in reasons
    assert "dlq.reason=rejected: record 3 (id " in reasons
    assert all("dlq.topic=tessera.audit.v1" in x and "dlq.attempts=1" in x for x in lines)
    events = dlq_events(bin_dir, stack, marker)
    assert sorted(e["payload"]["request_id"] for e in events) == [f"{marker}-1", f"{marker}-3"]
    for e in events:
        assert e["type"] == "tessera.v1.ApiAccess"
        assert e["event_id"][14] == "8"
        assert f"(id {e['event_id']})" in reasons
    assert metric(auth, "tessera_auth_access_records_dead_lettered_total") >= dl0 + 2
    # The good records of the batch: their derived ids and their values.
    out = psql(stack, "SELECT request_id, status, (extract(epoch FROM occurred_at) * 1000)::bigint,"
                      " substr(event_id::text, 15, 1) FROM auth.access_log"
                      f" WHERE request_id IN ('{marker}-0', '{marker}-2') ORDER BY request_id")
    assert out.splitlines() == [f"{marker}-0|200|1795304401007|8", f"{marker}-2|201|1795304401008|8"]


def test_lone_record_of_a_batch_refused_by_postgresql(stack, bin_dir):
    """A batch of one record whose time PostgreSQL cannot hold: that record is
    dead-lettered as an ApiAccess envelope of its own too (not the batch)."""
    marker = "one-far-" + uuid.uuid4().hex
    publish(bin_dir, stack, "tessera.v1.ApiAccessBatch", marker,
            {"records": [{"method": "GET", "path": "/far", "request_id": marker,
                          "occurred_at_ms": -9_000_000_000_000_000_000}]})
    assert wait_until(lambda: dlq_lines(stack, marker), 30), "never dead-lettered"
    line = dlq_lines(stack, marker)[0]
    assert "dlq.reason=rejected: record 0 (id " in line and "dlq.attempts=1" in line
    events = dlq_events(bin_dir, stack, marker)
    assert [e["type"] for e in events] == ["tessera.v1.ApiAccess"]
    assert events[0]["payload"]["request_id"] == marker
    assert rows_like(stack, marker) == {}


def test_text_that_is_not_utf8_goes_to_the_dlq(stack, tmp_path):
    """Text PostgreSQL would refuse (not UTF-8) in a record of a batch: that
    record alone is dead-lettered, the batch's others stored; in a lone
    ApiAccess: that message is dead-lettered whole. Consumption goes on."""
    marker = "not-utf8-" + uuid.uuid4().hex
    recs = [field(4, "GET") + field(5, "/ok0") + field(8, f"{marker}-0"),
            field(4, "GET") + field(5, b"/\xff\xfe") + field(8, f"{marker}-1"),
            field(4, "GET") + field(5, "/ok2") + field(8, f"{marker}-2")]
    produce_raw(stack, tmp_path, marker, envelope(str(uuid.uuid4()), "tessera.v1.ApiAccessBatch",
                                                  b"".join(field(1, r) for r in recs)))
    lone = marker + "-lone"
    produce_raw(stack, tmp_path, lone, envelope(str(uuid.uuid4()), "tessera.v1.ApiAccess",
                                                field(2, b"\xc0\xaf") + field(4, "GET") +
                                                field(5, "/x") + field(8, lone)))
    assert wait_until(lambda: dlq_lines(stack, marker) and dlq_lines(stack, lone), 30)
    assert wait_until(lambda: rows_like(stack, marker) == {f"{marker}-0": 1, f"{marker}-2": 1}, 30), \
        rows_like(stack, marker)
    batch_line = dlq_lines(stack, marker)
    assert len(batch_line) == 1, batch_line
    assert "dlq.reason=rejected: record 1 (id " in batch_line[0]
    assert "not valid UTF-8" in batch_line[0]
    lone_line = dlq_lines(stack, lone)[0]
    assert "dlq.reason=rejected: ApiAccess at offset " in lone_line and "not valid UTF-8" in lone_line
    rid = "after-not-utf8-" + uuid.uuid4().hex
    get(stack["TESSERA_GATEWAY_URL"], rid)
    assert wait_until(lambda: rows_like(stack, rid) == {rid: 1}, 30)


def test_undecodable_batch_goes_to_the_dlq_whole(stack, tmp_path):
    """An envelope that says ApiAccessBatch but carries garbage, and a batch
    whose event id is not a UUID: each goes to the DLQ whole; consumption
    goes on."""
    gw = stack["TESSERA_GATEWAY_URL"]
    key1 = "garbage-batch-" + uuid.uuid4().hex
    key2 = "bad-id-batch-" + uuid.uuid4().hex
    produce_raw(stack, tmp_path, key1,
                envelope(str(uuid.uuid4()), "tessera.v1.ApiAccessBatch", b"\x0a\xff\xff\x01junk"))
    good_record = field(4, "GET") + field(5, "/x") + field(8, key2)
    produce_raw(stack, tmp_path, key2,
                envelope("not-a-uuid", "tessera.v1.ApiAccessBatch", field(1, good_record)))
    assert wait_until(lambda: dlq_lines(stack, key1) and dlq_lines(stack, key2), 30)
    line1, line2 = dlq_lines(stack, key1)[0], dlq_lines(stack, key2)[0]
    assert "dlq.reason=rejected: " in line1 and "does not decode as tessera.v1.ApiAccessBatch" in line1
    assert "dlq.reason=rejected: ApiAccessBatch without a valid event id" in line2
    assert psql(stack, f"SELECT count(*) FROM auth.access_log WHERE request_id = '{key2}'") == "0"
    rid = "after-garbage-batch-" + uuid.uuid4().hex
    get(gw, rid)
    assert wait_until(lambda: rows_like(stack, rid) == {rid: 1}, 30)


def test_clean_stop_publishes_what_is_buffered(stack, bin_dir, tmp_path):
    """A second gateway whose batches wait 1 s for up to 10,000 records: the
    requests' records are still in its buffer (nothing published) when it gets
    SIGTERM, and every one of them is stored afterwards."""
    log_path = tmp_path / "gateway-stop.log"
    with second_gateway(stack, bin_dir, log_path, "it-stop", TESSERA_AUDIT_BATCH_RECORDS="10000",
                        TESSERA_AUDIT_BATCH_WAIT="1s") as (url, p):
        prefix = "stop-" + uuid.uuid4().hex[:12] + "-"
        rids = [f"{prefix}{i}" for i in range(30)]
        with requests.Session() as sess:
            for rid in rids:
                assert sess.get(url + "/", headers={"X-Request-ID": rid}, timeout=5).status_code == 200
        # Still buffered: the batch waits a second for more.
        assert metric(url, "tessera_gateway_audit_batches_total") == 0
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=30) == 0
    text = (tmp_path / "gateway-stop.log").read_text()
    assert "audit records flushed" in text and "records=30" in text, text
    assert wait_until(lambda: len(rows_like(stack, prefix)) == len(rids), 30), \
        f"{len(rows_like(stack, prefix))} of {len(rids)} stored after the stop"
    rows = rows_like(stack, prefix)
    assert all(n == 1 for n in rows.values())
    assert psql(stack, "SELECT DISTINCT producer FROM auth.access_log"
                       f" WHERE request_id LIKE '{prefix}%'") == "gateway/it-stop"
