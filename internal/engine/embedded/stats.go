package embedded

import (
	"github.com/ferrymq/ferry/internal/engine"
)

// What the queue statistics need beyond the counts: the oldest message for
// ApproximateAgeOfOldestMessage and, on FIFO queues, the groups in flight.
//
// The oldest list links the messages that count, in seq order: a message
// counts until it has been received engine.OldestMaxReceives times in this
// queue, and stops counting once a delete has claimed it. A message enters
// its queue when sent, or, moved there by a redrive policy, at the move;
// seqs are handed out in that order (up to the moment between a seq's
// reservation and its write), so the list's head is the oldest. Messages
// join at the tail and leave from anywhere in O(1), beside the index's own
// structures; a sample reads the head.

// entered is when m entered its queue.
func (m *message) entered() int64 {
	if m.movedAt != 0 {
		return m.movedAt
	}
	return m.sentAt
}

// countsForOldest reports whether m counts for the oldest-message age.
func (m *message) countsForOldest() bool {
	return m.status != statusDeleting && m.receiveCount-uint64(m.movedReceives) < engine.OldestMaxReceives
}

// oldestList is an intrusive list of messages by seq.
type oldestList struct {
	head, tail *message
	n          int
}

// insert puts m at its place by seq: at the tail for a new message, found
// from both ends at once for one put back.
func (l *oldestList) insert(m *message) {
	m.inOldest = true
	l.n++
	switch {
	case l.tail == nil:
		m.oprev, m.onext = nil, nil
		l.head, l.tail = m, m
		return
	case l.tail.seq < m.seq:
		l.link(l.tail, m, nil)
		return
	case m.seq < l.head.seq:
		l.link(nil, m, l.head)
		return
	}
	// head.seq < m.seq < tail.seq: both walks stop inside the list.
	for a, b := l.head, l.tail; ; a, b = a.onext, b.oprev {
		if m.seq < a.seq {
			l.link(a.oprev, m, a)
			return
		}
		if b.seq < m.seq {
			l.link(b, m, b.onext)
			return
		}
	}
}

// link puts m between prev and next (either nil at an end).
func (l *oldestList) link(prev, m, next *message) {
	m.oprev, m.onext = prev, next
	if prev != nil {
		prev.onext = m
	} else {
		l.head = m
	}
	if next != nil {
		next.oprev = m
	} else {
		l.tail = m
	}
}

func (l *oldestList) remove(m *message) {
	if m.oprev != nil {
		m.oprev.onext = m.onext
	} else {
		l.head = m.onext
	}
	if m.onext != nil {
		m.onext.oprev = m.oprev
	} else {
		l.tail = m.oprev
	}
	m.oprev, m.onext = nil, nil
	m.inOldest = false
	l.n--
}

// trackOldestLocked files m in the oldest list, or takes it out, after m
// entered the index or its receive count or status changed.
func (q *queue) trackOldestLocked(m *message) {
	switch want := m.countsForOldest(); {
	case want && !m.inOldest:
		q.oldest.insert(m)
	case !want && m.inOldest:
		q.oldest.remove(m)
	}
}

// untrackOldestLocked takes m out of the oldest list, if there.
func (q *queue) untrackOldestLocked(m *message) {
	if m.inOldest {
		q.oldest.remove(m)
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
	if m := q.oldest.head; m != nil {
		st.OldestAt = fromNanos(m.entered())
	}
	if q.fifo {
		st.GroupsInFlight = int64(q.groups.busy)
	}
	return st
}
