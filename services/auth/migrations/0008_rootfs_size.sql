-- The most a kernel of a keypair under this policy may write on its node, in
-- bytes: its root file system's changes and /home/work (vfolders aside).
-- 0: the agent's own limit (agent.rootfs_size). The registry takes it when
-- a session is created (docs/sessions.md, "Disk size").
ALTER TABLE auth.keypair_resource_policies
    ADD COLUMN max_rootfs_size bigint NOT NULL DEFAULT 0
        CHECK (max_rootfs_size = 0 OR max_rootfs_size >= 16777216);
