-- Emails identify users case-insensitively (login matches lower(email)): no
-- two users may differ only in the case of their email. The index also serves
-- that login lookup.
CREATE UNIQUE INDEX users_email_lower ON users (lower(email));
