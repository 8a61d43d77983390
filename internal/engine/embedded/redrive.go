package embedded

import (
	"github.com/cockroachdb/pebble/v2"

	"github.com/ferrymq/ferry/internal/engine"
)

// Dead-letter moves on receive.
//
// A receive that meets a message over its queue's maxReceiveCount moves it
// to the dead-letter queue in four steps, holding one queue lock at a time
// (A's dead-letter queue may be B and B's A, so holding both could
// deadlock):
//
//  1. Under the source lock, takeLocked takes the message out of the source
//     index. From then on no receive, delete or visibility change reaches
//     it (its handles find nothing); its records are untouched.
//  2. Under the target lock, redrive allocates seqs in the target; if the
//     target has been deleted it puts the messages back (step 2').
//  3. One synced batch deletes the source records and writes the target's:
//     the message is in exactly one queue in the store, also across a
//     crash (before the batch it reloads into the source, after it into
//     the target).
//  4. Under the target lock, the message enters the target index visible
//     and wakes the target's waiters.
//
// Races with a purge or delete of either queue:
//   - Source purged or deleted after step 1: the message had already left
//     the source, so the move counts as earlier. The purge's range delete
//     and the batch both delete the source records, in either order, and
//     the target records stand. If the records were already gone when read
//     (the purge came first), nothing is written. A message put back in
//     step 2' is skipped if a purge or delete has removed its records
//     (restoreLocked checks the purge floor; a deleted queue takes
//     nothing back), so nothing comes back from the dead.
//   - Target deleted before step 2: the message goes back to the source,
//     where the receive hands it out as usual.
//   - Target purged or deleted between steps 2 and 4: as for a send racing
//     them, the message reached the target and went with the purge or
//     delete; step 4 removes its records again, since the range delete may
//     have been ordered before the batch.
//
// Into a FIFO dead-letter queue a message keeps its group, gets a new seq
// at the back of that group, has its send time reset to the move (FIFO
// retention counts from the move, as on SQS) and its deduplication id
// replaced by its message id. The target's deduplication window is not
// consulted: a move is not a send, and no message may be dropped on the
// way. Step 2 reserves the messages' place in the target's order (see
// fifo.go) and step 4 ends the reservation.

// redriveJob is messages a receive took out of src for target.
type redriveJob struct {
	src, target *queue
	srcARN      string
	msgs        []*message
}

// redrive carries out a job from takeLocked (steps 2 to 4 above); the
// caller is entered and holds no lock. It reports how many messages went
// back to the source.
func (e *Engine) redrive(job *redriveJob) int {
	src, tq := job.src, job.target
	vals := make([][]byte, len(job.msgs))
	for i, m := range job.msgs {
		v, err := src.body(m.seq)
		if err != nil {
			e.log.Error("dead-letter move: read message", "queue_id", src.id, "err", err)
			return e.restore(src, job.msgs)
		}
		vals[i] = v // nil: purged or deleted with the source since step 1
	}

	tq.mu.Lock()
	if tq.deleted {
		tq.mu.Unlock()
		return e.restore(src, job.msgs)
	}
	first, pb := tq.reserveLocked(uint64(len(job.msgs)))
	targetARN := tq.desc.ARN
	tq.mu.Unlock()
	// giveUp ends the reservation and puts the messages back.
	giveUp := func() int {
		if pb != nil {
			tq.mu.Lock()
			tq.failLocked(pb, e.now())
			tq.mu.Unlock()
		}
		return e.restore(src, job.msgs)
	}

	now := e.now()
	b := e.db.NewBatch()
	defer b.Close()
	moved := make([]message, 0, len(job.msgs))
	entries := make([]msgEntry, 0, len(job.msgs))
	// The moved messages' records and sources, for the step that cannot
	// fail (below).
	recs := make([][]byte, 0, len(job.msgs))
	srcs := make([]*message, 0, len(job.msgs))
	var groups []string
	var buf []byte
	var sbuf [64]byte
	for i, m := range job.msgs {
		if vals[i] == nil {
			continue
		}
		sm, err := decodeStoredMessage(vals[i])
		if err != nil {
			e.log.Error("dead-letter move: decode message", "queue_id", src.id, "seq", m.seq, "err", err)
			return giveUp()
		}
		// Same id, sent time, receive count and first receive; visible now.
		sentAt := m.sentAt
		if tq.fifo {
			sentAt = now
			sm.msg.DeduplicationID = sm.id
			groups = append(groups, sm.msg.MessageGroupID)
		}
		nm := message{
			seq:            first + uint64(i),
			sentAt:         sentAt,
			deadline:       now,
			receivedAt:     m.receivedAt,
			firstReceiveAt: m.firstReceiveAt,
			receiveCount:   m.receiveCount,
			timerSlot:      -1,
			ageSlot:        -1,
		}
		// The age of the oldest message counts from the move.
		in := msgEntry{movedAt: now, movedReceives: m.receiveCount}
		start := len(buf)
		buf = encodeMovedMessage(buf, sm.id, sentAt, now, in, &sm.msg, job.srcARN)
		recs = append(recs, buf[start:len(buf):len(buf)])
		k := makeMsgKey(tq.id, nm.seq, kindState)
		_ = b.Set(k[:], encodeState(sbuf[:0], nm.state()), nil)
		if m.history || m.pending {
			// The story moves with the message, and tells of the move.
			hv, err := e.movedHistory(src, m, &engine.HistoryEvent{
				Kind: engine.HistoryMove, At: fromNanos(now), ReceiveCount: int(m.receiveCount),
				From: job.srcARN, To: targetARN, Cause: engine.MoveByRedrive,
			})
			if err != nil {
				e.log.Error("dead-letter move: read history", "queue_id", src.id, "seq", m.seq, "err", err)
				return giveUp()
			}
			if hv != nil {
				k[17] = kindHistory
				_ = b.Set(k[:], hv, nil)
				nm.history = true
			}
		}
		srcs = append(srcs, m)
		moved = append(moved, nm)
		entries = append(entries, in)
	}
	// The records move once nothing can fail before the commit: in memory
	// they move at once (bodies.go), and a move given up must leave them
	// in the source.
	for i := range moved {
		_ = tq.putBody(b, moved[i].seq, recs[i])
		src.deleteMsgKeys(b, srcs[i])
	}
	if len(moved) == 0 {
		if pb != nil {
			tq.mu.Lock()
			tq.failLocked(pb, e.now())
			tq.mu.Unlock()
		}
		return 0
	}
	if err := b.Commit(e.writeOptions()); err != nil {
		e.log.Error("dead-letter move", "queue_id", src.id, "err", err)
		return giveUp()
	}

	tq.mu.Lock()
	defer tq.mu.Unlock()
	if pb != nil {
		for i := range moved {
			tq.setMovedLocked(&moved[i], entries[i])
		}
		tq.completeLocked(pb, moved, groups, e.now())
		return 0
	}
	if tq.deleted || first < tq.purgeFloor {
		cb := e.db.NewBatch()
		for i := range moved {
			tq.dropBody(cb, moved[i].seq, false)
			k := makeMsgKey(tq.id, moved[i].seq, kindState)
			_ = cb.Delete(k[:], nil)
			k[17] = kindHistory
			_ = cb.Delete(k[:], nil)
		}
		if err := e.db.Apply(cb, pebble.NoSync); err != nil {
			e.log.Error("drop messages moved to a purged queue", "queue", tq.desc.Name, "err", err)
		}
		cb.Close()
		return 0
	}
	now = e.now()
	tq.advanceLocked(now)
	for i := range moved {
		tq.setMovedLocked(&moved[i], entries[i])
		tq.insertLocked(&moved[i], "", now)
	}
	tq.serveLocked(now)
	tq.rearmLocked(now)
	return 0
}

// restore puts messages taken out of q back (step 2'); it reports how many.
func (e *Engine) restore(q *queue, ms []*message) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.deleted {
		return 0
	}
	return q.restoreLocked(ms, e.now())
}
