package embedded

import (
	"context"

	"github.com/ferrymq/ferry/internal/engine"
)

// What the queue statistics need beyond the counts: the oldest message for
// ApproximateAgeOfOldestMessage and, on FIFO queues, the groups in flight.
//
// The oldest order holds the messages that count, by seq: a message counts
// until it has been received engine.OldestMaxReceives times in this queue,
// and stops counting once a delete has claimed it. A message enters its
// queue when sent, or, moved there by a redrive policy, at the move; seqs
// are handed out in that order (up to the moment between a seq's
// reservation and its write), so the order's first is the oldest, and new
// messages, the highest seqs, join it at its end (order.go). A sample
// reads the first.
//
// What a moved message brings (when it was moved, its receive count then)
// lives in queue.movedIn, not in every index entry: moves are rare next to
// sends. A moved message that leaves the index forgets it; one put back
// after a failed move out (restoreLocked) then counts from its send.

// entered is when m entered q.
func (q *queue) entered(m *message) int64 {
	if m.moved {
		if in, ok := q.movedIn[m.seq]; ok {
			return in.movedAt
		}
	}
	return m.sentAt
}

// countsForOldest reports whether m counts for the oldest-message age.
func (q *queue) countsForOldest(m *message) bool {
	if m.status == statusDeleting {
		return false
	}
	n := m.receiveCount
	if m.moved {
		n -= min(n, q.movedIn[m.seq].movedReceives)
	}
	return n < engine.OldestMaxReceives
}

func newOldestOrder() orderedSet {
	return newOrderedSet(func(m *message) orderKey { return orderKey{seq: m.seq} },
		func(m *message) *int32 { return &m.oldSlot })
}

// setMovedLocked records that a redrive moved m into q (before m enters
// the index).
func (q *queue) setMovedLocked(m *message, in msgEntry) {
	if in == (msgEntry{}) {
		return
	}
	if q.movedIn == nil {
		q.movedIn = make(map[uint64]msgEntry)
	}
	q.movedIn[m.seq] = in
	m.moved = true
}

// trackOldestLocked files m in the oldest order, or takes it out, after m
// entered the index or its receive count or status changed.
func (q *queue) trackOldestLocked(m *message) {
	in := q.oldest.has(m)
	switch want := q.countsForOldest(m); {
	case want && !in:
		q.oldest.push(m)
	case !want && in:
		q.oldest.remove(m)
	}
}

// untrackOldestLocked takes m out of the oldest order, if there.
func (q *queue) untrackOldestLocked(m *message) {
	if q.oldest.has(m) {
		q.oldest.remove(m)
	}
}

// forgetLocked drops what q keeps about m beyond the index, as m leaves it.
func (q *queue) forgetLocked(m *message) {
	q.unholdLocked(m.seq)
	q.untrackOldestLocked(m)
	if m.moved {
		delete(q.movedIn, m.seq)
		m.moved = false
	}
}

// markBusy keeps groupIndex.busy, the number of groups with a message in
// flight, in step with g; groupIndex.update calls it on every change.
func (x *groupIndex) markBusy(g *group) {
	if busy := g.inflight > 0; busy != g.busy {
		g.busy = busy
		if busy {
			x.busy++
		} else {
			x.busy--
		}
	}
}

func (q *queue) stats() engine.Stats {
	st := engine.Stats{
		Visible:    int64(q.visibleLocked()),
		NotVisible: int64(q.inflight),
		Delayed:    int64(q.delayed),
	}
	if m := q.oldest.min(); m != nil {
		st.OldestAt = fromNanos(q.entered(m))
	}
	if q.fifo {
		st.GroupsInFlight = int64(q.groups.busy)
	}
	return st
}

// Stats implements engine.Backend; the counts are exact at the call's time.
func (e *Engine) Stats(ctx context.Context, account, name string) (engine.Stats, error) {
	var st engine.Stats
	err := e.withQueue(ctx, account, name, opRead, func(q *queue) (commit, error) {
		now := e.now()
		q.advanceLocked(now)
		q.rearmLocked(now)
		st = q.stats()
		return commit{}, nil
	})
	return st, err
}
