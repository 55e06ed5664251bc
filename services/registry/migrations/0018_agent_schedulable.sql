-- Whether the scheduler may place new kernels on the agent (Backend.AI's
-- agents.schedulable): false while a superadmin drains it
-- (POST /v1/admin/agents/{id}/drain); its running kernels are untouched.
-- Independent of status: a drained agent that is lost and comes back is
-- still drained.
ALTER TABLE registry.agents ADD COLUMN schedulable boolean NOT NULL DEFAULT true;
