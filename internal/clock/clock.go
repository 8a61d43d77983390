// Package clock makes time a dependency, so that tests can move it.
package clock

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Clock tells the time and schedules callbacks. Every part of Ferry that
// waits or stamps takes one; production code uses Real, tests use Fake.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call; it reports whether the call was still pending.
	Stop() bool
}

// Real is the wall clock.
type Real struct{}

// Now returns the current time.
func (Real) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Fake is a clock that only moves when told to. Timers fire, in deadline
// order, during Advance or Set; each callback runs in its own goroutine, as
// with the real clock, and Advance waits for none of them.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	seq    uint64
	fired  int
	// changed is closed, and replaced, whenever timers changes: it wakes
	// WaitPending without polling.
	changed chan struct{}
}

// NewFake returns a fake clock set to t.
func NewFake(t time.Time) *Fake { return &Fake{now: t, changed: make(chan struct{})} }

// signal wakes every WaitPending; the caller holds c.mu.
func (c *Fake) signal() {
	if c.changed != nil {
		close(c.changed)
	}
	c.changed = make(chan struct{})
}

type fakeTimer struct {
	c    *Fake
	at   time.Time
	seq  uint64
	f    func()
	done bool
}

// Now returns the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f for d after the fake now. A d of zero or less fires
// at once.
func (c *Fake) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	c.seq++
	t := &fakeTimer{c: c, at: c.now.Add(d), seq: c.seq, f: f}
	if d <= 0 {
		t.done = true
		c.fired++
		c.mu.Unlock()
		go f()
		return t
	}
	c.timers = append(c.timers, t)
	c.signal()
	c.mu.Unlock()
	return t
}

// Stop cancels the timer.
func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	for i, o := range t.c.timers {
		if o == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			t.c.signal()
			break
		}
	}
	return true
}

// Advance moves the clock forward by d, firing every timer that falls due.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	c.mu.Unlock()
	c.Set(target)
}

// Set moves the clock to t (never backwards), firing every timer due by t.
func (c *Fake) Set(t time.Time) {
	c.mu.Lock()
	if t.Before(c.now) {
		c.mu.Unlock()
		return
	}
	sort.Slice(c.timers, func(i, j int) bool {
		if c.timers[i].at.Equal(c.timers[j].at) {
			return c.timers[i].seq < c.timers[j].seq
		}
		return c.timers[i].at.Before(c.timers[j].at)
	})
	var due []*fakeTimer
	n := 0
	for _, tm := range c.timers {
		if !tm.at.After(t) {
			tm.done = true
			due = append(due, tm)
		} else {
			c.timers[n] = tm
			n++
		}
	}
	if len(due) > 0 {
		c.fired += len(due)
		c.timers = c.timers[:n]
		c.signal()
	}
	c.now = t
	c.mu.Unlock()
	for _, tm := range due {
		go tm.f()
	}
}

// Pending reports how many timers are waiting; tests use it to know that a
// goroutine has reached its wait before they move the clock.
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Next reports the earliest deadline of a waiting timer; false when none
// waits. A test that moves the clock to it, and no further, wakes exactly
// the goroutines whose time has come, as a real clock would.
func (c *Fake) Next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.timers) == 0 {
		return time.Time{}, false
	}
	next := c.timers[0].at
	for _, tm := range c.timers[1:] {
		if tm.at.Before(next) {
			next = tm.at
		}
	}
	return next, true
}

// Fired reports how many timers have fired so far. Advance and Set count a
// timer before they return, so a test can tell, right after moving the
// clock, whether the move woke anything.
func (c *Fake) Fired() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fired
}

// WaitPending blocks until at least n timers are waiting, i.e. until the
// goroutines under test have reached their waits on the clock, or until ctx
// ends. It waits on the clock's own changes, not by polling.
func (c *Fake) WaitPending(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		if len(c.timers) >= n {
			c.mu.Unlock()
			return nil
		}
		if c.changed == nil { // a zero Fake, not made by NewFake
			c.changed = make(chan struct{})
		}
		ch := c.changed
		have := len(c.timers)
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("fake clock: %d timers pending, waiting for %d: %w", have, n, ctx.Err())
		}
	}
}
