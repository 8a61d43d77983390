package clock

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Controlled is the clock of a Ferry whose time an operator moves: it runs
// as the wall clock plus an offset, and can be frozen, moved forward to an
// instant, or by a duration, and resumed.
//
// Running, it reads the wall clock plus the offset and keeps one real timer
// armed for its earliest deadline. Frozen, it reads a fixed instant and
// fires nothing. Resume goes on from the frozen instant: the offset
// absorbs the wall time that passed while frozen, so that time never jumps.
//
// Advance and Set step through the due timers in deadline order, each
// step at the instant of its earliest deadline: a periodic job that arms
// its next run from its callback (metric sampling, alarm evaluation, a
// queue's expiries, a move task's pace, SNS retries) runs at each of its
// instants, as over the same span of real time. A step waits until the
// work its timers started is done — the callbacks, and whatever they hand
// to other goroutines under a hold (Hold, Holds, Sleep) — before the next
// step, so that the work of one instant sees the state the previous left.
//
// Time never goes back: sent timestamps, receipt handles, the store's
// order of messages and SQS itself assume it does not. Set to an instant
// before now fails with ErrBackwards.
type Controlled struct {
	wall func() time.Time

	// stepping serialises Advance and Set.
	stepping sync.Mutex

	mu     sync.Mutex
	frozen bool
	at     time.Time     // now while frozen or stepping
	offset time.Duration // now - wall while running
	timers timerHeap
	seq    uint64
	real   *time.Timer // armed for timers[0] while running
	// holds counts the work started by fired timers that a step waits
	// for; idle is closed, and replaced, when it drops to zero.
	holds int
	idle  chan struct{}
	// moving is set while Advance or Set steps.
	moving bool
	// stalls counts steps that went on without their holds (HoldLimit).
	stalls int
	steps  uint64
}

// Step bounds how far past its deadline a step may fire a timer: the
// timers due within Step of the earliest fire together. A real timer
// fires later than that on a loaded machine, so the states a step leaves
// are states real time could leave; and a queue of a million messages
// sent over ten seconds expires in at most ten thousand steps, not a
// million.
const Step = time.Millisecond

// HoldLimit bounds how long a step waits, in real time, for the work its
// timers started. Holds are released when the work ends, so a step only
// reaches it when a goroutine stopped without releasing; Advance then goes
// on rather than hanging, and counts the stall.
const HoldLimit = 30 * time.Second

// ErrBackwards refuses a move of the clock to an instant before now.
var ErrBackwards = errors.New("the clock never goes back")

// NewControlled returns a running controlled clock that reads the wall
// clock (offset zero).
func NewControlled() *Controlled {
	return &Controlled{wall: time.Now, idle: make(chan struct{})}
}

// State is what a controlled clock reads and how it runs.
type State struct {
	Now    time.Time
	Frozen bool
	// Offset is Now minus the wall clock.
	Offset time.Duration
}

// State reports the clock's time, whether it is frozen and its offset.
func (c *Controlled) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stateLocked()
}

func (c *Controlled) stateLocked() State {
	wall := c.wall()
	now := c.nowLocked(wall)
	return State{Now: now, Frozen: c.frozen, Offset: now.Sub(wall)}
}

// Offset is how far the clock reads ahead of the wall clock.
func (c *Controlled) Offset() time.Duration { return c.State().Offset }

// Wall is the clock of waits that pace I/O rather than broker time (HTTP
// timeouts, batching windows, signature skew): the wall clock.
func (c *Controlled) Wall() Clock { return Real{} }

// Now returns the controlled time.
func (c *Controlled) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked(c.wall())
}

func (c *Controlled) nowLocked(wall time.Time) time.Time {
	if c.frozen {
		return c.at
	}
	// Round(0) strips the monotonic reading: an instant moved by an
	// offset must compare by its wall reading.
	return wall.Add(c.offset).Round(0)
}

// AfterFunc calls f in its own goroutine once the clock has moved d.
func (c *Controlled) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &ctlTimer{c: c, at: c.nowLocked(c.wall()).Add(d), seq: c.seq, f: f, index: -1}
	if d <= 0 {
		if c.moving {
			// Due now, within a move: part of the step under way.
			c.holds++
			go func() {
				defer c.release()
				f()
			}()
		} else {
			go f()
		}
		return t
	}
	heap.Push(&c.timers, t)
	if t.index == 0 {
		c.armLocked()
	}
	return t
}

type ctlTimer struct {
	c     *Controlled
	at    time.Time
	seq   uint64
	f     func()
	index int // in c.timers; -1 once fired or stopped
}

// Stop cancels the timer; false if it fired or was stopped.
func (t *ctlTimer) Stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.index < 0 {
		return false
	}
	first := t.index == 0
	heap.Remove(&c.timers, t.index)
	if first {
		c.armLocked()
	}
	return true
}

// armLocked sets the real timer for the earliest deadline while running.
func (c *Controlled) armLocked() {
	if c.real != nil {
		c.real.Stop()
		c.real = nil
	}
	if c.frozen || len(c.timers) == 0 {
		return
	}
	d := c.timers[0].at.Sub(c.nowLocked(c.wall()))
	c.real = time.AfterFunc(max(d, 0), c.fireDue)
}

// fireDue runs the timers that the running clock has reached.
func (c *Controlled) fireDue() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen {
		return
	}
	now := c.nowLocked(c.wall())
	for len(c.timers) > 0 && !c.timers[0].at.After(now) {
		t := heap.Pop(&c.timers).(*ctlTimer)
		go t.f()
	}
	c.armLocked()
}

// Freeze stops the clock at its current instant. It waits for a move
// under way, which would otherwise let the clock run on after it.
func (c *Controlled) Freeze() State {
	c.stepping.Lock()
	defer c.stepping.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.freezeLocked()
	return c.stateLocked()
}

func (c *Controlled) freezeLocked() {
	if !c.frozen {
		c.at = c.nowLocked(c.wall())
		c.frozen = true
		c.armLocked()
	}
}

// Resume lets a frozen clock run on from where it stands, once a move
// under way is over.
func (c *Controlled) Resume() State {
	c.stepping.Lock()
	defer c.stepping.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resumeLocked()
	return c.stateLocked()
}

func (c *Controlled) resumeLocked() {
	if c.frozen {
		c.offset = c.at.Sub(c.wall())
		c.frozen = false
		c.armLocked()
	}
}

// Advance moves the clock forward by d, stepping through every timer due
// on the way (see Controlled); a running clock runs on from there.
func (c *Controlled) Advance(ctx context.Context, d time.Duration) (State, error) {
	if d < 0 {
		return c.State(), fmt.Errorf("advance by %v: %w", d, ErrBackwards)
	}
	c.stepping.Lock()
	defer c.stepping.Unlock()
	return c.moveTo(ctx, func(now time.Time) time.Time { return now.Add(d) })
}

// Set moves the clock to t, stepping through every timer due by then; an
// instant before now fails with ErrBackwards.
func (c *Controlled) Set(ctx context.Context, t time.Time) (State, error) {
	c.stepping.Lock()
	defer c.stepping.Unlock()
	return c.moveTo(ctx, func(time.Time) time.Time { return t })
}

// moveTo freezes the clock for the move, steps to the target, and lets it
// run on from there if it ran. A move cut short by ctx leaves the clock
// where it got to. The caller holds stepping.
func (c *Controlled) moveTo(ctx context.Context, target func(now time.Time) time.Time) (State, error) {
	c.mu.Lock()
	running := !c.frozen
	c.freezeLocked()
	c.moving = true
	defer func() {
		c.mu.Lock()
		c.moving = false
		c.mu.Unlock()
	}()
	to := target(c.at)
	if to.Before(c.at) {
		if running {
			c.resumeLocked()
		}
		st := c.stateLocked()
		c.mu.Unlock()
		return st, fmt.Errorf("set to %s, before now (%s): %w", to.UTC().Format(time.RFC3339Nano), st.Now.UTC().Format(time.RFC3339Nano), ErrBackwards)
	}
	c.mu.Unlock()
	err := c.stepTo(ctx, to)
	c.mu.Lock()
	defer c.mu.Unlock()
	if running {
		c.resumeLocked()
	}
	return c.stateLocked(), err
}

// stepTo moves a frozen clock to target one step at a time. The work
// held at the instant it starts from goes first: a goroutine that took
// work before the move (a delivery, a poll on its way to wait) has yet to
// arm the timers of its next work, which the steps would pass by.
func (c *Controlled) stepTo(ctx context.Context, target time.Time) error {
	c.waitIdle(ctx)
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("clock moved to %s only: %w", c.Now().UTC().Format(time.RFC3339Nano), err)
		}
		c.mu.Lock()
		if len(c.timers) == 0 || c.timers[0].at.After(target) {
			c.at = target
			c.mu.Unlock()
			return nil
		}
		// A timer armed during a step at that step's instant is due at
		// once; the clock does not go back for it.
		instant := c.timers[0].at
		if instant.Before(c.at) {
			instant = c.at
		}
		c.at = minTime(instant.Add(Step), target)
		var due []*ctlTimer
		for len(c.timers) > 0 && !c.timers[0].at.After(c.at) {
			due = append(due, heap.Pop(&c.timers).(*ctlTimer))
		}
		c.holds += len(due)
		c.steps++
		c.mu.Unlock()
		for _, t := range due {
			go func() {
				defer c.release()
				t.f()
			}()
		}
		c.waitIdle(ctx)
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// waitIdle waits until the holds are released, HoldLimit passes or ctx
// ends.
func (c *Controlled) waitIdle(ctx context.Context) {
	c.mu.Lock()
	if c.holds == 0 {
		c.mu.Unlock()
		return
	}
	idle := c.idle
	c.mu.Unlock()
	limit := time.NewTimer(HoldLimit) // real time: it bounds a stuck step
	defer limit.Stop()
	select {
	case <-idle:
	case <-ctx.Done():
	case <-limit.C:
		c.mu.Lock()
		c.stalls++
		c.mu.Unlock()
	}
}

// Stalls counts the steps that went on after HoldLimit without the work
// their timers started being done.
func (c *Controlled) Stalls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stalls
}

// hold adds work that a step waits for; the returned func releases it,
// once.
func (c *Controlled) hold() func() {
	c.mu.Lock()
	c.holds++
	c.mu.Unlock()
	var once sync.Once
	return func() { once.Do(c.release) }
}

func (c *Controlled) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holds--
	if c.holds == 0 {
		close(c.idle)
		c.idle = make(chan struct{})
	}
}

// timerHeap orders timers by deadline, then by arming order.
type timerHeap []*ctlTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*ctlTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*h = old[:len(old)-1]
	return t
}

// pendingTimers counts the timers waiting.
func (c *Controlled) pendingTimers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Pending counts the timers waiting: a test knows by it that a goroutine
// has reached its wait on the clock.
func (c *Controlled) Pending() int { return c.pendingTimers() }

// Steps counts the steps that moves of the clock took so far.
func (c *Controlled) Steps() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.steps
}

// Waiting counts the timers due at exactly at: a test knows by it that a
// goroutine has armed the wait it expects.
func (c *Controlled) Waiting(at time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if t.at.Equal(at) {
			n++
		}
	}
	return n
}
