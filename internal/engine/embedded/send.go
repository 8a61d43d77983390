package embedded

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/uuidv4"
)

// errOriginalLost answers a FIFO duplicate whose original's write failed.
var errOriginalLost = errors.New("embedded: send: the original of a duplicate was not stored")

// Send implements engine.Backend. The messages enter the index only once
// their batch is durable, so no receive can see a message a crash would
// lose.
func (e *Engine) Send(ctx context.Context, account, name string, msgs []engine.NewMessage) ([]engine.SendResult, error) {
	if err := e.begin(ctx, opWrite); err != nil {
		return nil, err
	}
	defer e.end(opWrite)
	q, err := e.lookup(account, name)
	if err != nil || len(msgs) == 0 {
		return nil, err
	}
	if q.fifo {
		return e.sendFIFO(q, msgs)
	}

	var sp sendSpace
	if err := sp.init(len(msgs), recordsSize(msgs)); err != nil {
		return nil, err
	}
	b := e.db.NewBatch()
	defer b.Close()
	var p pendingSend
	defer p.abandon()
	if err := e.writeSend(q, msgs, b, &sp, &p); err != nil {
		return nil, err
	}
	if err := e.commitSend(b); err != nil {
		return nil, err
	}
	return e.enterSent(&p)
}

// SendMany implements engine.Backend. The parts for standard queues are
// written in one batch: one commit and one fsync for them all. Those for
// FIFO queues go through Send's FIFO path one by one, after that commit,
// so that a failure of the whole leaves none of them written.
func (e *Engine) SendMany(ctx context.Context, sends []engine.QueueSend) ([]engine.SendOutcome, error) {
	if err := e.begin(ctx, opWrite); err != nil {
		return nil, err
	}
	defer e.end(opWrite)
	n, size := 0, 0
	for i := range sends {
		n += len(sends[i].Msgs)
		size += recordsSize(sends[i].Msgs)
	}
	var sp sendSpace
	if err := sp.init(n, size); err != nil {
		return nil, err
	}
	out := make([]engine.SendOutcome, len(sends))
	pending := make([]pendingSend, len(sends)) // q nil: nothing to enter
	defer func() {
		for i := range pending {
			pending[i].abandon()
		}
	}()
	fifo := make([]*queue, len(sends)) // nil: not a FIFO part
	// written: some part is in b, which in memory may still be empty (the
	// records are in the table, bodies.go).
	written := false
	b := e.db.NewBatch()
	defer b.Close()
	for i := range sends {
		part := &sends[i]
		q, err := e.lookup(part.Account, part.Name)
		switch {
		case err != nil:
			out[i].Err = err
		case len(part.Msgs) == 0:
		case q.fifo:
			fifo[i] = q
		default:
			err := e.writeSend(q, part.Msgs, b, &sp, &pending[i])
			if errors.Is(err, engine.ErrQueueNotFound) {
				out[i].Err = err
				continue
			}
			if err != nil {
				return nil, err
			}
			written = true
		}
	}
	if written {
		if err := e.commitSend(b); err != nil {
			return nil, err
		}
		for i := range pending {
			if pending[i].q != nil {
				out[i].Results, out[i].Err = e.enterSent(&pending[i])
			}
		}
	}
	for i, q := range fifo {
		if q != nil {
			out[i].Results, out[i].Err = e.sendFIFO(q, sends[i].Msgs)
		}
	}
	return out, nil
}

// pendingSend is a send to a standard queue that is written, or being
// written, and not yet in the queue's index.
type pendingSend struct {
	q    *queue
	ms   []message // the index entries, one allocation for the batch
	res  []engine.SendResult
	sent sentRecords
	// writing: counted in q.writing, until enterSent or abandon.
	writing bool
}

// abandon uncounts a send that will not enter the index (its write
// failed); it does nothing once enterSent has run.
func (p *pendingSend) abandon() {
	if !p.writing {
		return
	}
	p.writing = false
	p.q.mu.Lock()
	p.q.writing--
	p.q.mu.Unlock()
}

// sendSpace is what the sends of one call cut their message ids, results
// and records from: one allocation of each for the call, not one per queue.
type sendSpace struct {
	ids  string // UUIDs v4, uuidv4.Len bytes each
	res  []engine.SendResult
	used int // messages given out
	size int // about the size of all the call's records
	// kept holds the records of queues that receives wait on (ends[i]:
	// where message i's ends, from its queue's first); scratch is reused
	// for each of the others.
	kept    []byte
	ends    []int
	scratch []byte
}

// init makes room for n messages whose records take about size bytes.
func (sp *sendSpace) init(n, size int) error {
	// Message ids are UUID v4, drawn for the whole call at once.
	rnd := make([]byte, 16*n)
	if _, err := rand.Read(rnd); err != nil {
		return fmt.Errorf("embedded: message id: %w", err)
	}
	*sp = sendSpace{ids: messageIDs(rnd), res: make([]engine.SendResult, n), size: size}
	return nil
}

// writeSend reserves seqs for msgs in standard queue q, puts their records
// into b and describes them in p, with ids, results and records from sp.
func (e *Engine) writeSend(q *queue, msgs []engine.NewMessage, b *pebble.Batch, sp *sendSpace, p *pendingSend) error {
	q.mu.Lock()
	if q.deleted {
		q.mu.Unlock()
		return engine.ErrQueueNotFound
	}
	sentAt := e.now()
	first := q.nextSeq
	q.nextSeq += uint64(len(msgs))
	q.writing++
	queueDelay := q.desc.Settings.Delay
	// The records are kept after the write for receives waiting now, and
	// for the queue to hold for later ones (held.go) while it has room.
	keep := q.waiters.Len() > 0 || q.mayHoldLocked(sentAt)
	q.mu.Unlock()

	n := len(msgs)
	lo := sp.used
	sp.used += n
	*p = pendingSend{q: q, ms: make([]message, n), res: sp.res[lo : lo+n : lo+n], sent: sentRecords{first: first}, writing: true}
	var ends []int
	keptStart := len(sp.kept)
	if keep {
		if sp.ends == nil {
			sp.kept = make([]byte, 0, sp.size)
			sp.ends = make([]int, len(sp.res))
		}
		ends = sp.ends[lo : lo+n : lo+n]
	}
	for i := range msgs {
		delay := queueDelay
		if msgs[i].Delay != nil {
			delay = *msgs[i].Delay
		}
		m := &p.ms[i]
		*m = message{seq: first + uint64(i), sentAt: sentAt, deadline: after(sentAt, max0(delay)), timerSlot: -1, ageSlot: -1}
		p.res[i].MessageID = messageID(sp.ids, lo+i)
		var rec []byte
		if keep {
			start := len(sp.kept)
			sp.kept = encodeMessage(sp.kept, p.res[i].MessageID, sentAt, m.deadline, &msgs[i], "")
			rec = sp.kept[start:]
			ends[i] = len(sp.kept) - keptStart
		} else {
			sp.scratch = encodeMessage(sp.scratch[:0], p.res[i].MessageID, sentAt, m.deadline, &msgs[i], "")
			rec = sp.scratch
		}
		if err := q.putBody(b, m.seq, rec); err != nil {
			return fmt.Errorf("embedded: send: %w", err)
		}
		putArrivalHistory(b, q.id, m, &msgs[i])
	}
	if keep {
		end := len(sp.kept)
		p.sent.buf, p.sent.ends = sp.kept[keptStart:end:end], ends
	}
	return nil
}

// commitSend makes a batch of sends durable.
func (e *Engine) commitSend(b *pebble.Batch) error {
	if e.beforeSendCommit != nil {
		e.beforeSendCommit()
	}
	if err := b.Commit(e.writeOptions()); err != nil {
		return fmt.Errorf("embedded: send: %w", err)
	}
	return nil
}

// enterSent puts the messages of a durable send into the queue's index and
// hands them to waiting receives.
func (e *Engine) enterSent(p *pendingSend) ([]engine.SendResult, error) {
	q, ms := p.q, p.ms
	q.mu.Lock()
	defer q.mu.Unlock()
	q.writing--
	p.writing = false
	if q.deleted || p.sent.first < q.purgeFloor {
		// Deleted or purged while being written: the range delete may have
		// been ordered before this batch, so remove the records here too.
		cb := e.db.NewBatch()
		for i := range ms {
			q.dropBody(cb, ms[i].seq, false)
			if ms[i].history {
				k := makeMsgKey(q.id, ms[i].seq, kindHistory)
				_ = cb.Delete(k[:], nil)
			}
		}
		if err := e.db.Apply(cb, pebble.NoSync); err != nil {
			e.log.Error("drop messages of a purged queue", "queue", q.desc.Name, "err", err)
		}
		cb.Close()
		if q.deleted {
			return nil, engine.ErrQueueNotFound
		}
		return p.res, nil
	}
	now := e.now()
	q.advanceLocked(now)
	for i := range ms {
		q.insertLocked(&ms[i], "", now)
	}
	q.arriveLocked(now)
	q.serveSentLocked(now, &p.sent)
	if p.sent.buf != nil {
		for i := range ms {
			if m := &ms[i]; m.status == statusReady || m.status == statusDelayed {
				if !q.holdLocked(m.seq, p.sent.record(m.seq)) {
					break
				}
			}
		}
	}
	q.rearmLocked(now)
	return p.res, nil
}

// sentRecords are the stored records of the messages a send just wrote,
// seqs first, first+1, …: a receive that is handed them at once takes them
// from here instead of reading them back. They live only as long as the
// send and the receives it served.
type sentRecords struct {
	first uint64
	buf   []byte
	ends  []int // message first+i's record ends at ends[i] in buf
}

// record returns seq's record, or nil when seq is not one of them.
func (r *sentRecords) record(seq uint64) []byte {
	if r == nil || seq < r.first || seq-r.first >= uint64(len(r.ends)) {
		return nil
	}
	i := seq - r.first
	start := 0
	if i > 0 {
		start = r.ends[i-1]
	}
	return r.buf[start:r.ends[i]:r.ends[i]]
}

// recordsSize bounds the size of msgs' records (each has a UUID for its
// id), so that they are encoded into one buffer without growing it.
func recordsSize(msgs []engine.NewMessage) int {
	n := 0
	for i := range msgs {
		n += messageRecordCap(uuidv4.Len, &msgs[i], 0)
	}
	return n
}

// messageIDs makes UUIDs v4 out of random bytes drawn for a batch, 16 per
// id, all in one string: messageID cuts the i-th from it.
func messageIDs(rnd []byte) string {
	var sb strings.Builder
	sb.Grow(len(rnd) / 16 * uuidv4.Len)
	var buf [uuidv4.Len]byte
	for i := 0; i+16 <= len(rnd); i += 16 {
		uuidv4.Encode(&buf, [16]byte(rnd[i:i+16]))
		sb.Write(buf[:])
	}
	return sb.String()
}

// messageID is the i-th id of messageIDs' string.
func messageID(ids string, i int) string { return ids[uuidv4.Len*i : uuidv4.Len*(i+1)] }

// sendFIFO is Send for FIFO queues. Under the queue lock, in request order,
// each message is looked up in the deduplication window (a key seen within
// it, also earlier in the same batch, makes a duplicate that is accepted
// but not enqueued) and the others get their seqs, entries and a reserved
// place in the index order. The batch (messages and deduplication records)
// is written outside the lock, so FIFO sends share fsyncs too, and the call
// returns once it has entered the index. A message without a deduplication
// id (the SQS layer always sets one) is never a duplicate.
func (e *Engine) sendFIFO(q *queue, msgs []engine.NewMessage) ([]engine.SendResult, error) {
	res := make([]engine.SendResult, len(msgs))
	rnd := make([]byte, 16*len(msgs))
	if _, err := rand.Read(rnd); err != nil {
		return nil, fmt.Errorf("embedded: message id: %w", err)
	}
	ids := messageIDs(rnd)
	fresh := make([]int, 0, len(msgs))
	added := make([]*dedupEntry, 0, len(msgs)) // per fresh message; nil without an id
	// waitFor is the latest batch, still being written, holding an
	// original of one of the duplicates.
	var waitFor *pendingBatch

	q.mu.Lock()
	if q.deleted {
		q.mu.Unlock()
		return nil, engine.ErrQueueNotFound
	}
	now := e.now()
	q.advanceLocked(now)
	scope := q.desc.Settings.DeduplicationScope
	delay := max0(q.desc.Settings.Delay)
	base := q.nextSeq
	for i := range msgs {
		k := q.dedup.key(scope, &msgs[i])
		if k.id != "" {
			if en := q.dedup.lookup(k, now); en != nil {
				res[i] = engine.SendResult{MessageID: en.messageID, SequenceNumber: engine.FormatSequenceNumber(en.seq), Duplicate: true}
				if en.batch != nil && (waitFor == nil || en.batch.first > waitFor.first) {
					waitFor = en.batch
				}
				continue
			}
		}
		seq := base + uint64(len(fresh))
		res[i] = engine.SendResult{MessageID: messageID(ids, i), SequenceNumber: engine.FormatSequenceNumber(seq)}
		var en *dedupEntry
		if k.id != "" {
			en = &dedupEntry{key: k, messageID: res[i].MessageID, seq: seq, sentAt: now}
			q.dedup.add(en)
		}
		added = append(added, en)
		fresh = append(fresh, i)
	}
	if len(fresh) == 0 {
		q.rearmLocked(now)
		q.mu.Unlock()
		if waitFor != nil {
			<-waitFor.done
			if waitFor.state == pendingFailed {
				return nil, errOriginalLost
			}
		}
		return res, nil
	}
	first, pb := q.reserveLocked(uint64(len(fresh)))
	for _, en := range added {
		if en != nil {
			en.batch = pb
		}
	}
	q.rearmLocked(now)
	q.mu.Unlock()

	ms := make([]message, len(fresh))
	groups := make([]string, len(fresh))
	b := e.db.NewBatch()
	defer b.Close()
	var buf []byte
	for j, i := range fresh {
		m := &ms[j]
		*m = message{seq: first + uint64(j), sentAt: now, deadline: after(now, delay), timerSlot: -1, ageSlot: -1}
		groups[j] = msgs[i].MessageGroupID
		buf = encodeMessage(buf[:0], res[i].MessageID, now, m.deadline, &msgs[i], "")
		_ = q.putBody(b, m.seq, buf)
		putArrivalHistory(b, q.id, m, &msgs[i])
		if en := added[j]; en != nil {
			buf = encodeDedup(buf[:0], &dedupRecord{sentAt: now, group: en.key.group, dedupID: en.key.id, messageID: res[i].MessageID})
			_ = b.Set(dedupRecordKey(q.id, m.seq), buf, nil)
		}
	}
	if e.beforeSendCommit != nil {
		e.beforeSendCommit()
	}
	err := b.Commit(e.writeOptions())

	q.mu.Lock()
	now = e.now()
	if err != nil {
		q.dedup.forget(added)
		q.failLocked(pb, now)
		q.mu.Unlock()
		return nil, fmt.Errorf("embedded: send: %w", err)
	}
	// Durable: a duplicate of these need not wait any more.
	for _, en := range added {
		if en != nil {
			en.batch = nil
		}
	}
	q.completeLocked(pb, ms, groups, now)
	q.mu.Unlock()
	// Earlier reservations (waitFor among them) enter first.
	<-pb.done
	if pb.gone {
		return nil, engine.ErrQueueNotFound
	}
	if waitFor != nil && waitFor.state == pendingFailed {
		return nil, errOriginalLost
	}
	return res, nil
}
