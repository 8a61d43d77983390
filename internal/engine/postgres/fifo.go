package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/ferrymq/ferry/internal/engine"
)

// FIFO queues. Order and blocking rest on the fifo_groups rows: a receive
// locks the groups it will take from (FOR UPDATE SKIP LOCKED) in one
// statement, and looks at their messages in the next, whose snapshot
// therefore sees whatever the previous holder of a group's lock did with
// it. Two receives never take from one group at once, on any nodes.

// fifoSendSQL enqueues a batch on a FIFO queue in one statement, with
// sendSQL's arguments but its $16, $16 the deduplication ids, $17 the
// window and $18 the stories the messages arrive with. A
// message's deduplication key is its id in the queue's scope, prefixed by
// its group in the messageGroup scope; a message without a deduplication
// id is nobody's duplicate: its key is its own, made of its new message id,
// so that it still takes its sequence number through the same claim. The
// first message of each key in the batch claims the key: one nobody holds,
// or whose window has ended, becomes this send's with the message's
// sequence number; one another send holds is left as it is (the update
// writes its own values back), and RETURNING reads its holder even when
// that send committed after this statement's snapshot; one being claimed
// by a concurrent send waits for it (the unique key), so a key is enqueued
// once. Keys are claimed in the order of the key, so that concurrent sends
// of the same keys do not deadlock, and numbered in the order of the
// batch. The messages that claimed their keys are written, their groups
// get rows (upsertGroups), the queue's expired keys are swept but for
// those another send holds, and the waiters are told, last, once it holds
// the group rows.
// It answers the queue id (no row: no such queue), whether the queue is
// FIFO (if not, it wrote nothing: sendSQL's turn) and, in the batch's
// order, each message's id and sequence number, its key's holder's for a
// duplicate, and whether it is one; then its notes.
var fifoSendSQL = `
WITH q AS (
	SELECT id, delay_ns, fifo, dedup_scope FROM queues WHERE account = $1 AND name = $2 AND deleted_ns IS NULL
), u AS (
	SELECT u.*, CASE WHEN u.dedup_id = '' THEN 'n:' || u.message_id
		WHEN q.dedup_scope = '` + engine.DeduplicationScopeMessageGroup + `'
			THEN 'g:' || octet_length(u.group_id) || ':' || u.group_id || ':' || u.dedup_id
		ELSE 'q:' || u.dedup_id END AS key
	FROM q, unnest(` + sendColumns + `, $16::text[], $18::text[]) WITH ORDINALITY AS u(` + sendColumnNames + `, dedup_id, history, ord)
	WHERE q.fifo
), m AS MATERIALIZED (
	SELECT nextval('message_seq') AS seq, f.*
	FROM (SELECT * FROM (SELECT DISTINCT ON (key) * FROM u ORDER BY key, ord) d ORDER BY ord) f
), claim AS (
	INSERT INTO fifo_dedup (queue_id, key, message_id, seq, sent_ns)
	SELECT q.id, m.key, m.message_id, m.seq, $13 FROM q, m ORDER BY m.key
	ON CONFLICT (queue_id, key) DO UPDATE SET
		message_id = CASE WHEN fifo_dedup.sent_ns <= $13::int8 - $17::int8 THEN excluded.message_id ELSE fifo_dedup.message_id END,
		seq = CASE WHEN fifo_dedup.sent_ns <= $13::int8 - $17::int8 THEN excluded.seq ELSE fifo_dedup.seq END,
		sent_ns = CASE WHEN fifo_dedup.sent_ns <= $13::int8 - $17::int8 THEN excluded.sent_ns ELSE fifo_dedup.sent_ns END
	RETURNING key, message_id, seq
), fresh AS (
	SELECT m.* FROM m JOIN claim c ON c.key = m.key AND c.message_id = m.message_id
), b AS (
	INSERT INTO message_bodies (id, body, attributes, trace_header, group_id, sender_id, md5_body, md5_attrs, md5_sys, slot)
	SELECT seq, body, attributes, trace_header, group_id, sender_id, md5_body, md5_attrs, md5_sys, ` + currentSlot + ` FROM fresh
), st AS (
	INSERT INTO messages (queue_id, seq, body_id, message_id, sent_ns, entered_ns, visible_ns, dedup_id, group_id, slot, history)
	SELECT q.id, f.seq, f.seq, f.message_id, $13, $13, $13 + coalesce(f.delay_ns, q.delay_ns), f.dedup_id, f.group_id,
		` + currentSlot + `, f.history::jsonb
	FROM q, fresh f
	RETURNING queue_id, group_id, seq, visible_ns
), counted AS (` + countInserted + `st GROUP BY queue_id
), g AS (` + upsertGroups("st") + `
), sweep AS (
	-- Not the keys this statement claims, nor those another send holds:
	-- sends sweeping each other's keys would deadlock.
	DELETE FROM fifo_dedup d
	WHERE d.queue_id = (SELECT id FROM q) AND d.sent_ns <= $13::int8 - $17::int8 AND d.key = ANY (ARRAY(
		SELECT x.key FROM fifo_dedup x
		WHERE x.queue_id = (SELECT id FROM q) AND x.sent_ns <= $13::int8 - $17::int8
			AND x.key <> ALL (ARRAY(SELECT key FROM m))
		FOR UPDATE SKIP LOCKED))
), n AS (
	SELECT q.id AS qid, min(st.visible_ns) AS at, notify_waiters($14, q.id, min(st.visible_ns)) FROM q, st
	WHERE (SELECT count(*) FROM g) > 0
	GROUP BY q.id HAVING min(st.visible_ns) < $13 + $15
), r AS (
	SELECT u.ord, c.message_id, c.seq, c.message_id <> u.message_id AS dup FROM u JOIN claim c ON c.key = u.key
)
SELECT q.id, q.fifo,
	coalesce((SELECT array_agg(r.message_id ORDER BY r.ord) FROM r), '{}'),
	coalesce((SELECT array_agg(r.seq ORDER BY r.ord) FROM r), '{}'),
	coalesce((SELECT array_agg(r.dup ORDER BY r.ord) FROM r), '{}'),
	` + notesSQL + `
FROM q`

// fifoReadAhead bounds how many messages of each locked group a receive
// reads: a run is at most engine.MaxMessages long, and what it moves to
// the dead-letter queue beyond that is left to the next look.
const fifoReadAhead = "20"

// fifoRunCTEs choose what a FIFO receive takes from the groups its batch
// locked, after a CTE q (id, retention_ns, dlq_id, redrive_max), $3 being
// now and $4 the most to take: each group's visible run from its head, in
// the order of the groups (oldest head first) and of the messages, those
// at or over the redrive policy's count to move (they do not count), the
// others to hand out, $4 at most. A group with a message in flight gives
// nothing (its row says so already; this is the check).
const fifoRunCTEs = `
lg AS (
	SELECT f.group_id, f.head_seq FROM q JOIN fifo_groups f ON f.queue_id = q.id
	WHERE f.group_id = ANY(` + lockedGroups + `)
), r AS (
	SELECT lg.group_id, lg.head_seq AS g_head, m.seq, m.visible_ns, m.gen, m.receive_count
	FROM q CROSS JOIN lg CROSS JOIN LATERAL (
		SELECT m.seq, m.visible_ns, m.gen, m.receive_count FROM messages m
		WHERE m.queue_id = q.id AND m.group_id = lg.group_id AND m.group_id <> ''
			AND m.sent_ns > $3::int8 - q.retention_ns
		ORDER BY m.seq LIMIT ` + fifoReadAhead + `) m
), w AS (
	SELECT r.*,
		bool_and(r.visible_ns <= $3) OVER (PARTITION BY r.group_id ORDER BY r.seq) AS in_run,
		bool_or(r.gen > 0 AND r.visible_ns > $3) OVER (PARTITION BY r.group_id) AS busy,
		q.dlq_id IS NOT NULL AND r.receive_count >= q.redrive_max AS poison
	FROM q, r
), c AS (
	SELECT * FROM (
		SELECT w.*, coalesce(count(*) FILTER (WHERE NOT w.poison) OVER (ORDER BY w.g_head, w.group_id, w.seq
			ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
		FROM w WHERE w.in_run AND NOT w.busy) x
	WHERE x.before < $4
)`

// fifoTakeSQL is a FIFO receive's second statement, after lockReadySQL:
// it deletes what retention has expired, moves the chosen messages over
// the redrive policy's count to the dead-letter queue, hands out the
// others for the visibility ($5, or the queue's), adding the receive $8
// (its consumer; NULL records nothing) to their history, and remembers
// them under the receive attempt id $6, if any. Each row is one message handed out,
// after the queue id, whether the queue is FIFO (if not, it did nothing:
// the view that sent the receive here was stale), the number moved and its
// notes; a queue with nothing to hand out answers one row of those.
var fifoTakeSQL = `
WITH q AS (
	SELECT q.id, q.arn, q.fifo, coalesce($5::int8, q.visibility_ns) AS vis, q.retention_ns, q.redrive_max,
		d.id AS dlq_id, coalesce(d.fifo, false) AS dlq_fifo, d.arn AS dlq_arn
	FROM queues q LEFT JOIN queues d ON q.redrive_max > 0 AND d.account = q.redrive_account
		AND d.name = q.redrive_name AND d.deleted_ns IS NULL AND d.id <> q.id
	WHERE q.account = $1 AND q.name = $2 AND q.deleted_ns IS NULL
), expired AS (
	DELETE FROM messages m
	WHERE m.queue_id = (SELECT id FROM q WHERE fifo) AND m.sent_ns <= $3::int8 - (SELECT retention_ns FROM q)
	RETURNING m.body_id
), expired_bodies AS (
	-- By key: the planner cannot tell how many rows retention expires and
	-- would otherwise join them to a scan of every body.
	DELETE FROM message_bodies b WHERE b.id = ANY (ARRAY(SELECT body_id FROM expired))
), ` + fifoRunCTEs + `, moved AS (
	DELETE FROM messages m USING q, c WHERE c.poison AND m.queue_id = q.id AND m.seq = c.seq
	RETURNING m.*
), moved_in AS (` + moveInsertSQL + `
), moved_counted AS (` + countInserted + `moved_in GROUP BY queue_id
), dg AS (` + upsertGroups("moved_in") + `
), got AS (
	UPDATE messages m SET
		visible_ns = $3::int8 + q.vis,
		gen = m.gen + 1,
		receive_count = m.receive_count + 1,
		first_receive_ns = CASE WHEN m.first_receive_ns = 0 THEN $3 ELSE m.first_receive_ns END,
		received_ns = $3,
		history = history_add(m.history, $8::jsonb || jsonb_build_object('at', $3::int8,
			'count', m.receive_count + 1, 'visible', $3::int8 + q.vis))
	FROM q, c WHERE NOT c.poison AND m.queue_id = q.id AND m.seq = c.seq
	RETURNING m.*
), att AS (
	INSERT INTO fifo_attempts (queue_id, attempt_id, created_ns, seqs, gens)
	SELECT q.id, $6, $3, array_agg(g.seq ORDER BY c.g_head, c.group_id, c.seq),
		array_agg(g.gen ORDER BY c.g_head, c.group_id, c.seq)
	FROM q, got g JOIN c ON c.seq = g.seq WHERE $6 <> '' GROUP BY q.id
	ON CONFLICT (queue_id, attempt_id) DO UPDATE
		SET created_ns = excluded.created_ns, seqs = excluded.seqs, gens = excluded.gens
	RETURNING 1
), n AS (
	SELECT q.dlq_id AS qid, $3::int8 AS at, notify_waiters($7, q.dlq_id, $3) FROM q
	WHERE EXISTS (SELECT 1 FROM moved_in) AND (SELECT count(*) FROM dg) >= 0
)
SELECT q.id, q.fifo, (SELECT count(*) FROM moved_in), ` + notesSQL + `, (SELECT count(*) FROM att),
	` + messageColumns + `, ` + askedHistory + `
FROM q LEFT JOIN (got g JOIN c ON c.seq = g.seq JOIN message_bodies b ON b.id = g.body_id) ON true
ORDER BY c.g_head, c.group_id, c.seq`

// lockAttemptSQL locks the groups of what the receive attempt $3 handed out.
var lockAttemptSQL = keepLocked(`
	SELECT f.group_id FROM fifo_groups f
	WHERE f.queue_id = ` + namedQueue + ` AND f.group_id IN (
		SELECT m.group_id FROM fifo_attempts a CROSS JOIN unnest(a.seqs) AS u(seq)
		JOIN messages m ON m.queue_id = a.queue_id AND m.seq = u.seq
		WHERE a.queue_id = ` + namedQueue + ` AND a.attempt_id = $3 AND m.group_id <> '')
	ORDER BY f.group_id
	FOR UPDATE`)

// fifoRetrySQL repeats the receive attempt $3 when every message it handed
// out is as it left them: same generation, not deleted, not expired (a
// visibility change forgets the attempt). It restarts their visibility ($5,
// or the queue's, from now $4) and answers them in the attempt's order,
// after the queue id. Otherwise it forgets the attempt, and the queue's
// attempts older than the window ($6), and answers no message.
const fifoRetrySQL = `
WITH q AS (
	SELECT id, coalesce($5::int8, visibility_ns) AS vis, retention_ns
	FROM queues WHERE account = $1 AND name = $2 AND deleted_ns IS NULL
), k AS (
	SELECT u.* FROM q JOIN fifo_attempts a ON a.queue_id = q.id AND a.attempt_id = $3 AND a.created_ns > $4::int8 - $6::int8,
		unnest(a.seqs, a.gens) WITH ORDINALITY AS u(seq, gen, i)
), ok AS (
	SELECT count(*) > 0 AND count(*) = count(m.seq) AS ok
	FROM q CROSS JOIN k LEFT JOIN messages m ON m.queue_id = q.id AND m.seq = k.seq AND m.gen = k.gen
		AND m.sent_ns > $4::int8 - q.retention_ns
), got AS (
	UPDATE messages m SET visible_ns = $4::int8 + q.vis, received_ns = $4
	FROM q, k, ok WHERE ok.ok AND m.queue_id = q.id AND m.seq = k.seq
	RETURNING m.*
), forget AS (
	DELETE FROM fifo_attempts a USING q, ok
	WHERE NOT ok.ok AND a.queue_id = q.id AND (a.attempt_id = $3 OR a.created_ns <= $4::int8 - $6::int8)
)
SELECT q.id, ` + messageColumns + `, NULL::jsonb
FROM q LEFT JOIN (got g JOIN k ON k.seq = g.seq JOIN message_bodies b ON b.id = g.body_id) ON true
ORDER BY k.i`

// takeFIFO receives up to n messages of FIFO queue account/name in one
// round trip: a batch that locks the ready groups (lockReadySQL), takes
// from them (fifoTakeSQL) and sets their rows again (refreshSQL). With a
// receive attempt id, a batch that repeats the attempt comes first.
func (s *Store) takeFIFO(ctx context.Context, account, name string, n int, vis *int64, attemptID string, ev []byte, withHistory bool) (take, error) {
	now := s.now()
	if attemptID != "" {
		t, err := s.retryAttempt(ctx, account, name, attemptID, now, vis)
		if err != nil || len(t.msgs) > 0 {
			return t, err
		}
	}
	b := &pgx.Batch{}
	b.Queue(lockReadySQL, account, name, now, n)
	b.Queue(fifoTakeSQL, account, name, now, n, vis, attemptID, s.channel, ev, withHistory)
	b.Queue(refreshSQL, s.refreshArgs(account, name, now)...)
	return s.runTake(ctx, b, func(rows pgx.Rows, t *take) (engine.Message, bool, error) {
		var attempts int64
		return s.scanMessage(rows, &t.qid, &t.fifo, &t.qid, &t.fifo, &t.moved, &t.told.qids, &t.told.ats, &attempts)
	})
}

// retryAttempt hands out again what the receive attempt handed out, if it
// may (see fifoRetrySQL); otherwise it forgets the attempt and returns
// nothing.
func (s *Store) retryAttempt(ctx context.Context, account, name, attempt string, now int64, vis *int64) (take, error) {
	b := &pgx.Batch{}
	b.Queue(lockAttemptSQL, account, name, attempt)
	b.Queue(fifoRetrySQL, account, name, attempt, now, vis, int64(engine.DeduplicationWindow))
	b.Queue(refreshSQL, s.refreshArgs(account, name, now)...)
	return s.runTake(ctx, b, func(rows pgx.Rows, t *take) (engine.Message, bool, error) {
		t.fifo = true
		return s.scanMessage(rows, &t.qid, &t.fifo, &t.qid)
	})
}

// runTake sends a FIFO receive's batch (lock, take, refresh) and reads its
// answers, each row of the take with scan.
func (s *Store) runTake(ctx context.Context, b *pgx.Batch, scan func(pgx.Rows, *take) (engine.Message, bool, error)) (take, error) {
	var t take
	br := s.pool.SendBatch(ctx, b)
	err := func() error {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("lock groups: %w", err)
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		found := false
		for rows.Next() {
			found = true
			m, ok, err := scan(rows, &t)
			if err != nil {
				rows.Close()
				return err
			}
			if ok {
				t.msgs = append(t.msgs, m)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if !found {
			return engine.ErrQueueNotFound
		}
		var told notes
		t.next, told, err = refreshed(br.QueryRow())
		if err != nil {
			return fmt.Errorf("refresh groups: %w", err)
		}
		t.told.add(told)
		return nil
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		s.tell(t.told) // one batch, one transaction: committed
	}
	return t, err
}
