-- Usage accounting, continued (docs/usage.md): GPU time, ms, the kernels'
-- devices together: the cuda-shim's estimate of what its launches took
-- (KernelUsage.gpu_busy_ms), counted only while a compute share < 1 limits
-- the kernel. 0 for samples and sessions without it.
ALTER TABLE usage_samples
    ADD COLUMN gpu_busy_ms bigint NOT NULL DEFAULT 0;

ALTER TABLE session_usage
    ADD COLUMN gpu_busy_ms bigint NOT NULL DEFAULT 0;
