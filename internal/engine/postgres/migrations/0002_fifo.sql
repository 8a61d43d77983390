-- FIFO queues.

-- A FIFO message's group ('' on standard queues, whose group ids only tag
-- the body).
ALTER TABLE messages ADD COLUMN group_id text NOT NULL DEFAULT '';
CREATE INDEX messages_group ON messages (queue_id, group_id, seq) WHERE group_id <> '';

-- One row per message group: a receive locks the groups it takes from
-- (FOR UPDATE SKIP LOCKED) before it looks at their messages, so that two
-- receives, on any nodes, never take from one group at once. A row may be
-- missing (sends create them, deletes drop them once their group looks
-- empty); a receive creates the missing ones before it locks.
CREATE TABLE fifo_groups (
    queue_id int8 NOT NULL,
    group_id text NOT NULL,
    PRIMARY KEY (queue_id, group_id)
);

-- Deduplication keys, for DeduplicationWindow from the first send: the
-- key is the deduplication id, prefixed by the group in the messageGroup
-- scope.
CREATE TABLE fifo_dedup (
    queue_id   int8 NOT NULL,
    key        text NOT NULL,
    message_id text NOT NULL,
    seq        int8 NOT NULL,
    sent_ns    int8 NOT NULL,
    PRIMARY KEY (queue_id, key)
);

-- Receive attempts (ReceiveRequestAttemptId): what a receive handed out,
-- for a retry within DeduplicationWindow to hand out again.
CREATE TABLE fifo_attempts (
    queue_id   int8 NOT NULL,
    attempt_id text NOT NULL,
    created_ns int8 NOT NULL,
    seqs       int8[] NOT NULL,
    gens       int4[] NOT NULL,
    PRIMARY KEY (queue_id, attempt_id)
);
-- Expired keys are swept from the oldest.
CREATE INDEX fifo_dedup_sent ON fifo_dedup (queue_id, sent_ns);
