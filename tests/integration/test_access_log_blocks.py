"""The access log is stored in blocks (auth.access_blocks, one row per bus
message's records) and read through the view auth.access_log. These tests
check what the blocks change: the migration of rows stored before it, and the
admin query, which skips blocks by their time range and the keys and users
they hold but must still filter the records inside the blocks it reads."""
import os
import subprocess
import uuid

import pytest

import bai_signer

MIGRATIONS = os.path.join(os.path.dirname(__file__), "..", "..", "services", "auth", "migrations")


def psql(stack, sql, stdin=None):
    args = ["psql", stack["TESSERA_PG_DSN"], "-X", "-At", "-q", "-v", "ON_ERROR_STOP=1"]
    args += ["-f", "-"] if stdin is not None else ["-c", sql]
    out = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def migration(name):
    with open(os.path.join(MIGRATIONS, name)) as f:
        return f.read()


def test_migration_turns_rows_into_blocks(stack):
    """0001's table with 600 rows of two producers, awkward text and empty
    keys, then 0005, in a scratch schema: the view gives back exactly the
    rows, in blocks of at most 250 records of one producer, each block's time
    range, distinct keys and users and their counts right."""
    schema = "it_mig_" + uuid.uuid4().hex[:10]
    psql(stack, f"CREATE SCHEMA {schema}")
    try:
        psql(stack, None, stdin=f"BEGIN; SET LOCAL search_path TO {schema};\n"
             + migration("0001_access_log.sql") +
             "INSERT INTO access_log SELECT gen_random_uuid(),"
             " timestamptz '2026-01-02 03:04:05+00' + i * interval '7 ms',"
             " CASE WHEN i % 3 = 0 THEN '' ELSE 'AK' || i % 4 END, 'u' || i % 5, '10.0.0.1:' || i,"
             " 'GET', E'/p\\t\"{x}\\\\' || i || ' \u00e9', 200 + i % 3, i, 'r' || i,"
             " CASE WHEN i % 7 = 0 THEN 'gateway/old' ELSE 'gateway/a' END"
             " FROM generate_series(1, 600) i;"
             "CREATE TABLE before AS SELECT * FROM access_log; COMMIT;")
        psql(stack, None, stdin=f"BEGIN; SET LOCAL search_path TO {schema};\n"
             + migration("0005_access_blocks.sql") + "COMMIT;")
        cols = ("event_id, occurred_at, access_key, user_id, client_addr, method, path, status,"
                " latency_us, request_id, producer")
        for a, b in (("access_log", "before"), ("before", "access_log")):
            assert psql(stack, f"SELECT count(*) FROM (SELECT {cols} FROM {schema}.{a}"
                               f" EXCEPT ALL SELECT {cols} FROM {schema}.{b}) x") == "0"
        assert psql(stack, f"SELECT count(*) FROM {schema}.access_log") == "600"
        blocks = psql(stack, f"SELECT records, producer FROM {schema}.access_blocks"
                             " ORDER BY producer, records DESC").splitlines()
        # 85 rows of gateway/old, 515 of gateway/a: 250 + 250 + 15.
        assert blocks == ["250|gateway/a", "250|gateway/a", "15|gateway/a", "85|gateway/old"]
        bad = psql(stack, f"SELECT count(*) FROM {schema}.access_blocks b WHERE"
                          " first_at <> (SELECT min(t) FROM unnest(b.rec_occurred_at) t)"
                          " OR last_at <> (SELECT max(t) FROM unnest(b.rec_occurred_at) t)"
                          " OR keys_seen <> (SELECT array_agg(DISTINCT k ORDER BY k)"
                          "   FROM unnest(b.rec_access_key) k WHERE k <> '')"
                          " OR users_seen <> (SELECT array_agg(DISTINCT u ORDER BY u)"
                          "   FROM unnest(b.rec_user_id) u)"
                          " OR key_counts <> (SELECT array_agg(n ORDER BY k) FROM (SELECT k, count(*)::int n"
                          "   FROM unnest(b.rec_access_key) k WHERE k <> '' GROUP BY k) x)"
                          " OR user_counts <> (SELECT array_agg(n ORDER BY u) FROM (SELECT u, count(*)::int n"
                          "   FROM unnest(b.rec_user_id) u GROUP BY u) x)"
                          " OR cardinality(rec_request_id) <> records")
        assert bad == "0"
    finally:
        psql(stack, f"DROP SCHEMA {schema} CASCADE")


def block_sql(block_id, producer, records):
    """An INSERT of one block; records are (time, access key, user id, path, status)."""
    def arr(values, cast):
        return "ARRAY[" + ",".join(f"'{v}'" for v in values) + f"]::{cast}[]"
    times = [r[0] for r in records]
    keys = sorted({r[1] for r in records if r[1]})
    users = sorted({r[2] for r in records if r[2]})
    key_counts = [sum(r[1] == k for r in records) for k in keys]
    user_counts = [sum(r[2] == u for r in records) for u in users]
    return ("INSERT INTO auth.access_blocks VALUES ("
            f"'{block_id}', '{min(times)}', '{max(times)}', {len(records)}, '{producer}',"
            f" {arr(keys, 'text')}, {arr(key_counts, 'int')}, {arr(users, 'text')},"
            f" {arr(user_counts, 'int')},"
            f" {arr([uuid.uuid4() for _ in records], 'uuid')}, {arr(times, 'timestamptz')},"
            f" {arr([r[1] for r in records], 'text')}, {arr([r[2] for r in records], 'text')},"
            f" {arr(['127.0.0.1' for _ in records], 'text')}, {arr(['GET' for _ in records], 'text')},"
            f" {arr([r[3] for r in records], 'text')}, {arr([r[4] for r in records], 'int')},"
            f" {arr([10 for _ in records], 'bigint')}, {arr([r[3] for r in records], 'text')})")


@pytest.fixture
def admin(stack):
    if "TESSERA_ADMIN_ACCESS_KEY" not in stack:
        pytest.skip("dev-up wrote no TESSERA_ADMIN_ACCESS_KEY")
    return bai_signer.Client(stack["TESSERA_GATEWAY_URL"], stack["TESSERA_ADMIN_ACCESS_KEY"],
                             stack["TESSERA_ADMIN_SECRET_KEY"])


def test_query_filters_inside_the_blocks_it_reads(stack, admin):
    """Two overlapping blocks: block 1 from 10:00:00 to 10:00:10 with keys K1
    and K2, block 2 from 10:00:03 to 10:00:07 with K2. A time window, a key
    and a user that select some records of a block get exactly those, newest
    first, with the right total and paging."""
    tag = "/it-blocks-" + uuid.uuid4().hex[:10]
    day = "2031-05-06"
    k1, k2 = "ITK1" + uuid.uuid4().hex[:12].upper(), "ITK2" + uuid.uuid4().hex[:12].upper()
    u1, u2 = str(uuid.uuid4()), str(uuid.uuid4())
    b1 = [(f"{day} 10:00:00+00", k1, u1, tag + "/a", 200),
          (f"{day} 10:00:05+00", k2, u2, tag + "/b", 404),
          (f"{day} 10:00:10+00", k1, u1, tag + "/c", 200)]
    b2 = [(f"{day} 10:00:03+00", k2, u2, tag + "/d", 200),
          (f"{day} 10:00:07+00", k2, u1, tag + "/e", 500)]
    psql(stack, block_sql(uuid.uuid4(), "it/blocks", b1))
    psql(stack, block_sql(uuid.uuid4(), "it/blocks", b2))

    def paths(**params):
        r = admin.get("/admin/access-log", params={"path_prefix": tag, **params})
        assert r.status_code == 200, r.text
        body = r.json()
        return [i["path"][len(tag):] for i in body["items"]], body["total"]

    assert paths() == (["/c", "/e", "/b", "/d", "/a"], 5)
    assert paths(since=f"{day}T10:00:05Z", until=f"{day}T10:00:10Z") == (["/e", "/b"], 2)
    assert paths(since=f"{day}T10:00:08Z") == (["/c"], 1)
    assert paths(until=f"{day}T10:00:03Z") == (["/a"], 1)
    assert paths(access_key=k1) == (["/c", "/a"], 2)
    assert paths(access_key=k2, since=f"{day}T10:00:04Z") == (["/e", "/b"], 2)
    assert paths(user_id=u1) == (["/c", "/e", "/a"], 3)
    assert paths(user_id=u2, status="200") == (["/d"], 1)
    assert paths(access_key=k1, user_id=u2) == ([], 0)
    assert paths(limit=2, offset=1) == (["/e", "/b"], 5)
    assert paths(since=f"{day}T11:00:00Z") == ([], 0)


def test_unfiltered_query_reads_only_the_newest_blocks(stack, admin):
    """A superadmin's query without filters takes the page from the newest
    blocks only (access_log_query.c) and the total from the blocks' counts.
    Three blocks newer than anything else in the log: U holds one record at
    :21, W two at :00 and :20 (its span covers V's), V three at :11 to :19.
    Every page, at any offset, is what the order says; the total is the
    view's count. (A bound taken from the newest blocks' last_at instead of
    their first_at would leave V out.) The same by one access key or one
    user id, which are answered from the blocks' per-key and per-user
    counts: two keys and two users spread over the blocks."""
    tag = "/it-newest-" + uuid.uuid4().hex[:10]
    t = "2099-12-31 23:59:"
    k1, k2 = ("ITKN" + uuid.uuid4().hex[:12].upper() for _ in range(2))
    u1, u2 = str(uuid.uuid4()), str(uuid.uuid4())
    psql(stack, block_sql(uuid.uuid4(), "it/blocks", [(t + "00+00", k1, u1, tag + "/w0", 200),
                                                     (t + "20+00", k2, u1, tag + "/w20", 200)]))
    psql(stack, block_sql(uuid.uuid4(), "it/blocks", [(t + "11+00", k1, u2, tag + "/v11", 200),
                                                     (t + "15+00", k2, u1, tag + "/v15", 200),
                                                     (t + "19+00", k1, u2, tag + "/v19", 200)]))
    psql(stack, block_sql(uuid.uuid4(), "it/blocks", [(t + "21+00", k1, "", tag + "/u21", 200)]))
    order = ["/u21", "/w20", "/v19", "/v15", "/v11", "/w0"]

    def page(limit, offset):
        before = int(psql(stack, "SELECT count(*) FROM auth.access_log"))
        r = admin.get("/admin/access-log", params={"limit": limit, "offset": offset})
        assert r.status_code == 200, r.text
        after = int(psql(stack, "SELECT count(*) FROM auth.access_log"))
        body = r.json()
        # The log grows meanwhile (this very request's record): between the two counts.
        assert before <= body["total"] <= after, (before, body["total"], after)
        return [i["path"][len(tag):] for i in body["items"]]

    for limit in range(1, 7):
        for offset in range(0, 7 - limit):
            assert page(limit, offset) == order[offset:offset + limit], (limit, offset)

    def by(**params):
        r = admin.get("/admin/access-log", params=params)
        assert r.status_code == 200, r.text
        return [i["path"][len(tag):] for i in r.json()["items"]], r.json()["total"]

    cases = {("access_key", k1): ["/u21", "/v19", "/v11", "/w0"],
             ("access_key", k2): ["/w20", "/v15"],
             ("user_id", u1): ["/w20", "/v15", "/w0"],
             ("user_id", u2): ["/v19", "/v11"]}
    for (name, value), want in cases.items():
        for limit in range(1, len(want) + 1):
            for offset in range(0, len(want) + 1 - limit):
                assert by(**{name: value, "limit": limit, "offset": offset}) == \
                    (want[offset:offset + limit], len(want)), (name, limit, offset)
    assert by(access_key=k1, user_id=u1) == (["/w0"], 1)  # both: the general query
    assert by(access_key="ITKNNOSUCHKEY") == ([], 0)


def test_a_user_sees_its_records_in_any_block(stack, admin):
    """A user's scope is its user id and its access keys. Blocks skipped by
    the scope must be only those without either: a record with the user's key
    but no user id (a request refused before the user was known) and one with
    the user id but another key are both found, in blocks of their own; a
    block of someone else's records is not."""
    name = "it-blk-" + uuid.uuid4().hex[:8]
    r = admin.post("/admin/users", {"email": f"{name}@example.com", "username": name,
                                    "password": "Pass-word-1234", "role": "user",
                                    "domain_name": "default"})
    assert r.status_code in (200, 201), r.text
    uid = r.json()["id"]
    r = admin.post("/admin/keypairs", {"user_id": uid})
    assert r.status_code in (200, 201), r.text
    ak, sk = r.json()["access_key"], r.json()["secret_key"]
    tag = "/it-scope-" + uuid.uuid4().hex[:10]
    t = "2032-03-04 05:06:"
    other_key, other_user = "ITKO" + uuid.uuid4().hex[:12].upper(), str(uuid.uuid4())
    psql(stack, block_sql(uuid.uuid4(), "it/blocks", [(t + "01+00", ak, "", tag + "/key", 401)]))
    psql(stack, block_sql(uuid.uuid4(), "it/blocks", [(t + "02+00", other_key, uid, tag + "/user",
                                                      200)]))
    psql(stack, block_sql(uuid.uuid4(), "it/blocks", [(t + "03+00", other_key, other_user,
                                                      tag + "/other", 200)]))
    user = bai_signer.Client(stack["TESSERA_GATEWAY_URL"], ak, sk)
    r = user.get("/admin/access-log", params={"path_prefix": tag})
    assert r.status_code == 200, r.text
    assert [i["path"][len(tag):] for i in r.json()["items"]] == ["/user", "/key"]
    assert r.json()["total"] == 2
