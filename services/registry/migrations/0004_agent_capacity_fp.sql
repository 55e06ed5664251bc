-- A fingerprint of the capacity (slots and devices) the agent last reported,
-- as the registry stored it. A heartbeat carrying the same capacity for an
-- ALIVE agent only moves last_heartbeat (batched, no Redis write).
ALTER TABLE agents ADD COLUMN capacity_fp bigint;
