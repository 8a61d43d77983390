package postgres

import (
	"context"
	"errors"
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
// their claims took ($16) and their deduplication ids ($17), makes sure
// their groups have rows, sweeps the queue's expired deduplication keys
// and tells the waiters.
const fifoInsertSQL = `
WITH q AS (
	SELECT id, delay_ns FROM queues WHERE id = $1
), m AS (
	SELECT u.* FROM unnest(` + sendColumns + `, $16::int8[], $17::text[])
		AS u(` + sendColumnNames + `, seq, dedup_id)
), b AS (
	INSERT INTO message_bodies (id, body, attributes, trace_header, group_id, sender_id, md5_body, md5_attrs, md5_sys)
	SELECT seq, body, attributes, trace_header, group_id, sender_id, md5_body, md5_attrs, md5_sys FROM m
), g AS (
	INSERT INTO fifo_groups (queue_id, group_id) SELECT DISTINCT $1::int8, group_id FROM m
	ON CONFLICT DO NOTHING
), st AS (
	INSERT INTO messages (queue_id, seq, body_id, message_id, sent_ns, entered_ns, visible_ns, dedup_id, group_id)
	SELECT q.id, m.seq, m.seq, m.message_id, $13, $13, $13 + coalesce(m.delay_ns, q.delay_ns), m.dedup_id, m.group_id
	FROM q, m
	RETURNING visible_ns
), sweep AS (
	DELETE FROM fifo_dedup d WHERE d.queue_id = $1 AND d.sent_ns <= $13::int8 - $2::int8
), n AS (
	SELECT pg_notify($14, q.id::text || ':' || min(st.visible_ns)::text) FROM q, st
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

// fifoQueueSQL reads what a FIFO receive needs of its queue, and the next
// time one of its messages becomes visible.
const fifoQueueSQL = `
SELECT q.arn, q.visibility_ns, q.retention_ns, q.redrive_max, d.id, coalesce(d.fifo, false),
	(SELECT min(m.visible_ns) FROM messages m WHERE m.queue_id = q.id AND m.visible_ns > $2)
FROM queues q LEFT JOIN queues d ON q.redrive_max > 0 AND d.account = q.redrive_account
	AND d.name = q.redrive_name AND d.deleted_ns IS NULL AND d.id <> q.id
WHERE q.id = $1 AND q.deleted_ns IS NULL`

// lockGroupsSQL locks up to $4 groups that can hand out a message (none
// in flight, the head visible), oldest head first, skipping those another
// receive holds. It first gives rows to the candidate groups that have
// none; those are locked by the next run.
const lockGroupsSQL = `
WITH g AS (
	SELECT group_id, min(seq) AS head, bool_or(gen > 0 AND visible_ns > $2) AS busy
	FROM messages WHERE queue_id = $1 AND group_id <> '' AND sent_ns > $2::int8 - $3::int8
	GROUP BY group_id
), h AS (
	SELECT g.group_id, g.head FROM g JOIN messages m ON m.queue_id = $1 AND m.seq = g.head
	WHERE NOT g.busy AND m.visible_ns <= $2
), ins AS (
	INSERT INTO fifo_groups (queue_id, group_id) SELECT $1, group_id FROM h
	ON CONFLICT DO NOTHING RETURNING 1
), l AS (
	SELECT f.group_id, h.head FROM fifo_groups f JOIN h ON h.group_id = f.group_id
	WHERE f.queue_id = $1 ORDER BY h.head LIMIT $4
	FOR UPDATE OF f SKIP LOCKED
)
SELECT (SELECT count(*) FROM ins), coalesce((SELECT array_agg(group_id ORDER BY head) FROM l), '{}')`

// fifoMoveSQL moves the messages $2 of queue $1 to its dead-letter queue.
const fifoMoveSQL = `
WITH q AS (
	SELECT $1::int8 AS id, $4::text AS arn, $5::int8 AS dlq_id, $6::bool AS dlq_fifo
), moved AS (
	DELETE FROM messages m WHERE m.queue_id = $1 AND m.seq = ANY($2) RETURNING m.*
), moved_in AS (` + moveInsertSQL + `
), dg AS (
	INSERT INTO fifo_groups (queue_id, group_id) SELECT DISTINCT queue_id, group_id FROM moved_in
	WHERE group_id <> '' ON CONFLICT DO NOTHING
), n AS (
	SELECT pg_notify($7, $5::text || ':' || $3::text) WHERE EXISTS (SELECT 1 FROM moved_in)
)
SELECT (SELECT count(*) FROM moved_in), (SELECT count(*) FROM n)`

// fifoTakeSQL hands out the messages $2 of queue $1, in that order, for
// the visibility $4 from now ($3), and tells the waiters if that is soon.
const fifoTakeSQL = `
WITH k AS (
	SELECT * FROM unnest($2::int8[]) WITH ORDINALITY AS k(seq, i)
), got AS (
	UPDATE messages m SET
		visible_ns = $3::int8 + $4::int8,
		gen = m.gen + 1,
		receive_count = m.receive_count + 1,
		first_receive_ns = CASE WHEN m.first_receive_ns = 0 THEN $3 ELSE m.first_receive_ns END,
		received_ns = $3
	FROM k WHERE m.queue_id = $1 AND m.seq = k.seq
	RETURNING m.*
), n AS (
	SELECT pg_notify($5, $1::text || ':' || ($3::int8 + $4::int8)::text) WHERE $4::int8 < $6::int8 AND EXISTS (SELECT 1 FROM got)
)
SELECT (SELECT count(*) FROM n), ` + messageColumns + `
FROM got g JOIN k ON k.seq = g.seq JOIN message_bodies b ON b.id = g.body_id
ORDER BY k.i`

// fifoRetrySQL repeats the receive attempt $2 of queue $1 when every
// message it handed out is as it left them: same generation, not deleted
// (a visibility change forgets the attempt). It restarts their visibility
// and answers them in the attempt's order, after the attempt's size.
const fifoRetrySQL = `
WITH a AS (
	SELECT seqs, gens FROM fifo_attempts WHERE queue_id = $1 AND attempt_id = $2 AND created_ns > $3::int8 - $5::int8
), k AS (
	SELECT u.* FROM a, unnest(a.seqs, a.gens) WITH ORDINALITY AS u(seq, gen, i)
), got AS (
	UPDATE messages m SET visible_ns = $3::int8 + $4::int8, received_ns = $3
	FROM k WHERE m.queue_id = $1 AND m.seq = k.seq AND m.gen = k.gen AND m.sent_ns > $3::int8 - $6::int8
	RETURNING m.*
)
SELECT (SELECT count(*) FROM k), ` + messageColumns + `
FROM got g JOIN k ON k.seq = g.seq JOIN message_bodies b ON b.id = g.body_id
ORDER BY k.i`

// takeFIFO receives up to n messages of FIFO queue qid in one
// transaction: a retry of attemptID, or: lock groups, read their
// messages, move those over the redrive policy's count, hand out the rest
// (as many as it can from each group in turn), remember the attempt.
func (s *Store) takeFIFO(ctx context.Context, qid int64, n int, vis *int64, attemptID string) (take, error) {
	t := take{qid: qid, fifo: true}
	now := s.now()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var (
			arn              string
			visNS, retention int64
			redriveMax       int
			dlqID, next      *int64
			dlqFIFO          bool
		)
		err := tx.QueryRow(ctx, fifoQueueSQL, qid, now).Scan(&arn, &visNS, &retention, &redriveMax, &dlqID, &dlqFIFO, &next)
		if errors.Is(err, pgx.ErrNoRows) {
			return engine.ErrQueueNotFound
		}
		if err != nil {
			return err
		}
		if next != nil {
			t.next = *next
		}
		if vis != nil {
			visNS = *vis
		}
		if attemptID != "" {
			msgs, err := s.retryAttempt(ctx, tx, qid, attemptID, now, visNS, retention)
			if err != nil || len(msgs) > 0 {
				t.msgs = msgs
				return err
			}
		}
		groups, err := lockGroups(ctx, tx, qid, now, retention, n)
		if err != nil || len(groups) == 0 {
			return err
		}
		takeSeqs, moveSeqs, err := planFIFO(ctx, tx, qid, groups, now, retention, n, redriveMax, dlqID != nil)
		if err != nil {
			return err
		}
		if len(moveSeqs) > 0 {
			var noted int64
			if err := tx.QueryRow(ctx, fifoMoveSQL, qid, moveSeqs, now, arn, *dlqID, dlqFIFO, s.channel).Scan(&t.moved, &noted); err != nil {
				return fmt.Errorf("move to the dead-letter queue: %w", err)
			}
		}
		if len(takeSeqs) == 0 {
			return nil
		}
		rows, err := tx.Query(ctx, fifoTakeSQL, qid, takeSeqs, now, visNS, s.channel, int64(maxLongPoll))
		if err != nil {
			return err
		}
		t.msgs, err = s.collectMessages(rows, qid)
		if err != nil || attemptID == "" {
			return err
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO fifo_attempts (queue_id, attempt_id, created_ns, seqs, gens)
			SELECT $1, $2, $3, array_agg(m.seq ORDER BY k.i), array_agg(m.gen ORDER BY k.i)
			FROM unnest($4::int8[]) WITH ORDINALITY AS k(seq, i) JOIN messages m ON m.queue_id = $1 AND m.seq = k.seq
			ON CONFLICT (queue_id, attempt_id) DO UPDATE
				SET created_ns = excluded.created_ns, seqs = excluded.seqs, gens = excluded.gens`,
			qid, attemptID, now, takeSeqs)
		return err
	})
	return t, err
}

// retryAttempt hands out again what attempt handed out, if it may (see
// fifoRetrySQL); otherwise it forgets the attempt and returns nothing.
func (s *Store) retryAttempt(ctx context.Context, tx pgx.Tx, qid int64, attempt string, now, vis, retention int64) ([]engine.Message, error) {
	var msgs []engine.Message
	err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		rows, err := sp.Query(ctx, fifoRetrySQL, qid, attempt, now, vis, int64(engine.DeduplicationWindow), retention)
		if err != nil {
			return err
		}
		defer rows.Close()
		var size int64
		for rows.Next() {
			m, _, err := s.scanMessage(rows, &qid, true, &size)
			if err != nil {
				return err
			}
			msgs = append(msgs, m)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(msgs) == 0 || int64(len(msgs)) != size {
			msgs = nil
			return errRetryStale
		}
		return nil
	})
	if errors.Is(err, errRetryStale) {
		_, err = tx.Exec(ctx, `DELETE FROM fifo_attempts WHERE queue_id = $1 AND (attempt_id = $2 OR created_ns <= $3)`,
			qid, attempt, now-int64(engine.DeduplicationWindow))
	}
	return msgs, err
}

// errRetryStale rolls back a retry that cannot be served as it was.
var errRetryStale = errors.New("receive attempt no longer as it was")

// lockGroups runs lockGroupsSQL, twice if the first run gave rows to
// groups that had none.
func lockGroups(ctx context.Context, tx pgx.Tx, qid, now, retention int64, n int) ([]string, error) {
	var groups []string
	for range 2 {
		var inserted int64
		if err := tx.QueryRow(ctx, lockGroupsSQL, qid, now, retention, n).Scan(&inserted, &groups); err != nil {
			return nil, fmt.Errorf("lock groups: %w", err)
		}
		if inserted == 0 || len(groups) == n {
			break
		}
	}
	return groups, nil
}

// planFIFO reads the locked groups' messages (a snapshot taken after the
// locks) and chooses, group by group in lock order, the run of visible
// messages from the head: those over the redrive policy's count to move,
// the others to hand out, n at most.
func planFIFO(ctx context.Context, tx pgx.Tx, qid int64, groups []string, now, retention int64, n, redriveMax int, redrive bool) (take, move []int64, err error) {
	rows, err := tx.Query(ctx, `SELECT group_id, seq, visible_ns, gen, receive_count FROM messages
		WHERE queue_id = $1 AND group_id = ANY($2) AND sent_ns > $3::int8 - $4::int8 ORDER BY seq`, qid, groups, now, retention)
	if err != nil {
		return nil, nil, fmt.Errorf("read groups: %w", err)
	}
	type msg struct {
		seq, visible int64
		gen, count   int32
	}
	byGroup := map[string][]msg{}
	var (
		g string
		m msg
	)
	if _, err := pgx.ForEachRow(rows, []any{&g, &m.seq, &m.visible, &m.gen, &m.count}, func() error {
		byGroup[g] = append(byGroup[g], m)
		return nil
	}); err != nil {
		return nil, nil, fmt.Errorf("read groups: %w", err)
	}
	for _, g := range groups {
		ms := byGroup[g]
		busy := false
		for _, m := range ms {
			busy = busy || (m.gen > 0 && m.visible > now)
		}
		if busy {
			continue
		}
		for _, m := range ms {
			if m.visible > now || len(take) == n {
				break
			}
			if redrive && int(m.count) >= redriveMax {
				move = append(move, m.seq)
				continue
			}
			take = append(take, m.seq)
		}
		if len(take) == n {
			break
		}
	}
	return take, move, nil
}

// collectMessages reads fifoTakeSQL's rows.
func (s *Store) collectMessages(rows pgx.Rows, qid int64) ([]engine.Message, error) {
	defer rows.Close()
	var msgs []engine.Message
	for rows.Next() {
		var noted int64
		m, _, err := s.scanMessage(rows, &qid, true, &noted)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	return msgs, rows.Err()
}
