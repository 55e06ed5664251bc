-- Per-keypair user configuration (issue 20, Backend.AI's keypairs.dotfiles,
-- bootstrap_script, ssh_public_key and ssh_private_key columns): what a
-- session of that access key starts with. A table of its own so that the
-- credential lookups on keypairs stay narrow; a row exists once something was
-- set and goes with its keypair.
CREATE TABLE IF NOT EXISTS keypair_configs (
    access_key        text PRIMARY KEY REFERENCES keypairs(access_key) ON DELETE CASCADE,
    -- run in a new session of this keypair that brings no script of its own
    bootstrap_script  text NOT NULL DEFAULT '' CHECK (octet_length(bootstrap_script) <= 65536),
    -- [{"path": ".bashrc", "perm": "644", "data": "..."}], at most 100 entries
    dotfiles          jsonb NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(dotfiles) = 'array'),
    -- OpenSSH formats; NULL until generated or uploaded
    ssh_public_key    text,
    ssh_private_key   text,
    modified_at       timestamptz NOT NULL DEFAULT now()
);

-- The platform's announcement (Backend.AI's /manager/announcement): one row.
CREATE TABLE IF NOT EXISTS announcement (
    id           boolean PRIMARY KEY DEFAULT true CHECK (id),
    enabled      boolean NOT NULL DEFAULT false,
    message      text NOT NULL DEFAULT '' CHECK (octet_length(message) <= 8192),
    modified_by  uuid,
    modified_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO announcement (id) VALUES (true) ON CONFLICT DO NOTHING;
