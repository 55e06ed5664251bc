-- Idle reclamation's settings per scope (docs/sessions.md, "Idle
-- reclamation"): a domain's and a project's idle_timeout (seconds; 0 = no
-- setting) cap the idle timeout of their sessions, the strictest that
-- applies wins. A keypair resource policy's idle_timeout takes Backend.AI's
-- special values: 0 = never idle, -1 = undefined (the resource group's
-- default applies).
ALTER TABLE auth.domains
    ADD COLUMN idle_timeout integer NOT NULL DEFAULT 0 CHECK (idle_timeout >= 0);
ALTER TABLE auth.projects
    ADD COLUMN idle_timeout integer NOT NULL DEFAULT 0 CHECK (idle_timeout >= 0);
ALTER TABLE auth.keypair_resource_policies
    DROP CONSTRAINT IF EXISTS keypair_resource_policies_idle_timeout_check,
    ADD CONSTRAINT keypair_resource_policies_idle_timeout_check CHECK (idle_timeout >= -1);
