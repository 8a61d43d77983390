package embedded

import (
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ferrymq/ferry/internal/engine"
)

// FIFO queues.
//
// Every message of a FIFO queue sits in its group's list, in seq order,
// from the moment it enters the index until it leaves it, whatever its
// status; the queue-wide ready list is unused. A group is ready when none of
// its messages is in flight and its head is visible; ready groups sit in a
// heap ordered by their head's seq. A receive pops the oldest ready group,
// takes its visible run from the head, then moves on to the next ready
// group: O(log g) per group and O(1) per message. Messages that become
// visible again are still at the front of their group, so they go out
// before the ones behind them.
//
// Seqs are allocated under the queue lock but batches are written outside
// it, so two sends may become durable out of seq order. On a FIFO queue a
// message must not be handed out before an earlier message of its group is
// in the index, so writers reserve their place in q.pending when they take
// their seqs and batches enter the index strictly in that order
// (flushPendingLocked); a send returns once its own batch has entered. It
// waits for that holding no lock; every reservation is ended by the call
// that made it, right after one write, so the wait is that of a write.
//
// A deleted message stays in its group (statusDeleting), blocking it, until
// its delete is durable: a crash cannot bring it back after the message
// behind it was handed out. A redrive, by contrast, unblocks the group as
// soon as it takes the head out (the next message goes out in the same
// receive, as on SQS); should the move then fail, the head returns to the
// front of its group.
//
// Deduplication entries live in a map for lookups and a ring in send order
// for expiry: they are dropped once DeduplicationWindow has passed since
// their send, lazily (on lookup) and as the ring's front falls due (every
// call brings the queue up to date, and the queue's timer covers the front
// with some slack). Each entry is also a store record written in its send's
// batch and deleted when it expires, so a restart keeps the window.
//
// Receive attempt ids (ReceiveRequestAttemptId) are kept in memory only: a
// retry after a restart is served as a new receive.

// group is one message group of a FIFO queue.
type group struct {
	id         string
	head, tail *message // every message of the group in the index, by seq
	n          int
	inflight   int
	busy       bool // counted in groupIndex.busy
	slot       int  // in groupIndex.ready; -1 when absent
}

// insert places m in seq order: at the tail for new messages, at the head
// for messages put back.
func (g *group) insert(m *message) {
	g.n++
	m.grp = g
	switch {
	case g.tail == nil:
		m.prev, m.next = nil, nil
		g.head, g.tail = m, m
	case g.tail.seq < m.seq:
		m.prev, m.next = g.tail, nil
		g.tail.next = m
		g.tail = m
	default:
		at := g.head // the first message after m
		for at.seq < m.seq {
			at = at.next
		}
		m.prev, m.next = at.prev, at
		if at.prev != nil {
			at.prev.next = m
		} else {
			g.head = m
		}
		at.prev = m
	}
}

func (g *group) remove(m *message) {
	if m.prev != nil {
		m.prev.next = m.next
	} else {
		g.head = m.next
	}
	if m.next != nil {
		m.next.prev = m.prev
	} else {
		g.tail = m.prev
	}
	m.prev, m.next = nil, nil
	g.n--
}

func (g *group) isReady() bool {
	return g.inflight == 0 && g.head != nil && g.head.status == statusReady
}

// groupIndex is a FIFO queue's view of its messages by group.
type groupIndex struct {
	groups  map[string]*group
	ready   groupHeap
	visible int // messages whose status is ready, in any group
	busy    int // groups with a message in flight
}

func newGroupIndex() groupIndex {
	return groupIndex{groups: make(map[string]*group)}
}

func (x *groupIndex) get(id string) *group {
	g := x.groups[id]
	if g == nil {
		// Kept while the group holds messages: a copy, not a view into
		// the request that named it (see dedupTable.add).
		id = strings.Clone(id)
		g = &group{id: id, slot: -1}
		x.groups[id] = g
	}
	return g
}

// update files g by its state after a change: in or out of the ready heap,
// at its head's place, and out of the index once empty. Every change to a
// group ends with it.
func (x *groupIndex) update(g *group) {
	x.markBusy(g)
	switch {
	case g.isReady() && g.slot < 0:
		x.ready.push(g)
	case g.isReady():
		x.ready.fix(g)
	case g.slot >= 0:
		x.ready.remove(g)
	}
	if g.n == 0 && x.groups[g.id] == g {
		delete(x.groups, g.id)
	}
}

// groupHeap is a min-heap of ready groups by their head's seq.
type groupHeap struct{ items []*group }

func (h *groupHeap) len() int { return len(h.items) }

func (h *groupHeap) min() *group {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

func (h *groupHeap) less(i, j int) bool { return h.items[i].head.seq < h.items[j].head.seq }

func (h *groupHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].slot = i
	h.items[j].slot = j
}

func (h *groupHeap) push(g *group) {
	g.slot = len(h.items)
	h.items = append(h.items, g)
	h.up(g.slot)
}

func (h *groupHeap) remove(g *group) {
	i, last := g.slot, len(h.items)-1
	if i != last {
		h.swap(i, last)
	}
	h.items[last] = nil
	h.items = h.items[:last]
	g.slot = -1
	if i != last {
		h.fix(h.items[i])
	}
}

func (h *groupHeap) fix(g *group) {
	if i := g.slot; !h.down(i) {
		h.up(i)
	}
}

func (h *groupHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *groupHeap) down(i int) bool {
	start, n := i, len(h.items)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h.less(r, c) {
			c = r
		}
		if !h.less(c, i) {
			break
		}
		h.swap(i, c)
		i = c
	}
	return i > start
}

// ring is a FIFO of entries that expire in the order they were added.
type ring[T any] struct {
	items []T
	head  int
}

func (r *ring[T]) push(v T) { r.items = append(r.items, v) }

func (r *ring[T]) len() int { return len(r.items) - r.head }

func (r *ring[T]) front() T { return r.items[r.head] }

func (r *ring[T]) pop() {
	var zero T
	r.items[r.head] = zero
	r.head++
	// Compact once the dead prefix dominates: amortised O(1).
	if r.head > 32 && r.head*2 > len(r.items) {
		n := copy(r.items, r.items[r.head:])
		clear(r.items[n:])
		r.items = r.items[:n]
		r.head = 0
	}
}

// dedupSlack is how late the queue timer may prune deduplication entries
// and receive attempts: lookups check expiry themselves, so pruning only
// bounds memory, and a little lateness lets one timer event prune many.
const dedupSlack = time.Second

type dedupKey struct{ group, id string }

type dedupEntry struct {
	key       dedupKey
	messageID string
	seq       uint64
	sentAt    int64
	// batch is the send that wrote the original while it is on its way
	// into the index; a duplicate of it is acknowledged only after it.
	batch *pendingBatch
	dead  bool // its send failed: no record to delete
}

type dedupTable struct {
	m     map[dedupKey]*dedupEntry
	order ring[*dedupEntry]
}

func (t *dedupTable) init() { t.m = make(map[dedupKey]*dedupEntry) }

func (t *dedupTable) key(scope string, m *engine.NewMessage) dedupKey {
	if scope == engine.DeduplicationScopeMessageGroup {
		return dedupKey{group: m.MessageGroupID, id: m.DeduplicationID}
	}
	return dedupKey{id: m.DeduplicationID}
}

func expired(sentAt, now int64) bool {
	return after(sentAt, engine.DeduplicationWindow) <= now
}

// lookup returns the live entry for k, if any.
func (t *dedupTable) lookup(k dedupKey, now int64) *dedupEntry {
	en := t.m[k]
	if en == nil || expired(en.sentAt, now) {
		return nil
	}
	return en
}

// add remembers en for the window. Its key is copied: the caller's
// strings are views into the request's body, which the entry would
// otherwise hold for five minutes.
func (t *dedupTable) add(en *dedupEntry) {
	en.key = dedupKey{group: strings.Clone(en.key.group), id: strings.Clone(en.key.id)}
	t.m[en.key] = en
	t.order.push(en)
}

// forget drops entries whose send failed.
func (t *dedupTable) forget(ens []*dedupEntry) {
	for _, en := range ens {
		if en == nil {
			continue
		}
		en.dead = true
		if t.m[en.key] == en {
			delete(t.m, en.key)
		}
	}
}

// prune drops the entries expired by now and deletes their records in b,
// which it creates when needed.
func (t *dedupTable) prune(qid uint64, now int64, b **pebble.Batch, db *pebble.DB) {
	for t.order.len() > 0 {
		en := t.order.front()
		if !expired(en.sentAt, now) {
			return
		}
		t.order.pop()
		if t.m[en.key] == en {
			delete(t.m, en.key)
		}
		if en.dead {
			continue
		}
		if *b == nil {
			*b = db.NewBatch()
		}
		_ = (*b).SingleDelete(dedupRecordKey(qid, en.seq), nil)
	}
}

// nextExpiry is when the oldest entry falls due, plus slack.
func (t *dedupTable) nextExpiry() (int64, bool) {
	if t.order.len() == 0 {
		return 0, false
	}
	return after(after(t.order.front().sentAt, engine.DeduplicationWindow), dedupSlack), true
}

// attempt is a receive made with a ReceiveRequestAttemptId.
type attempt struct {
	id     string
	at     int64
	got    []taken
	active bool // false once superseded or found unusable
}

type attemptTable struct {
	m     map[string]*attempt
	order ring[*attempt]
}

func (t *attemptTable) init() {
	t.m = make(map[string]*attempt)
	t.order = ring[*attempt]{}
}

func (t *attemptTable) lookup(id string, now int64) *attempt {
	a := t.m[id]
	if a == nil || expired(a.at, now) {
		return nil
	}
	return a
}

func (t *attemptTable) put(id string, got []taken, now int64) {
	if old := t.m[id]; old != nil {
		old.active = false
	}
	id = strings.Clone(id) // not a view into the request (see dedupTable.add)
	a := &attempt{id: id, at: now, got: got, active: true}
	t.m[id] = a
	t.order.push(a)
}

func (t *attemptTable) drop(a *attempt) {
	a.active = false
	if t.m[a.id] == a {
		delete(t.m, a.id)
	}
}

func (t *attemptTable) prune(now int64) {
	for t.order.len() > 0 && expired(t.order.front().at, now) {
		t.drop(t.order.front())
		t.order.pop()
	}
}

func (t *attemptTable) nextExpiry() (int64, bool) {
	if t.order.len() == 0 {
		return 0, false
	}
	return after(after(t.order.front().at, engine.DeduplicationWindow), dedupSlack), true
}

// pendingState is how far a reserved batch has got.
type pendingState uint8

const (
	pendingWriting pendingState = iota
	pendingDurable
	pendingFailed
)

// pendingBatch holds a FIFO queue's place, in seq order, for messages being
// written; its fields are guarded by the queue's mu, and done is closed once
// the batch has entered the index (or was dropped).
type pendingBatch struct {
	first  uint64
	state  pendingState
	msgs   []message
	groups []string // group id of each of msgs
	// gone reports that the queue was deleted before the batch entered.
	gone bool
	done chan struct{}
}

// reserveLocked allocates n seqs. On a FIFO queue it also reserves their
// place in the order in which batches enter the index; the caller must end
// the reservation with completeLocked (or failLocked), whatever happens.
func (q *queue) reserveLocked(n uint64) (uint64, *pendingBatch) {
	first := q.nextSeq
	q.nextSeq += n
	if !q.fifo {
		return first, nil
	}
	pb := &pendingBatch{first: first, done: make(chan struct{})}
	q.pending = append(q.pending, pb)
	return first, pb
}

// completeLocked marks pb durable with its messages and lets every batch
// that can enter the index enter it.
func (q *queue) completeLocked(pb *pendingBatch, msgs []message, groups []string, now int64) {
	pb.msgs, pb.groups, pb.state = msgs, groups, pendingDurable
	q.flushPendingLocked(now)
}

// failLocked gives up pb's place: nothing of it was written.
func (q *queue) failLocked(pb *pendingBatch, now int64) {
	pb.state = pendingFailed
	q.flushPendingLocked(now)
}

// flushPendingLocked enters into the index, in reservation order, every
// durable batch not preceded by one still being written. A batch whose
// queue was deleted or purged since its reservation is dropped, and its
// records deleted again (the range delete may have been ordered before it).
func (q *queue) flushPendingLocked(now int64) {
	entered := false
	var cb *pebble.Batch
	for len(q.pending) > 0 {
		pb := q.pending[0]
		if pb.state == pendingWriting {
			break
		}
		q.pending[0] = nil
		q.pending = q.pending[1:]
		switch {
		case pb.state == pendingFailed:
		case q.deleted || pb.first < q.purgeFloor:
			pb.gone = q.deleted
			if cb == nil {
				cb = q.e.db.NewBatch()
			}
			for i := range pb.msgs {
				seq := pb.msgs[i].seq
				q.dropBody(cb, seq, false)
				k := makeMsgKey(q.id, seq, kindState)
				_ = cb.Delete(k[:], nil)
				if pb.msgs[i].history {
					k[17] = kindHistory
					_ = cb.Delete(k[:], nil)
				}
				if q.deleted {
					// A purge keeps the deduplication window; a delete
					// does not.
					_ = cb.Delete(dedupRecordKey(q.id, seq), nil)
				}
			}
		default:
			if !entered {
				q.advanceLocked(now)
				entered = true
			}
			for i := range pb.msgs {
				q.insertLocked(&pb.msgs[i], pb.groups[i], now)
			}
		}
		close(pb.done)
	}
	if len(q.pending) == 0 {
		q.pending = nil // let the backing array go
	}
	if cb != nil {
		if err := q.e.db.Apply(cb, pebble.NoSync); err != nil {
			q.e.log.Error("drop messages of a purged queue", "queue", q.desc.Name, "err", err)
		}
		cb.Close()
	}
	if entered {
		q.arriveLocked(now)
		q.serveLocked(now)
		q.rearmLocked(now)
	}
}

// takeFIFOLocked is takeLocked for FIFO queues: it fills the batch from the
// ready group with the oldest head, as many of its messages in order as are
// visible, then from the next such group. A message over the redrive
// maximum leaves its group for the job, which unblocks the message behind
// it at once.
func (q *queue) takeFIFOLocked(now int64, max int, vis *time.Duration, c *engine.Consumer) ([]taken, *redriveJob, error) {
	x := &q.groups
	if x.ready.len() == 0 || max <= 0 {
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
	got := make([]taken, 0, min(max, x.visible))
	b := q.e.db.NewBatch()
	defer b.Close()
	var buf [256]byte // a state record with a receive's consumer
	for len(got) < max {
		g := x.ready.min()
		if g == nil {
			break
		}
		x.ready.remove(g)
		took := false
		for m := g.head; m != nil && m.status == statusReady && len(got) < max; {
			next := m.next
			if limit > 0 && uint64(m.receiveCount) >= limit {
				if job == nil {
					job = q.redriveJobLocked()
					if job == nil {
						limit = 0
					}
				}
				if job != nil {
					q.takeOutLocked(m)
					job.msgs = append(job.msgs, m)
					took = true
					m = next
					continue
				}
			}
			x.visible--
			g.inflight++
			got = append(got, q.handOutLocked(m, now, v, b, buf[:0], c))
			took = true
			m = next
		}
		x.update(g)
		if !took {
			break // cannot happen for a ready group; never spin
		}
	}
	if b.Empty() || !q.e.keepsReceives() {
		return got, job, nil
	}
	if err := q.e.db.Apply(b, pebble.NoSync); err != nil {
		return got, job, err
	}
	return got, job, nil
}

// takeOutRunLocked takes up to n visible messages out of a FIFO queue's
// index for a move, group by group as a receive would take them, so that
// each group's messages leave in order.
func (q *queue) takeOutRunLocked(n int) []*message {
	x := &q.groups
	ms := make([]*message, 0, min(n, x.visible))
	for len(ms) < n {
		g := x.ready.min()
		if g == nil {
			break
		}
		x.ready.remove(g)
		took := false
		for m := g.head; m != nil && m.status == statusReady && len(ms) < n; {
			next := m.next
			q.takeOutLocked(m)
			ms = append(ms, m)
			took = true
			m = next
		}
		x.update(g)
		if !took {
			break
		}
	}
	return ms
}

// retryAttemptLocked serves a receive that repeats an attempt id: the same
// messages with the same handles, their visibility restarted, provided
// every one of them is still as that receive left it (not deleted, not
// received again, no visibility change). Otherwise it forgets the attempt
// and returns nil.
func (q *queue) retryAttemptLocked(id string, now int64, vis *time.Duration) []taken {
	a := q.attempts.lookup(id, now)
	if a == nil {
		return nil
	}
	for _, t := range a.got {
		m := q.msgs[t.seq]
		if m == nil || m.gen != t.gen || m.touched || m.status == statusDeleting {
			q.attempts.drop(a)
			return nil
		}
	}
	v := q.desc.Settings.VisibilityTimeout
	if vis != nil {
		v = *vis
	}
	v = max0(v)
	b := q.e.db.NewBatch()
	defer b.Close()
	var buf [256]byte // a state record with a receive's consumer
	for _, t := range a.got {
		m := q.msgs[t.seq]
		m.receivedAt = now
		q.hideLocked(m, after(now, v))
		// The repeated attempt is no receive of its own in the story.
		q.putStateLocked(b, m, buf[:0], nil)
	}
	if q.e.keepsReceives() {
		if err := q.e.db.Apply(b, pebble.NoSync); err != nil {
			q.e.log.Error("record receive", "queue", q.desc.Name, "err", err)
		}
	}
	return append([]taken(nil), a.got...)
}

// redelayLocked applies a new queue delay to the messages not yet visible:
// on FIFO queues the delay is retroactive (a message is visible at its send
// time plus the queue's current delay).
func (q *queue) redelayLocked(delay time.Duration) {
	var due []*message
	for _, m := range q.timers.items {
		if m.status == statusDelayed {
			due = append(due, m)
		}
	}
	for _, m := range due {
		m.deadline = after(m.sentAt, max0(delay))
		q.timers.fix(m)
	}
}
