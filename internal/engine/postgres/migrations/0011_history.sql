-- Failure history (engine.HistoryReader): each message's story, in its
-- state row, so that it goes wherever the row goes (deleted with it, moved
-- with it into a dead-letter queue and out again). NULL until the first
-- event: a message nobody received costs nothing.
--
-- The value is {"dropped": n, "events": [...]}: the latest events, at most
-- 50 (engine.HistoryCap), and how many older ones were dropped.
ALTER TABLE messages ADD COLUMN history jsonb;

-- history_add appends ev to h, dropping the oldest event past the cap; a
-- NULL ev leaves h as it is (history off, or a move of a message that has
-- no story).
CREATE FUNCTION history_add(h jsonb, ev jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE
		WHEN ev IS NULL THEN h
		WHEN h IS NULL THEN jsonb_build_object('dropped', 0, 'events', jsonb_build_array(ev))
		WHEN jsonb_array_length(h->'events') >= 50 THEN jsonb_build_object(
			'dropped', (h->>'dropped')::int8 + 1, 'events', ((h->'events') - 0) || jsonb_build_array(ev))
		ELSE jsonb_build_object('dropped', h->'dropped', 'events', (h->'events') || jsonb_build_array(ev))
	END
$$;
