-- Autovacuum for the tables a steady load churns: every message is an
-- insert, an update per receive and a delete in messages, an insert and a
-- delete in message_bodies; FIFO keys and receive attempts expire by the
-- thousand. PostgreSQL's default starts a table's vacuum once its dead rows
-- exceed 50 + 20% of its live rows, so a queue with a backlog of 1,000,000
-- messages would carry 200,000 dead rows, and the index walks of every
-- receive over them, between two vacuums. A threshold of 1,000 plus 1% of
-- the live rows starts it at every autovacuum_naptime under any real load,
-- so that the dead rows stay near what one naptime of traffic leaves.
-- Vacuuming a large backlog that often stays cheap: its untouched pages are
-- all-visible and skipped, and an index pass is skipped when few pages hold
-- dead rows.
ALTER TABLE messages SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);
ALTER TABLE message_bodies SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);
ALTER TABLE fifo_dedup SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);
ALTER TABLE fifo_attempts SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);
ALTER TABLE fifo_groups SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);
