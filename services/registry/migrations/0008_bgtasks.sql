-- Background tasks (an image scan started with ?background=true, GraphQL's
-- rescan_images): their state here, so that any gateway instance can follow
-- any task (GET /v1/bgtasks/{id}; the gateway's /events/background-task).
-- A task still running when the registry instance that ran it starts again
-- (runner), or not updated for 10 minutes, is marked failed. Ended tasks are
-- deleted a day after they ended.
CREATE TABLE bgtasks (
    id uuid PRIMARY KEY,
    kind text NOT NULL,                   -- "image_scan"
    owner_user_id uuid NOT NULL,          -- who started it (who may follow it)
    owner_access_key text NOT NULL,
    status text NOT NULL DEFAULT 'running'
        CHECK (status IN ('running', 'done', 'failed', 'cancelled')),
    progress bigint NOT NULL DEFAULT 0,   -- items done
    total bigint NOT NULL DEFAULT 0,      -- items in all (0: not known yet)
    message text NOT NULL DEFAULT '',
    runner text NOT NULL,                 -- the registry instance running it
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    ended_at timestamptz
);
CREATE INDEX bgtasks_running ON bgtasks (runner) WHERE status = 'running';
