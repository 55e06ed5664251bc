-- The access log: one row per API request the gateway answered, from
-- tessera.audit.v1. event_id makes applying an event twice harmless.
CREATE TABLE access_log (
    event_id     uuid PRIMARY KEY,
    occurred_at  timestamptz NOT NULL,
    access_key   text NOT NULL DEFAULT '',
    user_id      text NOT NULL DEFAULT '',
    client_addr  text NOT NULL DEFAULT '',
    method       text NOT NULL,
    path         text NOT NULL,
    status       integer NOT NULL,
    latency_us   bigint NOT NULL,
    request_id   text NOT NULL DEFAULT '',
    producer     text NOT NULL DEFAULT ''
);
CREATE INDEX access_log_occurred_at ON access_log (occurred_at);
CREATE INDEX access_log_access_key ON access_log (access_key, occurred_at);
