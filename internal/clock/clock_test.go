package clock

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestFakeFiresInOrderAndOnlyWhenDue(t *testing.T) {
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
	select {
	case n := <-fired:
		t.Fatalf("timer %d fired early", n)
	case <-time.After(10 * time.Millisecond):
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
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewFake(start)
	c.Set(start.Add(-time.Hour))
	if !c.Now().Equal(start) {
		t.Fatalf("clock went back to %v", c.Now())
	}
}

func TestFakeZeroDelayFiresAtOnce(t *testing.T) {
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
	done := make(chan struct{})
	var r Real
	r.AfterFunc(time.Millisecond, func() { close(done) })
	<-done
	if r.Now().IsZero() {
		t.Fatal("zero time")
	}
}
