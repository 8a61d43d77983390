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

	mu      sync.Mutex
	desc    engine.Queue
	deleted bool

	msgs     map[uint64]*message
	ready    readyList
	timers   msgHeap // delayed and in-flight, by deadline
	ages     msgHeap // every message, by send time
	inflight int
	delayed  int

	nextSeq uint64
	nextGen uint64
	// purgeFloor is the first seq a purge left alone; a send whose seqs lie
	// below it was purged while it was being written.
	purgeFloor uint64

	waiters list.List // of *waiter, oldest first

	// tasks are the move tasks whose source this queue is, oldest first.
	tasks []*task

	// One timer per queue, armed at the earliest deadline or expiry.
	timer    clock.Timer
	timerAt  int64
	timerTok uint64
}

// waiter is a receive waiting for messages. Whatever makes a message visible
// takes messages for the oldest waiter under the queue lock and closes done,
// so no wake-up can be lost.
type waiter struct {
	ctx  context.Context
	max  int
	vis  *time.Duration
	got  []taken
	job  *redriveJob   // messages taken for the dead-letter queue, if any
	elem *list.Element // nil once served or gone
	done chan struct{}
}

// taken is what a receive hands out, captured under the lock.
type taken struct {
	seq, gen       uint64
	receiveCount   uint64
	firstReceiveAt int64
}

func newQueue(e *Engine, id uint64, desc engine.Queue, firstID uint64) *queue {
	q := &queue{e: e, id: id, desc: desc, nextSeq: firstID, nextGen: firstID}
	q.resetIndexLocked()
	return q
}

func (q *queue) resetIndexLocked() {
	q.msgs = make(map[uint64]*message)
	q.ready = readyList{}
	q.timers = newTimerHeap()
	q.ages = newAgeHeap()
	q.inflight, q.delayed = 0, 0
}

// after is t+d, saturating instead of wrapping on absurd durations.
func after(t int64, d time.Duration) int64 {
	if d > 0 && t > math.MaxInt64-int64(d) {
		return math.MaxInt64
	}
	return t + int64(d)
}

func (q *queue) stats() engine.Stats {
	return engine.Stats{
		Visible:    int64(q.ready.n),
		NotVisible: int64(q.inflight),
		Delayed:    int64(q.delayed),
	}
}

// insertLocked places a stored message in the index by its deadline.
func (q *queue) insertLocked(m *message, now int64) {
	q.msgs[m.seq] = m
	q.ages.push(m)
	switch {
	case m.deadline <= now:
		m.status = statusReady
		q.ready.pushBack(m)
	case m.receiveCount == 0:
		m.status = statusDelayed
		q.delayed++
		q.timers.push(m)
	default:
		m.status = statusInflight
		q.inflight++
		q.timers.push(m)
	}
}

// takeOutLocked removes from the index a message just popped from the
// ready list; restoreLocked can put it back.
func (q *queue) takeOutLocked(m *message) {
	q.ages.remove(m)
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
		q.ready.pushFront(m)
		n++
	}
	if n > 0 {
		q.advanceLocked(now)
		q.serveLocked(now)
		q.rearmLocked(now)
	}
	return n
}

// dropLocked removes m from the index.
func (q *queue) dropLocked(m *message) {
	switch m.status {
	case statusReady:
		q.ready.remove(m)
	case statusDelayed:
		q.delayed--
		q.timers.remove(m)
	case statusInflight:
		q.inflight--
		q.timers.remove(m)
	}
	q.ages.remove(m)
	delete(q.msgs, m.seq)
}

// revealLocked makes a delayed or in-flight message visible, at the back.
func (q *queue) revealLocked(m *message) {
	q.timers.remove(m)
	if m.status == statusDelayed {
		q.delayed--
	} else {
		q.inflight--
	}
	m.status = statusReady
	q.ready.pushBack(m)
}

// hideLocked takes m out of sight until deadline.
func (q *queue) hideLocked(m *message, deadline int64) {
	m.deadline = deadline
	if m.status == statusReady {
		q.ready.remove(m)
		m.status = statusInflight
		q.inflight++
		q.timers.push(m)
		return
	}
	q.timers.fix(m)
}

func deleteMsgKeys(b *pebble.Batch, qid uint64, m *message) {
	k := makeMsgKey(qid, m.seq, kindBody)
	// Written once, deleted once: a single delete lets compactions drop
	// both as soon as they meet.
	_ = b.SingleDelete(k[:], nil)
	if m.receiveCount > 0 {
		k[17] = kindState
		_ = b.Delete(k[:], nil)
	}
}

// advanceLocked brings the index to now: due deadlines make messages
// visible, and messages past retention are dropped and deleted from the
// store (without waiting for a sync: a lost delete is redone at startup).
func (q *queue) advanceLocked(now int64) {
	revealed := false
	for m := q.timers.min(); m != nil && m.deadline <= now; m = q.timers.min() {
		q.revealLocked(m)
		revealed = true
	}
	if ret := q.desc.Settings.Retention; ret > 0 {
		var b *pebble.Batch
		for m := q.ages.min(); m != nil && after(m.sentAt, ret) <= now; m = q.ages.min() {
			q.dropLocked(m)
			if b == nil {
				b = q.e.db.NewBatch()
			}
			deleteMsgKeys(b, q.id, m)
		}
		if b != nil {
			if err := q.e.db.Apply(b, pebble.NoSync); err != nil {
				q.e.log.Error("delete expired messages", "queue", q.desc.Name, "err", err)
			}
			b.Close()
		}
	}
	if revealed {
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
func (q *queue) takeLocked(now int64, max int, vis *time.Duration) ([]taken, *redriveJob, error) {
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
	var buf [64]byte
	for len(got) < max && q.ready.n > 0 {
		m := q.ready.popFront()
		if limit > 0 && m.receiveCount >= limit {
			if job == nil {
				rd := q.desc.Settings.Redrive
				// A queue that is its own dead-letter queue would move the
				// message onto itself at every receive: hand it out instead,
				// as when the dead-letter queue is gone.
				if target, err := q.e.lookup(rd.TargetAccount, rd.TargetName); err == nil && target != q {
					job = &redriveJob{src: q, target: target, srcARN: q.desc.ARN}
				} else {
					limit = 0
				}
			}
			if job != nil {
				q.takeOutLocked(m)
				job.msgs = append(job.msgs, m)
				continue
			}
		}
		m.receiveCount++
		if m.receiveCount == 1 {
			m.firstReceiveAt = now
		}
		m.gen = q.nextGen
		q.nextGen++
		m.receivedAt = now
		m.deadline = after(now, v)
		m.status = statusInflight
		q.inflight++
		q.timers.push(m)
		k := makeMsgKey(q.id, m.seq, kindState)
		_ = b.Set(k[:], encodeState(buf[:0], m.state()), nil)
		got = append(got, taken{seq: m.seq, gen: m.gen, receiveCount: m.receiveCount, firstReceiveAt: m.firstReceiveAt})
	}
	if b.Empty() {
		return got, job, nil
	}
	if err := q.e.db.Apply(b, pebble.NoSync); err != nil {
		return got, job, err
	}
	return got, job, nil
}

func max0(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

// serveLocked hands visible messages to waiting receives, oldest first.
func (q *queue) serveLocked(now int64) {
	for q.ready.n > 0 && q.waiters.Len() > 0 {
		w := q.waiters.Remove(q.waiters.Front()).(*waiter)
		w.elem = nil
		// A receive whose client has gone would hide messages for nothing.
		if w.ctx.Err() == nil {
			got, job, err := q.takeLocked(now, w.max, w.vis)
			if err != nil {
				q.e.log.Error("record receive", "queue", q.desc.Name, "err", err)
			}
			w.got, w.job = got, job
		}
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
