-- tessera-registry: resource groups, agents, images, sessions, kernels and
-- the status history (docs/sessions.md). Slot amounts are jsonb objects of
-- decimal text: {"cpu": "2", "mem": "4294967296", "cuda.shares": "0.50"}.

CREATE TABLE resource_groups (
    name                   text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
    description            text NOT NULL DEFAULT '',
    is_active              boolean NOT NULL DEFAULT true,
    scheduler              text NOT NULL DEFAULT 'fifo' CHECK (scheduler IN ('fifo', 'lifo', 'drf')),
    agent_selector         text NOT NULL DEFAULT 'concentrated'
                           CHECK (agent_selector IN ('concentrated', 'dispersed', 'roundrobin')),
    allowed_session_types  text[] NOT NULL DEFAULT '{interactive,batch,inference}'
                           CHECK (allowed_session_types <@ '{interactive,batch,inference}'),
    pending_timeout        integer NOT NULL DEFAULT 0 CHECK (pending_timeout >= 0), -- seconds, 0 = none
    created_at             timestamptz NOT NULL DEFAULT now(),
    modified_at            timestamptz NOT NULL DEFAULT now()
);
INSERT INTO resource_groups (name, description) VALUES ('default', 'created at the first start');

CREATE TABLE agents (
    id               text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$'),
    resource_group   text NOT NULL,
    architecture     text NOT NULL DEFAULT '',
    addr             text NOT NULL DEFAULT '',
    slots            jsonb NOT NULL DEFAULT '{}'::jsonb,
    -- [{"device_id", "slot_name", "model", "memory_bytes", "capacity", "shares_capacity", "mock"}]
    devices          jsonb NOT NULL DEFAULT '[]'::jsonb,
    status           text NOT NULL DEFAULT 'ALIVE' CHECK (status IN ('ALIVE', 'LOST', 'TERMINATED')),
    status_info      text NOT NULL DEFAULT '',
    status_changed_at timestamptz NOT NULL DEFAULT now(),
    last_heartbeat   timestamptz NOT NULL DEFAULT now(),
    first_contact    timestamptz NOT NULL DEFAULT now(),
    version          text NOT NULL DEFAULT '',
    hostname         text NOT NULL DEFAULT '',
    runtime          text NOT NULL DEFAULT ''
);
CREATE INDEX agents_group ON agents (resource_group, status);

CREATE TABLE images (
    reference      text PRIMARY KEY CHECK (length(reference) BETWEEN 1 AND 512),
    digest         text NOT NULL DEFAULT '',
    architecture   text NOT NULL DEFAULT 'x86_64',
    labels         jsonb NOT NULL DEFAULT '{}'::jsonb,
    -- [{"name", "protocol", "container_port"}] from ai.backend.service-ports
    service_ports  jsonb NOT NULL DEFAULT '[]'::jsonb,
    -- {"cpu": "1", "mem": "268435456"} from ai.backend.resource.min.*
    min_slots      jsonb NOT NULL DEFAULT '{}'::jsonb,
    runtime_type   text NOT NULL DEFAULT '',
    runtime_path   text NOT NULL DEFAULT '',
    command        jsonb NOT NULL DEFAULT '[]'::jsonb, -- the image's Entrypoint + Cmd
    source         text NOT NULL DEFAULT 'oci' CHECK (source IN ('oci', 'manual')),
    registered_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE sessions (
    id                uuid PRIMARY KEY,
    name              text NOT NULL,
    access_key        text NOT NULL,
    user_id           uuid NOT NULL,
    project_id        uuid,
    group_name        text NOT NULL DEFAULT '',
    domain_name       text NOT NULL,
    type              text NOT NULL CHECK (type IN ('interactive', 'batch', 'inference')),
    image             text NOT NULL,
    architecture      text NOT NULL DEFAULT '',
    resource_group    text NOT NULL,
    status            text NOT NULL CHECK (status IN ('PENDING', 'SCHEDULED', 'PREPARING', 'PULLING',
                          'RUNNING', 'RESTARTING', 'TERMINATING', 'TERMINATED', 'CANCELLED', 'ERROR')),
    status_info       text NOT NULL DEFAULT '',
    status_changed_at timestamptz NOT NULL DEFAULT now(),
    created_at        timestamptz NOT NULL DEFAULT now(),
    terminated_at     timestamptz,
    starts_at         timestamptz,
    priority          integer NOT NULL DEFAULT 0,
    cluster_size      integer NOT NULL DEFAULT 1 CHECK (cluster_size >= 1),
    cluster_mode      text NOT NULL DEFAULT 'single-node' CHECK (cluster_mode IN ('single-node', 'multi-node')),
    requested_slots   jsonb NOT NULL DEFAULT '{}'::jsonb, -- per kernel
    occupied_slots    jsonb NOT NULL DEFAULT '{}'::jsonb, -- all kernels, while held
    resource_opts     jsonb NOT NULL DEFAULT '{}'::jsonb,
    mounts            jsonb NOT NULL DEFAULT '[]'::jsonb,
    environ           jsonb NOT NULL DEFAULT '{}'::jsonb,
    startup_command   text NOT NULL DEFAULT '',
    bootstrap_script  text NOT NULL DEFAULT '',
    result            text NOT NULL DEFAULT 'UNDEFINED' CHECK (result IN ('SUCCESS', 'FAILURE', 'UNDEFINED')),
    exit_code         integer,
    idle_timeout      integer NOT NULL DEFAULT 0,
    -- the owner's limits at create time, as SessionEnqueued carries them:
    -- [{"scope", "id", "max_concurrent_sessions", "max_pending_sessions", "max_slots"}]
    limits            jsonb NOT NULL DEFAULT '[]'::jsonb,
    -- SessionEnqueued was handed to the producer (else the housekeeping retries)
    enqueue_published boolean NOT NULL DEFAULT false
);
-- Names are unique per owner among live sessions.
CREATE UNIQUE INDEX sessions_live_name ON sessions (access_key, name)
    WHERE status NOT IN ('TERMINATED', 'CANCELLED', 'ERROR');
CREATE INDEX sessions_owner ON sessions (access_key, created_at);
CREATE INDEX sessions_status ON sessions (status) WHERE status NOT IN ('TERMINATED', 'CANCELLED', 'ERROR');

CREATE TABLE kernels (
    id                uuid PRIMARY KEY,
    session_id        uuid NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    cluster_role      text NOT NULL DEFAULT 'main' CHECK (cluster_role IN ('main', 'sub')),
    cluster_idx       integer NOT NULL DEFAULT 0,
    agent_id          text,
    status            text NOT NULL,
    status_info       text NOT NULL DEFAULT '',
    status_changed_at timestamptz NOT NULL DEFAULT now(),
    slots             jsonb NOT NULL DEFAULT '{}'::jsonb,
    -- [{"device_id", "slot_name", "amount"}] as placed by the scheduler
    devices           jsonb NOT NULL DEFAULT '[]'::jsonb,
    image_digest      text NOT NULL DEFAULT '',
    container_id      text NOT NULL DEFAULT '',
    kernel_host       text NOT NULL DEFAULT '',
    service_ports     jsonb NOT NULL DEFAULT '[]'::jsonb,
    exit_code         integer,
    holds_slots       boolean NOT NULL DEFAULT false,
    created_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (session_id, cluster_idx)
);
CREATE INDEX kernels_agent ON kernels (agent_id) WHERE holds_slots;
CREATE INDEX kernels_holding ON kernels (session_id) WHERE holds_slots;

CREATE TABLE session_status_history (
    id          bigserial PRIMARY KEY,
    session_id  uuid NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    status      text NOT NULL,
    reason      text NOT NULL DEFAULT '',
    at          timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX session_status_history_session ON session_status_history (session_id, id);
