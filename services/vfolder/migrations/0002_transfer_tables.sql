-- Transfers (docs/vfolders.md "Files and transfer"): the shared token secret
-- (generated at first start unless vfolder.token_secret is set) and the tus
-- uploads. These tables were created by the service's code before they got
-- their migration: IF NOT EXISTS keeps existing databases as they are.

CREATE TABLE IF NOT EXISTS transfer_secrets (
    name       text PRIMARY KEY,
    secret     text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS uploads (
    id          uuid PRIMARY KEY,
    vfolder_id  uuid NOT NULL,
    host        text NOT NULL,
    path        text NOT NULL,
    size        bigint NOT NULL CHECK (size >= 0),
    user_id     uuid NOT NULL,
    status      text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'done', 'aborted')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    finished_at timestamptz
);

CREATE INDEX IF NOT EXISTS uploads_open ON uploads (expires_at) WHERE status = 'open';
