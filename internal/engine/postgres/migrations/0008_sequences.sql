-- SNS FIFO topics' sequences (engine.Sequencer): every node publishing to
-- a topic numbers and deduplicates through these rows, so that the topic
-- acts as one.

-- A sequence's last number (microsecond stamp times 10^6 plus a counter:
-- 22 digits, beyond int8). A publish updates the row first, so that the
-- publishes of one topic take their numbers one after the other.
CREATE TABLE sequences (
    name text PRIMARY KEY,
    last numeric NOT NULL
);

-- Deduplication keys, for DeduplicationWindow from the claim that took
-- the key: what a duplicate is answered with.
CREATE TABLE sequence_keys (
    name       text NOT NULL,
    key        text NOT NULL,
    message_id text NOT NULL,
    number     numeric NOT NULL,
    expires_ns int8 NOT NULL,
    PRIMARY KEY (name, key)
);
-- The janitor sweeps expired keys from the oldest.
CREATE INDEX sequence_keys_expires ON sequence_keys (expires_ns);
-- Every publish inserts a key, and every key expires: vacuumed as the
-- FIFO queues' keys are (0007).
ALTER TABLE sequence_keys SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);
