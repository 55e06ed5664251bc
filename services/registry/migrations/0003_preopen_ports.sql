-- Ports the user asks to publish at creation (config.preopen_ports): carried
-- in every CreateKernel; the agent publishes them as "preopen" service ports.
ALTER TABLE sessions ADD COLUMN preopen_ports jsonb NOT NULL DEFAULT '[]'::jsonb;
