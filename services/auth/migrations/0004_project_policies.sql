-- Project resource policies (issue 7, Backend.AI's project_resource_policies):
-- the limits of a project's vfolders. max_quota_scope_size caps the quota
-- scope project:<id> in tessera-vfolder as the user policy's caps user:<id>.
-- Every project has one; existing projects get 'default' (no limits).

CREATE TABLE IF NOT EXISTS project_resource_policies (
    name                  text PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 64),
    max_vfolder_count     integer NOT NULL DEFAULT 0 CHECK (max_vfolder_count >= 0),       -- 0 = unlimited
    max_quota_scope_size  bigint NOT NULL DEFAULT 0 CHECK (max_quota_scope_size >= 0),     -- bytes, 0 = unlimited
    created_at            timestamptz NOT NULL DEFAULT now()
);

INSERT INTO project_resource_policies (name) VALUES ('default') ON CONFLICT DO NOTHING;

ALTER TABLE projects ADD COLUMN IF NOT EXISTS resource_policy text NOT NULL DEFAULT 'default'
    REFERENCES project_resource_policies(name);
