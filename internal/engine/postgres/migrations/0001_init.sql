-- Ferry's first schema. Every time is an int8 of nanoseconds since the Unix
-- epoch, stamped by the nodes' clock (never now()), so that a test clock
-- drives visibility, delays, retention and the recreate and purge delays.

-- A deleted queue keeps its row (deleted_ns set) for RecreateDelay: its
-- name stays reserved, and ids are never reused, so a receipt handle of
-- the old queue never reaches the new one.
CREATE TABLE queues (
    id              int8 GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account         text NOT NULL,
    name            text NOT NULL,
    arn             text NOT NULL,
    attributes      jsonb NOT NULL,
    tags            jsonb NOT NULL,
    created_ns      int8 NOT NULL,
    modified_ns     int8 NOT NULL,
    last_purge_ns   int8 NOT NULL DEFAULT 0,
    deleted_ns      int8,
    -- engine.QueueSettings, as columns because the message statements read them.
    visibility_ns   int8 NOT NULL,
    delay_ns        int8 NOT NULL,
    retention_ns    int8 NOT NULL,
    receive_wait_ns int8 NOT NULL,
    maximum_size    int4 NOT NULL,
    fifo            bool NOT NULL,
    dedup_scope     text NOT NULL,
    -- redrive_max is 0 when the queue has no redrive policy.
    redrive_account text NOT NULL,
    redrive_name    text NOT NULL,
    redrive_max     int4 NOT NULL
);
CREATE UNIQUE INDEX queues_live ON queues (account, name) WHERE deleted_ns IS NULL;
CREATE INDEX queues_deleted ON queues (account, name, deleted_ns) WHERE deleted_ns IS NOT NULL;

-- One sequence numbers every message state and body: the order of sends,
-- FIFO sequence numbers, and ids that are never reused.
CREATE SEQUENCE message_seq;

-- A message's content, written once and deleted once. A redrive moves the
-- state row to the dead-letter queue and leaves the body where it is.
CREATE TABLE message_bodies (
    id           int8 PRIMARY KEY,
    -- bytea: an SQS body may hold U+0000, which text cannot.
    body         bytea NOT NULL,
    attributes   bytea,
    trace_header text NOT NULL,
    group_id     text NOT NULL,
    sender_id    text NOT NULL,
    md5_body     text NOT NULL,
    md5_attrs    text NOT NULL,
    md5_sys      text NOT NULL
);

-- A message's state in its queue: the narrow row that receives update.
CREATE TABLE messages (
    queue_id         int8 NOT NULL,
    seq              int8 NOT NULL,
    body_id          int8 NOT NULL,
    message_id       text NOT NULL,
    -- sent_ns is SentAt, from which retention counts; entered_ns is when
    -- the message entered this queue (Stats.OldestAt).
    sent_ns          int8 NOT NULL,
    entered_ns       int8 NOT NULL,
    visible_ns       int8 NOT NULL,
    -- receive_count counts every receive, also in a queue the message was
    -- redriven from; gen counts the receives in this queue and is the
    -- receipt handle's generation (0: never received here).
    receive_count    int4 NOT NULL DEFAULT 0,
    gen              int4 NOT NULL DEFAULT 0,
    first_receive_ns int8 NOT NULL DEFAULT 0,
    received_ns      int8 NOT NULL DEFAULT 0,
    dedup_id         text NOT NULL DEFAULT '',
    dlq_source_arn   text NOT NULL DEFAULT '',
    PRIMARY KEY (queue_id, seq)
);
-- "Next visible in this queue" is the head of this index.
CREATE INDEX messages_next ON messages (queue_id, visible_ns, seq);
-- Retention deletes from the head of this one.
CREATE INDEX messages_expiry ON messages (queue_id, sent_ns);

-- Secrets every node shares (the receipt-handle key).
CREATE TABLE secrets (
    name  text PRIMARY KEY,
    value bytea NOT NULL
);

-- Small documents other services keep (engine.RecordStore).
CREATE TABLE records (
    kind  text NOT NULL,
    key   text NOT NULL,
    value bytea NOT NULL,
    PRIMARY KEY (kind, key)
);

-- One-minute datapoints (engine.MetricStore).
CREATE TABLE metric_points (
    minute    int8 NOT NULL,
    namespace text NOT NULL,
    metric    text NOT NULL,
    dim_name  text NOT NULL,
    dim_value text NOT NULL,
    sum       float8 NOT NULL,
    count     float8 NOT NULL,
    min       float8 NOT NULL,
    max       float8 NOT NULL,
    PRIMARY KEY (minute, namespace, metric, dim_name, dim_value)
);
