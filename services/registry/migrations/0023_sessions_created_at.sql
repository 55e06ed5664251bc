-- Session lists page by creation time (GET /v1/sessions: newest first): the
-- page's ids come from this index (offset + limit entries), not from a sort
-- of every session.
CREATE INDEX IF NOT EXISTS sessions_created_at ON registry.sessions (created_at DESC, id);
