-- Usage accounting, continued (docs/usage.md): block I/O bytes in each sample
-- and in the session totals, whether a sample is a kernel's final one, and
-- the wall time a session spent in each phase of its status history (written
-- when it reaches a final status; a session that ended without any sample
-- gets a row for it, first/last = its creation and its end).
ALTER TABLE usage_samples
    ADD COLUMN io_read_bytes  bigint NOT NULL DEFAULT 0,
    ADD COLUMN io_write_bytes bigint NOT NULL DEFAULT 0,
    ADD COLUMN final          boolean NOT NULL DEFAULT false;

ALTER TABLE session_usage
    ADD COLUMN io_read_bytes  bigint NOT NULL DEFAULT 0,
    ADD COLUMN io_write_bytes bigint NOT NULL DEFAULT 0,
    -- seconds per phase: PENDING/SCHEDULED, PREPARING/PULLING/CREATING/...,
    -- RUNNING, TERMINATING, any other status before the end
    ADD COLUMN pending_s      double precision NOT NULL DEFAULT 0,
    ADD COLUMN preparing_s    double precision NOT NULL DEFAULT 0,
    ADD COLUMN running_s      double precision NOT NULL DEFAULT 0,
    ADD COLUMN terminating_s  double precision NOT NULL DEFAULT 0,
    ADD COLUMN other_s        double precision NOT NULL DEFAULT 0,
    ADD COLUMN ended_at       timestamptz;
