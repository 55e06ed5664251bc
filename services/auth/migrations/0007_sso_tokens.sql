-- Single sign-on tokens already used (sso_login.c): a token's jti is kept
-- until a minute after it expires, so that a token logs in once.
CREATE TABLE auth.sso_used_tokens (
    jti        text PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
CREATE INDEX sso_used_tokens_expiry ON auth.sso_used_tokens (expires_at);
