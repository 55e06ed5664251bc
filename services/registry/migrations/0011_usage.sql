-- Usage accounting (docs/usage.md): the agents' KernelUsage samples
-- (tessera.usage.v1) kept for registry.usage_sample_retention, and per-session
-- totals kept for good. A sample's envelope event id is its key: a message
-- delivered again finds its row and adds nothing to the totals (both are
-- written in one transaction).
CREATE TABLE usage_samples (
    event_id        uuid PRIMARY KEY,
    kernel_id       uuid NOT NULL,
    session_id      uuid NOT NULL,
    agent_id        text NOT NULL DEFAULT '',
    interval_start  timestamptz NOT NULL,
    interval_end    timestamptz NOT NULL CHECK (interval_end >= interval_start),
    cpu_used_ms     bigint NOT NULL DEFAULT 0 CHECK (cpu_used_ms >= 0),
    cpu_cores       double precision NOT NULL DEFAULT 0,
    mem_bytes       bigint NOT NULL DEFAULT 0,
    mem_peak_bytes  bigint NOT NULL DEFAULT 0,
    gpu_util_pct    double precision NOT NULL DEFAULT 0,
    gpu_mem_bytes   bigint NOT NULL DEFAULT 0,
    net_rx_bytes    bigint NOT NULL DEFAULT 0,
    net_tx_bytes    bigint NOT NULL DEFAULT 0,
    -- the kernel's GPU allocation at the time (devices; 1.00 = one device)
    gpu_devices     double precision NOT NULL DEFAULT 0,
    gpu_shares      double precision NOT NULL DEFAULT 0,
    received_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX usage_samples_kernel ON usage_samples (kernel_id, interval_end DESC);
CREATE INDEX usage_samples_end ON usage_samples (interval_end);

-- One row per session: what its kernels used, summed over their samples.
-- Owner, project, domain, group and image are copied from the session, so the
-- totals can be grouped even after the session rows are gone.
CREATE TABLE session_usage (
    session_id      uuid PRIMARY KEY,
    session_name    text NOT NULL DEFAULT '',
    access_key      text NOT NULL DEFAULT '',
    user_id         uuid NOT NULL,
    project_id      uuid,
    group_name      text NOT NULL DEFAULT '',
    domain_name     text NOT NULL DEFAULT '',
    resource_group  text NOT NULL DEFAULT '',
    image           text NOT NULL DEFAULT '',
    cpu_ms          bigint NOT NULL DEFAULT 0,           -- CPU time, all cores
    mem_byte_s      double precision NOT NULL DEFAULT 0, -- memory in use x seconds
    mem_peak_bytes  bigint NOT NULL DEFAULT 0,           -- largest peak of any kernel
    gpu_device_s    double precision NOT NULL DEFAULT 0, -- whole devices allocated x seconds
    gpu_share_s     double precision NOT NULL DEFAULT 0, -- fractional shares (devices) x seconds
    gpu_mem_peak_bytes bigint NOT NULL DEFAULT 0,
    net_rx_bytes    bigint NOT NULL DEFAULT 0,
    net_tx_bytes    bigint NOT NULL DEFAULT 0,
    samples         bigint NOT NULL DEFAULT 0,
    first_sample_at timestamptz NOT NULL,                -- earliest interval start
    last_sample_at  timestamptz NOT NULL,                -- latest interval end
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX session_usage_period ON session_usage (last_sample_at, first_sample_at);
CREATE INDEX session_usage_user ON session_usage (user_id, last_sample_at);
CREATE INDEX session_usage_domain ON session_usage (domain_name, last_sample_at);
