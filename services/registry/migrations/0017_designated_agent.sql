-- The agent a superadmin designated at create (Backend.AI's agentList):
-- every kernel of the session goes there; NULL: the scheduler chooses.
-- Carried in SessionEnqueued.designated_agent.
ALTER TABLE registry.sessions ADD COLUMN designated_agent text;
