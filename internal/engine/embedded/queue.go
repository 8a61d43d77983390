package embedded

import (
	"container/list"
	"context"
	"math"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
)

// queue is one queue's description and index. Every field below mu is
// guarded by it.
type queue struct {
	e  *Engine
	id uint64

	// fifo is fixed at creation (see fifo.go).
	fifo bool

	mu      sync.Mutex
	desc    engine.Queue
	deleted bool

	msgs     map[uint64]*message
	ready    readyList           // standard queues only
	groups   groupIndex          // FIFO queues only
	timers   msgHeap             // delayed and in-flight, by deadline
	ages     orderedSet          // every message, by send time
	oldest   orderedSet          // the messages that count for the oldest age (stats.go)
	movedIn  map[uint64]msgEntry // the messages a redrive moved in (stats.go)
	inflight int
	delayed  int

	nextSeq uint64
	nextGen uint64
	// purgeFloor is the first seq a purge left alone; a send whose seqs lie
	// below it was purged while it was being written.
	purgeFloor uint64

	// held are the records of messages not yet handed out, by seq, and
	// heldBytes their size; polled is when a receive last polled the
	// queue (unix nanoseconds): only then does it hold (held.go).
	held      map[uint64][]byte
	heldBytes int64
	polled    int64
	// bodies are the message records of an in-memory store (bodies.go).
	bodies bodyTable

	waiters list.List // of *waiter, oldest first
	// arrived and prevArrived are when the last two sends entered the
	// index (unix nanoseconds): whether messages flow (see gatherMore).
	arrived, prevArrived int64
	// writing counts the sends to this standard queue whose seqs are
	// reserved and whose batch is not yet in the index (written, or
	// waiting for its sync): arrivals on their way (see gatherMore).
	writing int

	// tasks are the move tasks whose source this queue is, oldest first.
	tasks []*task

	// FIFO queues only: deduplication entries (they outlive purges),
	// receive attempts, and the batches on their way into the index.
	dedup    dedupTable
	attempts attemptTable
	pending  []*pendingBatch

	// One timer per queue, armed at the earliest deadline or expiry.
	timer    clock.Timer
	timerAt  int64
	timerTok uint64
}

// waiter is a receive waiting for messages. Whatever makes a message visible
// takes messages for the oldest waiter under the queue lock and closes done,
// so no wake-up can be lost.
type waiter struct {
	ctx context.Context
	max int
	vis *time.Duration
	// consumer is recorded in the history of what the receive takes.
	consumer *engine.Consumer
	got      []taken
	job      *redriveJob   // messages taken for the dead-letter queue, if any
	elem     *list.Element // nil once served or gone
	done     chan struct{}
	// more is set for a gathering receive (gatherMore): it stays first in
	// line, adding what each arrival brings to got, until it has max or an
	// arrival brought a move to the dead-letter queue; more tells it of
	// each arrival.
	more chan struct{}
}

// taken is what a receive hands out, captured under the lock.
type taken struct {
	seq, gen       uint64
	receiveCount   uint64
	firstReceiveAt int64
	// rec is the message's stored record when the send that wrote it
	// handed it over (sentRecords) or the queue held it (held.go); nil
	// otherwise, and fetch reads it.
	rec []byte
	// history: the message has a history record; pending: its state
	// record holds this receive's story event (history.go).
	history, pending bool
}

func newQueue(e *Engine, id uint64, desc engine.Queue, firstID uint64) *queue {
	q := &queue{e: e, id: id, desc: desc, fifo: desc.Settings.FIFO, nextSeq: firstID, nextGen: firstID}
	if q.fifo {
		q.dedup.init()
	}
	q.resetIndexLocked()
	return q
}

func (q *queue) resetIndexLocked() {
	q.unholdAllLocked()
	q.msgs = make(map[uint64]*message)
	q.ready = readyList{}
	q.timers = newTimerHeap()
	q.ages = newAgeOrder()
	q.oldest = newOldestOrder()
	q.movedIn = nil
	q.inflight, q.delayed = 0, 0
	if q.fifo {
		q.groups = newGroupIndex()
		q.attempts.init()
	}
}

// growIndexLocked makes room in an empty index for n messages (startup),
// so that the map and heap are not regrown and rehashed as they fill.
func (q *queue) growIndexLocked(n int) {
	if len(q.msgs) > 0 || q.ages.len() > 0 {
		return
	}
	q.msgs = make(map[uint64]*message, n)
	q.ages.grow(n)
	q.oldest.grow(n)
}

// visibleLocked counts the visible messages; on a FIFO queue this includes
// those held back behind an in-flight message of their group.
func (q *queue) visibleLocked() int {
	if q.fifo {
		return q.groups.visible
	}
	return q.ready.n
}

// takeableLocked reports whether a receive would find a message.
func (q *queue) takeableLocked() bool {
	if q.fifo {
		return q.groups.ready.len() > 0
	}
	return q.ready.n > 0
}

// after is t+d, saturating instead of wrapping on absurd durations.
func after(t int64, d time.Duration) int64 {
	if d > 0 && t > math.MaxInt64-int64(d) {
		return math.MaxInt64
	}
	return t + int64(d)
}

// insertLocked places a stored message in the index by its deadline; gid
// is its group on a FIFO queue (ignored otherwise).
func (q *queue) insertLocked(m *message, gid string, now int64) {
	q.msgs[m.seq] = m
	q.ages.push(m)
	m.oldSlot = -1 // new to the index: the zero value would claim a slot
	q.trackOldestLocked(m)
	var g *group
	if q.fifo {
		g = q.groups.get(gid)
		g.insert(m)
	}
	switch {
	case m.deadline <= now:
		m.status = statusReady
		if g != nil {
			q.groups.visible++
		} else {
			q.ready.pushBack(m)
		}
	case m.receiveCount == 0:
		m.status = statusDelayed
		q.delayed++
		q.timers.push(m)
	default:
		m.status = statusInflight
		q.inflight++
		q.timers.push(m)
		if g != nil {
			g.inflight++
		}
	}
	if g != nil {
		q.groups.update(g)
	}
}

// takeOutLocked removes from the index a visible message: on a standard
// queue one just popped from the ready list; on a FIFO queue it leaves its
// group too (the caller updates the group). restoreLocked can put it back.
func (q *queue) takeOutLocked(m *message) {
	if q.fifo {
		m.grp.remove(m)
		q.groups.visible--
	}
	q.ages.remove(m)
	q.forgetLocked(m)
	delete(q.msgs, m.seq)
}

// restoreLocked puts back, at the head of the ready list and in their
// order, messages taken out with takeOutLocked whose move did not happen.
// Messages a purge has deleted meanwhile stay out. It reports how many it
// put back.
func (q *queue) restoreLocked(ms []*message, now int64) int {
	n := 0
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		if m.seq < q.purgeFloor {
			continue
		}
		m.status = statusReady
		q.msgs[m.seq] = m
		q.ages.push(m)
		q.trackOldestLocked(m)
		if q.fifo {
			// Back into its group (a new one if it emptied meanwhile),
			// at its place by seq.
			g := q.groups.get(m.grp.id)
			g.insert(m)
			q.groups.visible++
			q.groups.update(g)
		} else {
			q.ready.pushFront(m)
		}
		n++
	}
	if n > 0 {
		q.advanceLocked(now)
		q.serveLocked(now)
		q.rearmLocked(now)
	}
	return n
}

// dropLocked removes m from the index. On a FIFO queue this may unblock
// its group; the caller serves waiters.
func (q *queue) dropLocked(m *message) {
	switch m.status {
	case statusReady:
		if q.fifo {
			q.groups.visible--
		} else {
			q.ready.remove(m)
		}
	case statusDelayed:
		q.delayed--
		q.timers.remove(m)
	case statusInflight:
		q.inflight--
		q.timers.remove(m)
		if q.fifo {
			m.grp.inflight--
		}
	case statusDeleting:
		q.inflight--
		m.grp.inflight--
	}
	q.ages.remove(m)
	q.forgetLocked(m)
	delete(q.msgs, m.seq)
	if q.fifo {
		m.grp.remove(m)
		q.groups.update(m.grp)
	}
}

// markDeletingLocked turns a FIFO message into one being deleted: it
// never becomes visible again and, counted in flight, keeps its group
// blocked until dropLocked. A delete by handle marks an in-flight message;
// a delete by ref (peek.go) one in any state.
func (q *queue) markDeletingLocked(m *message) {
	switch m.status {
	case statusInflight:
		q.timers.remove(m)
		m.status = statusDeleting
		q.untrackOldestLocked(m)
		return
	case statusReady:
		q.groups.visible--
	case statusDelayed:
		q.timers.remove(m)
		q.delayed--
	}
	m.status = statusDeleting
	q.inflight++
	m.grp.inflight++
	q.untrackOldestLocked(m)
	q.groups.update(m.grp)
}

// revealLocked makes a delayed or in-flight message visible: at the back
// of a standard queue; where it stands in its group on a FIFO queue.
func (q *queue) revealLocked(m *message) {
	q.timers.remove(m)
	if m.status == statusDelayed {
		q.delayed--
	} else {
		q.inflight--
		if q.fifo {
			m.grp.inflight--
		}
	}
	m.status = statusReady
	if q.fifo {
		q.groups.visible++
		q.groups.update(m.grp)
		return
	}
	q.ready.pushBack(m)
}

// hideLocked takes m out of sight until deadline.
func (q *queue) hideLocked(m *message, deadline int64) {
	m.deadline = deadline
	if m.status == statusReady {
		m.status = statusInflight
		q.inflight++
		q.timers.push(m)
		if q.fifo {
			q.groups.visible--
			m.grp.inflight++
			q.groups.update(m.grp)
		} else {
			q.ready.remove(m)
		}
		return
	}
	q.timers.fix(m)
}

func (q *queue) deleteMsgKeys(b *pebble.Batch, m *message) {
	// Written once, deleted once.
	q.dropBody(b, m.seq, true)
	k := makeMsgKey(q.id, m.seq, kindState)
	if m.receiveCount > 0 {
		_ = b.Delete(k[:], nil)
	}
	if m.history {
		k[17] = kindHistory
		_ = b.Delete(k[:], nil)
	}
}

// advanceLocked brings the index to now: due deadlines make messages
// visible, and messages past retention are dropped and deleted from the
// store (without waiting for a sync: a lost delete is redone at startup).
func (q *queue) advanceLocked(now int64) {
	// On a FIFO queue an expired in-flight message can unblock its group.
	serve := false
	for m := q.timers.min(); m != nil && m.deadline <= now; m = q.timers.min() {
		q.revealLocked(m)
		serve = true
	}
	var b *pebble.Batch
	if ret := q.desc.Settings.Retention; ret > 0 {
		for m := q.ages.min(); m != nil && after(m.sentAt, ret) <= now; m = q.ages.min() {
			deleting := m.status == statusDeleting
			q.dropLocked(m)
			serve = serve || q.fifo
			if deleting {
				continue // its delete batch removes the records
			}
			if b == nil {
				b = q.e.db.NewBatch()
			}
			q.deleteMsgKeys(b, m)
		}
	}
	if q.fifo {
		q.dedup.prune(q.id, now, &b, q.e.db)
		q.attempts.prune(now)
	}
	if b != nil {
		if err := q.e.db.Apply(b, pebble.NoSync); err != nil {
			q.e.log.Error("delete expired records", "queue", q.desc.Name, "err", err)
		}
		b.Close()
	}
	if serve {
		q.serveLocked(now)
	}
}

// nextEventLocked is the earliest deadline or expiry, if any.
func (q *queue) nextEventLocked() (int64, bool) {
	var next int64
	ok := false
	if m := q.timers.min(); m != nil {
		next, ok = m.deadline, true
	}
	if ret := q.desc.Settings.Retention; ret > 0 {
		if m := q.ages.min(); m != nil {
			if exp := after(m.sentAt, ret); !ok || exp < next {
				next, ok = exp, true
			}
		}
	}
	if q.fifo {
		if exp, has := q.dedup.nextExpiry(); has && (!ok || exp < next) {
			next, ok = exp, true
		}
		if exp, has := q.attempts.nextExpiry(); has && (!ok || exp < next) {
			next, ok = exp, true
		}
	}
	return next, ok
}

// rearmLocked makes sure the queue's timer fires no later than its next
// event. A timer armed earlier than needed is left alone: it finds nothing
// due and re-arms, which is cheaper than re-arming on every change.
func (q *queue) rearmLocked(now int64) {
	next, ok := q.nextEventLocked()
	if !ok || q.deleted || (q.timer != nil && q.timerAt <= next) {
		return
	}
	q.stopTimerLocked()
	q.timerTok++
	tok := q.timerTok
	q.timerAt = next
	q.timer = q.e.clock.AfterFunc(time.Duration(next-now), func() { q.fire(tok) })
}

func (q *queue) stopTimerLocked() {
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
}

func (q *queue) fire(tok uint64) {
	if q.e.enter() != nil {
		return
	}
	defer q.e.leave()
	q.mu.Lock()
	defer q.mu.Unlock()
	if tok == q.timerTok {
		q.timer = nil
	}
	if q.deleted {
		return
	}
	now := q.e.now()
	q.advanceLocked(now)
	q.rearmLocked(now)
}

// takeLocked receives up to max visible messages: each gets a new
// generation and hides for the visibility timeout. The bookkeeping is
// written without waiting for a sync (at-least-once across a crash).
//
// A message whose receive count has reached the redrive policy's maximum is
// not handed out: it is taken out of the index into the returned job, which
// the caller must pass to Engine.redrive once it has released the lock, and
// the take goes on with the next message. A queue whose messages are all
// under the maximum pays one comparison per message.
func (q *queue) takeLocked(now int64, max int, vis *time.Duration, c *engine.Consumer) ([]taken, *redriveJob, error) {
	if q.fifo {
		return q.takeFIFOLocked(now, max, vis, c)
	}
	n := min(max, q.ready.n)
	if n <= 0 {
		return nil, nil, nil
	}
	v := q.desc.Settings.VisibilityTimeout
	if vis != nil {
		v = *vis
	}
	v = max0(v)
	var limit uint64
	if rd := q.desc.Settings.Redrive; rd != nil && rd.MaxReceiveCount > 0 {
		limit = uint64(rd.MaxReceiveCount)
	}
	var job *redriveJob
	got := make([]taken, 0, n)
	b := q.e.db.NewBatch()
	defer b.Close()
	var buf [256]byte // a state record with a receive's consumer
	for len(got) < max && q.ready.n > 0 {
		m := q.ready.popFront()
		if limit > 0 && uint64(m.receiveCount) >= limit {
			if job == nil {
				if job = q.redriveJobLocked(); job == nil {
					limit = 0
				}
			}
			if job != nil {
				q.takeOutLocked(m)
				job.msgs = append(job.msgs, m)
				continue
			}
		}
		got = append(got, q.handOutLocked(m, now, v, b, buf[:0], c))
	}
	if b.Empty() || !q.e.keepsReceives() {
		return got, job, nil
	}
	if err := q.e.db.Apply(b, pebble.NoSync); err != nil {
		return got, job, err
	}
	return got, job, nil
}

// keepsReceives reports whether receives write their bookkeeping (receive
// count, visibility deadline) and make their dead-letter moves. While the
// disk is full they do not: receives go on from the index, which counts
// and hides as usual, so nothing changes while Ferry runs; a restart in
// that time forgets what lazy bookkeeping may forget anyway (a message
// handed out again, a lower receive count), which SQS's at-least-once
// delivery allows. A message over its redrive maximum is handed out
// instead of moved (a move is a durable write, refused like the others)
// and moves at a receive once space is back. Writing the bookkeeping
// anyway would let consumers that receive, but cannot delete, fill the
// room kept for the store.
func (e *Engine) keepsReceives() bool { return e.writable() == nil }

// redriveJobLocked starts a job for the queue's dead-letter queue; nil if
// the messages must be handed out instead.
func (q *queue) redriveJobLocked() *redriveJob {
	if !q.e.keepsReceives() {
		return nil
	}
	rd := q.desc.Settings.Redrive
	// A queue that is its own dead-letter queue would move the message onto
	// itself at every receive: hand it out instead, as when the dead-letter
	// queue is gone.
	if target, err := q.e.lookup(rd.TargetAccount, rd.TargetName); err == nil && target != q {
		return &redriveJob{src: q, target: target, srcARN: q.desc.ARN}
	}
	return nil
}

func max0(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

// arriveLocked notes a send entering the index at now.
func (q *queue) arriveLocked(now int64) { q.prevArrived, q.arrived = q.arrived, now }

// arrivingLocked reports whether sends are on their way into the index:
// their batches are being written or synced.
func (q *queue) arrivingLocked() bool { return q.writing > 0 || len(q.pending) > 0 }

// flowingLocked reports whether the last two sends came within d of each
// other, so that another is likely within d.
func (q *queue) flowingLocked(d time.Duration) bool {
	return q.prevArrived != 0 && q.arrived-q.prevArrived <= int64(d)
}

// serveLocked hands visible messages to waiting receives, oldest first.
func (q *queue) serveLocked(now int64) { q.serveSentLocked(now, nil) }

// serveSentLocked is serveLocked after a send: the messages of sent that
// it hands out carry their records.
func (q *queue) serveSentLocked(now int64, sent *sentRecords) {
	for q.waiters.Len() > 0 && q.takeableLocked() {
		w := q.waiters.Front().Value.(*waiter)
		// A receive whose client has gone would hide messages for nothing.
		if w.ctx.Err() == nil {
			got, job, err := q.takeLocked(now, w.max-len(w.got), w.vis, w.consumer)
			if err != nil {
				q.e.log.Error("record receive", "queue", q.desc.Name, "err", err)
			}
			for i := range got {
				if rec := sent.record(got[i].seq); rec != nil {
					got[i].rec = rec
				}
			}
			w.got, w.job = append(w.got, got...), job
			if len(got) > 0 {
				clock.Handoff(w.ctx, q.e.clock)
			}
			if w.more != nil && job == nil && len(got) > 0 && len(w.got) < w.max {
				select {
				case w.more <- struct{}{}:
				default: // it has yet to hear of the last one
				}
				continue // it took every visible message
			}
		}
		q.waiters.Remove(w.elem)
		w.elem = nil
		close(w.done)
	}
}

// wakeAllLocked ends every wait empty-handed (queue deleted, engine closed).
func (q *queue) wakeAllLocked() {
	for q.waiters.Len() > 0 {
		w := q.waiters.Remove(q.waiters.Front()).(*waiter)
		w.elem = nil
		close(w.done)
	}
}

// handOutLocked makes m in flight for a receive at now with visibility v:
// a new receipt generation, the receive count and first receive time, the
// timer, and its state record in b (written without a sync, as all receive
// bookkeeping), with the receive by c in its story when c is set. Both
// the standard and the FIFO receive use it. The caller holds q.mu and has
// taken m out of its ready structure.
func (q *queue) handOutLocked(m *message, now int64, v time.Duration, b *pebble.Batch, buf []byte, c *engine.Consumer) taken {
	// Four billion receives of one message within its retention would take
	// thousands a second for two weeks; past that the count stays put.
	// The previous receive's event leaves the state record this one
	// rewrites.
	q.settleReceiveLocked(b, m)
	if m.receiveCount < math.MaxUint32 {
		m.receiveCount++
	}
	if m.receiveCount == 1 {
		m.firstReceiveAt = now
	}
	m.gen = q.nextGen
	q.nextGen++
	m.receivedAt = now
	m.deadline = after(now, v)
	m.status = statusInflight
	m.touched = false
	q.inflight++
	q.timers.push(m)
	q.trackOldestLocked(m)
	q.putStateLocked(b, m, buf, c)
	return taken{seq: m.seq, gen: m.gen, receiveCount: uint64(m.receiveCount), firstReceiveAt: m.firstReceiveAt, history: m.history,
		pending: m.pending, rec: q.unholdLocked(m.seq)}
}
