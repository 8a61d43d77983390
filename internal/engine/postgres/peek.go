package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/ferrymq/ferry/internal/engine"
)

// Peeking (engine.Peeker). A message's Ref is its seq in decimal: the key
// of its state row in its queue, which a rotation keeps, numbered from
// message_seq in the order messages enter a queue (a send, a move), so
// that the queue's order is the order of seq for both kinds of queue. A
// peek pages along the queue's part of the primary key (queue_id, seq) of
// both slots, from after its cursor (the seq last examined): a keyset, so
// a page deep in the queue costs what the first does.

var _ engine.Peeker = (*Store)(nil)

// peekStateSQL is the state of a message row m at $3 (now), as Stats
// counts them.
const peekStateSQL = `CASE WHEN m.visible_ns <= $3 THEN 'visible' WHEN m.gen > 0 THEN 'inflight' ELSE 'delayed' END`

// peekSQL answers one page of queue $1/$2 at $3: the messages after seq $4
// in the queue's order, examining $5 at most, that match the filter
// (message id $7, state $8, body containing $9, an attribute named $10
// whose String or Number value contains $11; NULL: any), $6 at most. It
// walks the queue's rows and stops at the $6th match; each row it answers
// is a match or, when the walk ended first, the last row examined (its
// message columns NULL unless it matches too), with its place in the walk
// (n). Every row, and the one row of NULLs when nothing was examined,
// carries the queue's id and kind and whether the queue holds a message
// after the last row examined.
const peekSQL = `
WITH q AS (
	SELECT id, fifo, retention_ns FROM queues WHERE account = $1 AND name = $2 AND deleted_ns IS NULL
), w AS (
	-- The queue's id and settings as scalars, so that the walk is one of
	-- the primary key from the cursor, stopping at the bound. lead() looks
	-- one row ahead to tell the walk's last row.
	SELECT m.*, row_number() OVER (ORDER BY m.seq) AS n, lead(m.seq) OVER (ORDER BY m.seq) IS NULL AS last,
		m.sent_ns > $3::int8 - (SELECT retention_ns FROM q)
			AND ($7::text IS NULL OR m.message_id = $7) AND ($8::text IS NULL OR ` + peekStateSQL + ` = $8) AS pass
	FROM (
		SELECT m.seq, m.body_id, m.message_id, m.sent_ns, m.visible_ns, m.gen
		FROM messages m
		WHERE m.queue_id = (SELECT id FROM q) AND m.seq > $4
		ORDER BY m.seq LIMIT $5) m
), h AS (
	SELECT * FROM (
		-- The body only for a filter of its content.
		SELECT w.n, w.seq, w.last, w.pass AND (($9::bytea IS NULL AND $10::text IS NULL) OR EXISTS (
			SELECT 1 FROM message_bodies b
			WHERE b.id = w.body_id AND ($9::bytea IS NULL OR position($9::bytea IN b.body) > 0)
				AND ($10::text IS NULL OR EXISTS (
					SELECT 1 FROM jsonb_array_elements(convert_from(b.attributes, 'UTF8')::jsonb) a
					WHERE a->>'Name' = $10 AND ($11::text IS NULL OR
						(split_part(a->>'DataType', '.', 1) IN ('String', 'Number') AND strpos(a->>'StringValue', $11) > 0)))))) AS hit
		FROM w) x
	WHERE x.last OR x.hit
	ORDER BY x.seq LIMIT $6
)
SELECT q.id, q.fifo, coalesce((SELECT true FROM messages m
		WHERE m.queue_id = (SELECT id FROM q) AND m.seq > (SELECT max(seq) FROM h) ORDER BY m.seq LIMIT 1), false),
	h.n, h.seq, ` + peekedColumns + `, NULL::jsonb
FROM q LEFT JOIN h ON true
LEFT JOIN messages g ON h.hit AND g.queue_id = q.id AND g.seq = h.seq
LEFT JOIN message_bodies b ON b.id = g.body_id
ORDER BY h.seq`

// peekSettingsSQL goes before peekSQL in its transaction. The walk is to
// read the key in order and stop at its bound, whatever the statistics
// say: not a bitmap scan of the key, which reads every row after the
// cursor to sort them, nor a scan of a slot's table. And the statement is
// planned once per connection (its generic plan), not at every call:
// planning it costs more than running it.
const peekSettingsSQL = `SELECT set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true),
	set_config('plan_cache_mode', 'force_generic_plan', true)`

// peekedColumns are the columns scanPeeked reads before the history: the
// state and visible time of the state row g at $3, the trace header's
// digest, then messageColumns.
const peekedColumns = `CASE WHEN g.visible_ns <= $3 THEN 'visible' WHEN g.gen > 0 THEN 'inflight' ELSE 'delayed' END,
	g.visible_ns, b.md5_sys, ` + messageColumns

// peekRefsSQL answers the messages of queue $1/$2 at $3 whose seqs are
// $4, in that order, with their histories, after the queue's id and kind
// and the message's seq (one row of NULLs but the queue's columns when
// none is there).
const peekRefsSQL = `
WITH q AS (
	SELECT id, fifo, retention_ns FROM queues WHERE account = $1 AND name = $2 AND deleted_ns IS NULL
)
SELECT q.id, q.fifo, g.seq, ` + peekedColumns + `, g.history
FROM q LEFT JOIN (unnest($4::int8[]) WITH ORDINALITY AS r(seq, i)
	JOIN messages g ON g.queue_id = (SELECT id FROM q) AND g.seq = r.seq
		AND g.sent_ns > $3::int8 - (SELECT retention_ns FROM q)
	JOIN message_bodies b ON b.id = g.body_id) ON true
ORDER BY r.i`

// scanPeeked reads peekedColumns and the history after the columns in
// dst, which it fills too; ok is false when the row has no message.
func (s *Store) scanPeeked(row pgx.Row, fifo *bool, dst ...any) (p engine.PeekedMessage, ok bool, err error) {
	var (
		state   *string
		visible *int64
		md5s    *string
	)
	m, ok, err := s.scanMessage(row, nil, fifo, append(dst, &state, &visible, &md5s)...)
	if err != nil || !ok {
		return p, false, err
	}
	p = engine.PeekedMessage{Message: m, MD5OfSysAttrs: *md5s, State: engine.MessageState(*state)}
	if p.State != engine.StateVisible {
		p.VisibleAt = fromNS(*visible)
	}
	return p, true, nil
}

// Ref is the ref of the message of seq.
func ref(seq int64) string { return strconv.FormatInt(seq, 10) }

// refSeqs are the seqs refs name, each once, in the order of refs; a
// malformed ref names none.
func refSeqs(refs []string) []int64 {
	seqs := make([]int64, 0, len(refs))
	seen := make(map[int64]bool, len(refs))
	for _, r := range refs {
		n, err := strconv.ParseInt(r, 10, 64)
		if err != nil || n <= 0 || seen[n] {
			continue
		}
		seen[n] = true
		seqs = append(seqs, n)
	}
	return seqs
}

// queueOrder are the seqs refs name, each once, in the order of the
// queue.
func queueOrder(refs []string) []int64 {
	seqs := refSeqs(refs)
	slices.Sort(seqs)
	return seqs
}

// optional is s for a statement, NULL when empty (a filter not set).
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// optionalBytes is optional for a bytea.
func optionalBytes(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// Peek implements engine.Peeker.
func (s *Store) Peek(ctx context.Context, account, name string, req engine.PeekRequest) (engine.PeekPage, error) {
	var after int64
	if req.After != "" {
		n, err := strconv.ParseInt(req.After, 10, 64)
		if err != nil || n < 0 {
			return engine.PeekPage{}, fmt.Errorf("postgres: peek cursor %q is not one of this store", req.After)
		}
		after = n
	}
	f := req.Filter
	switch f.State {
	case "", engine.StateVisible, engine.StateInFlight, engine.StateDelayed:
	default:
		return engine.PeekPage{}, fmt.Errorf("postgres: peek: unknown message state %q", f.State)
	}
	limit, scan := req.Limit, req.MaxScan
	switch {
	case limit < 1 || limit > engine.PeekMaxLimit:
		return engine.PeekPage{}, fmt.Errorf("postgres: peek: a limit of %d is not within 1 to %d", limit, engine.PeekMaxLimit)
	case scan < 0:
		return engine.PeekPage{}, fmt.Errorf("postgres: peek: a scan bound of %d is negative", scan)
	case scan == 0:
		scan = engine.PeekDefaultScan
	}
	if f == (engine.PeekFilter{}) {
		// Every message matches: the page is all it examines, and the
		// walk's bound says so to the planner, which otherwise plans
		// for the scan bound's rows.
		scan = min(scan, limit)
	}
	if err := s.enter(); err != nil {
		return engine.PeekPage{}, err
	}
	defer s.leave()
	// One batch, one transaction: the settings hold for the walk only.
	b := &pgx.Batch{}
	b.Queue(peekSettingsSQL)
	b.Queue(peekSQL, account, name, s.now(), after, scan, limit,
		optional(f.MessageID), optional(string(f.State)), optionalBytes(f.BodyContains), optional(f.AttributeName),
		optional(f.AttributeValue))
	br := s.pool.SendBatch(ctx, b)
	page, found, err := s.readPeek(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return engine.PeekPage{}, fmt.Errorf("postgres: peek into %s: %w", name, err)
	case !found:
		return engine.PeekPage{}, engine.ErrQueueNotFound
	}
	return page, nil
}

// readPeek reads the answers of Peek's batch; found is false when there
// is no such queue.
func (s *Store) readPeek(br pgx.BatchResults) (page engine.PeekPage, found bool, err error) {
	if _, err := br.Exec(); err != nil {
		return page, false, err
	}
	rows, err := br.Query()
	if err != nil {
		return page, false, err
	}
	defer rows.Close()
	var (
		qid     int64
		fifo    bool
		more    bool
		lastSeq int64
	)
	for rows.Next() {
		found = true
		var n, seq *int64
		p, ok, err := s.scanPeeked(rows, &fifo, &qid, &fifo, &more, &n, &seq)
		if err != nil {
			return page, false, err
		}
		if seq == nil {
			continue // nothing examined
		}
		page.Scanned, lastSeq = int(*n), *seq
		if ok {
			p.Ref = ref(*seq)
			page.Messages = append(page.Messages, p)
		}
	}
	if err := rows.Err(); err != nil {
		return page, false, err
	}
	if more {
		page.Next = ref(lastSeq)
	}
	return page, found, nil
}

// PeekRefs implements engine.Peeker.
func (s *Store) PeekRefs(ctx context.Context, account, name string, refs []string) ([]engine.PeekedMessage, error) {
	seqs := refSeqs(refs)
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	rows, err := s.pool.Query(ctx, peekRefsSQL, account, name, s.now(), seqs)
	if err != nil {
		return nil, fmt.Errorf("postgres: peek into %s: %w", name, err)
	}
	defer rows.Close()
	var (
		out   []engine.PeekedMessage
		found bool
		qid   int64
		fifo  bool
	)
	for rows.Next() {
		found = true
		var seq *int64
		p, ok, err := s.scanPeeked(rows, &fifo, &qid, &fifo, &seq)
		if err != nil {
			return nil, fmt.Errorf("postgres: peek into %s: %w", name, err)
		}
		if ok {
			p.Ref = ref(*seq)
			out = append(out, p)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: peek into %s: %w", name, err)
	}
	if !found {
		return nil, engine.ErrQueueNotFound
	}
	return out, nil
}

// lockRefsSQL locks the groups of the messages of seqs $3 of the named
// queue, waiting for them.
var lockRefsSQL = keepLocked(`
	SELECT f.group_id FROM fifo_groups f
	WHERE f.queue_id = ` + namedQueue + ` AND f.group_id IN (
		SELECT m.group_id FROM unnest($3::int8[]) AS u(seq)
		JOIN messages m ON m.queue_id = ` + namedQueue + ` AND m.seq = u.seq
		WHERE m.group_id <> '')
	ORDER BY f.group_id
	FOR UPDATE`)

// deleteRefsSQL deletes the messages of seqs $3 of queue $1/$2 that
// retention has not expired at $4, whatever their state, with their
// bodies (and so their histories), and answers the queue's id and how
// many it deleted.
const deleteRefsSQL = `
WITH q AS (
	SELECT id, retention_ns FROM queues WHERE account = $1 AND name = $2 AND deleted_ns IS NULL
), d AS (
	DELETE FROM messages m USING q
	WHERE m.queue_id = q.id AND m.seq = ANY($3::int8[]) AND m.sent_ns > $4::int8 - q.retention_ns
	RETURNING m.body_id
), db AS (
	DELETE FROM message_bodies b USING d WHERE b.id = d.body_id
)
SELECT q.id, (SELECT count(*) FROM d) FROM q`

// DeleteRefs implements engine.Peeker: one statement, or on a FIFO queue
// one batch that locks the messages' groups first and sets their rows
// again after, as a delete by receipt handle does.
func (s *Store) DeleteRefs(ctx context.Context, account, name string, refs []string) (int, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	seqs := refSeqs(refs)
	var qid, deleted int64
	now := s.now()
	err := s.withGroups(ctx, account, name, lockRefsSQL, []any{account, name, seqs}, now,
		deleteRefsSQL, []any{account, name, seqs, now}, false, &qid, &deleted)
	if isNoRows(err) {
		return 0, engine.ErrQueueNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("postgres: delete from %s: %w", name, err)
	}
	return int(deleted), nil
}
