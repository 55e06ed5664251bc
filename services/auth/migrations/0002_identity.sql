-- Identity: domains, projects, users, memberships, keypairs, resource policies,
-- and which domains, projects and keypairs may use which resource group.
-- Names follow Backend.AI's where clients see them (domain_name, group = project).

CREATE TABLE keypair_resource_policies (
    name                        text PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 64),
    -- {"cpu": "8", "mem": "32g", "cuda.shares": "2.5"}: decimal text amounts; absent = unlimited
    total_resource_slots        jsonb NOT NULL DEFAULT '{}'::jsonb,
    max_concurrent_sessions     integer NOT NULL DEFAULT 30 CHECK (max_concurrent_sessions >= 0),
    max_containers_per_session  integer NOT NULL DEFAULT 1 CHECK (max_containers_per_session >= 1),
    max_pending_session_count   integer CHECK (max_pending_session_count IS NULL OR max_pending_session_count >= 0),
    max_session_lifetime        integer NOT NULL DEFAULT 0 CHECK (max_session_lifetime >= 0),  -- seconds, 0 = none
    idle_timeout                integer NOT NULL DEFAULT 3600 CHECK (idle_timeout >= 0),       -- seconds, 0 = none
    allowed_vfolder_hosts       jsonb NOT NULL DEFAULT '{}'::jsonb, -- {"host": ["perm", ...]}
    created_at                  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE user_resource_policies (
    name                  text PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 64),
    max_vfolder_count     integer NOT NULL DEFAULT 0 CHECK (max_vfolder_count >= 0),       -- 0 = unlimited
    max_quota_scope_size  bigint NOT NULL DEFAULT 0 CHECK (max_quota_scope_size >= 0),     -- bytes, 0 = unlimited
    created_at            timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE domains (
    name                   text PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 64),
    description            text NOT NULL DEFAULT '',
    is_active              boolean NOT NULL DEFAULT true,
    total_resource_slots   jsonb NOT NULL DEFAULT '{}'::jsonb,
    allowed_vfolder_hosts  jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at             timestamptz NOT NULL DEFAULT now(),
    modified_at            timestamptz NOT NULL DEFAULT now()
);

-- Projects are Backend.AI's "groups".
CREATE TABLE projects (
    id                     uuid PRIMARY KEY,
    name                   text NOT NULL CHECK (length(name) BETWEEN 1 AND 64),
    domain_name            text NOT NULL REFERENCES domains(name),
    description            text NOT NULL DEFAULT '',
    is_active              boolean NOT NULL DEFAULT true,
    total_resource_slots   jsonb NOT NULL DEFAULT '{}'::jsonb,
    allowed_vfolder_hosts  jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at             timestamptz NOT NULL DEFAULT now(),
    modified_at            timestamptz NOT NULL DEFAULT now(),
    UNIQUE (domain_name, name)
);

CREATE TABLE users (
    id               uuid PRIMARY KEY,
    email            text NOT NULL UNIQUE CHECK (length(email) BETWEEN 3 AND 254),
    username         text NOT NULL UNIQUE CHECK (length(username) BETWEEN 1 AND 64),
    full_name        text NOT NULL DEFAULT '',
    description      text NOT NULL DEFAULT '',
    -- argon2id string from libsodium's crypto_pwhash_str (never the password)
    password_hash    text NOT NULL,
    role             text NOT NULL DEFAULT 'user' CHECK (role IN ('superadmin', 'admin', 'user')),
    status           text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'inactive', 'deleted')),
    domain_name      text NOT NULL REFERENCES domains(name),
    resource_policy  text NOT NULL REFERENCES user_resource_policies(name),
    -- login lockout: consecutive failures and until when logins are refused
    failed_logins    integer NOT NULL DEFAULT 0,
    locked_until     timestamptz,
    password_changed_at timestamptz NOT NULL DEFAULT now(),
    created_at       timestamptz NOT NULL DEFAULT now(),
    modified_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX users_domain ON users (domain_name);

CREATE TABLE project_members (
    project_id  uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    user_id     uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    added_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, user_id)
);
CREATE INDEX project_members_user ON project_members (user_id);

CREATE TABLE keypairs (
    access_key       text PRIMARY KEY CHECK (access_key ~ '^[A-Z0-9]{20}$'),
    secret_key       text NOT NULL CHECK (length(secret_key) = 40),
    user_id          uuid NOT NULL REFERENCES users(id),
    is_active        boolean NOT NULL DEFAULT true,
    is_admin         boolean NOT NULL DEFAULT false,
    resource_policy  text NOT NULL REFERENCES keypair_resource_policies(name),
    rate_limit       integer NOT NULL DEFAULT 1000 CHECK (rate_limit >= 0),  -- requests per minute, 0 = none
    created_at       timestamptz NOT NULL DEFAULT now(),
    last_used        timestamptz,
    revoked_at       timestamptz
);
CREATE INDEX keypairs_user ON keypairs (user_id);

-- Who may use which resource group (the groups themselves live in tessera-registry).
CREATE TABLE resource_group_access (
    resource_group  text NOT NULL CHECK (length(resource_group) BETWEEN 1 AND 64),
    scope_type      text NOT NULL CHECK (scope_type IN ('domain', 'project', 'keypair')),
    scope_id        text NOT NULL,  -- domain name, project id, or access key
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (resource_group, scope_type, scope_id)
);
CREATE INDEX resource_group_access_scope ON resource_group_access (scope_type, scope_id);
