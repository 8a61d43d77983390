package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ferrymq/ferry/internal/engine"
)

// A message's history (engine.HistoryReader) is the record 0x03 qid seq
// 0x03, after its body and state, so that every way a message's records
// go (a delete, retention, a purge's or queue delete's range delete)
// takes it along. It is a sequence of events, each a uvarint length and
// then:
//
//	kind byte, at varint (unix nanoseconds), then by kind:
//	  0 dropped:  n uvarint (events dropped before the ones that follow)
//	  1 receive:  receive count uvarint, visible-at varint, source ip,
//	              user agent, access key (strings)
//	  2 move:     receive count uvarint, from, to, cause, previous id (strings)
//	  3 delivery: receive count uvarint, endpoint, status uvarint, error,
//	              latency varint (nanoseconds), phase, fault (strings)
//
// A receive's event first rides in the state record the receive writes
// anyway (appendStateReceive), and the message is marked pending: a
// message received once and deleted, the common case, costs no history
// record and no tombstone for one. The event moves to the history record
// (a Pebble merge, the store's merger concatenating) only when the
// message's story goes on: at its next receive, before another event
// (an SNS delivery attempt), or when it moves. A reader merges the
// history record with the pending receive.
//
// Past engine.HistoryCap receives, every HistoryCap-th event following a
// receive (the receive's own, or an SNS delivery attempt's) reads the
// record and rewrites it with the latest HistoryCap events and the count
// of the others (addEventLocked); a move, which copies
// the record anyway, trims it too. The record thus stays within twice
// the cap, and a read shows the latest HistoryCap events.
const kindHistory byte = 0x03

const (
	evDropped byte = 0
	evReceive byte = 1
	evMove    byte = 2
	evDeliver byte = 3
)

// appendEvent appends one framed event to b.
func appendEvent(b []byte, ev *engine.HistoryEvent) []byte {
	var body [128]byte
	p := body[:0]
	switch ev.Kind {
	case engine.HistoryDelivery:
		p = append(p, evDeliver)
		p = binary.AppendVarint(p, ev.At.UnixNano())
		p = binary.AppendUvarint(p, uint64(ev.ReceiveCount))
		p = appendString(p, ev.Endpoint)
		p = binary.AppendUvarint(p, uint64(ev.Status))
		p = appendString(p, ev.Error)
		p = binary.AppendVarint(p, int64(ev.Latency))
		p = appendString(p, ev.Phase)
		p = appendString(p, ev.Fault)
	case engine.HistoryReceive:
		p = append(p, evReceive)
		p = binary.AppendVarint(p, ev.At.UnixNano())
		p = binary.AppendUvarint(p, uint64(ev.ReceiveCount))
		p = binary.AppendVarint(p, ev.VisibleAt.UnixNano())
		p = appendString(p, ev.SourceIP)
		p = appendString(p, ev.UserAgent)
		p = appendString(p, ev.AccessKey)
	case engine.HistoryMove:
		p = append(p, evMove)
		p = binary.AppendVarint(p, ev.At.UnixNano())
		p = binary.AppendUvarint(p, uint64(ev.ReceiveCount))
		p = appendString(p, ev.From)
		p = appendString(p, ev.To)
		p = appendString(p, ev.Cause)
		p = appendString(p, ev.PreviousID)
	default:
		return b // expiries are derived, never stored
	}
	return appendBytes(b, p)
}

func appendDropped(b []byte, n int) []byte {
	var body [24]byte
	p := append(body[:0], evDropped)
	p = binary.AppendVarint(p, 0)
	p = binary.AppendUvarint(p, uint64(n))
	return appendBytes(b, p)
}

// decodeHistory reads a history record, keeping the latest HistoryCap
// events.
func decodeHistory(v []byte) (engine.MessageHistory, error) {
	var h engine.MessageHistory
	r := newReader(v, true)
	for r.off < len(r.b) && !r.bad {
		i, j := r.span()
		if r.bad {
			break
		}
		e := reader{b: r.b[:j], s: r.s, off: i}
		kind := e.byte()
		at := fromNanos(e.varint())
		switch kind {
		case evDropped:
			h.Dropped += int(e.uvarint())
		case evReceive:
			ev := engine.HistoryEvent{Kind: engine.HistoryReceive, At: at, ReceiveCount: int(e.uvarint())}
			ev.VisibleAt = fromNanos(e.varint())
			ev.SourceIP, ev.UserAgent, ev.AccessKey = e.str(), e.str(), e.str()
			h.Events = append(h.Events, ev)
		case evMove:
			ev := engine.HistoryEvent{Kind: engine.HistoryMove, At: at, ReceiveCount: int(e.uvarint())}
			ev.From, ev.To, ev.Cause, ev.PreviousID = e.str(), e.str(), e.str(), e.str()
			h.Events = append(h.Events, ev)
		case evDeliver:
			ev := engine.HistoryEvent{Kind: engine.HistoryDelivery, At: at, ReceiveCount: int(e.uvarint())}
			ev.Endpoint = e.str()
			ev.Status = int(e.uvarint())
			ev.Error = e.str()
			ev.Latency = time.Duration(e.varint())
			ev.Phase, ev.Fault = e.str(), e.str()
			h.Events = append(h.Events, ev)
		default:
			e.bad = true
		}
		if e.bad || e.off != j {
			return h, errCorrupt
		}
	}
	if r.bad {
		return h, errCorrupt
	}
	if n := len(h.Events) - engine.HistoryCap; n > 0 {
		h.Dropped += n
		h.Events = h.Events[n:]
	}
	return h, nil
}

// encodeHistory writes h as a record.
func encodeHistory(h *engine.MessageHistory) []byte {
	var b []byte
	if h.Dropped > 0 {
		b = appendDropped(b, h.Dropped)
	}
	for i := range h.Events {
		b = appendEvent(b, &h.Events[i])
	}
	return b
}

// putArrivalHistory stores the story a sent message arrives with in b,
// as m's.
func putArrivalHistory(b *pebble.Batch, qid uint64, m *message, nm *engine.NewMessage) {
	if nm.History == nil || len(nm.History.Events) == 0 {
		return
	}
	k := makeMsgKey(qid, m.seq, kindHistory)
	_ = b.Set(k[:], encodeHistory(nm.History), nil)
	m.history = true
}

// appendHistoryLocked adds ev to m's history in b.
func (q *queue) appendHistoryLocked(b *pebble.Batch, m *message, ev *engine.HistoryEvent) {
	var buf [192]byte
	k := makeMsgKey(q.id, m.seq, kindHistory)
	_ = b.Merge(k[:], appendEvent(buf[:0], ev), nil)
	m.history = true
}

// trimmedHistory is the record v with ev appended, cut to the latest
// HistoryCap events. A damaged record is started afresh rather than
// stopping the receive or move that writes it.
func trimmedHistory(v []byte, ev *engine.HistoryEvent) []byte {
	h, err := decodeHistory(v)
	if err != nil {
		h = engine.MessageHistory{}
	}
	h.Events = append(h.Events, *ev)
	if n := len(h.Events) - engine.HistoryCap; n > 0 {
		h.Dropped += n
		h.Events = h.Events[n:]
	}
	return encodeHistory(&h)
}

// settleReceiveLocked moves m's pending receive from its state record to
// its history record in b, before m's story goes on. The caller holds q.mu
// and writes m's state record again in b (without the receive); as the
// receive's own batch is applied under q.mu, the records read are current.
// A receive that cannot be read is left out of the story rather than
// stopping what goes on.
func (q *queue) settleReceiveLocked(b *pebble.Batch, m *message) {
	if !m.pending {
		return
	}
	m.pending = false
	k := makeMsgKey(q.id, m.seq, kindState)
	v, err := q.e.get(k[:])
	if err != nil {
		q.e.log.Error("read pending receive", "queue", q.desc.Name, "seq", m.seq, "err", err)
		return
	}
	ev, ok, err := decodeStateReceive(v)
	if err != nil || !ok {
		return
	}
	q.addEventLocked(b, m, &ev, ev.ReceiveCount)
}

// addEventLocked adds ev, which follows m's nth receive, to m's history in
// b: appended, but past HistoryCap receives every HistoryCap-th event
// rewrites the record with the latest HistoryCap (trimmedHistory), so that
// it stays within twice the cap. The record is read from the store: b
// must hold no other event of m.
func (q *queue) addEventLocked(b *pebble.Batch, m *message, ev *engine.HistoryEvent, n int) {
	if m.history && n > engine.HistoryCap && n%engine.HistoryCap == 0 {
		k := makeMsgKey(q.id, m.seq, kindHistory)
		if old, err := q.e.get(k[:]); err == nil {
			_ = b.Set(k[:], trimmedHistory(old, ev), nil)
			return
		}
	}
	q.appendHistoryLocked(b, m, ev)
}

// putStateLocked writes m's state record in b; with c, m's receive by c
// rides in it, pending. A state rewritten while a receive is pending
// (a visibility change) keeps it, read from the record.
func (q *queue) putStateLocked(b *pebble.Batch, m *message, buf []byte, c *engine.Consumer) {
	k := makeMsgKey(q.id, m.seq, kindState)
	v := encodeState(buf, m.state())
	switch {
	case c != nil:
		v = appendStateReceive(v, m.deadline, c)
		m.pending = true
	case m.pending:
		// A key Pebble reads with moves to the heap: a copy of its own
		// keeps k, written at every receive, on the stack.
		rk := k
		old, err := q.e.get(rk[:])
		var tail []byte
		if err == nil && old != nil {
			tail, err = stateReceiveTail(old)
		}
		if err != nil {
			q.e.log.Error("read pending receive", "queue", q.desc.Name, "seq", m.seq, "err", err)
		}
		if len(tail) == 0 {
			m.pending = false
		}
		v = append(v, tail...)
	}
	_ = b.Set(k[:], v, nil)
}

// story reads the story of the message seq of queue qid: its history
// record (when history) merged with its pending receive (when pending);
// ok is false when it has none.
func (e *Engine) story(qid, seq uint64, history, pending bool) (h engine.MessageHistory, ok bool, err error) {
	var hist, state []byte
	k := makeMsgKey(qid, seq, kindHistory)
	if history {
		if hist, err = e.get(k[:]); err != nil {
			return h, false, err
		}
	}
	if pending {
		k[17] = kindState
		if state, err = e.get(k[:]); err != nil {
			return h, false, err
		}
	}
	return mergeStory(hist, state)
}

// mergeStory is the story told by a history record and a state record
// (either may be nil), keeping the latest HistoryCap events.
func mergeStory(hist, state []byte) (h engine.MessageHistory, ok bool, err error) {
	if hist != nil {
		if h, err = decodeHistory(hist); err != nil {
			return h, false, err
		}
		ok = true
	}
	if state != nil {
		ev, has, err := decodeStateReceive(state)
		if err != nil {
			return h, false, err
		}
		if has {
			h.Events = append(h.Events, ev)
			if n := len(h.Events) - engine.HistoryCap; n > 0 {
				h.Dropped += n
				h.Events = h.Events[n:]
			}
			ok = true
		}
	}
	return h, ok, nil
}

// movedHistory returns the story of src's message m with the move ev
// appended, as a history record for the message's new place; nil when it
// has none (a message received while the history was off moves without
// one).
func (e *Engine) movedHistory(src *queue, m *message, ev *engine.HistoryEvent) ([]byte, error) {
	if !m.history && !m.pending {
		return nil, nil
	}
	h, ok, err := e.story(src.id, m.seq, m.history, m.pending)
	switch {
	case errors.Is(err, errCorrupt):
		// Started afresh rather than stopping the move, as
		// trimmedHistory does.
		h = engine.MessageHistory{}
	case err != nil:
		return nil, err
	case !ok:
		return nil, nil
	}
	h.Events = append(h.Events, *ev)
	if n := len(h.Events) - engine.HistoryCap; n > 0 {
		h.Dropped += n
		h.Events = h.Events[n:]
	}
	return encodeHistory(&h), nil
}

// MessageHistory implements engine.HistoryReader. It scans the queue's
// records for the id, as the store keeps no index by message id: an
// admin's look at a dead-letter queue, not a hot path.
func (e *Engine) MessageHistory(ctx context.Context, account, name, messageID string) (engine.MessageHistory, bool, error) {
	var out engine.MessageHistory
	found := false
	err := e.walkHistories(account, name, 0, func(_ uint64, id string, hist, state []byte) (bool, error) {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if id != messageID {
			return true, nil
		}
		h, _, err := mergeStory(hist, state)
		if err != nil {
			return false, err
		}
		h.MessageID = id
		out, found = h, true
		return false, nil
	})
	return out, found, err
}

// MessageHistories implements engine.HistoryReader; the cursor is the
// seq of the last message of the previous page.
func (e *Engine) MessageHistories(ctx context.Context, account, name, cursor string, limit int) ([]engine.MessageHistory, string, error) {
	var before uint64
	if cursor != "" {
		n, err := strconv.ParseUint(cursor, 10, 64)
		if err != nil {
			return nil, "", fmt.Errorf("embedded: history cursor %q: %w", cursor, err)
		}
		before = n
	}
	var (
		out  []engine.MessageHistory
		last uint64
		more bool
	)
	err := e.walkHistories(account, name, before, func(seq uint64, id string, hist, state []byte) (bool, error) {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if len(out) == limit {
			more = true
			return false, nil
		}
		h, _, err := mergeStory(hist, state)
		if err != nil {
			return false, err
		}
		h.MessageID = id
		out = append(out, h)
		last = seq
		return true, nil
	})
	if err != nil || !more {
		return out, "", err
	}
	return out, strconv.FormatUint(last, 10), nil
}

// walkHistories calls fn with the id, history record and state record of
// each message of the queue that has a story (either may be nil, see
// mergeStory), newest first, from seq before down (0: from the newest),
// until fn returns false.
func (e *Engine) walkHistories(account, name string, before uint64, fn func(seq uint64, id string, hist, state []byte) (bool, error)) error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.leave()
	q, err := e.lookup(account, name)
	if err != nil {
		return err
	}
	lo, hi := queueMsgSpan(q.id)
	if before > 0 {
		_, hi = msgSpan(q.id, 0, before)
	}
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("embedded: read histories: %w", err)
	}
	defer it.Close()
	// Backwards, a message's history comes before its state (and, on
	// disk, its body): a story is told once the walk has passed its
	// message's records, with the id read from the message's record.
	var (
		hist, state []byte
		storySeq    uint64
	)
	tell := func() (bool, error) {
		if hist == nil && state == nil {
			return true, nil
		}
		v, err := q.body(storySeq)
		if err != nil || v == nil {
			return err == nil, err // a story of no message is not told
		}
		id, err := decodeMessageID(v)
		if err != nil {
			return false, fmt.Errorf("embedded: message %d of queue %d: %w", storySeq, q.id, err)
		}
		return fn(storySeq, id, hist, state)
	}
	for valid := it.Last(); valid; valid = it.Prev() {
		_, seq, kind, ok := parseMsgKey(it.Key())
		if !ok {
			continue
		}
		if seq != storySeq {
			if goOn, err := tell(); err != nil || !goOn {
				return errors.Join(err, it.Error())
			}
			hist, state, storySeq = nil, nil, seq
		}
		switch kind {
		case kindHistory, kindState:
			v, err := it.ValueAndErr()
			if err != nil {
				return fmt.Errorf("embedded: read history: %w", err)
			}
			if kind == kindHistory {
				hist = bytes.Clone(v)
				continue
			}
			s, err := decodeState(v)
			if err != nil {
				return fmt.Errorf("embedded: message %d of queue %d: %w", seq, q.id, err)
			}
			if s.pending {
				state = bytes.Clone(v)
			}
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	_, err = tell()
	return err
}

// decodeMessageID reads a message record's id, skipping the rest.
func decodeMessageID(v []byte) (string, error) {
	r := newReader(v, false)
	r.messageHead()
	id := r.str()
	if r.bad {
		return "", errCorrupt
	}
	return id, nil
}
