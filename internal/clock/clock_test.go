package clock

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestFakeFiresInOrderAndOnlyWhenDue(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewFake(start)
	fired := make(chan int, 3)
	c.AfterFunc(3*time.Second, func() { fired <- 3 })
	c.AfterFunc(time.Second, func() { fired <- 1 })
	stopped := c.AfterFunc(2*time.Second, func() { fired <- 2 })
	if c.Pending() != 3 {
		t.Fatalf("pending = %d", c.Pending())
	}
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop should report true once, then false")
	}
	c.Advance(999 * time.Millisecond)
	if n := c.Fired(); n != 0 { // Advance counts what it fires before returning
		t.Fatalf("%d timers fired early", n)
	}
	c.Advance(time.Millisecond)
	if n := <-fired; n != 1 {
		t.Fatalf("fired %d, want 1", n)
	}
	c.Advance(time.Hour)
	if n := <-fired; n != 3 {
		t.Fatalf("fired %d, want 3", n)
	}
	if got := c.Now(); !got.Equal(start.Add(time.Hour + time.Second)) {
		t.Fatalf("now = %v", got)
	}
	if c.Pending() != 0 {
		t.Fatalf("pending = %d", c.Pending())
	}
}

func TestFakeNeverGoesBack(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewFake(start)
	c.Set(start.Add(-time.Hour))
	if !c.Now().Equal(start) {
		t.Fatalf("clock went back to %v", c.Now())
	}
}

func TestFakeZeroDelayFiresAtOnce(t *testing.T) {
	t.Parallel()
	c := NewFake(time.Unix(0, 0))
	var n atomic.Int32
	done := make(chan struct{})
	tm := c.AfterFunc(0, func() { n.Add(1); close(done) })
	<-done
	if tm.Stop() {
		t.Fatal("a fired timer cannot be stopped")
	}
	if n.Load() != 1 || c.Pending() != 0 {
		t.Fatalf("fired %d, pending %d", n.Load(), c.Pending())
	}
}

func TestRealClock(t *testing.T) {
	t.Parallel()
	done := make(chan struct{})
	var r Real
	r.AfterFunc(time.Millisecond, func() { close(done) })
	<-done
	if r.Now().IsZero() {
		t.Fatal("zero time")
	}
}

// WaitPending returns once n timers wait, whoever adds them and whenever;
// timers that fired or were stopped do not count.
func TestFakeWaitPending(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name    string
		setup   func(c *Fake) // before the wait, in the test's goroutine
		racing  int           // timers added by goroutines during the wait
		ctx     context.Context
		n       int
		reached bool
	}{
		{name: "already pending", setup: timers(2), ctx: cancelled, n: 2, reached: true},
		{name: "zero is always reached", ctx: cancelled, n: 0, reached: true},
		{name: "added during the wait", racing: 5, ctx: context.Background(), n: 5, reached: true},
		{name: "some before, some during", setup: timers(1), racing: 2, ctx: context.Background(), n: 3, reached: true},
		{name: "too few", setup: timers(1), ctx: cancelled, n: 2},
		{name: "fired timers leave", setup: func(c *Fake) { timers(2)(c); c.Advance(time.Hour) }, ctx: cancelled, n: 1},
		{name: "stopped timers leave", setup: func(c *Fake) {
			timers(1)(c)
			c.AfterFunc(time.Minute, func() {}).Stop()
		}, ctx: cancelled, n: 2},
		{name: "zero delay never waits", setup: func(c *Fake) { c.AfterFunc(0, func() {}) }, ctx: cancelled, n: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewFake(time.Unix(0, 0))
			if tc.setup != nil {
				tc.setup(c)
			}
			for range tc.racing {
				go c.AfterFunc(time.Second, func() {})
			}
			err := c.WaitPending(tc.ctx, tc.n)
			if tc.reached {
				if err != nil {
					t.Fatalf("WaitPending(%d) = %v", tc.n, err)
				}
				if c.Pending() < tc.n {
					t.Fatalf("returned with %d pending, want %d", c.Pending(), tc.n)
				}
				return
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("WaitPending(%d) = %v, want context.Canceled", tc.n, err)
			}
		})
	}
}

// A wait blocked before any timer exists wakes when the nth arrives.
func TestFakeWaitPendingWakes(t *testing.T) {
	t.Parallel()
	c := NewFake(time.Unix(0, 0))
	done := make(chan error, 1)
	go func() { done <- c.WaitPending(context.Background(), 3) }()
	for range 3 {
		c.AfterFunc(time.Second, func() {})
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// timers adds n timers a minute away.
func timers(n int) func(*Fake) {
	return func(c *Fake) {
		for range n {
			c.AfterFunc(time.Minute, func() {})
		}
	}
}

// Fired counts timers as Advance takes them, before their callbacks run;
// stopped timers never count.
func TestFakeFired(t *testing.T) {
	t.Parallel()
	c := NewFake(time.Unix(0, 0))
	block := make(chan struct{})
	defer close(block)
	for _, d := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second} {
		c.AfterFunc(d, func() { <-block })
	}
	c.AfterFunc(time.Second, func() {}).Stop()
	c.AfterFunc(0, func() {})
	for _, tc := range []struct {
		advance time.Duration
		fired   int
	}{{0, 1}, {999 * time.Millisecond, 1}, {time.Millisecond, 2}, {time.Hour, 4}, {time.Hour, 4}} {
		c.Advance(tc.advance)
		if got := c.Fired(); got != tc.fired {
			t.Fatalf("after %v more: fired %d, want %d", tc.advance, got, tc.fired)
		}
	}
}

// TestFakeNext: Next is the earliest deadline still waiting, whatever the
// order the timers were set in; stopped and fired timers leave it.
func TestFakeNext(t *testing.T) {
	t.Parallel()
	start := time.Unix(0, 0)
	c := NewFake(start)
	if at, ok := c.Next(); ok {
		t.Fatalf("Next = %v with no timer", at)
	}
	c.AfterFunc(3*time.Second, func() {})
	stopped := c.AfterFunc(time.Second, func() {})
	c.AfterFunc(2*time.Second, func() {})
	for _, tc := range []struct {
		name string
		move func()
		want time.Duration // -1: no timer left
	}{
		{"earliest of three", func() {}, time.Second},
		{"a stopped timer leaves", func() { stopped.Stop() }, 2 * time.Second},
		{"a fired timer leaves", func() { c.Set(start.Add(2 * time.Second)) }, 3 * time.Second},
		{"short of the deadline", func() { c.Advance(999 * time.Millisecond) }, 3 * time.Second},
		{"none left", func() { c.Advance(time.Millisecond) }, -1},
	} {
		tc.move()
		at, ok := c.Next()
		if tc.want < 0 {
			if ok {
				t.Errorf("%s: Next = %v, want none", tc.name, at)
			}
			continue
		}
		if !ok || !at.Equal(start.Add(tc.want)) {
			t.Errorf("%s: Next = %v %v, want %v", tc.name, at, ok, start.Add(tc.want))
		}
	}
}
