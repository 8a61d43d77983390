-- How many messages each queue holds, as deltas that sum to it: a statement
-- that inserts or deletes messages appends one row a queue it touched, so
-- that no single row per queue is hot, and Stats reads the sum instead of
-- counting the queue. The janitor folds each queue's rows into one.
CREATE TABLE message_counts (
	queue_id int8 NOT NULL,
	delta    int8 NOT NULL
) WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);
CREATE INDEX message_counts_queue ON message_counts (queue_id);

INSERT INTO message_counts (queue_id, delta) SELECT queue_id, count(*) FROM messages GROUP BY queue_id;

-- Each statement that inserts messages counts them itself (countInserted).
-- Deletes, which many statements do, are counted by a statement trigger
-- with a transition table: one count row per queue a statement. A rotation
-- moves rows by UPDATE, which fires no DELETE trigger, and truncates only
-- an empty slot. The function names the schema, whatever the search_path
-- of the session.
DO $do$ BEGIN
	EXECUTE format($f$CREATE FUNCTION count_deleted_messages() RETURNS trigger LANGUAGE plpgsql AS %L$f$,
		format('BEGIN INSERT INTO %I.message_counts (queue_id, delta) SELECT queue_id, -count(*) FROM deleted GROUP BY queue_id; RETURN NULL; END',
			current_schema()));
END $do$;
CREATE TRIGGER messages_deleted AFTER DELETE ON messages REFERENCING OLD TABLE AS deleted
	FOR EACH STATEMENT EXECUTE FUNCTION count_deleted_messages();
