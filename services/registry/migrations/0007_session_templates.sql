-- Session templates (Backend.AI's session_templates, type task): a session's
-- image, type, resources, environment, mounts and commands kept under a name,
-- launched with POST /v1/sessions/_/create-from-template. The registry owns no
-- users: the owner's id, keypair and email, and the project's name, are kept
-- as they were at creation (as registry.sessions keeps group_name).
CREATE TABLE session_templates (
    id           uuid PRIMARY KEY,
    created_at   timestamptz NOT NULL DEFAULT now(),
    domain_name  text NOT NULL,
    project_id   uuid,
    project_name text,
    user_id      uuid NOT NULL,
    user_email   text,
    access_key   text NOT NULL,
    type         text NOT NULL DEFAULT 'task' CHECK (type = 'task'),
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 128),
    template     jsonb NOT NULL CHECK (jsonb_typeof(template) = 'object')
);

CREATE INDEX session_templates_user ON session_templates (user_id, created_at);
CREATE INDEX session_templates_domain ON session_templates (domain_name, created_at);
