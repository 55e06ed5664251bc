-- Cluster sessions (docs/sessions.md, "Cluster sessions").
-- A session of several kernels has a network of its own between them, with
-- an id (the VXLAN network identifier, 1 to 16777215) unique among the live
-- sessions, and an SSH keypair its kernels share (OpenSSH format; the
-- private key is the session's secret: no API answer shows it). Both are
-- made when the session is created and carried by every CreateKernel
-- (CreateKernel.cluster), restarts included. NULL for a session of one
-- kernel.
CREATE SEQUENCE registry.cluster_vni_seq AS integer MINVALUE 1 MAXVALUE 16777215 CYCLE;
ALTER TABLE registry.sessions
    ADD COLUMN cluster_vni integer CHECK (cluster_vni BETWEEN 1 AND 16777215),
    ADD COLUMN cluster_ssh_public text,
    ADD COLUMN cluster_ssh_private text;
CREATE UNIQUE INDEX sessions_live_cluster_vni ON registry.sessions (cluster_vni)
    WHERE cluster_vni IS NOT NULL AND status NOT IN ('TERMINATED', 'CANCELLED', 'ERROR');
-- The agent one kernel must go to (a superadmin's agentList with one agent
-- per kernel of a multi-node session); NULL: the session's designated
-- agent, else the scheduler's choice. Carried in
-- SessionEnqueued.KernelRequest.designated_agent.
ALTER TABLE registry.kernels ADD COLUMN designated_agent text;
