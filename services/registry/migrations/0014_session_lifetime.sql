-- The owner keypair's policy's max_session_lifetime (seconds, 0 = none),
-- taken when the session is created: session_lifetime.c ends a session that
-- has run longer than that since it first became RUNNING.
ALTER TABLE registry.sessions
    ADD COLUMN max_lifetime integer NOT NULL DEFAULT 0 CHECK (max_lifetime >= 0);
