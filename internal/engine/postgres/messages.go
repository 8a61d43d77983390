package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ferrymq/ferry/internal/engine"
)

// Outcomes of a handle in deleteSQL and changeSQL, in the order of the
// handles.
const (
	outcomeDone       = 0
	outcomeNotFlight  = 1 // gone, or superseded by a later receive
	outcomeLimit      = 2 // beyond MaxVisibility from the receive
	outcomeExpiredFIF = 3 // FIFO: the handle's visibility has run out
)

// deleteSQL deletes the messages named by the handles of the queue (the
// other handles are refused in Go). A stale handle deletes nothing; on a
// FIFO queue a handle whose visibility has run out deletes nothing either
// and is answered expired: so is any handle whose message the statement
// saw but did not delete (a receive may have taken it again meanwhile), so
// that a success always means deleted.
const deleteSQL = `
WITH q AS (
	SELECT id, fifo FROM queues WHERE account = $1 AND name = $2 AND deleted_ns IS NULL
), h AS (
	SELECT u.* FROM q, unnest($3::int8[], $4::int8[], $5::int4[]) WITH ORDINALITY AS u(qid, seq, gen, i)
	WHERE u.qid = q.id
), d AS (
	DELETE FROM messages m USING q, h
	WHERE m.queue_id = q.id AND m.seq = h.seq AND m.gen = h.gen AND (NOT q.fifo OR m.visible_ns > $6)
	RETURNING m.body_id, m.seq, m.group_id
), db AS (
	DELETE FROM message_bodies b USING d WHERE b.id = d.body_id
)
SELECT q.id, coalesce((SELECT array_agg(h.i) FROM h JOIN messages m ON m.queue_id = q.id AND m.seq = h.seq
	WHERE q.fifo AND NOT EXISTS (SELECT 1 FROM d WHERE d.seq = h.seq)), '{}'), (SELECT count(*) FROM d)
FROM q`

// Delete implements engine.Backend.
func (s *Store) Delete(ctx context.Context, account, name string, handles []string) ([]error, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	hb := parseHandles(s.signer, len(handles), func(i int) string { return handles[i] })
	var (
		qid     int64
		expired []int64
		deleted int64
	)
	now := s.now()
	err := s.withGroups(ctx, account, name, lockHandledSQL, []any{account, name, hb.qids, hb.seqs}, now,
		deleteSQL, []any{account, name, hb.qids, hb.seqs, hb.gens, now}, false, &qid, &expired, &deleted)
	if isNoRows(err) {
		return nil, engine.ErrQueueNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: delete from %s: %w", name, err)
	}
	hb.own(qid)
	for _, i := range expired {
		hb.errs[i-1] = engine.ErrReceiptHandleExpired
	}
	return hb.errs, nil
}

// changeSQL sets the visibility of the messages named by the handles, each
// to its own timeout from now, within MaxVisibility of their receive, and
// tells the waiters when one becomes visible soon. It answers each handle's
// outcome, and its notes.
const changeSQL = `
WITH q AS (
	SELECT id, fifo, retention_ns FROM queues WHERE account = $1 AND name = $2 AND deleted_ns IS NULL
), h AS (
	SELECT u.* FROM q, unnest($3::int8[], $4::int8[], $5::int4[], $6::int8[], $11::text[])
		WITH ORDINALITY AS u(qid, seq, gen, timeout_ns, ev, i)
	WHERE u.qid = q.id
), u AS (
	UPDATE messages m SET visible_ns = $7 + h.timeout_ns, history = history_add(m.history, h.ev::jsonb)
	FROM q, h
	WHERE m.queue_id = q.id AND m.seq = h.seq AND m.gen = h.gen AND m.sent_ns > $7 - q.retention_ns
		AND (NOT q.fifo OR m.visible_ns > $7) AND $7 + h.timeout_ns <= m.received_ns + $8
	RETURNING h.i, m.seq, m.visible_ns
), forget AS (
	-- A receive attempt whose message had its visibility changed is not
	-- repeated. The queue's id as a scalar, so that only its attempts are
	-- read (fifo_attempts_pkey), not every FIFO queue's.
	DELETE FROM fifo_attempts a
	WHERE a.queue_id = (SELECT id FROM q WHERE fifo) AND a.seqs && (SELECT array_agg(u.seq) FROM u)
), n AS (
	-- A FIFO queue's groups tell their waiters (refreshSQL).
	SELECT q.id AS qid, min(u.visible_ns) AS at, notify_waiters($9, q.id, min(u.visible_ns)) FROM q, u WHERE NOT q.fifo
	GROUP BY q.id HAVING min(u.visible_ns) < $7 + $10
)
SELECT q.id, coalesce((SELECT array_agg(h.i ORDER BY h.i) FROM h), '{}'), coalesce((SELECT array_agg(
	CASE
		WHEN EXISTS (SELECT 1 FROM u WHERE u.i = h.i) THEN 0
		WHEN m.seq IS NULL OR m.sent_ns <= $7 - q.retention_ns THEN 1
		WHEN q.fifo AND (m.gen <> h.gen OR m.visible_ns <= $7) THEN 3
		WHEN m.gen <> h.gen THEN 1
		WHEN $7 + h.timeout_ns > m.received_ns + $8 THEN 2
		ELSE 1
	END ORDER BY h.i)
	FROM h LEFT JOIN messages m ON m.queue_id = q.id AND m.seq = h.seq), '{}'), ` + notesSQL + `
FROM q`

// ChangeVisibility implements engine.Backend.
func (s *Store) ChangeVisibility(ctx context.Context, account, name string, changes []engine.VisibilityChange) ([]error, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	hb := parseHandles(s.signer, len(changes), func(i int) string { return changes[i].ReceiptHandle })
	timeouts := make([]int64, len(changes))
	events := make([]*string, len(changes))
	for i, c := range changes {
		timeouts[i] = durationNS(c.Timeout)
		if c.Event != nil {
			b, err := json.Marshal(storedEventOf(c.Event))
			if err != nil {
				return nil, fmt.Errorf("postgres: change visibility in %s: %w", name, err)
			}
			ev := string(b)
			events[i] = &ev
		}
	}
	var (
		qid      int64
		idx      []int64
		outcomes []int32
	)
	now := s.now()
	err := s.withGroups(ctx, account, name, lockHandledSQL, []any{account, name, hb.qids, hb.seqs}, now,
		changeSQL, []any{account, name, hb.qids, hb.seqs, hb.gens, timeouts, now, int64(engine.MaxVisibility), s.channel, int64(maxLongPoll), events},
		true, &qid, &idx, &outcomes)
	if isNoRows(err) {
		return nil, engine.ErrQueueNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: change visibility in %s: %w", name, err)
	}
	hb.own(qid)
	for k, i := range idx {
		switch outcomes[k] {
		case outcomeNotFlight:
			hb.errs[i-1] = engine.ErrMessageNotInflight
		case outcomeLimit:
			hb.errs[i-1] = engine.ErrVisibilityLimit
		case outcomeExpiredFIF:
			hb.errs[i-1] = engine.ErrReceiptHandleExpired
		}
	}
	return hb.errs, nil
}

// Purge implements engine.Backend.
func (s *Store) Purge(ctx context.Context, account, name string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	var qid, purged, noted int64
	now := s.now()
	err := s.withGroups(ctx, account, name, lockAllSQL, []any{account, name}, now, `
		WITH q AS (
			SELECT id, last_purge_ns FROM queues WHERE account = $1 AND name = $2 AND deleted_ns IS NULL
		), p AS (
			UPDATE queues u SET last_purge_ns = $3::int8 FROM q
			WHERE u.id = q.id AND (u.last_purge_ns = 0 OR u.last_purge_ns <= $3::int8 - $4::int8)
			RETURNING u.id
		), gone AS (
			DELETE FROM messages m USING p WHERE m.queue_id = p.id RETURNING m.body_id
		), bodies AS (
			DELETE FROM message_bodies b USING gone WHERE b.id = gone.body_id
		), attempts AS (
			DELETE FROM fifo_attempts a USING p WHERE a.queue_id = p.id
		), groups AS (
			DELETE FROM fifo_groups g USING p WHERE g.queue_id = p.id
		), n AS (
			-- LastPurge is part of the queue's view.
			SELECT pg_notify($5, $6) FROM p
		)
		SELECT q.id, (SELECT count(*) FROM p), (SELECT count(*) FROM n) FROM q`,
		[]any{account, name, now, int64(s.waits.PurgeInterval()), s.channel, viewNote(viewKey(account, name))},
		false, &qid, &purged, &noted)
	s.views.drop(viewKey(account, name))
	if isNoRows(err) {
		return engine.ErrQueueNotFound
	}
	if err != nil {
		return fmt.Errorf("postgres: purge %s: %w", name, err)
	}
	if purged == 0 {
		return engine.ErrPurgeInProgress
	}
	return nil
}

// countInserted, followed by a CTE that inserted messages (returning their
// queue_id) and "GROUP BY queue_id", counts them into message_counts, one
// row per queue: every statement that inserts messages counts them itself,
// in the same statement (a trigger costs sends more; deletes are counted
// by one, migration 0013).
const countInserted = `
	INSERT INTO message_counts (queue_id, delta) SELECT queue_id, count(*) FROM `

// Stats implements engine.Backend. The queue's messages are the sum of its
// message_counts; what of them is not visible (in flight or delayed) and
// what retention has expired but not yet deleted are counted on index
// ranges (messages_next past now, messages_expiry up to the retention),
// bounded by those messages, not by the depth of the queue. The oldest is
// the first message of the queue's key a receive could still take.
func (s *Store) Stats(ctx context.Context, account, name string) (engine.Stats, error) {
	if err := s.enter(); err != nil {
		return engine.Stats{}, err
	}
	defer s.leave()
	var (
		st     engine.Stats
		oldest *int64
	)
	err := s.pool.QueryRow(ctx, `
		WITH q AS (
			SELECT id, $3 - retention_ns AS expired_ns FROM queues
			WHERE account = $1 AND name = $2 AND deleted_ns IS NULL
		), hidden AS (
			SELECT count(*) FILTER (WHERE m.gen > 0) AS in_flight, count(*) FILTER (WHERE m.gen = 0) AS delayed,
				count(DISTINCT m.group_id) FILTER (WHERE m.gen > 0 AND m.group_id <> '') AS groups
			FROM q, messages m
			WHERE m.queue_id = q.id AND m.visible_ns > $3 AND m.sent_ns > q.expired_ns
		)
		SELECT
			(SELECT coalesce(sum(c.delta), 0) FROM message_counts c WHERE c.queue_id = q.id)
				- (SELECT count(*) FROM messages m WHERE m.queue_id = q.id AND m.sent_ns <= q.expired_ns)
				- h.in_flight - h.delayed,
			h.in_flight, h.delayed,
			(SELECT m.entered_ns FROM messages m WHERE m.queue_id = q.id AND m.sent_ns > q.expired_ns AND m.gen < $4
				ORDER BY m.seq LIMIT 1),
			h.groups
		FROM q, hidden h`, account, name, s.now(), engine.OldestMaxReceives).
		Scan(&st.Visible, &st.NotVisible, &st.Delayed, &oldest, &st.GroupsInFlight)
	if errors.Is(err, pgx.ErrNoRows) {
		return engine.Stats{}, engine.ErrQueueNotFound
	}
	if err != nil {
		return engine.Stats{}, fmt.Errorf("postgres: stats of %s: %w", name, err)
	}
	if oldest != nil {
		st.OldestAt = fromNS(*oldest)
	}
	return st, nil
}

// durationNS is d in the store's unit, never negative.
func durationNS(d time.Duration) int64 { return max(int64(d), 0) }
