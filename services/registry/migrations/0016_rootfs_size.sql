-- The owner keypair's policy's max_rootfs_size (bytes, 0 = the agent's own
-- agent.rootfs_size), taken when the session is created and carried by every
-- CreateKernel of it (CreateKernel.rootfs_size), restarts included.
ALTER TABLE registry.sessions
    ADD COLUMN rootfs_size bigint NOT NULL DEFAULT 0 CHECK (rootfs_size >= 0);
