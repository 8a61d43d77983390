package embedded

import (
	"github.com/ferrymq/ferry/internal/engine"
)

// What the queue statistics need beyond the counts: the oldest message for
// ApproximateAgeOfOldestMessage and, on FIFO queues, the groups in flight.
//
// The oldest-message heap holds the messages that count, keyed by when
// they entered the queue: a message counts until it has been received
// engine.OldestMaxReceives times in this queue, and stops counting once a
// delete has claimed it. A message enters its queue when sent, or, moved
// there by a redrive policy, at the move. Every change is O(log n) next to
// the index's own heaps, and a sample reads the heap's minimum.

// entered is when m entered its queue.
func (m *message) entered() int64 {
	if m.movedAt != 0 {
		return m.movedAt
	}
	return m.sentAt
}

// countsForOldest reports whether m counts for the oldest-message age.
func (m *message) countsForOldest() bool {
	return m.status != statusDeleting && m.receiveCount-m.movedReceives < engine.OldestMaxReceives
}

func newOldestHeap() msgHeap {
	return msgHeap{
		less: func(a, b *message) bool {
			if ea, eb := a.entered(), b.entered(); ea != eb {
				return ea < eb
			}
			return a.seq < b.seq
		},
		slot: func(m *message) *int { return &m.oldSlot },
	}
}

// trackOldestLocked files m in the oldest-message heap, or takes it out,
// after m entered the index or its receive count or status changed.
func (q *queue) trackOldestLocked(m *message) {
	in := m.oldSlot >= 0
	switch want := m.countsForOldest(); {
	case want && !in:
		q.oldest.push(m)
	case !want && in:
		q.oldest.remove(m)
	}
}

// untrackOldestLocked takes m out of the oldest-message heap, if there.
func (q *queue) untrackOldestLocked(m *message) {
	if m.oldSlot >= 0 {
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
	if m := q.oldest.min(); m != nil {
		st.OldestAt = fromNanos(m.entered())
	}
	if q.fifo {
		st.GroupsInFlight = int64(q.groups.busy)
	}
	return st
}
