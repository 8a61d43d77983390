-- Generations of messages and message_bodies, so that what a long
-- transaction keeps vacuum from reclaiming is freed by TRUNCATE instead.
--
-- Both tables become list partitions on slot (0 or 1). message_slots says
-- which slot is current: every insert goes there (the column's default).
-- A rotation (rotation.go) moves the rows of the other slot into the
-- current one, keeping their keys, empties the other slot by TRUNCATE and
-- makes it current. The existing tables become slot 0, their rows and
-- indexes kept; only the primary keys, which must now hold slot, are built
-- again.

CREATE TABLE message_slots (
	one        bool PRIMARY KEY DEFAULT true CHECK (one),
	slot       int2 NOT NULL CHECK (slot IN (0, 1)),
	-- Rotations done, and when the last one was (the database's clock: it
	-- is about vacuum, not broker time).
	rotations  int8 NOT NULL DEFAULT 0,
	rotated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO message_slots (slot) VALUES (0);

-- The slot inserts go to, whatever the search_path of the session.
DO $do$ BEGIN
	EXECUTE format('CREATE FUNCTION current_slot() RETURNS int2 LANGUAGE sql STABLE AS %L',
		format('SELECT slot FROM %I.message_slots', current_schema()));
END $do$;

ALTER TABLE messages ADD COLUMN slot int2 NOT NULL DEFAULT 0;
ALTER TABLE messages RENAME TO messages_0;
ALTER TABLE messages_0 DROP CONSTRAINT messages_pkey;
ALTER INDEX messages_next RENAME TO messages_0_next;
ALTER INDEX messages_expiry RENAME TO messages_0_expiry;
ALTER INDEX messages_group RENAME TO messages_0_group;
ALTER INDEX messages_received RENAME TO messages_0_received;
CREATE TABLE messages (LIKE messages_0 INCLUDING DEFAULTS) PARTITION BY LIST (slot);
ALTER TABLE messages ALTER COLUMN slot SET DEFAULT current_slot();
ALTER TABLE messages ADD PRIMARY KEY (queue_id, seq, slot);
CREATE INDEX messages_next ON messages (queue_id, visible_ns, seq);
CREATE INDEX messages_expiry ON messages (queue_id, sent_ns);
CREATE INDEX messages_group ON messages (queue_id, group_id, seq) WHERE group_id <> '';
CREATE INDEX messages_received ON messages (queue_id, group_id, visible_ns) WHERE group_id <> '' AND gen > 0;
-- The existing indexes are attached as they are; the primary key is built.
ALTER TABLE messages ATTACH PARTITION messages_0 FOR VALUES IN (0);
CREATE TABLE messages_1 PARTITION OF messages FOR VALUES IN (1)
	WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);
ALTER INDEX messages_1_queue_id_visible_ns_seq_idx RENAME TO messages_1_next;
ALTER INDEX messages_1_queue_id_sent_ns_idx RENAME TO messages_1_expiry;
ALTER INDEX messages_1_queue_id_group_id_seq_idx RENAME TO messages_1_group;
ALTER INDEX messages_1_queue_id_group_id_visible_ns_idx RENAME TO messages_1_received;

ALTER TABLE message_bodies ADD COLUMN slot int2 NOT NULL DEFAULT 0;
ALTER TABLE message_bodies RENAME TO message_bodies_0;
ALTER TABLE message_bodies_0 DROP CONSTRAINT message_bodies_pkey;
CREATE TABLE message_bodies (LIKE message_bodies_0 INCLUDING DEFAULTS) PARTITION BY LIST (slot);
ALTER TABLE message_bodies ALTER COLUMN slot SET DEFAULT current_slot();
ALTER TABLE message_bodies ADD PRIMARY KEY (id, slot);
ALTER TABLE message_bodies ATTACH PARTITION message_bodies_0 FOR VALUES IN (0);
CREATE TABLE message_bodies_1 PARTITION OF message_bodies FOR VALUES IN (1)
	WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);
