-- Move tasks (the dead-letter redrive API).

CREATE TABLE move_tasks (
    n               int8 GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id              text NOT NULL UNIQUE,
    source_queue_id int8 NOT NULL,
    source_account  text NOT NULL,
    source_name     text NOT NULL,
    source_arn      text NOT NULL,
    destination_arn text NOT NULL,
    max_per_second  int4 NOT NULL,
    status          text NOT NULL,
    to_move         int8 NOT NULL,
    moved           int8 NOT NULL DEFAULT 0,
    started_ns      int8 NOT NULL,
    failure         text NOT NULL DEFAULT '',
    -- The node running the task, until when (the database's clock: a
    -- lease is about nodes being alive, not broker time). Another node
    -- takes the task over once the lease has run out.
    lease_owner     text NOT NULL DEFAULT '',
    lease_until     timestamptz
);
CREATE INDEX move_tasks_source ON move_tasks (source_queue_id, n);
CREATE INDEX move_tasks_active ON move_tasks (source_account) WHERE status IN ('RUNNING', 'CANCELLING');

-- Move tasks find their destinations by ARN.
CREATE INDEX queues_arn ON queues (arn) WHERE deleted_ns IS NULL;
