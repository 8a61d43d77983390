package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/handle"
)

// moveInsertSQL writes the state rows of the messages a statement's moved
// CTE deleted into the dead-letter queue of its q CTE (dlq_id, dlq_fifo,
// arn, dlq_arn), in their order, $3 being now: same id, body, receive
// counts, history (telling of the move, if the message has one);
// DeadLetterSourceARN set; visible at once. Into a FIFO dead-letter queue
// a message keeps its group, goes to its back, and takes its MessageID as
// its deduplication id and the move as its SentAt; the dead-letter queue's
// deduplication window is not consulted.
const moveInsertSQL = `
	INSERT INTO messages (queue_id, seq, body_id, message_id, sent_ns, entered_ns, visible_ns,
		receive_count, gen, first_receive_ns, received_ns, dedup_id, group_id, dlq_source_arn, slot, history)
	SELECT q.dlq_id, nextval('message_seq'), mv.body_id, mv.message_id,
		CASE WHEN q.dlq_fifo THEN $3 ELSE mv.sent_ns END, $3, $3, mv.receive_count, 0, mv.first_receive_ns, 0,
		CASE WHEN q.dlq_fifo THEN mv.message_id ELSE mv.dedup_id END,
		CASE WHEN q.dlq_fifo THEN mv.group_id ELSE '' END, q.arn, ` + currentSlot + `,
		history_add(mv.history, CASE WHEN mv.history IS NOT NULL THEN jsonb_build_object('kind', 'move',
			'at', $3::int8, 'count', mv.receive_count, 'from', q.arn, 'to', q.dlq_arn, 'cause', 'redrive') END)
	FROM q, (SELECT * FROM moved ORDER BY seq) mv
	RETURNING queue_id, group_id, seq, visible_ns`

// messageColumns are the columns scanMessage reads, from got g (the state
// rows a receive updated) and message_bodies b, and last the history
// (askedHistory, or NULL).
const messageColumns = `g.seq, g.gen, g.message_id, g.sent_ns, g.first_receive_ns, g.receive_count, g.dedup_id,
	g.dlq_source_arn, b.body, b.attributes, b.trace_header, b.group_id, b.sender_id, b.md5_body, b.md5_attrs`

// askedHistory is the history column of a receive whose $9 asks for it
// (engine.ReceiveRequest.History): decoding every story would cost every
// receive of a message that has one.
const askedHistory = `CASE WHEN $9::bool THEN g.history END`

// receiveSQL takes up to $4 visible messages of a standard queue in one
// statement. It deletes what retention has expired, locks the head of
// messages_next with SKIP LOCKED (concurrent receives take different
// messages and never wait for one another), moves those that reached the
// redrive policy's receive count to the dead-letter queue (the state row
// moves; the body stays; a queue that is its own dead-letter queue hands
// the message out instead, as when its dead-letter queue is gone), and hides the rest
// for the visibility timeout, adding the receive $8 (its consumer; NULL
// records nothing) to their history.
// Each row is one message taken, in the order of the queue, after the
// queue id, whether it is FIFO (then it took nothing: takeFIFO's turn),
// the number moved, its notes, and the next time a message of the queue
// becomes visible (for a long poll's timer); a queue with nothing to take
// answers one row of those.
const receiveSQL = `
WITH q AS (
	SELECT q.id, q.arn, q.visibility_ns, q.retention_ns, q.fifo, d.id AS dlq_id, d.fifo AS dlq_fifo, d.arn AS dlq_arn,
		q.redrive_max
	FROM queues q LEFT JOIN queues d ON q.redrive_max > 0 AND d.account = q.redrive_account
		AND d.name = q.redrive_name AND d.deleted_ns IS NULL AND d.id <> q.id
	WHERE q.account = $1 AND q.name = $2 AND q.deleted_ns IS NULL
), expired AS (
	DELETE FROM messages m USING q WHERE m.queue_id = q.id AND m.sent_ns <= $3 - q.retention_ns
	RETURNING m.body_id
), expired_bodies AS (
	-- By key: the planner cannot tell how many rows retention expires and
	-- would otherwise join them to a scan of every body.
	DELETE FROM message_bodies b WHERE b.id = ANY (ARRAY(SELECT body_id FROM expired))
), c AS (
	-- The queue's id and settings as scalars, so that the plan walks
	-- messages_next from the queue's head in order and stops at the limit.
	SELECT m.seq, m.slot, m.visible_ns,
		(SELECT dlq_id IS NOT NULL FROM q) AND m.receive_count >= (SELECT redrive_max FROM q) AS poison
	FROM messages m
	WHERE m.queue_id = (SELECT id FROM q WHERE NOT fifo) AND m.visible_ns <= $3
		AND m.sent_ns > $3 - (SELECT retention_ns FROM q)
	ORDER BY m.visible_ns, m.seq
	LIMIT $4
	FOR UPDATE OF m SKIP LOCKED
), moved AS (
	-- The slot too, so that each row is looked for in its slot only.
	DELETE FROM messages m USING q, c WHERE c.poison AND m.queue_id = q.id AND m.seq = c.seq AND m.slot = c.slot
	RETURNING m.*
), moved_in AS (` + moveInsertSQL + `
), moved_counted AS (` + countInserted + `moved_in GROUP BY queue_id
), got AS (
	UPDATE messages m SET
		visible_ns = $3 + coalesce($5, q.visibility_ns),
		gen = m.gen + 1,
		receive_count = m.receive_count + 1,
		first_receive_ns = CASE WHEN m.first_receive_ns = 0 THEN $3 ELSE m.first_receive_ns END,
		received_ns = $3,
		history = history_add(m.history, $8::jsonb || jsonb_build_object('at', $3::int8,
			'count', m.receive_count + 1, 'visible', $3 + coalesce($5, q.visibility_ns)))
	FROM q, c WHERE NOT c.poison AND m.queue_id = q.id AND m.seq = c.seq AND m.slot = c.slot
	RETURNING m.*
), n AS (
	SELECT q.dlq_id AS qid, $3::int8 AS at, notify_waiters($6, q.dlq_id, $3) FROM q WHERE EXISTS (SELECT 1 FROM moved_in)
	UNION ALL
	SELECT q.id, min(got.visible_ns), notify_waiters($6, q.id, min(got.visible_ns)) FROM q, got
	GROUP BY q.id HAVING min(got.visible_ns) < $3 + $7
)
SELECT q.id, q.fifo, (SELECT count(*) FROM moved_in), ` + notesSQL + `,
	(SELECT min(m.visible_ns) FROM messages m WHERE m.queue_id = q.id AND m.visible_ns > $3),
	` + messageColumns + `, ` + askedHistory + `
FROM q LEFT JOIN (got g JOIN c ON c.seq = g.seq JOIN message_bodies b ON b.id = g.body_id) ON true
ORDER BY c.visible_ns, c.seq`

// take is what a receive took: the messages, how many it moved to the
// dead-letter queue, when the queue's next message becomes visible (0:
// none known), and the notes its statements sent.
type take struct {
	qid   int64
	fifo  bool
	msgs  []engine.Message
	moved int64
	next  int64
	told  notes
}

// scanMessage reads messageColumns after the n columns in dst, which it
// fills too; ok is false when the row has no message (a LEFT JOIN's nulls).
// The message gets a receipt handle of queue *qid unless qid is nil, and
// its FIFO fields when *fifo, both read once the row is.
func (s *Store) scanMessage(row pgx.Row, qid *int64, fifo *bool, dst ...any) (m engine.Message, ok bool, err error) {
	var (
		seq, sent, first     *int64
		gen, count           *int32
		id, dedup, dlqARN    *string
		trace, group, sender *string
		md5b, md5a           *string
		attrs, body, hist    []byte
	)
	err = row.Scan(append(dst, &seq, &gen, &id, &sent, &first, &count, &dedup, &dlqARN,
		&body, &attrs, &trace, &group, &sender, &md5b, &md5a, &hist)...)
	if err != nil || seq == nil {
		return m, false, err
	}
	m = engine.Message{
		MessageID:           *id,
		Body:                string(body),
		TraceHeader:         *trace,
		MessageGroupID:      *group,
		SenderID:            *sender,
		MD5OfBody:           *md5b,
		MD5OfAttrs:          *md5a,
		SentAt:              fromNS(*sent),
		FirstReceiveAt:      fromNS(*first),
		ReceiveCount:        int(*count),
		DeadLetterSourceARN: *dlqARN,
	}
	if qid != nil {
		m.ReceiptHandle = s.signer.Sign(handle.Receipt{Queue: uint64(*qid), Seq: uint64(*seq), Gen: uint64(*gen)})
	}
	if *fifo {
		m.SequenceNumber, m.DeduplicationID = engine.FormatSequenceNumber(uint64(*seq)), *dedup
	}
	if hist != nil {
		h, err := decodeHistory(m.MessageID, hist)
		if err != nil {
			return m, false, err
		}
		m.History = &h
	}
	if attrs != nil {
		if err := json.Unmarshal(attrs, &m.Attributes); err != nil {
			return m, false, fmt.Errorf("message %s attributes: %w", m.MessageID, err)
		}
	}
	return m, true, nil
}

func (s *Store) takeOnce(ctx context.Context, account, name string, n int, vis *int64, ev []byte, withHistory bool) (take, error) {
	var t take
	rows, err := s.pool.Query(ctx, receiveSQL, account, name, s.now(), n, vis, s.channel, int64(maxLongPoll), ev, withHistory)
	if err != nil {
		return t, err
	}
	defer rows.Close()
	found := false
	for rows.Next() {
		found = true
		var next *int64
		m, ok, err := s.scanMessage(rows, &t.qid, &t.fifo, &t.qid, &t.fifo, &t.moved, &t.told.qids, &t.told.ats, &next)
		if err != nil {
			return t, err
		}
		if next != nil {
			t.next = *next
		}
		if ok {
			t.msgs = append(t.msgs, m)
		}
	}
	if err := rows.Err(); err != nil {
		return t, err
	}
	if !found {
		return t, engine.ErrQueueNotFound
	}
	s.tell(t.told) // the rows are read: the statement has committed
	return t, nil
}

// takeAll takes up to n messages: while a statement moved messages to the
// dead-letter queue instead of handing them out, it looks again for the
// places they left. A FIFO queue is takeFIFO's: the node's view of the
// queue says which, and a view that was wrong costs one more statement.
// A receive attempt takes once, so that the attempt is what it answered.
func (s *Store) takeAll(ctx context.Context, account, name string, n int, req engine.ReceiveRequest) (take, error) {
	var vis *int64
	if req.Visibility != nil {
		v := durationNS(*req.Visibility)
		vis = &v
	}
	q, _, known := s.views.get(viewKey(account, name))
	fifo := known && q.Settings.FIFO
	ev := receiveEvent(req.Consumer)
	var all take
	for {
		var t take
		err := retryMoved(ctx, func() (err error) {
			if fifo {
				t, err = s.takeFIFO(ctx, account, name, n-len(all.msgs), vis, req.AttemptID, ev, req.History)
			} else {
				t, err = s.takeOnce(ctx, account, name, n-len(all.msgs), vis, ev, req.History)
			}
			return err
		})
		if err != nil {
			return all, err
		}
		if t.fifo != fifo { // it took nothing: the other kind's turn
			fifo = t.fifo
			continue
		}
		all.qid, all.next, all.fifo = t.qid, t.next, t.fifo
		all.msgs = append(all.msgs, t.msgs...)
		all.moved += t.moved
		if t.moved == 0 || len(all.msgs) == n || req.AttemptID != "" {
			return all, nil
		}
	}
}

// Receive implements engine.Backend. A long poll waits in Go, holding no
// connection: the hub wakes it when a notification says a message of the
// queue is visible, and a timer on the clock when the next visible time it
// knows of comes.
func (s *Store) Receive(ctx context.Context, account, name string, req engine.ReceiveRequest) ([]engine.Message, error) {
	if ctx.Err() != nil {
		return nil, nil
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	n := max(req.Max, 1)
	start := s.clock.Now()
	// A statement runs to its end even if the caller leaves meanwhile, so
	// that what it took is either handed out or visible at its timeout,
	// never taken by a receive that was cancelled after the commit.
	stmtCtx := context.WithoutCancel(ctx)
	t, err := s.takeAll(stmtCtx, account, name, n, req)
	if err != nil || len(t.msgs) > 0 || req.Wait <= 0 {
		s.leave()
		return t.msgs, receiveErr(name, err)
	}
	// Listen and register first, then look again: what commits after
	// this look is told.
	w := s.hub.subscribe(t.qid)
	defer s.hub.unsubscribe(w)
	if err := s.register(stmtCtx, t.qid); err != nil {
		s.leave()
		return nil, receiveErr(name, err)
	}
	t, err = s.takeAll(stmtCtx, account, name, n, req)
	s.leave() // Close must not wait for a long poll
	if err != nil || len(t.msgs) > 0 {
		return t.msgs, receiveErr(name, err)
	}

	deadline := start.Add(req.Wait).UnixNano()
	// A visibility timer fired by a step of a controlled clock holds the
	// step (clock.Hold) until this poll has taken what it made visible and
	// handed the hold on to the caller (clock.Pass), or found nothing and
	// armed its next timer: the step's work includes this receive. So does
	// a change this node made in a step (hub.tellOwn).
	var (
		visTimer clock.Timer
		visAt    int64
		visFired = make(chan func(), 1)
		visMu    sync.Mutex // gone, and sends on visFired
		gone     bool       // the poll returned: drop what fires
		held     func()     // the hold of the step that woke this take
	)
	// arm sets the visibility timer for at, if it is sooner than the one set
	// and within the wait.
	arm := func(at int64) {
		if at <= 0 || at >= deadline || (visTimer != nil && visAt <= at) {
			return
		}
		if visTimer != nil {
			visTimer.Stop()
		}
		visAt = at
		visTimer = s.clock.AfterFunc(time.Duration(at-s.now()), func() {
			visMu.Lock()
			defer visMu.Unlock()
			if gone {
				return
			}
			rel := clock.Hold(s.clock)
			select {
			case visFired <- rel:
			default:
				rel()
			}
		})
	}
	arm(t.next)
	// Its end is work of the step that reaches it: a caller holding the
	// clock's steps (clock.Holds) polls again before the next step.
	waitEnd := clock.NewDeadline(s.clock, time.Duration(deadline-s.now()))
	clock.ReleaseHolds(ctx) // waiting: the step that called may end
	defer func() {
		waitEnd.Stop(ctx)
		if visTimer != nil {
			visTimer.Stop()
		}
		visMu.Lock()
		gone = true
		select {
		case rel := <-visFired:
			rel()
		default:
		}
		visMu.Unlock()
		if held != nil {
			held()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil, nil
		case <-s.done:
			return nil, nil
		case <-waitEnd.C:
			return nil, nil
		case rel := <-visFired:
			visTimer, visAt = nil, 0
			if held != nil {
				held()
			}
			held = rel
		case <-w.signal:
			at, rel, ok := w.take()
			if !ok {
				continue
			}
			if at > s.now() {
				arm(at)
				if rel != nil {
					rel() // armed: the step that told may end
				}
				continue
			}
			held = rel
		}
		if err := s.enter(); err != nil {
			return nil, nil
		}
		t, err = s.takeAll(stmtCtx, account, name, n, req)
		s.leave()
		if errors.Is(err, engine.ErrQueueNotFound) {
			return nil, nil // deleted while waited on
		}
		if err != nil || len(t.msgs) > 0 {
			if held != nil && len(t.msgs) > 0 {
				clock.Pass(ctx, held)
				held = nil
			}
			return t.msgs, receiveErr(name, err)
		}
		arm(t.next)
		if held != nil {
			held()
			held = nil
		}
	}
}

func receiveErr(name string, err error) error {
	if err == nil || errors.Is(err, engine.ErrQueueNotFound) {
		return err
	}
	return fmt.Errorf("postgres: receive from %s: %w", name, err)
}

// isNoRows reports a statement that found no queue.
func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
