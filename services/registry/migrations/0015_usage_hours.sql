-- Usage accounting, continued (docs/usage.md): what each session used per
-- UTC hour in which it was measured, kept for good. Each sample is split over
-- the hours its interval covers as it is stored (usage_calc.h
-- usage_split_sample), in the same transaction as its row and the session's
-- totals, so a message delivered again adds nothing here either; the wall time
-- per phase is split over the hours of the status history when the session
-- ends. A period's figures are the sums of its hours: a day's usage is what
-- was used on that day, also after the samples are pruned.
CREATE TABLE session_usage_hours (
    session_id          uuid NOT NULL REFERENCES session_usage (session_id) ON DELETE CASCADE,
    hour                timestamptz NOT NULL
                        CHECK (extract(epoch FROM hour) = floor(extract(epoch FROM hour) / 3600) * 3600),
    cpu_ms              bigint NOT NULL DEFAULT 0,
    mem_byte_s          double precision NOT NULL DEFAULT 0,
    mem_peak_bytes      bigint NOT NULL DEFAULT 0,   -- the largest peak of a sample in the hour
    gpu_device_s        double precision NOT NULL DEFAULT 0,
    gpu_share_s         double precision NOT NULL DEFAULT 0,
    gpu_mem_peak_bytes  bigint NOT NULL DEFAULT 0,
    gpu_busy_ms         bigint NOT NULL DEFAULT 0,
    net_rx_bytes        bigint NOT NULL DEFAULT 0,
    net_tx_bytes        bigint NOT NULL DEFAULT 0,
    io_read_bytes       bigint NOT NULL DEFAULT 0,
    io_write_bytes      bigint NOT NULL DEFAULT 0,
    samples             bigint NOT NULL DEFAULT 0,   -- samples that ended in the hour
    pending_s           double precision NOT NULL DEFAULT 0,
    preparing_s         double precision NOT NULL DEFAULT 0,
    running_s           double precision NOT NULL DEFAULT 0,
    terminating_s       double precision NOT NULL DEFAULT 0,
    other_s             double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, hour)
);
CREATE INDEX session_usage_hours_hour ON session_usage_hours (hour);

-- Sessions stored before this migration have only their totals: they are
-- spread over the hours from their first sample to their last in proportion
-- to the time (integers split so that the hours add up to the totals), peaks
-- in every hour, the samples in the last one. That is the best that can be
-- had from the totals; everything stored since is split by its samples.
WITH s AS (
    SELECT u.*, floor(extract(epoch FROM u.first_sample_at) * 1000) AS f,
           floor(extract(epoch FROM u.last_sample_at) * 1000) AS l
    FROM session_usage u
), h AS (
    SELECT s.*, hs, greatest(s.f, hs) - s.f AS lo, least(s.l, hs + 3600000) - s.f AS hi,
           s.l - s.f AS len
    FROM s CROSS JOIN LATERAL
         generate_series(floor(s.f / 3600000) * 3600000, greatest(s.l - 1, s.f), 3600000) AS hs
)
INSERT INTO session_usage_hours (session_id, hour, cpu_ms, mem_byte_s, mem_peak_bytes,
    gpu_device_s, gpu_share_s, gpu_mem_peak_bytes, gpu_busy_ms, net_rx_bytes, net_tx_bytes,
    io_read_bytes, io_write_bytes, samples, pending_s, preparing_s, running_s, terminating_s,
    other_s)
SELECT session_id, to_timestamp(hs / 1000),
    CASE WHEN len > 0 THEN floor(cpu_ms * hi / len) - floor(cpu_ms * lo / len) ELSE cpu_ms END,
    CASE WHEN len > 0 THEN mem_byte_s * (hi - lo) / len ELSE mem_byte_s END,
    mem_peak_bytes,
    CASE WHEN len > 0 THEN gpu_device_s * (hi - lo) / len ELSE gpu_device_s END,
    CASE WHEN len > 0 THEN gpu_share_s * (hi - lo) / len ELSE gpu_share_s END,
    gpu_mem_peak_bytes,
    CASE WHEN len > 0 THEN floor(gpu_busy_ms * hi / len) - floor(gpu_busy_ms * lo / len) ELSE gpu_busy_ms END,
    CASE WHEN len > 0 THEN floor(net_rx_bytes * hi / len) - floor(net_rx_bytes * lo / len) ELSE net_rx_bytes END,
    CASE WHEN len > 0 THEN floor(net_tx_bytes * hi / len) - floor(net_tx_bytes * lo / len) ELSE net_tx_bytes END,
    CASE WHEN len > 0 THEN floor(io_read_bytes * hi / len) - floor(io_read_bytes * lo / len) ELSE io_read_bytes END,
    CASE WHEN len > 0 THEN floor(io_write_bytes * hi / len) - floor(io_write_bytes * lo / len) ELSE io_write_bytes END,
    CASE WHEN hs + 3600000 >= l THEN samples ELSE 0 END,
    CASE WHEN len > 0 THEN pending_s * (hi - lo) / len ELSE pending_s END,
    CASE WHEN len > 0 THEN preparing_s * (hi - lo) / len ELSE preparing_s END,
    CASE WHEN len > 0 THEN running_s * (hi - lo) / len ELSE running_s END,
    CASE WHEN len > 0 THEN terminating_s * (hi - lo) / len ELSE terminating_s END,
    CASE WHEN len > 0 THEN other_s * (hi - lo) / len ELSE other_s END
FROM h;
