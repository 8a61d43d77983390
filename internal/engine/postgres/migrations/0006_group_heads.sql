-- FIFO group heads, and notifications only for queues that have waiters.

-- fifo_groups becomes the table a FIFO receive serves from: a row per group
-- that has messages, with its oldest message (head_seq) and the time from
-- which it can hand one out (ready_ns): the later of its head's visible
-- time and the end of the visibility of what it has in flight. Whatever
-- changes either locks the row first, so that the statements after the
-- lock see what the previous holder did, and sets the row again.
ALTER TABLE fifo_groups ADD COLUMN head_seq int8 NOT NULL DEFAULT 0,
	ADD COLUMN ready_ns int8 NOT NULL DEFAULT 0;
INSERT INTO fifo_groups (queue_id, group_id)
SELECT DISTINCT queue_id, group_id FROM messages WHERE group_id <> ''
ON CONFLICT DO NOTHING;
DELETE FROM fifo_groups g
WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.queue_id = g.queue_id AND m.group_id = g.group_id);
UPDATE fifo_groups g SET head_seq = h.seq, ready_ns = greatest(h.visible_ns, i.vis)
FROM (SELECT DISTINCT ON (queue_id, group_id) queue_id, group_id, seq, visible_ns
	FROM messages WHERE group_id <> '' ORDER BY queue_id, group_id, seq) h
LEFT JOIN (SELECT queue_id, group_id, max(visible_ns) AS vis FROM messages
	WHERE group_id <> '' AND gen > 0 GROUP BY queue_id, group_id) i
	ON i.queue_id = h.queue_id AND i.group_id = h.group_id
WHERE g.queue_id = h.queue_id AND g.group_id = h.group_id;
ALTER TABLE fifo_groups ALTER COLUMN head_seq DROP DEFAULT, ALTER COLUMN ready_ns DROP DEFAULT;
-- "The group with the oldest head that can hand out a message" is the
-- first entry of this index whose ready_ns has come: those before it have
-- a message in flight (or a delayed head), as many as the consumers hold.
CREATE INDEX fifo_groups_head ON fifo_groups (queue_id, head_seq, ready_ns);
-- A group's messages that were received: the end of its in-flight time is
-- the last entry of its part.
CREATE INDEX messages_received ON messages (queue_id, group_id, visible_ns) WHERE group_id <> '' AND gen > 0;

-- The nodes that have long polls waiting on a queue, until when (the
-- database's clock: it is about nodes being alive). Statements that make
-- a message visible notify only queues with a row here.
CREATE TABLE waiters (
	queue_id int8 NOT NULL,
	node     text NOT NULL,
	until    timestamptz NOT NULL,
	PRIMARY KEY (queue_id, node)
);

-- notify_waiters tells the nodes waiting on queue qid that a message is
-- visible from at (ns) on, if any node waits on it. The shared advisory
-- lock, held to the commit, orders it with a node's registration, which
-- takes the lock exclusively: a send either commits before the
-- registration does (the waiter's next look sees its message) or reads
-- the waiters after it (VOLATILE: a snapshot taken after the lock), and
-- notifies.
CREATE FUNCTION notify_waiters(channel text, qid int8, at int8) RETURNS int4
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	PERFORM pg_advisory_xact_lock_shared(hashtextextended(channel, qid));
	IF EXISTS (SELECT 1 FROM waiters w WHERE w.queue_id = qid AND w.until > now()) THEN
		PERFORM pg_notify(channel, qid::text || ':' || at::text);
		RETURN 1;
	END IF;
	RETURN 0;
END
$$;
