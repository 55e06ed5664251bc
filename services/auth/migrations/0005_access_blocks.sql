-- The access log in blocks: one row per ApiAccessBatch (or lone ApiAccess)
-- instead of one row per request. A row per record with its primary key and
-- two btrees cost PostgreSQL about 4 us per request; a block of ~250 records
-- in typed arrays, written by binary COPY, costs about 0.5 us per record
-- (docs/benchmarks.md, "The access log in blocks").
--
-- block_id is the envelope's event id, so a replayed message finds its block
-- and stores nothing twice. rec_* hold the records, element i of each array
-- belonging to record i. first_at/last_at and the distinct access keys and
-- user ids (empty ones left out) let a query skip whole blocks without
-- reading their records; key_counts[i] and user_counts[i] say how many
-- records hold keys_seen[i] and users_seen[i], so a query for one key or
-- user can count without reading them either.
CREATE TABLE access_blocks (
    block_id        uuid PRIMARY KEY,
    first_at        timestamptz NOT NULL,
    last_at         timestamptz NOT NULL,
    records         integer NOT NULL,
    producer        text NOT NULL DEFAULT '',
    keys_seen       text[] NOT NULL,
    key_counts      integer[] NOT NULL,
    users_seen      text[] NOT NULL,
    user_counts     integer[] NOT NULL,
    rec_event_id    uuid[] NOT NULL,
    rec_occurred_at timestamptz[] NOT NULL,
    rec_access_key  text[] NOT NULL,
    rec_user_id     text[] NOT NULL,
    rec_client_addr text[] NOT NULL,
    rec_method      text[] NOT NULL,
    rec_path        text[] NOT NULL,
    rec_status      integer[] NOT NULL,
    rec_latency_us  bigint[] NOT NULL,
    rec_request_id  text[] NOT NULL
);

-- The admin query's newest blocks first (access_log_query.c), and pruning
-- by time.
CREATE INDEX access_blocks_last_at ON access_blocks (last_at);

-- The record arrays are stored compressed out of line (TOAST); lz4 costs a
-- fraction of pglz's CPU. A PostgreSQL built without lz4 keeps pglz.
DO $$
DECLARE
    c text;
BEGIN
    FOREACH c IN ARRAY ARRAY['rec_event_id', 'rec_occurred_at', 'rec_access_key', 'rec_user_id',
                             'rec_client_addr', 'rec_method', 'rec_path', 'rec_status',
                             'rec_latency_us', 'rec_request_id'] LOOP
        EXECUTE format('ALTER TABLE access_blocks ALTER COLUMN %I SET COMPRESSION lz4', c);
    END LOOP;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'lz4 not available, access blocks compressed with pglz';
END $$;

-- The rows stored so far become blocks of up to 250 records per producer,
-- in time order, keeping their event ids. Their block ids are new, so a
-- replay of a message stored before this migration would be stored again
-- (only messages the consumer had not yet acknowledged are ever replayed).
INSERT INTO access_blocks
SELECT gen_random_uuid(), min(occurred_at), max(occurred_at), count(*), producer,
       '{}', '{}', '{}', '{}', array_agg(event_id ORDER BY n), array_agg(occurred_at ORDER BY n),
       array_agg(access_key ORDER BY n), array_agg(user_id ORDER BY n),
       array_agg(client_addr ORDER BY n), array_agg(method ORDER BY n),
       array_agg(path ORDER BY n), array_agg(status ORDER BY n),
       array_agg(latency_us ORDER BY n), array_agg(request_id ORDER BY n)
FROM (SELECT *, row_number() OVER (PARTITION BY producer ORDER BY occurred_at, event_id) - 1 AS n
      FROM access_log) r
GROUP BY producer, n / 250;

UPDATE access_blocks
SET (keys_seen, key_counts) =
        (SELECT coalesce(array_agg(v ORDER BY v), '{}'), coalesce(array_agg(c ORDER BY v), '{}')
         FROM (SELECT v, count(*)::int AS c FROM unnest(rec_access_key) v WHERE v <> ''
               GROUP BY v) x),
    (users_seen, user_counts) =
        (SELECT coalesce(array_agg(v ORDER BY v), '{}'), coalesce(array_agg(c ORDER BY v), '{}')
         FROM (SELECT v, count(*)::int AS c FROM unnest(rec_user_id) v WHERE v <> ''
               GROUP BY v) x);

DROP TABLE access_log;

-- One row per record, as the table was: what the admin query, operators and
-- tests read. Conditions on the block_* columns are applied to the blocks
-- before their records are unnested.
CREATE VIEW access_log AS
SELECT r.event_id, r.occurred_at, r.access_key, r.user_id, r.client_addr, r.method, r.path,
       r.status, r.latency_us, r.request_id, b.producer, b.block_id,
       b.first_at AS block_first_at, b.last_at AS block_last_at,
       b.keys_seen AS block_access_keys, b.users_seen AS block_user_ids
FROM access_blocks b,
     unnest(b.rec_event_id, b.rec_occurred_at, b.rec_access_key, b.rec_user_id, b.rec_client_addr,
            b.rec_method, b.rec_path, b.rec_status, b.rec_latency_us, b.rec_request_id)
       AS r(event_id, occurred_at, access_key, user_id, client_addr, method, path, status,
            latency_us, request_id);
