package postgres

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/uuidv4"
)

// The message columns of a send, as sendArgs gives them: $3 to $12.
const sendColumns = `$3::text[], $4::bytea[], $5::bytea[], $6::text[], $7::text[], $8::text[],
	$9::text[], $10::text[], $11::text[], $12::int8[]`

const sendColumnNames = `message_id, body, attributes, trace_header, group_id, sender_id,
	md5_body, md5_attrs, md5_sys, delay_ns`

// sendSQL enqueues a batch on a standard queue in one statement: it
// numbers the messages from message_seq in their order, writes their
// bodies and states, and tells the waiters of the queue when the first of
// them is visible soon. It answers the queue id (no row: no such queue),
// whether the queue is FIFO (then it wrote nothing: fifoSendSQL's turn),
// the seqs and its notes.
const sendSQL = `
WITH q AS (
	SELECT id, delay_ns, fifo FROM queues WHERE account = $1 AND name = $2 AND deleted_ns IS NULL
), m AS (
	SELECT nextval('message_seq') AS seq, u.*
	FROM q, unnest(` + sendColumns + `, $16::text[]) WITH ORDINALITY AS u(` + sendColumnNames + `, history, ord)
	WHERE NOT q.fifo
), b AS (
	INSERT INTO message_bodies (id, body, attributes, trace_header, group_id, sender_id, md5_body, md5_attrs, md5_sys, slot)
	SELECT seq, body, attributes, trace_header, group_id, sender_id, md5_body, md5_attrs, md5_sys, ` + currentSlot + ` FROM m
), st AS (
	INSERT INTO messages (queue_id, seq, body_id, message_id, sent_ns, entered_ns, visible_ns, slot, history)
	SELECT q.id, m.seq, m.seq, m.message_id, $13, $13, $13 + coalesce(m.delay_ns, q.delay_ns), ` + currentSlot + `,
		m.history::jsonb
	FROM q, m
	RETURNING queue_id, visible_ns
), counted AS (` + countInserted + `st GROUP BY queue_id
), n AS (
	SELECT q.id AS qid, min(st.visible_ns) AS at, notify_waiters($14, q.id, min(st.visible_ns)) FROM q, st
	GROUP BY q.id HAVING min(st.visible_ns) < $13 + $15
)
SELECT q.id, q.fifo, coalesce((SELECT array_agg(seq ORDER BY ord) FROM m), '{}'),
	` + notesSQL + `
FROM q`

// sendArgs are sendSQL's arguments for msgs, with fresh message ids; the
// last, $16, is the stories the messages arrive with (NULL for none).
func (s *Store) sendArgs(account, name string, msgs []engine.NewMessage, now int64) ([]any, []string, error) {
	n := len(msgs)
	rnd := make([]byte, 16*n)
	if _, err := rand.Read(rnd); err != nil {
		return nil, nil, err
	}
	ids := make([]string, n)
	var (
		bodies                  = make([][]byte, n)
		traces, groups, senders = make([]string, n), make([]string, n), make([]string, n)
		md5b, md5a, md5s        = make([]string, n), make([]string, n), make([]string, n)
		attrs                   = make([][]byte, n)
		delays                  = make([]*int64, n)
		histories               = make([]*string, n)
	)
	for i := range msgs {
		m := &msgs[i]
		var id [uuidv4.Len]byte
		uuidv4.Encode(&id, [16]byte(rnd[16*i:]))
		ids[i] = string(id[:])
		bodies[i], traces[i], groups[i], senders[i] = []byte(m.Body), m.TraceHeader, m.MessageGroupID, m.SenderID
		md5b[i], md5a[i], md5s[i] = m.MD5OfBody, m.MD5OfAttrs, m.MD5OfSysAttrs
		if len(m.Attributes) > 0 {
			b, err := json.Marshal(m.Attributes)
			if err != nil {
				return nil, nil, err
			}
			attrs[i] = b
		}
		if m.Delay != nil {
			d := durationNS(*m.Delay)
			delays[i] = &d
		}
		if m.History != nil && len(m.History.Events) > 0 {
			h, err := encodeHistory(m.History)
			if err != nil {
				return nil, nil, err
			}
			histories[i] = &h
		}
	}
	return []any{account, name, ids, bodies, attrs, traces, groups, senders, md5b, md5a, md5s, delays,
		now, s.channel, int64(maxLongPoll), histories}, ids, nil
}

// pendingSend is one queue's send between its statement and its results.
type pendingSend struct {
	msgs []engine.NewMessage
	args []any
	ids  []string
}

func (s *Store) prepareSend(account, name string, msgs []engine.NewMessage, now int64) (pendingSend, error) {
	args, ids, err := s.sendArgs(account, name, msgs, now)
	return pendingSend{msgs: msgs, args: args, ids: ids}, err
}

// statement is the send's statement for a queue of its kind, FIFO or not,
// with its arguments.
func (p pendingSend) statement(fifo bool) (string, []any) {
	if !fifo {
		return sendSQL, p.args
	}
	dedups := make([]string, len(p.msgs))
	for i := range p.msgs {
		dedups[i] = p.msgs[i].DeduplicationID
	}
	// $16 and $17 are the deduplication's; the stories move to $18.
	n := len(p.args) - 1
	return fifoSendSQL, append(p.args[:n:n], dedups, int64(engine.DeduplicationWindow), p.args[n])
}

// sendHead is a send statement's answer for one queue.
type sendHead struct {
	qid  int64
	fifo bool // the queue is FIFO
	seqs []int64
	// The FIFO statement's: each message's id and whether it is a
	// duplicate, whose id and seq are its key's holder's.
	ids  []string
	dups []bool
	told notes
	err  error // engine.ErrQueueNotFound when there is no such queue
}

// scanSendHead reads sendSQL's answer, or fifoSendSQL's when fifo.
func scanSendHead(row pgx.Row, fifo bool) sendHead {
	var h sendHead
	if fifo {
		h.err = row.Scan(append([]any{&h.qid, &h.fifo, &h.ids, &h.seqs, &h.dups}, h.told.dst()...)...)
	} else {
		h.err = row.Scan(append([]any{&h.qid, &h.fifo, &h.seqs}, h.told.dst()...)...)
	}
	if errors.Is(h.err, pgx.ErrNoRows) {
		h.err = engine.ErrQueueNotFound
	}
	return h
}

// viewsFIFO says whether the node's view of the queue says it is FIFO; a
// queue it has no view of is taken for a standard one.
func (s *Store) viewsFIFO(account, name string) bool {
	q, _, ok := s.views.get(viewKey(account, name))
	return ok && q.Settings.FIFO
}

// send runs p's statement for a queue of kind fifo on db, and the other
// kind's when the queue turned out to be of that one (each writes nothing
// to a queue of the other kind): one round trip when the kind was right.
func (s *Store) send(ctx context.Context, db querier, p pendingSend, fifo bool) sendHead {
	sql, args := p.statement(fifo)
	h := scanSendHead(db.QueryRow(ctx, sql, args...), fifo)
	if h.err == nil && h.fifo != fifo {
		sql, args = p.statement(h.fifo)
		h = scanSendHead(db.QueryRow(ctx, sql, args...), h.fifo)
	}
	return h
}

// results answers p from its statement's answer h.
func (p pendingSend) results(h sendHead) ([]engine.SendResult, error) {
	if h.err != nil {
		return nil, h.err
	}
	n := len(p.ids)
	if len(h.seqs) != n || (h.fifo && (len(h.ids) != n || len(h.dups) != n)) {
		return nil, fmt.Errorf("%d messages answered of %d", len(h.seqs), n)
	}
	res := make([]engine.SendResult, n)
	for i, id := range p.ids {
		if !h.fifo {
			res[i] = engine.SendResult{MessageID: id}
			continue
		}
		res[i] = engine.SendResult{MessageID: h.ids[i], SequenceNumber: engine.FormatSequenceNumber(uint64(h.seqs[i])),
			Duplicate: h.dups[i]}
	}
	return res, nil
}

// Send implements engine.Backend: one statement, of the kind the node's
// view says the queue is (a view that was wrong costs one more).
func (s *Store) Send(ctx context.Context, account, name string, msgs []engine.NewMessage) ([]engine.SendResult, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	p, err := s.prepareSend(account, name, msgs, s.now())
	var res []engine.SendResult
	if err == nil {
		h := s.send(ctx, s.pool, p, s.viewsFIFO(account, name))
		s.tell(h.told) // one statement: committed
		res, err = p.results(h)
	}
	switch {
	case errors.Is(err, engine.ErrQueueNotFound):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("postgres: send to %s: %w", name, err)
	}
	return res, nil
}

// SendMany implements engine.Backend: every part in one transaction, so
// the call commits once, and their statements in one batch, so that the
// parts cost one round trip together; a part whose queue is not of the
// kind the node's view says follows with the other statement.
func (s *Store) SendMany(ctx context.Context, sends []engine.QueueSend) ([]engine.SendOutcome, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	out := make([]engine.SendOutcome, len(sends))
	if len(sends) == 0 {
		return out, nil
	}
	now := s.now()
	ps := make([]pendingSend, len(sends))
	kinds := make([]bool, len(sends))
	b := &pgx.Batch{}
	for i, qs := range sends {
		var err error
		if ps[i], err = s.prepareSend(qs.Account, qs.Name, qs.Msgs, now); err != nil {
			return nil, fmt.Errorf("postgres: send to %s: %w", qs.Name, err)
		}
		kinds[i] = s.viewsFIFO(qs.Account, qs.Name)
		sql, args := ps[i].statement(kinds[i])
		b.Queue(sql, args...)
	}
	var told notes
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		br := tx.SendBatch(ctx, b)
		heads := make([]sendHead, len(sends))
		for i := range heads {
			heads[i] = scanSendHead(br.QueryRow(), kinds[i])
		}
		if err := br.Close(); err != nil {
			return err
		}
		for i, qs := range sends {
			h := heads[i]
			if h.err == nil && h.fifo != kinds[i] { // once the batch has ended
				h = s.send(ctx, tx, ps[i], h.fifo)
			}
			res, err := ps[i].results(h)
			if err != nil && !errors.Is(err, engine.ErrQueueNotFound) {
				return fmt.Errorf("send to %s: %w", qs.Name, err)
			}
			out[i] = engine.SendOutcome{Results: res, Err: err}
			told.add(h.told)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s.tell(told)
	return out, nil
}
