-- Files written into a session's home directory when its kernels are
-- created (CreateKernel.home_files): the owner keypair's dotfiles and its
-- SSH public key as .ssh/authorized_keys, taken when the session is created.
-- [{"path", "mode", "data"}].
ALTER TABLE registry.sessions
    ADD COLUMN home_files jsonb NOT NULL DEFAULT '[]'::jsonb
    CHECK (jsonb_typeof(home_files) = 'array');
