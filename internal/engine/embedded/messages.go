package embedded

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ferrymq/ferry/internal/clock"
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
	fifo := make([]*queue, len(sends))         // nil: not a FIFO part
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
		}
	}
	if !b.Empty() {
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
	queueDelay := q.desc.Settings.Delay
	// The records are kept after the write only for receives waiting now;
	// one that starts waiting later reads them back.
	keep := q.waiters.Len() > 0
	q.mu.Unlock()

	n := len(msgs)
	lo := sp.used
	sp.used += n
	*p = pendingSend{q: q, ms: make([]message, n), res: sp.res[lo : lo+n : lo+n], sent: sentRecords{first: first}}
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
		k := makeMsgKey(q.id, m.seq, kindBody)
		if err := b.Set(k[:], rec, nil); err != nil {
			return fmt.Errorf("embedded: send: %w", err)
		}
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
	if q.deleted || p.sent.first < q.purgeFloor {
		// Deleted or purged while being written: the range delete may have
		// been ordered before this batch, so remove the records here too.
		cb := e.db.NewBatch()
		for i := range ms {
			k := makeMsgKey(q.id, ms[i].seq, kindBody)
			_ = cb.Delete(k[:], nil)
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
	q.serveSentLocked(now, &p.sent)
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
				res[i] = engine.SendResult{MessageID: en.messageID, SequenceNumber: seqString(en.seq), Duplicate: true}
				if en.batch != nil && (waitFor == nil || en.batch.first > waitFor.first) {
					waitFor = en.batch
				}
				continue
			}
		}
		seq := base + uint64(len(fresh))
		res[i] = engine.SendResult{MessageID: messageID(ids, i), SequenceNumber: seqString(seq)}
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
		k := makeMsgKey(q.id, m.seq, kindBody)
		_ = b.Set(k[:], buf, nil)
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

// Receive implements engine.Backend. Messages over the redrive policy's
// receive count are moved to the dead-letter queue on the way and do not
// count towards req.Max; a long poll that found only such messages keeps
// waiting.
func (e *Engine) Receive(ctx context.Context, account, name string, req engine.ReceiveRequest) ([]engine.Message, error) {
	if ctx.Err() != nil {
		return nil, nil
	}
	if err := e.enter(); err != nil {
		return nil, err
	}
	q, err := e.lookup(account, name)
	if err != nil {
		e.leave()
		return nil, err
	}
	maxMsgs := max(req.Max, 1)
	attemptID := ""
	if q.fifo {
		attemptID = req.AttemptID
	}
	var vis *time.Duration
	if req.Visibility != nil {
		v := *req.Visibility
		vis = &v
	}

	// expired is closed when the wait is over; nil until the wait starts.
	var expired chan struct{}
	var waitTimer clock.Timer
	defer func() {
		if waitTimer != nil {
			waitTimer.Stop()
		}
	}()
	// Every round starts entered.
	for round := 0; ; round++ {
		q.mu.Lock()
		if q.deleted {
			q.mu.Unlock()
			e.leave()
			if round == 0 {
				return nil, engine.ErrQueueNotFound
			}
			return nil, nil
		}
		now := e.now()
		q.advanceLocked(now)
		if round == 0 && attemptID != "" {
			if got := q.retryAttemptLocked(attemptID, now, vis); got != nil {
				q.rearmLocked(now)
				q.mu.Unlock()
				defer e.leave()
				return e.fetch(q, got)
			}
		}
		var (
			got  []taken
			job  *redriveJob
			terr error
		)
		if q.takeableLocked() || req.Wait <= 0 {
			got, job, terr = q.takeLocked(now, maxMsgs, vis)
			q.rearmLocked(now)
			q.mu.Unlock()
		} else {
			w := &waiter{ctx: ctx, max: maxMsgs, vis: vis, done: make(chan struct{})}
			w.elem = q.waiters.PushBack(w)
			q.mu.Unlock()
			e.leave() // Close must not wait for a long poll
			if expired == nil {
				expired = make(chan struct{})
				ch := expired
				waitTimer = e.clock.AfterFunc(req.Wait, func() { close(ch) })
			}
			select {
			case <-w.done:
			case <-ctx.Done():
			case <-expired:
			}
			q.mu.Lock()
			if w.elem != nil {
				q.waiters.Remove(w.elem)
				w.elem = nil
			}
			got, job = w.got, w.job
			q.mu.Unlock()
			if e.enter() != nil {
				// Closed: what was taken stays in the store as it was.
				return nil, nil
			}
		}
		restored := 0
		if job != nil {
			restored = e.redrive(job)
		}
		if terr != nil {
			e.leave()
			return nil, fmt.Errorf("embedded: receive: %w", terr)
		}
		if len(got) > 0 {
			defer e.leave()
			if attemptID != "" {
				q.mu.Lock()
				if !q.deleted {
					now := e.now()
					q.attempts.put(attemptID, got, now)
					q.rearmLocked(now)
				}
				q.mu.Unlock()
			}
			return e.fetch(q, got)
		}
		// Nothing taken. Without a move this is an empty short poll, or a
		// wait that ended (time, cancel, queue deleted, engine closed).
		// After a move, a short poll has seen every visible message and
		// looks again only at those whose dead-letter queue has gone (two
		// queues that are each other's dead-letter queue would otherwise
		// keep it busy); a long poll goes on waiting.
		if job == nil || ctx.Err() != nil || isClosed(expired) || (req.Wait <= 0 && restored == 0) {
			e.leave()
			return nil, nil
		}
	}
}

func isClosed(ch chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// fetch reads the bodies of taken messages and makes their handles. One
// iterator serves the whole receive: taken messages are mostly neighbours in
// seq order, so ascending seeks reuse the blocks already loaded. The
// records and handles are gathered into one buffer that every message's
// strings are cut from.
func (e *Engine) fetch(q *queue, got []taken) ([]engine.Message, error) {
	if len(got) == 0 {
		return nil, nil
	}
	type place struct {
		i          int // index in got
		start, end int // the record in raw; end 0 when not found
	}
	places := make([]place, len(got))
	for i := range places {
		places[i].i = i
	}
	slices.SortFunc(places, func(a, b place) int { return cmp.Compare(got[a.i].seq, got[b.i].seq) })
	var raw []byte
	found := 0
	var it *pebble.Iterator // opened for the first record not in hand
	defer func() {
		if it != nil {
			it.Close()
		}
	}()
	// One key for every seek: declared in the loop, each would escape to
	// the heap (Pebble copies what it keeps).
	var k msgKey
	for j := range places {
		p := &places[j]
		v := got[p.i].rec
		if v == nil {
			if it == nil {
				lo, hi := queueMsgSpan(q.id)
				var err error
				if it, err = e.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi}); err != nil {
					return nil, fmt.Errorf("embedded: read messages: %w", err)
				}
			}
			k = makeMsgKey(q.id, got[p.i].seq, kindBody)
			if !it.SeekGE(k[:]) || !bytes.Equal(it.Key(), k[:]) {
				continue // purged or expired since it was taken
			}
			var err error
			if v, err = it.ValueAndErr(); err != nil {
				return nil, fmt.Errorf("embedded: read message: %w", err)
			}
		}
		if raw == nil {
			raw = make([]byte, 0, len(got)*(len(v)+handleLen))
		}
		p.start = len(raw)
		raw = append(raw, v...)
		p.end = len(raw)
		found++
	}
	if it != nil {
		if err := it.Error(); err != nil {
			return nil, fmt.Errorf("embedded: read messages: %w", err)
		}
	}
	if found == 0 {
		return nil, nil
	}
	// Back in the receive's order; the handles follow the records.
	slices.SortFunc(places, func(a, b place) int { return cmp.Compare(a.i, b.i) })
	hs := len(raw)
	for _, p := range places {
		if p.end > 0 {
			t := got[p.i]
			raw = e.signer.appendSigned(raw, receipt{qid: q.id, seq: t.seq, gen: t.gen})
		}
	}
	// raw is complete and never written again: its string view needs no
	// copy (as strings.Builder does).
	s := unsafe.String(unsafe.SliceData(raw), len(raw))
	out := make([]engine.Message, 0, found)
	attrs := &attrArena{left: found}
	for _, p := range places {
		if p.end == 0 {
			continue
		}
		t := got[p.i]
		out = append(out, engine.Message{})
		m := &out[len(out)-1]
		if err := decodeMessageShared(raw[p.start:p.end], s[p.start:p.end], m, attrs); err != nil {
			return nil, fmt.Errorf("embedded: message %d of queue %d: %w", t.seq, q.id, err)
		}
		attrs.left--
		m.ReceiptHandle = s[hs : hs+handleLen]
		hs += handleLen
		if q.fifo {
			m.SequenceNumber = seqString(t.seq)
		}
		m.ReceiveCount = int(t.receiveCount)
		m.FirstReceiveAt = fromNanos(t.firstReceiveAt)
	}
	return out, nil
}

// parseHandles checks every handle's MAC before any lock is taken; the
// caller checks that each names its queue (ownReceipt).
func (e *Engine) parseHandles(n int, handle func(int) string) ([]receipt, []error) {
	rs := make([]receipt, n)
	errs := make([]error, n)
	for i := range n {
		r, ok := e.signer.parse(handle(i))
		if !ok {
			errs[i] = engine.ErrReceiptHandleInvalid
			continue
		}
		rs[i] = r
	}
	return rs, errs
}

// ownReceipt reports whether the i-th of parseHandles' receipts is valid
// for q, failing it if it is another queue's.
func (q *queue) ownReceipt(rs []receipt, errs []error, i int) bool {
	if errs[i] == nil && rs[i].qid != q.id {
		errs[i] = engine.ErrReceiptHandleInvalid
	}
	return errs[i] == nil
}

// Delete implements engine.Backend. A handle deletes its message if it is
// from the message's latest receive, even after its visibility expired; a
// superseded handle, or one whose message is gone, succeeds and deletes
// nothing. On a FIFO queue a handle whose visibility has expired (or that
// was superseded, which implies it) fails with ErrReceiptHandleExpired; a
// deleted message keeps blocking its group until the delete is durable, so
// that a crash cannot bring it back after the message behind it went out.
func (e *Engine) Delete(ctx context.Context, account, name string, handles []string) ([]error, error) {
	rs, errs := e.parseHandles(len(handles), func(i int) string { return handles[i] })
	err := e.withQueue(ctx, account, name, opWrite, func(q *queue) (commit, error) {
		var b *pebble.Batch
		var doomed []*message // FIFO: deleting, to drop once durable
		stale := false
		now := e.now()
		q.advanceLocked(now)
		for i, r := range rs {
			if !q.ownReceipt(rs, errs, i) {
				continue
			}
			m := q.msgs[r.seq]
			if m != nil && m.status == statusDeleting && m.gen == r.gen {
				stale = true // a retry of a delete still under way
				continue
			}
			if q.fifo && m != nil && (m.gen != r.gen || m.status != statusInflight) {
				errs[i] = engine.ErrReceiptHandleExpired
				continue
			}
			if m == nil || m.gen != r.gen {
				stale = true
				continue
			}
			if q.fifo {
				q.markDeletingLocked(m)
				doomed = append(doomed, m)
			} else {
				q.dropLocked(m)
			}
			if b == nil {
				b = e.db.NewBatch()
			}
			deleteMsgKeys(b, q.id, m)
		}
		var c commit
		var err error
		if b != nil {
			c, err = e.order(b)
		}
		q.rearmLocked(now)
		// The message may have been deleted by a call still waiting for
		// its sync (a retried delete): do not acknowledge before that one is.
		c.barrier = stale
		c.deleting = doomed
		c.beforeSync = e.beforeDeleteSync
		return c, err
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// ChangeVisibility implements engine.Backend. Only the latest receive's
// handle works, while the message exists; a message whose visibility had
// expired but that nobody received since is hidden again. On a FIFO queue
// a handle whose visibility has expired fails with ErrReceiptHandleExpired.
func (e *Engine) ChangeVisibility(ctx context.Context, account, name string, changes []engine.VisibilityChange) ([]error, error) {
	rs, errs := e.parseHandles(len(changes), func(i int) string { return changes[i].ReceiptHandle })
	err := e.withQueue(ctx, account, name, opWrite, func(q *queue) (commit, error) {
		var b *pebble.Batch
		var buf [64]byte
		now := e.now()
		q.advanceLocked(now)
		revealed := false
		for i, r := range rs {
			if !q.ownReceipt(rs, errs, i) {
				continue
			}
			m := q.msgs[r.seq]
			if m != nil && m.status == statusDeleting {
				errs[i] = engine.ErrMessageNotInflight
				continue
			}
			if q.fifo && m != nil && (m.gen != r.gen || m.status != statusInflight) {
				errs[i] = engine.ErrReceiptHandleExpired
				continue
			}
			if m == nil || m.gen != r.gen {
				errs[i] = engine.ErrMessageNotInflight
				continue
			}
			timeout := max0(changes[i].Timeout)
			deadline := after(now, timeout)
			if deadline > after(m.receivedAt, engine.MaxVisibility) {
				errs[i] = engine.ErrVisibilityLimit
				continue
			}
			m.touched = true
			if timeout == 0 {
				m.deadline = now
				if m.status != statusReady {
					q.revealLocked(m)
					revealed = true
				}
			} else {
				q.hideLocked(m, deadline)
			}
			if b == nil {
				b = e.db.NewBatch()
			}
			k := makeMsgKey(q.id, m.seq, kindState)
			_ = b.Set(k[:], encodeState(buf[:0], m.state()), nil)
		}
		var c commit
		var err error
		if b != nil {
			c, err = e.order(b)
		}
		if revealed {
			q.serveLocked(now)
		}
		q.rearmLocked(now)
		return c, err
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// Purge implements engine.Backend.
func (e *Engine) Purge(ctx context.Context, account, name string) error {
	return e.withQueue(ctx, account, name, opWrite, func(q *queue) (commit, error) {
		nowT := e.clock.Now()
		if last := q.desc.LastPurge; !last.IsZero() && nowT.Sub(last) < engine.PurgeInterval {
			return commit{}, engine.ErrPurgeInProgress
		}
		d := cloneQueue(&q.desc)
		d.LastPurge = normTime(nowT)
		b := e.db.NewBatch()
		lo, hi := msgSpan(q.id, 0, q.nextSeq)
		_ = b.DeleteRange(lo, hi, nil)
		_ = b.Set(queueKey(q.id), encodeQueue(nil, &d), nil)
		c, err := e.order(b)
		if err != nil {
			return c, err
		}
		q.desc = d
		q.purgeFloor = q.nextSeq
		q.resetIndexLocked()
		return c, nil
	})
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
