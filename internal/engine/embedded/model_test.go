package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
)

// verifyStore checks that the store holds the records of exactly the
// indexed messages (a body for each, a receive state only for one
// received, nothing of a queue that is gone), and every queue's index,
// each brought to now first as any call would. No call may be under way:
// one in its commit has written records that its messages do not yet
// show in the index.
func verifyStore(e *Engine) error {
	qs := liveQueues(e)
	err := verifyIndexes(qs, true)
	bodies := map[uint64]int{}
	err = errors.Join(err, e.scan([]byte{prefixMsg}, []byte{prefixMsg + 1}, func(it *pebble.Iterator) (bool, error) {
		qid, seq, kind, ok := parseMsgKey(it.Key())
		q := qs[qid]
		if !ok || q == nil {
			return false, fmt.Errorf("message record %x of no queue", it.Key())
		}
		q.mu.Lock()
		m := q.msgs[seq]
		q.mu.Unlock()
		switch {
		case m == nil:
			return false, fmt.Errorf("queue %s: record %x of no indexed message", q.desc.Name, it.Key())
		case kind == kindState && m.receiveCount == 0:
			return false, fmt.Errorf("queue %s: receive state of message %d, never received", q.desc.Name, seq)
		case kind == kindBody:
			bodies[qid]++
		}
		return false, nil
	}))
	for qid, q := range qs {
		q.mu.Lock()
		q.bodies.mu.RLock()
		for seq := range q.bodies.m {
			if q.msgs[seq] == nil {
				err = errors.Join(err, fmt.Errorf("queue %s: record of message %d, not indexed", q.desc.Name, seq))
			}
		}
		bodies[qid] += len(q.bodies.m)
		if !slices.IsSorted(q.bodies.order) {
			err = errors.Join(err, fmt.Errorf("queue %s: record order out of order", q.desc.Name))
		}
		in := 0
		for _, seq := range q.bodies.order {
			if _, ok := q.bodies.m[seq]; ok {
				in++
			}
		}
		if in != len(q.bodies.m) {
			err = errors.Join(err, fmt.Errorf("queue %s: %d of %d records in the record order", q.desc.Name, in, len(q.bodies.m)))
		}
		q.bodies.mu.RUnlock()
		q.mu.Unlock()
	}
	for id, q := range qs {
		q.mu.Lock()
		n := len(q.msgs)
		q.mu.Unlock()
		if bodies[id] != n {
			err = errors.Join(err, fmt.Errorf("queue %s: %d messages indexed, %d stored", q.desc.Name, n, bodies[id]))
		}
	}
	return err
}

// checkIndexes checks every queue's index as it stands; calls may be
// under way.
func checkIndexes(t *testing.T, e *Engine) {
	t.Helper()
	if err := verifyIndexes(liveQueues(e), false); err != nil {
		t.Fatal(err)
	}
}

// liveQueues returns the engine's queues by id.
func liveQueues(e *Engine) map[uint64]*queue {
	e.mu.RLock()
	defer e.mu.RUnlock()
	qs := make(map[uint64]*queue, len(e.queues))
	for _, q := range e.queues {
		qs[q.id] = q
	}
	return qs
}

// verifyIndexes checks the queues' indexes, first brought to now if
// advance is set.
func verifyIndexes(qs map[uint64]*queue, advance bool) error {
	var err error
	for _, q := range qs {
		q.mu.Lock()
		now := q.e.now()
		if advance {
			q.advanceLocked(now)
			q.rearmLocked(now)
		}
		if qerr := q.checkIndex(now); qerr != nil {
			err = errors.Join(err, fmt.Errorf("queue %s: %w", q.desc.Name, qerr))
		}
		q.mu.Unlock()
	}
	return err
}

// checkIndex verifies the index's internal consistency: every message is in
// exactly the structures its status says, the counters match, both heaps
// are ordered and nothing due is left undone.
func (q *queue) checkIndex(now int64) error {
	var ready, inflight, delayed, oldest int
	for seq, m := range q.msgs {
		if m.seq != seq {
			return fmt.Errorf("message %d filed under %d", m.seq, seq)
		}
		inOldest := q.oldest.holds(m)
		if inOldest != q.countsForOldest(m) {
			return fmt.Errorf("message %d (count %d, moved %v, status %d): in the oldest heap %v",
				seq, m.receiveCount, m.moved, m.status, inOldest)
		}
		if inOldest {
			oldest++
		}
		if _, ok := q.movedIn[seq]; ok != m.moved {
			return fmt.Errorf("message %d: moved %v, entry %v", seq, m.moved, ok)
		}
		if !q.ages.holds(m) {
			return fmt.Errorf("message %d not in the age order", seq)
		}
		inTimers := m.timerSlot >= 0 && int(m.timerSlot) < q.timers.len() && q.timers.items[m.timerSlot] == m
		switch m.status {
		case statusReady:
			ready++
			if m.timerSlot != -1 {
				return fmt.Errorf("ready message %d has timer slot %d", seq, m.timerSlot)
			}
		case statusInflight:
			inflight++
			if !inTimers || m.receiveCount == 0 {
				return fmt.Errorf("in-flight message %d: in timers %v, count %d", seq, inTimers, m.receiveCount)
			}
		case statusDelayed:
			delayed++
			if !inTimers || m.receiveCount != 0 {
				return fmt.Errorf("delayed message %d: in timers %v, count %d", seq, inTimers, m.receiveCount)
			}
		case statusDeleting:
			inflight++
			if !q.fifo || m.timerSlot != -1 {
				return fmt.Errorf("deleting message %d: FIFO %v, timer slot %d", seq, q.fifo, m.timerSlot)
			}
			continue
		}
		if m.status != statusReady && m.deadline <= now {
			return fmt.Errorf("message %d due at %d still hidden at %d", seq, m.deadline, now)
		}
	}
	if oldest != q.oldest.len() {
		return fmt.Errorf("oldest heap holds %d, %d count", q.oldest.len(), oldest)
	}
	if err := q.checkHeld(); err != nil {
		return err
	}
	if len(q.movedIn) > len(q.msgs) {
		return fmt.Errorf("%d moved entries for %d messages", len(q.movedIn), len(q.msgs))
	}
	if q.fifo {
		busy := 0
		for _, g := range q.groups.groups {
			if g.inflight > 0 {
				busy++
			}
		}
		if busy != q.groups.busy {
			return fmt.Errorf("%d groups in flight, counted %d", busy, q.groups.busy)
		}
	}
	n := 0
	var prev *message
	for m := q.ready.head; m != nil; m = m.next {
		if m.prev != prev || m.status != statusReady || q.msgs[m.seq] != m {
			return fmt.Errorf("ready list broken at %d", m.seq)
		}
		prev = m
		n++
	}
	if prev != q.ready.tail {
		return errors.New("ready list tail is wrong")
	}
	if q.fifo {
		// The ready list is unused; groups hold every message.
		if err := q.checkGroups(); err != nil {
			return err
		}
		if q.groups.visible != ready {
			return fmt.Errorf("counters: %d visible, %d ready", q.groups.visible, ready)
		}
	} else if n != q.ready.n || n != ready {
		return fmt.Errorf("counters: list %d/%d ready %d", n, q.ready.n, ready)
	}
	if inflight != q.inflight || delayed != q.delayed {
		return fmt.Errorf("counters: in flight %d/%d, delayed %d/%d", inflight, q.inflight, delayed, q.delayed)
	}
	deleting := 0
	for _, m := range q.msgs {
		if m.status == statusDeleting {
			deleting++
		}
	}
	if q.timers.len() != inflight-deleting+delayed || q.ages.len() != len(q.msgs) {
		return fmt.Errorf("heap sizes %d, %d", q.timers.len(), q.ages.len())
	}
	for i, m := range q.timers.items {
		if int(m.timerSlot) != i {
			return fmt.Errorf("message %d thinks it is at %d, is at %d", m.seq, m.timerSlot, i)
		}
		if i > 0 && q.timers.less(m, q.timers.items[(i-1)/2]) {
			return fmt.Errorf("heap order broken at %d", i)
		}
	}
	for _, s := range []*orderedSet{&q.ages, &q.oldest} {
		if err := s.check(); err != nil {
			return err
		}
	}
	if ret := q.desc.Settings.Retention; ret > 0 {
		if m := q.ages.min(); m != nil && after(m.sentAt, ret) <= now {
			return fmt.Errorf("message %d outlived retention", m.seq)
		}
	}
	return nil
}

// checkHeld verifies the held records (held.go): only of messages in the
// index that no receive has had, each the message's stored record, and
// counted in heldBytes.
func (q *queue) checkHeld() error {
	var n int64
	for seq, rec := range q.held {
		m := q.msgs[seq]
		if m == nil || m.receiveCount != 0 || (m.status != statusReady && m.status != statusDelayed) {
			return fmt.Errorf("held record of message %d, which is %+v", seq, m)
		}
		k := makeMsgKey(q.id, seq, kindBody)
		stored, closer, err := q.e.db.Get(k[:])
		if err != nil {
			return fmt.Errorf("held message %d: %w", seq, err)
		}
		same := bytes.Equal(stored, rec)
		closer.Close()
		if !same {
			return fmt.Errorf("held record of message %d differs from the stored one", seq)
		}
		n += int64(len(rec))
	}
	if n != q.heldBytes {
		return fmt.Errorf("held records take %d bytes, counted %d", n, q.heldBytes)
	}
	return nil
}

// checkGroups verifies a FIFO queue's groups: every message in exactly its
// group's list, in seq order; counts; the ready heap holding exactly the
// ready groups, ordered by head.
func (q *queue) checkGroups() error {
	if q.ready.n != 0 {
		return fmt.Errorf("FIFO queue has %d messages in the ready list", q.ready.n)
	}
	total := 0
	for id, g := range q.groups.groups {
		if g.id != id || g.n == 0 {
			return fmt.Errorf("group %q filed under %q with %d messages", g.id, id, g.n)
		}
		n, inflight := 0, 0
		var prev *message
		for m := g.head; m != nil; m = m.next {
			if m.prev != prev || m.grp != g || q.msgs[m.seq] != m || (prev != nil && prev.seq >= m.seq) {
				return fmt.Errorf("group %q list broken at %d", id, m.seq)
			}
			if m.status == statusInflight || m.status == statusDeleting {
				inflight++
			}
			prev = m
			n++
		}
		if prev != g.tail || n != g.n || inflight != g.inflight {
			return fmt.Errorf("group %q: %d/%d messages, %d/%d in flight", id, n, g.n, inflight, g.inflight)
		}
		if inHeap := g.slot >= 0 && g.slot < q.groups.ready.len() && q.groups.ready.items[g.slot] == g; inHeap != g.isReady() {
			return fmt.Errorf("group %q ready %v, in the ready heap %v", id, g.isReady(), inHeap)
		}
		total += n
	}
	if total != len(q.msgs) {
		return fmt.Errorf("groups hold %d messages, the index %d", total, len(q.msgs))
	}
	for i, g := range q.groups.ready.items {
		if g.slot != i || (i > 0 && q.groups.ready.less(i, (i-1)/2)) {
			return fmt.Errorf("ready heap broken at %d", i)
		}
	}
	return nil
}

// modelMsg is the reference model's view of one message.
type modelMsg struct {
	sentAt, deadline, receivedAt time.Time
	received                     bool
	handle                       string // latest
}

// TestModel drives the engine with random operations on a fake clock and
// compares every outcome and the exact counts with a simple model.
func TestModel(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			opts := Options{InMemory: true}
			if seed%2 == 1 {
				opts = Options{Dir: t.TempDir()}
			}
			runModel(t, seed, opts)
		})
	}
}

func runModel(t *testing.T, seed uint64, opts Options) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, seed))
	clk := clock.NewFake(enginetest.Start)
	opts.Clock = clk
	e := openTest(t, opts)
	s := settings()
	s.Retention = 10 * time.Minute
	mustCreate(t, e, engine.Queue{Name: "q", Settings: s})
	q, _ := e.lookup(acct, "q")

	msgs := map[string]*modelMsg{}
	var handles []string // every handle ever issued
	retention := s.Retention
	var lastPurge time.Time
	durations := []time.Duration{0, time.Second, 5 * time.Second, 30 * time.Second, 2 * time.Minute}

	expire := func(now time.Time) {
		for id, m := range msgs {
			if !now.Before(m.sentAt.Add(retention)) {
				delete(msgs, id)
			}
		}
	}
	for step := range 3000 {
		now := clk.Now()
		var what string
		switch op := rng.IntN(100); {
		case op < 25:
			n := 1 + rng.IntN(4)
			batch := make([]engine.NewMessage, n)
			for i := range batch {
				if rng.IntN(3) == 0 {
					d := durations[rng.IntN(len(durations))]
					batch[i].Delay = &d
				}
			}
			what = fmt.Sprintf("send %d", n)
			for i, id := range mustSend(t, e, "q", batch...) {
				d := s.Delay
				if batch[i].Delay != nil {
					d = *batch[i].Delay
				}
				msgs[id] = &modelMsg{sentAt: now, deadline: now.Add(d)}
			}
		case op < 50:
			max := 1 + rng.IntN(10)
			vis := durations[rng.IntN(len(durations))]
			what = fmt.Sprintf("receive %d for %v", max, vis)
			visible := 0
			for _, m := range msgs {
				if !m.deadline.After(now) {
					visible++
				}
			}
			got := mustReceive(t, e, "q", engine.ReceiveRequest{Max: max, Visibility: &vis})
			if len(got) != min(max, visible) {
				t.Fatalf("step %d %s: got %d of %d visible", step, what, len(got), visible)
			}
			for _, g := range got {
				m := msgs[g.MessageID]
				if m == nil || m.deadline.After(now) {
					t.Fatalf("step %d %s: handed out a message that is not visible", step, what)
				}
				m.received, m.receivedAt, m.deadline, m.handle = true, now, now.Add(vis), g.ReceiptHandle
				handles = append(handles, g.ReceiptHandle)
			}
		case op < 62 && len(handles) > 0:
			h := handles[rng.IntN(len(handles))]
			what = "delete"
			errs, err := e.Delete(ctx, acct, "q", []string{h})
			if err != nil || errs[0] != nil {
				t.Fatalf("step %d delete: %v %v", step, errs, err)
			}
			for id, m := range msgs {
				if m.handle == h {
					delete(msgs, id)
				}
			}
		case op < 75 && len(handles) > 0:
			h := handles[rng.IntN(len(handles))]
			d := durations[rng.IntN(len(durations))]
			if rng.IntN(10) == 0 {
				d = engine.MaxVisibility
			}
			what = fmt.Sprintf("change visibility to %v", d)
			var want error = engine.ErrMessageNotInflight
			for _, m := range msgs {
				if m.handle != h {
					continue
				}
				if now.Add(d).After(m.receivedAt.Add(engine.MaxVisibility)) {
					want = engine.ErrVisibilityLimit
				} else {
					want = nil
					m.deadline = now.Add(d)
				}
			}
			errs, err := e.ChangeVisibility(ctx, acct, "q", []engine.VisibilityChange{{ReceiptHandle: h, Timeout: d}})
			if err != nil || !errors.Is(errs[0], want) || (want == nil) != (errs[0] == nil) {
				t.Fatalf("step %d %s: %v %v, want %v", step, what, errs, err, want)
			}
		case op < 77:
			what = "purge"
			err := e.Purge(ctx, acct, "q")
			if !lastPurge.IsZero() && now.Sub(lastPurge) < engine.PurgeInterval {
				if !errors.Is(err, engine.ErrPurgeInProgress) {
					t.Fatalf("step %d purge: %v", step, err)
				}
				break
			}
			if err != nil {
				t.Fatalf("step %d purge: %v", step, err)
			}
			lastPurge = now
			clear(msgs)
		case op < 79:
			retention = []time.Duration{time.Minute, 5 * time.Minute, 10 * time.Minute}[rng.IntN(3)]
			what = fmt.Sprintf("retention %v", retention)
			if err := e.UpdateQueue(ctx, acct, "q", func(q *engine.Queue) error {
				q.Settings.Retention = retention
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			expire(now)
		default:
			d := time.Duration(rng.IntN(40)) * time.Second / 2
			what = fmt.Sprintf("advance %v", d)
			clk.Advance(d)
			expire(clk.Now())
		}

		now = clk.Now()
		var want engine.Stats
		for _, m := range msgs {
			switch {
			case !m.deadline.After(now):
				want.Visible++
			case m.received:
				want.NotVisible++
			default:
				want.Delayed++
			}
		}
		if got := mustStats(t, e, "q"); got != want {
			t.Fatalf("step %d after %s: stats %+v, want %+v", step, what, got, want)
		}
		q.mu.Lock()
		err := q.checkIndex(now.UnixNano())
		q.mu.Unlock()
		if err != nil {
			t.Fatalf("step %d after %s: %v", step, what, err)
		}
	}
}
