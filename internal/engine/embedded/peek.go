package embedded

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/ferrymq/ferry/internal/engine"
)

// Peeking (engine.Peeker). A message's ref is its seq in decimal: seqs
// are never handed out twice (engine.go), so a ref names one message for
// good, and a peek's cursor is the ref of the last message it examined.
//
// A page is read from the store in seq order (the queue's order: send
// order, a FIFO queue's sequence order), from the cursor on, in chunks:
// the records of a chunk are read without the queue lock, then the lock
// is taken once for the chunk, only to read each message's state from
// the index. Nothing is written and nothing of the index changes but what
// Stats changes too (due visibility, retention). A message the index does
// not hold (deleted, or a send still on its way into the index) is left
// out and not counted as examined.

// peekChunk is how many records a peek reads between two looks at the
// index: the lock is taken once a chunk, and a chunk's records are in
// memory at once.
const peekChunk = 32

// parseRef reads a ref (or a cursor): a seq in decimal.
func parseRef(s string) (uint64, bool) {
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil && n > 0
}

func formatRef(seq uint64) string { return strconv.FormatUint(seq, 10) }

// peekMeta is what the index says of a message, as of a peek.
type peekMeta struct {
	found            bool
	state            engine.MessageState
	visibleAt        int64 // in flight or delayed: when it becomes visible
	receiveCount     uint32
	firstReceiveAt   int64
	history, pending bool
}

// peekMetasLocked fills metas with what the index holds of seqs at now.
// A message being deleted, or past retention, is not found.
func (q *queue) peekMetasLocked(seqs []uint64, metas []peekMeta, now int64) {
	ret := q.desc.Settings.Retention
	for i, seq := range seqs {
		m := q.msgs[seq]
		if m == nil || m.status == statusDeleting || (ret > 0 && after(m.sentAt, ret) <= now) {
			metas[i] = peekMeta{}
			continue
		}
		pm := peekMeta{found: true, receiveCount: m.receiveCount, firstReceiveAt: m.firstReceiveAt, history: m.history, pending: m.pending}
		switch {
		case m.status == statusReady || m.deadline <= now:
			pm.state = engine.StateVisible
		case m.status == statusDelayed:
			pm.state, pm.visibleAt = engine.StateDelayed, m.deadline
		default:
			pm.state, pm.visibleAt = engine.StateInFlight, m.deadline
		}
		metas[i] = pm
	}
}

// peekMetas is peekMetasLocked under q's lock, after bringing the index
// to now as Stats does; ErrQueueNotFound once q is deleted.
func (e *Engine) peekMetas(q *queue, seqs []uint64, metas []peekMeta) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.deleted {
		return engine.ErrQueueNotFound
	}
	now := e.now()
	q.advanceLocked(now)
	q.rearmLocked(now)
	q.peekMetasLocked(seqs, metas, now)
	return nil
}

// decodePeeked decodes the record rec of message seq (a string that
// nothing writes, whose fields the message's strings are cut from) with
// what the index says of it.
func decodePeeked(q *queue, seq uint64, rec string, pm *peekMeta, out *engine.PeekedMessage) error {
	v := unsafe.Slice(unsafe.StringData(rec), len(rec))
	if err := decodeMessageShared(v, rec, &out.Message, nil); err != nil {
		return fmt.Errorf("embedded: message %d of queue %d: %w", seq, q.id, err)
	}
	sys, err := decodeSysMD5(v)
	if err != nil {
		return fmt.Errorf("embedded: message %d of queue %d: %w", seq, q.id, err)
	}
	out.Ref = formatRef(seq)
	out.MD5OfSysAttrs = sys
	out.State = pm.state
	if pm.visibleAt != 0 {
		out.VisibleAt = fromNanos(pm.visibleAt)
	}
	out.ReceiveCount = int(pm.receiveCount)
	if pm.receiveCount > 0 {
		out.FirstReceiveAt = fromNanos(pm.firstReceiveAt)
	}
	if q.fifo {
		out.SequenceNumber = engine.FormatSequenceNumber(seq)
	}
	return nil
}

// recordMatches reports whether message record v passes the fields of f
// that are about its content (id, body, attributes), reading it in place:
// a filtered peek copies only the records that pass.
func recordMatches(f *engine.PeekFilter, v []byte) (bool, error) {
	if f.MessageID == "" && f.BodyContains == "" && f.AttributeName == "" {
		return true, nil
	}
	r := newReader(v, false)
	r.messageHead()
	id := r.str0()
	body := r.str0()
	for range 6 { // trace header, group, sender and the three digests
		r.span()
	}
	n := r.uvarint()
	if r.bad {
		return false, errCorrupt
	}
	if (f.MessageID != "" && id != f.MessageID) || (f.BodyContains != "" && !strings.Contains(body, f.BodyContains)) {
		return false, nil
	}
	if f.AttributeName == "" {
		return true, nil
	}
	for range n {
		name, typ, val := r.str0(), r.str0(), r.str0()
		r.span() // binary value
		if r.bad {
			return false, errCorrupt
		}
		if name != f.AttributeName {
			continue
		}
		if f.AttributeValue == "" {
			return true, nil
		}
		base, _, _ := strings.Cut(typ, ".")
		return (base == "String" || base == "Number") && strings.Contains(val, f.AttributeValue), nil
	}
	return false, nil
}

// str0 is str without a copy: a view into the record, valid as long as
// the record is.
func (r *reader) str0() string {
	i, j := r.span()
	return unsafe.String(unsafe.SliceData(r.b[i:j]), j-i)
}

// checkPeek refuses a request out of range and returns the seq a page
// starts at and how many messages it may examine.
func checkPeek(req *engine.PeekRequest) (from uint64, scan int, err error) {
	if req.Limit < 1 || req.Limit > engine.PeekMaxLimit {
		return 0, 0, fmt.Errorf("embedded: peek limit %d is not within 1..%d", req.Limit, engine.PeekMaxLimit)
	}
	if req.MaxScan < 0 {
		return 0, 0, fmt.Errorf("embedded: peek MaxScan %d is negative", req.MaxScan)
	}
	switch req.Filter.State {
	case "", engine.StateVisible, engine.StateInFlight, engine.StateDelayed:
	default:
		return 0, 0, fmt.Errorf("embedded: peek filter state %q is none of %s, %s, %s",
			req.Filter.State, engine.StateVisible, engine.StateInFlight, engine.StateDelayed)
	}
	if req.After != "" {
		seq, ok := parseRef(req.After)
		if !ok || seq == math.MaxUint64 {
			return 0, 0, fmt.Errorf("embedded: peek cursor %q is malformed", req.After)
		}
		from = seq + 1
	}
	scan = req.MaxScan
	if scan == 0 {
		scan = engine.PeekDefaultScan
	}
	if req.Filter == (engine.PeekFilter{}) {
		// Every message examined is returned.
		scan = min(scan, req.Limit)
	}
	return from, scan, nil
}

// Peek implements engine.Peeker.
func (e *Engine) Peek(ctx context.Context, account, name string, req engine.PeekRequest) (engine.PeekPage, error) {
	var page engine.PeekPage
	from, scan, err := checkPeek(&req)
	if err != nil {
		return page, err
	}
	if err := e.begin(ctx, opRead); err != nil {
		return page, err
	}
	defer e.end(opRead)
	q, err := e.lookup(account, name)
	if err != nil {
		return page, err
	}
	cur, err := q.bodiesFrom(from)
	if err != nil {
		return page, fmt.Errorf("embedded: peek: %w", err)
	}
	defer cur.close()

	var (
		seqs  = make([]uint64, 0, peekChunk)
		recs  = make([]string, 0, peekChunk)
		metas = make([]peekMeta, peekChunk)
		last  uint64 // the last message examined
		// valid: the cursor is at a message record.
		valid = cur.valid()
	)
	for valid && page.Scanned < scan && len(page.Messages) < req.Limit {
		if err := ctx.Err(); err != nil {
			return engine.PeekPage{}, err
		}
		// A chunk: no more records than the page may still examine.
		seqs, recs = seqs[:0], recs[:0]
		for ; valid && len(seqs) < min(peekChunk, scan-page.Scanned); valid = cur.next() {
			seq := cur.seq()
			v, err := cur.value()
			if err != nil {
				return engine.PeekPage{}, fmt.Errorf("embedded: peek: %w", err)
			}
			ok, err := recordMatches(&req.Filter, v)
			if err != nil {
				return engine.PeekPage{}, fmt.Errorf("embedded: message %d of queue %d: %w", seq, q.id, err)
			}
			seqs = append(seqs, seq)
			if ok {
				recs = append(recs, string(v))
			} else {
				recs = append(recs, "") // a record is never empty
			}
		}
		if err := e.peekMetas(q, seqs, metas[:len(seqs)]); err != nil {
			return engine.PeekPage{}, err
		}
		for i, seq := range seqs {
			if page.Scanned == scan || len(page.Messages) == req.Limit {
				// Stopped within the chunk: what is left of it is next.
				valid = true
				break
			}
			pm := &metas[i]
			if !pm.found {
				continue
			}
			page.Scanned++
			last = seq
			if recs[i] == "" || (req.Filter.State != "" && pm.state != req.Filter.State) {
				continue
			}
			var m engine.PeekedMessage
			if err := decodePeeked(q, seq, recs[i], pm, &m); err != nil {
				return engine.PeekPage{}, err
			}
			page.Messages = append(page.Messages, m)
		}
	}
	if err := cur.close(); err != nil {
		return engine.PeekPage{}, fmt.Errorf("embedded: peek: %w", err)
	}
	// More to come if the walk stopped before the queue's last record (a
	// following page may find those deleted since, and be empty).
	if valid && last != 0 {
		page.Next = formatRef(last)
	}
	return page, nil
}

// refSeqs parses refs, leaving out the malformed ones and repeats.
func refSeqs(refs []string) []uint64 {
	seqs := make([]uint64, 0, len(refs))
	seen := make(map[uint64]bool, len(refs))
	for _, r := range refs {
		if seq, ok := parseRef(r); ok && !seen[seq] {
			seen[seq] = true
			seqs = append(seqs, seq)
		}
	}
	return seqs
}

// PeekRefs implements engine.Peeker. Each message is a point read: refs
// are what a person picked from a page.
func (e *Engine) PeekRefs(ctx context.Context, account, name string, refs []string) ([]engine.PeekedMessage, error) {
	if err := e.begin(ctx, opRead); err != nil {
		return nil, err
	}
	defer e.end(opRead)
	q, err := e.lookup(account, name)
	if err != nil {
		return nil, err
	}
	seqs := refSeqs(refs)
	metas := make([]peekMeta, len(seqs))
	if err := e.peekMetas(q, seqs, metas); err != nil {
		return nil, err
	}
	var out []engine.PeekedMessage
	for i, seq := range seqs {
		pm := &metas[i]
		if !pm.found {
			continue
		}
		v, err := q.body(seq)
		if err != nil {
			return nil, err
		}
		if v == nil {
			continue // deleted since
		}
		var m engine.PeekedMessage
		if err := decodePeeked(q, seq, string(v), pm, &m); err != nil {
			return nil, err
		}
		if pm.history || pm.pending {
			h, ok, err := e.story(q.id, seq, pm.history, pm.pending)
			if err != nil {
				return nil, fmt.Errorf("embedded: history of message %d of queue %d: %w", seq, q.id, err)
			}
			if ok {
				h.MessageID = m.MessageID
				m.History = &h
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// DeleteRefs implements engine.Peeker: each message goes as Delete takes
// one by a handle of its latest receive, whatever its state; on a FIFO
// queue it blocks its group until the delete is durable.
func (e *Engine) DeleteRefs(ctx context.Context, account, name string, refs []string) (int, error) {
	seqs := refSeqs(refs)
	n := 0
	err := e.withQueue(ctx, account, name, opWrite, func(q *queue) (commit, error) {
		var d deletion
		now := e.now()
		q.advanceLocked(now)
		for _, seq := range seqs {
			switch m := q.msgs[seq]; {
			case m == nil:
			case m.status == statusDeleting:
				d.stale = true // a delete still under way
			default:
				d.take(q, m)
				n++
			}
		}
		return d.commit(q, now)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
