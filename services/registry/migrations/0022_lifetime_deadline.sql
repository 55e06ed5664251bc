-- The session lifetime (session_lifetime.h) through a durable deadline, as
-- idle reclamation's (0020): lifetime_deadline is the first RUNNING +
-- max_lifetime, set by the status change to RUNNING when still NULL (a
-- restart keeps it), NULL once the session ended. The sweep and the
-- session's view read it instead of the status history.
ALTER TABLE registry.sessions ADD COLUMN lifetime_deadline timestamptz;
CREATE INDEX sessions_lifetime_deadline ON registry.sessions (lifetime_deadline)
    WHERE lifetime_deadline IS NOT NULL;
-- Live sessions that have run: their first RUNNING + max_lifetime.
UPDATE registry.sessions s SET lifetime_deadline = h.first + make_interval(secs => s.max_lifetime)
    FROM (SELECT session_id, min(at) AS first FROM registry.session_status_history
          WHERE status = 'RUNNING' GROUP BY session_id) h
    WHERE h.session_id = s.id AND s.max_lifetime > 0
      AND s.status NOT IN ('TERMINATED', 'CANCELLED', 'ERROR');
