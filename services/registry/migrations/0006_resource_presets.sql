-- Resource presets: named slot amounts the launcher offers (Backend.AI's
-- resource_presets; GET /v1/resource/presets, /v1/admin/resource-presets,
-- POST /v1/resource/check-presets). resource_slots is a jsonb object of
-- decimal text like the sessions' slots; shared_memory is bytes (NULL: the
-- session's default), never more than the preset's mem.
CREATE TABLE resource_presets (
    name           text PRIMARY KEY,
    resource_slots jsonb NOT NULL CHECK (jsonb_typeof(resource_slots) = 'object'),
    shared_memory  bigint CHECK (shared_memory >= 0),
    created_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT resource_presets_shmem_within_mem CHECK (shared_memory IS NULL
        OR resource_slots->>'mem' IS NULL OR shared_memory <= (resource_slots->>'mem')::numeric)
);

INSERT INTO resource_presets (name, resource_slots, shared_memory) VALUES
    ('cpu1-mem1g', '{"cpu": "1", "mem": "1073741824"}', NULL),
    ('cpu2-mem4g', '{"cpu": "2", "mem": "4294967296"}', NULL),
    ('cpu4-mem8g', '{"cpu": "4", "mem": "8589934592"}', 1073741824),
    ('gpu1', '{"cpu": "4", "mem": "17179869184", "cuda.device": "1"}', 2147483648),
    ('gpu-half', '{"cpu": "2", "mem": "8589934592", "cuda.shares": "0.50"}', 1073741824);
