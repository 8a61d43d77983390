package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/ferrymq/ferry/internal/engine"
)

// FIFO queues. Order and blocking rest on the fifo_groups rows: a receive
// locks the groups it will take from (FOR UPDATE SKIP LOCKED) in one
// statement, and looks at their messages in the next, whose snapshot
// therefore sees whatever the previous holder of a group's lock did with
// it. Two receives never take from one group at once, on any nodes.

// dedupKey is a message's deduplication key in its queue's scope. A
// message without a deduplication id is nobody's duplicate: its key is its
// own, made of its new message id, so that it still takes its sequence
// number through the same claim. The prefixes keep the three kinds apart.
func dedupKey(scope string, m *engine.NewMessage, messageID string) string {
	switch {
	case m.DeduplicationID == "":
		return "n:" + messageID
	case scope == engine.DeduplicationScopeMessageGroup:
		return "g:" + strconv.Itoa(len(m.MessageGroupID)) + ":" + m.MessageGroupID + ":" + m.DeduplicationID
	}
	return "q:" + m.DeduplicationID
}

// claimSQL claims deduplication keys for the window: a key nobody holds,
// or whose window has ended, becomes this send's, numbered in order. A key
// another send holds is not returned; one being claimed by a concurrent
// send waits for it (the unique key), so a key is enqueued once.
const claimSQL = `
INSERT INTO fifo_dedup (queue_id, key, message_id, seq, sent_ns)
SELECT $1, u.key, u.message_id, nextval('message_seq'), $2
FROM (SELECT * FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS u(key, message_id, ord) ORDER BY ord) u
ON CONFLICT (queue_id, key) DO UPDATE
	SET message_id = excluded.message_id, seq = excluded.seq, sent_ns = excluded.sent_ns
	WHERE fifo_dedup.sent_ns <= $2::int8 - $5::int8
RETURNING key, seq`

// fifoInsertSQL writes the fresh messages of a FIFO send, with the seqs
// their claims took ($16) and their deduplication ids ($17), gives their
// groups rows, sweeps the queue's expired deduplication keys and tells the
// waiters, last, once it holds the group rows.
var fifoInsertSQL = `
WITH q AS (
	SELECT id, delay_ns FROM queues WHERE id = $1
), m AS (
	SELECT u.* FROM unnest(` + sendColumns + `, $16::int8[], $17::text[])
		AS u(` + sendColumnNames + `, seq, dedup_id)
), b AS (
	INSERT INTO message_bodies (id, body, attributes, trace_header, group_id, sender_id, md5_body, md5_attrs, md5_sys, slot)
	SELECT seq, body, attributes, trace_header, group_id, sender_id, md5_body, md5_attrs, md5_sys, ` + currentSlot + ` FROM m
), st AS (
	INSERT INTO messages (queue_id, seq, body_id, message_id, sent_ns, entered_ns, visible_ns, dedup_id, group_id, slot)
	SELECT q.id, m.seq, m.seq, m.message_id, $13, $13, $13 + coalesce(m.delay_ns, q.delay_ns), m.dedup_id, m.group_id,
		` + currentSlot + `
	FROM q, m
	RETURNING queue_id, group_id, seq, visible_ns
), g AS (` + upsertGroups("st") + `
), sweep AS (
	DELETE FROM fifo_dedup d WHERE d.queue_id = $1 AND d.sent_ns <= $13::int8 - $2::int8
), n AS (
	SELECT notify_waiters($14, q.id, min(st.visible_ns)) FROM q, st
	WHERE (SELECT count(*) FROM g) > 0
	GROUP BY q.id HAVING min(st.visible_ns) < $13 + $15
)
SELECT count(*) FROM n`

// sendFIFO sends msgs to FIFO queue qid in one transaction: claim the
// deduplication keys, read the holders of those not claimed, write the
// fresh messages. args and ids are sendArgs' for msgs.
func (s *Store) sendFIFO(ctx context.Context, db querier, qid int64, scope string, msgs []engine.NewMessage,
	args []any, ids []string, now int64) ([]engine.SendResult, error) {
	keys := make([]string, len(msgs))
	first := map[string]int{} // key → the index of its first message
	var claimKeys, claimIDs []string
	for i := range msgs {
		keys[i] = dedupKey(scope, &msgs[i], ids[i])
		if _, ok := first[keys[i]]; !ok {
			first[keys[i]] = i
			claimKeys = append(claimKeys, keys[i])
			claimIDs = append(claimIDs, ids[i])
		}
	}
	window := int64(engine.DeduplicationWindow)
	res := make([]engine.SendResult, len(msgs))
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, claimSQL, qid, now, claimKeys, claimIDs, window)
		if err != nil {
			return err
		}
		claimed := map[string]int64{}
		var (
			key string
			seq int64
		)
		if _, err := pgx.ForEachRow(rows, []any{&key, &seq}, func() error { claimed[key] = seq; return nil }); err != nil {
			return fmt.Errorf("claim deduplication keys: %w", err)
		}
		var fresh []int
		for i, k := range keys {
			if seq, ok := claimed[k]; ok && first[k] == i {
				fresh = append(fresh, i)
				res[i] = engine.SendResult{MessageID: ids[i], SequenceNumber: engine.FormatSequenceNumber(uint64(seq))}
			}
		}
		if len(fresh) < len(msgs) {
			holders := map[string]engine.SendResult{}
			rows, err := tx.Query(ctx, `SELECT key, message_id, seq FROM fifo_dedup WHERE queue_id = $1 AND key = ANY($2)`, qid, claimKeys)
			if err != nil {
				return err
			}
			var id string
			if _, err := pgx.ForEachRow(rows, []any{&key, &id, &seq}, func() error {
				holders[key] = engine.SendResult{MessageID: id, SequenceNumber: engine.FormatSequenceNumber(uint64(seq)), Duplicate: true}
				return nil
			}); err != nil {
				return fmt.Errorf("read deduplication keys: %w", err)
			}
			for i, k := range keys {
				if res[i].MessageID != "" {
					continue
				}
				if seq, ok := claimed[k]; ok { // an earlier message of this call
					res[i] = engine.SendResult{MessageID: ids[first[k]], SequenceNumber: engine.FormatSequenceNumber(uint64(seq)), Duplicate: true}
					continue
				}
				h, ok := holders[k]
				if !ok {
					return fmt.Errorf("deduplication key %q neither claimed nor held", k)
				}
				res[i] = h
			}
		}
		if len(fresh) == 0 {
			return nil
		}
		ins := make([]any, 0, len(args)+2)
		ins = append(ins, qid, window)
		for _, a := range args[2:12] {
			ins = append(ins, pickAny(a, fresh))
		}
		seqs := make([]int64, len(fresh))
		dedups := make([]string, len(fresh))
		for j, i := range fresh {
			seqs[j], dedups[j] = claimed[keys[i]], msgs[i].DeduplicationID
		}
		ins = append(ins, args[12:]...)
		ins = append(ins, seqs, dedups)
		var noted int64
		return tx.QueryRow(ctx, fifoInsertSQL, ins...).Scan(&noted)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// pickAny returns the elements idx of one of sendArgs' columns.
func pickAny(col any, idx []int) any {
	switch c := col.(type) {
	case []string:
		return pick(c, idx)
	case [][]byte:
		return pick(c, idx)
	case []*int64:
		return pick(c, idx)
	}
	panic(fmt.Sprintf("postgres: no column of type %T", col))
}

func pick[T any](xs []T, idx []int) []T {
	out := make([]T, len(idx))
	for j, i := range idx {
		out[j] = xs[i]
	}
	return out
}

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
// others for the visibility ($5, or the queue's) and remembers them under
// the receive attempt id $6, if any. Each row is one message handed out,
// after the queue id, whether the queue is FIFO (if not, it did nothing:
// the view that sent the receive here was stale) and the number moved; a
// queue with nothing to hand out answers one row of those.
var fifoTakeSQL = `
WITH q AS (
	SELECT q.id, q.arn, q.fifo, coalesce($5::int8, q.visibility_ns) AS vis, q.retention_ns, q.redrive_max,
		d.id AS dlq_id, coalesce(d.fifo, false) AS dlq_fifo
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
), dg AS (` + upsertGroups("moved_in") + `
), got AS (
	UPDATE messages m SET
		visible_ns = $3::int8 + q.vis,
		gen = m.gen + 1,
		receive_count = m.receive_count + 1,
		first_receive_ns = CASE WHEN m.first_receive_ns = 0 THEN $3 ELSE m.first_receive_ns END,
		received_ns = $3
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
	SELECT notify_waiters($7, q.dlq_id, $3) FROM q
	WHERE EXISTS (SELECT 1 FROM moved_in) AND (SELECT count(*) FROM dg) >= 0
)
SELECT q.id, q.fifo, (SELECT count(*) FROM moved_in), (SELECT count(*) FROM n) + (SELECT count(*) FROM att),
	` + messageColumns + `
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
SELECT q.id, ` + messageColumns + `
FROM q LEFT JOIN (got g JOIN k ON k.seq = g.seq JOIN message_bodies b ON b.id = g.body_id) ON true
ORDER BY k.i`

// takeFIFO receives up to n messages of FIFO queue account/name in one
// round trip: a batch that locks the ready groups (lockReadySQL), takes
// from them (fifoTakeSQL) and sets their rows again (refreshSQL). With a
// receive attempt id, a batch that repeats the attempt comes first.
func (s *Store) takeFIFO(ctx context.Context, account, name string, n int, vis *int64, attemptID string) (take, error) {
	now := s.now()
	if attemptID != "" {
		t, err := s.retryAttempt(ctx, account, name, attemptID, now, vis)
		if err != nil || len(t.msgs) > 0 {
			return t, err
		}
	}
	b := &pgx.Batch{}
	b.Queue(lockReadySQL, account, name, now, n)
	b.Queue(fifoTakeSQL, account, name, now, n, vis, attemptID, s.channel)
	b.Queue(refreshSQL, s.refreshArgs(account, name, now)...)
	return s.runTake(ctx, b, func(rows pgx.Rows, t *take) (engine.Message, bool, error) {
		var noted int64
		return s.scanMessage(rows, &t.qid, true, &t.qid, &t.fifo, &t.moved, &noted)
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
		return s.scanMessage(rows, &t.qid, true, &t.qid)
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
		t.next, err = refreshed(br.QueryRow())
		if err != nil {
			return fmt.Errorf("refresh groups: %w", err)
		}
		return nil
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return t, err
}
