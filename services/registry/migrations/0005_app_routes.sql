-- wsproxy's app routes (link tokens and cookies) of RUNNING sessions, copied
-- from wsproxy's journal stream in Redis by the registry's housekeeping
-- (route_sync.c), so that they can be restored when Redis loses them
-- (FLUSHALL, a restart without persistence). Rows of ended sessions and
-- expired rows are deleted.
CREATE TABLE app_routes (
    key text PRIMARY KEY,              -- the token or cookie (route:<key> in Redis)
    session_id uuid NOT NULL,
    route jsonb NOT NULL,              -- the record as wsproxy stores it
    expires_at timestamptz NOT NULL
);
CREATE INDEX app_routes_session ON app_routes (session_id);

-- Where the copy stands: the last journal entry read and the epoch of
-- wsproxy's routes in Redis the copy belongs to (one row).
CREATE TABLE route_sync (
    id int PRIMARY KEY CHECK (id = 1),
    journal_last_id text NOT NULL DEFAULT '0-0',
    epoch text NOT NULL DEFAULT ''
);
INSERT INTO route_sync (id) VALUES (1);
