package embedded

import "time"

// Held records: a standard queue keeps in memory the stored records of
// messages that were sent and not yet handed out, so that their first
// receive takes them from there instead of reading them back from the
// store. A message that no receive was waiting for at its send (the
// common case when consumers are busy deleting what they received, and
// for every copy of an SNS fan-out whose queue's consumer is not waiting
// at that moment) would otherwise cost its receive an iterator and a seek
// through Pebble's memtables and levels. The records are copies of what
// the store holds, never written back; a later receive of the same
// message (after its visibility timeout) reads the store as before.
//
// Only a queue that receives have polled within heldPolled holds: one
// that nobody reads (an archive subscribed to a topic, a backlog left for
// later) would otherwise fill the budget for good. The engine holds at
// most heldBudget bytes in all: past it, sends hold nothing until receives
// have taken held records out, so a backlog stays in the store and not in
// memory.

// heldBudget bounds the bytes of records held by all queues.
const heldBudget = 16 << 20

// heldPolled is how recently a receive must have polled a queue for its
// sends to be held.
const heldPolled = time.Second

// mayHoldLocked reports whether a send to q at now should keep its records
// for holding. An in-memory store holds nothing: its records are in
// memory already (bodies.go).
func (q *queue) mayHoldLocked(now int64) bool {
	return !q.e.memory && q.polled != 0 && now-q.polled <= int64(heldPolled) && q.e.heldBytes.Load() < heldBudget
}

// holdLocked keeps a copy of rec, the stored record of message seq, for
// its first receive, if the budget has room. It reports whether it did.
func (q *queue) holdLocked(seq uint64, rec []byte) bool {
	n := int64(len(rec))
	if q.e.heldBytes.Add(n) > heldBudget {
		q.e.heldBytes.Add(-n)
		return false
	}
	if q.held == nil {
		q.held = make(map[uint64][]byte)
	}
	// A copy of its own: rec shares its buffer with the other records of
	// the send (other queues' among them), which would otherwise live as
	// long as the last of them is held.
	q.held[seq] = append([]byte(nil), rec...)
	q.heldBytes += n
	return true
}

// unholdLocked returns seq's held record, if any, and forgets it.
func (q *queue) unholdLocked(seq uint64) []byte {
	rec, ok := q.held[seq]
	if !ok {
		return nil
	}
	delete(q.held, seq)
	n := int64(len(rec))
	q.heldBytes -= n
	q.e.heldBytes.Add(-n)
	return rec
}

// unholdAllLocked forgets every held record (purge, queue deletion).
func (q *queue) unholdAllLocked() {
	if q.heldBytes != 0 {
		q.e.heldBytes.Add(-q.heldBytes)
	}
	q.held, q.heldBytes = nil, 0
}
