-- Backend.AI's configuration store (/config/get|set|delete), each key family
-- kept where its meaning lives:
--   config/docker/registry/<name>   container_registries (scanned, pulled from)
--   images/<reg>/<name>/<tag>/...   images.max_slots and images.label_overrides
--   config/<anything else>          settings (a store that clients share)
CREATE TABLE container_registries (
    hostname   text PRIMARY KEY CHECK (length(hostname) BETWEEN 1 AND 255),
    url        text NOT NULL CHECK (url ~ '^https?://'),
    type       text NOT NULL DEFAULT 'docker' CHECK (type IN ('docker', 'harbor', 'harbor2')),
    project    text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE settings (
    key        text PRIMARY KEY CHECK (length(key) BETWEEN 1 AND 255),
    value      text NOT NULL CHECK (octet_length(value) <= 65536),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- {"cpu": "4", "mem": "8589934592"}: a session may not ask for more per kernel.
ALTER TABLE images ADD COLUMN max_slots jsonb NOT NULL DEFAULT '{}'::jsonb;
-- Labels set through the config store; they win over the image's own labels
-- (kept in labels, as scanned) and survive a rescan.
ALTER TABLE images ADD COLUMN label_overrides jsonb NOT NULL DEFAULT '{}'::jsonb;
