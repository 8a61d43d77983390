package embedded

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/uuid"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
)

// Move tasks (the dead-letter redrive API).
//
// A task is a record under its source queue (key 0x04 qid seq, seq drawn
// from the queue's seq space, so records sort oldest first) and a runner
// goroutine. Each step of the runner takes up to moveBatch visible messages
// out of the source index under the source lock, lets go, allocates seqs in
// each destination under that destination's lock, and writes one synced
// batch that deletes the messages from the source, writes each as a new
// message in its destination and rewrites the task record with the new
// Moved count: Moved is exact and no message is lost or duplicated across a
// crash. Purges and deletes racing a step are covered by the same reasoning
// as dead-letter moves (redrive.go); a step never holds two queue locks.
//
// FIFO: a step takes messages out of a FIFO source group by group, as a
// receive would (a group with a message in flight waits), so each group's
// messages leave in order; into a FIFO destination each becomes a new
// message at the back of its group (new id, seq and send time; group and
// deduplication id kept: the dead-letter queue's, which after a redrive
// is the original message id). The destination's deduplication window is
// neither consulted nor fed: moved messages are never dropped as
// duplicates, and a producer's later send is not swallowed by one.
//
// Restart: Open reloads every task record. A RUNNING task resumes where its
// last batch left it (ToMove, Moved and Started kept; its rate counts afresh
// from the restart, and MoveTaskMaxDuration still from Started); a
// CANCELLING one becomes CANCELLED, its runner having stopped between
// batches.

const (
	// moveBatch is the most messages one step moves (one synced batch).
	moveBatch = 10
	// keepTasks is how many tasks a source keeps at least; older ended ones
	// are pruned when a new task starts.
	keepTasks = 10
)

// task is a move task and its runner's wake-up. Only the runner changes
// Moved; Status changes under mu, and every write of the record is entered
// into the store's order under mu, so the record never goes back.
type task struct {
	seq  uint64
	src  *queue
	kick chan struct{} // cancel or source delete: stop waiting for the rate
	// byRef: the task moves only the messages its Refs name, whose seqs
	// are refs, in seq order (the queue's); refAt is how far the runner
	// has gone through them. Only the runner reads refAt, and a restart
	// starts it again at 0: what has moved is no longer there.
	byRef bool
	refs  []uint64
	refAt int

	mu sync.Mutex
	t  engine.MoveTask
}

func newTask(seq uint64, src *queue, t engine.MoveTask) *task {
	tk := &task{seq: seq, src: src, kick: make(chan struct{}, 1), t: t}
	if len(t.Refs) > 0 {
		tk.byRef = true
		tk.refs = refSeqs(t.Refs)
		slices.Sort(tk.refs)
	}
	return tk
}

func (tk *task) wake() {
	select {
	case tk.kick <- struct{}{}:
	default:
	}
}

func (tk *task) snapshot() engine.MoveTask {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	t := tk.t
	t.Refs = slices.Clone(t.Refs)
	return t
}

// StartMoveTask implements engine.Backend. The task record is durable
// before it returns; the runner starts then.
func (e *Engine) StartMoveTask(ctx context.Context, t engine.MoveTask) (engine.MoveTask, error) {
	id, err := uuid.NewRandom()
	if err != nil {
		return engine.MoveTask{}, fmt.Errorf("embedded: move task id: %w", err)
	}
	var started *task
	err = e.withQueue(ctx, t.SourceAccount, t.SourceName, opWrite, func(q *queue) (commit, error) {
		for _, o := range q.tasks {
			if o.snapshot().Status.Active() {
				return commit{}, engine.ErrMoveTaskActive
			}
		}
		now := e.now()
		q.advanceLocked(now)
		q.rearmLocked(now)
		t.ID = id.String()
		if t.SourceARN == "" {
			t.SourceARN = q.desc.ARN
		}
		t.MaxPerSecond = max(t.MaxPerSecond, 0)
		t.Status = engine.MoveTaskRunning
		t.ToMove, t.Moved = int64(q.visibleLocked()), 0
		if len(t.Refs) > 0 {
			t.Refs = slices.Clone(t.Refs)
			t.ToMove = int64(len(t.Refs))
		}
		t.Started = fromNanos(now)
		t.FailureReason = ""
		if err := e.admitTask(t.SourceAccount); err != nil {
			return commit{}, err
		}
		tk := newTask(q.nextSeq, q, t)
		q.nextSeq++
		b := e.db.NewBatch()
		_ = b.Set(taskKey(q.id, tk.seq), encodeTask(nil, &t), nil)
		kept := q.pruneTasksLocked(b)
		c, err := e.order(b)
		if err != nil {
			e.releaseTask(t.SourceAccount)
			e.runners.Done()
			return c, err
		}
		q.tasks = append(kept, tk)
		started = tk
		return c, nil
	})
	// Run it even if the sync failed: it is in the store's order and
	// counted active, and a failed sync ends the process anyway.
	if started != nil {
		go e.runTask(started)
	}
	if err != nil {
		return engine.MoveTask{}, err
	}
	return t, nil
}

// admitTask counts a new active task of acct and registers its runner.
func (e *Engine) admitTask(acct string) error {
	e.taskMu.Lock()
	defer e.taskMu.Unlock()
	if e.stopping {
		return engine.ErrClosed
	}
	if e.active[acct] >= e.maxActive {
		return engine.ErrMoveTaskLimit
	}
	e.active[acct]++
	e.runners.Add(1)
	return nil
}

func (e *Engine) releaseTask(acct string) {
	e.taskMu.Lock()
	defer e.taskMu.Unlock()
	if e.active[acct]--; e.active[acct] <= 0 {
		delete(e.active, acct)
	}
}

// pruneTasksLocked returns q's tasks less the oldest ended ones beyond
// keepTasks (counting a task about to be added), deleting their records in b.
func (q *queue) pruneTasksLocked(b *pebble.Batch) []*task {
	ts := q.tasks
	for len(ts)+1 > keepTasks {
		i := 0
		for i < len(ts) && ts[i].snapshot().Status.Active() {
			i++
		}
		if i == len(ts) {
			break
		}
		_ = b.Delete(taskKey(q.id, ts[i].seq), nil)
		ts = append(ts[:i:i], ts[i+1:]...)
	}
	return ts
}

// ListMoveTasks implements engine.Backend.
func (e *Engine) ListMoveTasks(ctx context.Context, account, name string) ([]engine.MoveTask, error) {
	var out []engine.MoveTask
	err := e.withQueue(ctx, account, name, opRead, func(q *queue) (commit, error) {
		out = make([]engine.MoveTask, 0, len(q.tasks))
		for i := len(q.tasks) - 1; i >= 0; i-- {
			out = append(out, q.tasks[i].snapshot())
		}
		return commit{}, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CancelMoveTask implements engine.Backend. The task is CANCELLING, durably,
// when it returns; its runner finishes the batch it may be writing and ends
// it CANCELLED, which freezes Moved.
func (e *Engine) CancelMoveTask(ctx context.Context, account, name, id string) (engine.MoveTask, error) {
	var snap engine.MoveTask
	err := e.withQueue(ctx, account, name, opWrite, func(q *queue) (commit, error) {
		var tk *task
		for _, o := range q.tasks {
			if o.t.ID == id { // ID never changes
				tk = o
				break
			}
		}
		if tk == nil {
			return commit{}, engine.ErrMoveTaskNotFound
		}
		tk.mu.Lock()
		defer tk.mu.Unlock()
		if tk.t.Status != engine.MoveTaskRunning {
			snap = tk.t
			return commit{}, engine.ErrMoveTaskNotRunning
		}
		tk.t.Status = engine.MoveTaskCancelling
		b := e.db.NewBatch()
		_ = b.Set(taskKey(q.id, tk.seq), encodeTask(nil, &tk.t), nil)
		c, err := e.order(b)
		if err != nil {
			tk.t.Status = engine.MoveTaskRunning
			return c, err
		}
		snap = tk.t
		tk.wake()
		return c, nil
	})
	if errors.Is(err, engine.ErrMoveTaskNotRunning) {
		return snap, err
	}
	if err != nil {
		return engine.MoveTask{}, err
	}
	return snap, nil
}

// runTask moves tk's messages until the task ends or the engine closes.
// With a rate, time is cut into one-second slots from the runner's start
// and each slot moves at most MaxPerSecond messages, so N seconds after
// the start at most (N+1)×MaxPerSecond have moved; without one, batches
// follow each other, yielding in between so other calls are served.
func (e *Engine) runTask(tk *task) {
	defer e.runners.Done()
	rate := tk.t.MaxPerSecond // set before the runner starts, never changed
	const second = int64(time.Second)
	slot := e.now()
	used := 0
	// holds keep a controlled clock's step from moving on before the step
	// this wake-up is for has moved its slot's messages.
	var holds clock.Holds
	defer holds.Release()
	for {
		select {
		case <-e.quit:
			return
		default:
		}
		limit := moveBatch
		var until int64 // the end of a full slot: wait for it after the step
		if rate > 0 {
			now := e.now()
			if d := now - slot; d >= second {
				slot += d - d%second
				used = 0
			} else if d < 0 {
				slot = now // the wall clock went back
			}
			if used >= rate {
				limit, until = 0, slot+second
			} else {
				limit = min(limit, rate-used)
			}
		}
		if e.writable() != nil {
			// A step is a durable write: wait for the disk to have room
			// (the task stays RUNNING, as across a restart).
			holds.Release()
			select {
			case <-e.space.resumedChan():
			case <-e.quit:
				return
			}
			continue
		}
		n, done := e.moveStep(tk, limit)
		if done {
			return
		}
		used += n
		switch {
		case until > 0:
			if !e.waitTask(tk, until, &holds) {
				return
			}
		case rate == 0:
			runtime.Gosched()
		}
	}
}

// waitTask waits until the engine's clock reads until (unix nanoseconds),
// or until the task is kicked; it reports false if the engine is closing.
// The wait is measured from now, not from when the slot was found full:
// the step in between takes time, and the clock may have moved meanwhile.
// It releases holds once its timer is armed and keeps there the hold of
// the clock's step that woke it.
func (e *Engine) waitTask(tk *task, until int64, holds *clock.Holds) bool {
	d := time.Duration(until - e.now())
	if d <= 0 {
		return true
	}
	due := make(chan func(), 1)
	t := e.clock.AfterFunc(d, func() { due <- clock.Hold(e.clock) })
	holds.Release()
	select {
	case rel := <-due:
		holds.Add(rel)
	case <-tk.kick:
		if !t.Stop() {
			holds.Add(<-due)
		}
	case <-e.quit:
		if !t.Stop() {
			(<-due)()
		}
		return false
	}
	return true
}

// moveStep moves up to limit messages; a limit of 0 only checks whether the
// task must end. It reports how many moved and whether the task has ended.
func (e *Engine) moveStep(tk *task, limit int) (int, bool) {
	if e.enter() != nil {
		return 0, true
	}
	defer e.leave()
	src := tk.src
	src.mu.Lock()
	if src.deleted {
		src.mu.Unlock()
		// The record went with the queue: do not write it again.
		e.endTask(tk, engine.MoveTaskFailed, engine.MoveTaskFailureNonExistentQueue, false)
		return 0, true
	}
	now := e.now()
	src.advanceLocked(now)
	src.rearmLocked(now)
	tk.mu.Lock()
	st, left, started := tk.t.Status, tk.t.ToMove-tk.t.Moved, tk.t.Started
	tk.mu.Unlock()
	var end engine.MoveTaskStatus
	var reason engine.MoveTaskFailure
	switch {
	case st == engine.MoveTaskCancelling:
		end = engine.MoveTaskCancelled
	case st != engine.MoveTaskRunning:
		src.mu.Unlock()
		return 0, true
	case now-started.UnixNano() >= int64(engine.MoveTaskMaxDuration):
		end, reason = engine.MoveTaskFailed, engine.MoveTaskFailureTimedOut
	case left <= 0 || (tk.byRef && tk.refAt == len(tk.refs)) || (!tk.byRef && !src.takeableLocked()):
		end = engine.MoveTaskCompleted
	}
	if end != "" {
		src.mu.Unlock()
		e.endTask(tk, end, reason, true)
		return 0, true
	}
	if limit <= 0 {
		src.mu.Unlock()
		return 0, false
	}
	var ms []*message
	switch {
	case tk.byRef:
		ms = src.takeRefsLocked(tk, limit)
	case src.fifo:
		ms = src.takeOutRunLocked(int(min(int64(limit), left)))
	default:
		n := min(int64(limit), left, int64(src.ready.n))
		ms = make([]*message, 0, n)
		for range n {
			m := src.ready.popFront()
			src.takeOutLocked(m)
			ms = append(ms, m)
		}
	}
	src.mu.Unlock()
	return e.moveOut(tk, ms)
}

// takeRefsLocked takes out of q's index, for a move, up to n of the
// messages tk's refs name that are visible, from where the runner stands
// in them on, in seq order. A ref it passes is done with: a message in
// flight, delayed or gone when the task reaches it stays where it is.
func (q *queue) takeRefsLocked(tk *task, n int) []*message {
	var ms []*message
	for tk.refAt < len(tk.refs) && len(ms) < n {
		m := q.msgs[tk.refs[tk.refAt]]
		tk.refAt++
		if m == nil || m.status != statusReady {
			continue
		}
		if !q.fifo {
			q.ready.remove(m)
		}
		q.takeOutLocked(m)
		if q.fifo {
			q.groups.update(m.grp)
		}
		ms = append(ms, m)
	}
	return ms
}

// moveDest is one destination of a step: its seqs and new index entries.
type moveDest struct {
	q           *queue
	first, next uint64
	count       uint64
	delay       time.Duration
	msgs        []message
	pb          *pendingBatch // FIFO destination: the reserved place
	groups      []string      // FIFO destination: group of each of msgs
	account     string        // the destination's, for Options.MovedByTask
	name        string
	arn         string // the destination's, for the messages' history
}

// moveOut writes ms, taken out of the source index, as new messages in
// their destinations. Whatever cannot be moved goes back to the source.
func (e *Engine) moveOut(tk *task, ms []*message) (int, bool) {
	src := tk.src
	var dests []*moveDest
	fail := func(reason engine.MoveTaskFailure) (int, bool) {
		for _, d := range dests {
			if d.pb != nil {
				d.q.mu.Lock()
				d.q.failLocked(d.pb, e.now())
				d.q.mu.Unlock()
			}
		}
		e.restore(src, ms)
		e.endTask(tk, engine.MoveTaskFailed, reason, true)
		return 0, true
	}
	destARN := tk.t.DestinationARN // never changes
	type item struct {
		m  *message
		sm storedMessage
		d  *moveDest
	}
	items := make([]item, 0, len(ms))
	for _, m := range ms {
		v, err := src.body(m.seq)
		if err != nil {
			e.log.Error("move task: read message", "task", tk.t.ID, "err", err)
			return fail(engine.MoveTaskFailureStore)
		}
		if v == nil {
			continue // purged or deleted with the source since it was taken
		}
		sm, err := decodeStoredMessage(v)
		if err != nil {
			e.log.Error("move task: decode message", "task", tk.t.ID, "seq", m.seq, "err", err)
			return fail(engine.MoveTaskFailureStore)
		}
		arn := destARN
		if arn == "" {
			arn = sm.dlqSource
		}
		dq := e.lookupARN(arn)
		if dq == nil {
			return fail(engine.MoveTaskFailureNonExistentQueue)
		}
		var d *moveDest
		for _, o := range dests {
			if o.q == dq {
				d = o
				break
			}
		}
		if d == nil {
			d = &moveDest{q: dq}
			dests = append(dests, d)
		}
		d.count++
		items = append(items, item{m: m, sm: sm, d: d})
	}
	if len(items) == 0 {
		return 0, false
	}
	for _, d := range dests {
		d.q.mu.Lock()
		if d.q.deleted {
			d.q.mu.Unlock()
			return fail(engine.MoveTaskFailureNonExistentQueue)
		}
		d.first, d.pb = d.q.reserveLocked(d.count)
		d.next = d.first
		d.delay = d.q.desc.Settings.Delay
		d.account, d.name, d.arn = d.q.desc.Account, d.q.desc.Name, d.q.desc.ARN
		d.q.mu.Unlock()
		d.msgs = make([]message, 0, d.count)
	}

	now := e.now()
	b := e.db.NewBatch()
	var buf []byte
	// The moved messages' records and seqs, by item.
	recs := make([][]byte, 0, len(items))
	seqs := make([]uint64, 0, len(items))
	for _, it := range items {
		id, err := uuid.NewRandom()
		if err != nil {
			b.Close()
			e.log.Error("move task: message id", "task", tk.t.ID, "err", err)
			return fail(engine.MoveTaskFailureStore)
		}
		d := it.d
		nm := message{seq: d.next, sentAt: now, deadline: after(now, max0(d.delay)), timerSlot: -1, ageSlot: -1}
		d.next++
		if d.pb != nil {
			d.groups = append(d.groups, it.sm.msg.MessageGroupID)
		}
		start := len(buf)
		buf = encodeMessage(buf, id.String(), now, nm.deadline, &it.sm.msg, "")
		recs = append(recs, buf[start:len(buf):len(buf)])
		seqs = append(seqs, nm.seq)
		if it.m.history || it.m.pending {
			hv, err := e.movedHistory(src, it.m, &engine.HistoryEvent{
				Kind: engine.HistoryMove, At: fromNanos(now), ReceiveCount: int(it.m.receiveCount),
				From: tk.t.SourceARN, To: d.arn, Cause: engine.MoveByTask, PreviousID: it.sm.id,
			})
			if err != nil {
				b.Close()
				e.log.Error("move task: read history", "task", tk.t.ID, "err", err)
				return fail(engine.MoveTaskFailureStore)
			}
			if hv != nil {
				k := makeMsgKey(d.q.id, nm.seq, kindHistory)
				_ = b.Set(k[:], hv, nil)
				nm.history = true
			}
		}
		d.msgs = append(d.msgs, nm)
	}
	// The records move once nothing but the commit can fail: in memory
	// they move at once (bodies.go), and a failed move must leave them in
	// the source.
	for i, it := range items {
		_ = it.d.q.putBody(b, seqs[i], recs[i])
		src.deleteMsgKeys(b, it.m)
	}
	tk.mu.Lock()
	tk.t.Moved += int64(len(items))
	_ = b.Set(taskKey(src.id, tk.seq), encodeTask(nil, &tk.t), nil)
	if err := e.applyOrdered(b); err != nil {
		tk.t.Moved -= int64(len(items))
		tk.mu.Unlock()
		b.Close()
		e.log.Error("move task: write", "task", tk.t.ID, "err", err)
		return fail(engine.MoveTaskFailureStore)
	}
	tk.mu.Unlock()
	if err := e.awaitDurable(b); err != nil {
		// In the store's order already; a failed sync ends the process.
		e.log.Error("move task: sync", "task", tk.t.ID, "err", err)
	}

	for _, d := range dests {
		e.deliverMoved(d)
	}
	if fn := e.onMoved.Load(); fn != nil {
		for i := range items {
			(*fn)(items[i].d.account, items[i].d.name, &items[i].sm.msg)
		}
	}
	return len(items), false
}

// deliverMoved enters a step's durable messages into a destination's index,
// or removes their records if the destination was purged or deleted since
// its seqs were allocated (as Send does).
func (e *Engine) deliverMoved(d *moveDest) {
	q := d.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if d.pb != nil {
		q.completeLocked(d.pb, d.msgs, d.groups, e.now())
		return
	}
	if q.deleted || d.first < q.purgeFloor {
		cb := e.db.NewBatch()
		for i := range d.msgs {
			q.dropBody(cb, d.msgs[i].seq, false)
			if d.msgs[i].history {
				k := makeMsgKey(q.id, d.msgs[i].seq, kindHistory)
				_ = cb.Delete(k[:], nil)
			}
		}
		if err := e.db.Apply(cb, pebble.NoSync); err != nil {
			e.log.Error("drop messages moved to a purged queue", "queue", q.desc.Name, "err", err)
		}
		cb.Close()
		return
	}
	now := e.now()
	q.advanceLocked(now)
	for i := range d.msgs {
		q.insertLocked(&d.msgs[i], "", now)
	}
	q.serveLocked(now)
	q.rearmLocked(now)
}

// endTask gives tk its final status and releases its account slot. write
// is false when the source queue, and the record with it, is gone.
//
// The end is shown only once durable: tk.mu is held through the sync, so
// that neither a listing nor a cancel sees a status a crash could take
// back. That is one sync, once per task.
func (e *Engine) endTask(tk *task, st engine.MoveTaskStatus, reason engine.MoveTaskFailure, write bool) {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	if st == engine.MoveTaskCompleted && tk.t.Status == engine.MoveTaskCancelling {
		st = engine.MoveTaskCancelled
	}
	end := tk.t
	end.Status = st
	if st == engine.MoveTaskFailed {
		end.FailureReason = reason
	}
	if write {
		b := e.db.NewBatch()
		_ = b.Set(taskKey(tk.src.id, tk.seq), encodeTask(nil, &end), nil)
		if err := e.applyOrdered(b); err != nil {
			e.log.Error("move task: write", "task", end.ID, "err", err)
			b.Close()
		} else if err := e.awaitDurable(b); err != nil {
			e.log.Error("move task: sync", "task", end.ID, "err", err)
		}
	}
	tk.t = end
	// Under mu, so that a task is never seen ended yet still counted.
	e.releaseTask(end.SourceAccount)
}

// loadTasks rebuilds every queue's task list from the store (cleanup
// collects the records of deleted queues and the CANCELLING tasks made
// CANCELLED). Runners start in resumeTasks, once the engine is open.
func (e *Engine) loadTasks(byID map[uint64]*queue, cleanup *pebble.Batch) error {
	return e.scan([]byte{prefixTask}, []byte{prefixTask + 1}, func(it *pebble.Iterator) (bool, error) {
		qid, seq, ok := parseTaskKey(it.Key())
		if !ok {
			return false, fmt.Errorf("embedded: task key %x: %w", it.Key(), errCorrupt)
		}
		q := byID[qid]
		if q == nil {
			// Written by a step or cancel that raced the queue's delete.
			lo, hi := queueTaskSpan(qid)
			_ = cleanup.DeleteRange(lo, hi, nil)
			it.SeekGE(hi)
			return true, nil
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return false, fmt.Errorf("embedded: read task: %w", err)
		}
		t, err := decodeTask(v)
		if err != nil {
			return false, fmt.Errorf("embedded: task key %x: %w", it.Key(), err)
		}
		if t.Status == engine.MoveTaskCancelling {
			t.Status = engine.MoveTaskCancelled
			_ = cleanup.Set(it.Key(), encodeTask(nil, &t), nil)
		}
		if t.Status.Active() {
			e.active[t.SourceAccount]++
		}
		q.tasks = append(q.tasks, newTask(seq, q, t))
		return false, nil
	})
}

// loadedRunning lists the tasks the store holds RUNNING, at Open, before
// any call can start another.
func (e *Engine) loadedRunning() []*task {
	e.mu.RLock()
	qs := slices.Collect(maps.Values(e.queues))
	e.mu.RUnlock()
	var run []*task
	for _, q := range qs {
		q.mu.Lock()
		for _, tk := range q.tasks {
			if tk.snapshot().Status == engine.MoveTaskRunning {
				run = append(run, tk)
			}
		}
		q.mu.Unlock()
	}
	return run
}

// resumeTasks starts a runner for each task Open found RUNNING, once: at
// Open, or with Options.HoldMoveTasks at the first OnMovedByTask (a task
// cancelled meanwhile is CANCELLING, and its runner ends it). Runners are
// registered under taskMu, where Close marks the engine stopping, so none
// starts after Close began waiting for them; a task not started stays
// RUNNING in the store and resumes at the next Open.
func (e *Engine) resumeTasks() {
	e.taskMu.Lock()
	run := e.held
	e.held = nil
	if e.stopping {
		run = nil
	}
	e.runners.Add(len(run))
	e.taskMu.Unlock()
	for _, tk := range run {
		go e.runTask(tk)
	}
}

// OnMovedByTask implements engine.Store. With Options.HoldMoveTasks the
// tasks resumed at Open start now, after fn is in place, so that it is told
// of every move.
func (e *Engine) OnMovedByTask(fn func(account, queue string, m *engine.NewMessage)) {
	if fn == nil {
		e.onMoved.Store(nil)
	} else {
		e.onMoved.Store(&fn)
	}
	e.resumeTasks()
}
