-- Idle reclamation (docs/sessions.md, "Idle reclamation"): while an
-- interactive session is RUNNING and its idle_timeout (seconds, the owner
-- keypair's policy's, taken at create) is positive, idle_deadline is when
-- it is reclaimed unless app traffic or an exec happens before then. Set
-- at each RUNNING (tr_set), pushed forward by idle_network.c when activity
-- happened, NULL in every other status: the partial index lists exactly
-- the sessions a check may concern, and the check reads only those due.
ALTER TABLE registry.sessions ADD COLUMN idle_deadline timestamptz;
CREATE INDEX sessions_idle_deadline ON registry.sessions (idle_deadline)
    WHERE idle_deadline IS NOT NULL;
-- Sessions RUNNING at the upgrade count from now.
UPDATE registry.sessions SET idle_deadline = now() + make_interval(secs => idle_timeout)
    WHERE status = 'RUNNING' AND type = 'interactive' AND idle_timeout > 0;
