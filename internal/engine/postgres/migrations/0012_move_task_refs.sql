-- Move tasks limited to chosen messages (engine.MoveTask.Refs): the refs
-- as the task was given them, the seqs they name, each once, in the order
-- of the queue, and how many of those the task has reached. NULL refs: the
-- task moves the whole queue.
ALTER TABLE move_tasks ADD COLUMN refs text[], ADD COLUMN ref_seqs int8[],
	ADD COLUMN refs_reached int4 NOT NULL DEFAULT 0;
