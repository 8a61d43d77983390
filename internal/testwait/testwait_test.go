package testwait

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
)

// recorder is a testing.TB that records a failure instead of ending the
// test, and whose context can be ended up front so that a wait that cannot
// succeed gives up at once instead of after Deadline.
type recorder struct {
	testing.TB
	ctx    context.Context
	failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Context() context.Context          { return r.ctx }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }
func newRecorder(t *testing.T, ended bool) *recorder {
	ctx := t.Context()
	if ended {
		c, cancel := context.WithCancel(ctx)
		cancel()
		ctx = c
	}
	return &recorder{TB: t, ctx: ctx}
}

func TestWaits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		ended bool // the test's context has ended: a wait gives up at once
		run   func(tb testing.TB)
		fails string // "" if the wait must succeed
	}{
		{name: "eventually holds later", run: func(tb testing.TB) {
			var n atomic.Int32
			go func() {
				for range 3 {
					n.Add(1)
				}
			}()
			Eventually(tb, "three steps", func() bool { return n.Load() == 3 })
		}},
		{name: "eventually never holds", ended: true, run: func(tb testing.TB) {
			Eventually(tb, "the impossible", func() bool { return false })
		}, fails: "the impossible"},
		{name: "some returns what arrived", run: func(tb testing.TB) {
			calls := 0
			got := Some(tb, "a value", func() []int {
				calls++
				if calls < 3 {
					return nil
				}
				return []int{7}
			})
			if len(got) != 1 || got[0] != 7 {
				tb.Fatalf("Some = %v", got)
			}
		}},
		{name: "some gets nothing", ended: true, run: func(tb testing.TB) {
			Some(tb, "a message", func() []string { return nil })
		}, fails: "a message"},
		{name: "pending reached by goroutines", run: func(tb testing.TB) {
			c := clock.NewFake(time.Unix(0, 0))
			for range 4 {
				go c.AfterFunc(time.Second, func() {})
			}
			Pending(tb, c, 4)
		}},
		{name: "pending not reached", ended: true, run: func(tb testing.TB) {
			c := clock.NewFake(time.Unix(0, 0))
			c.AfterFunc(time.Second, func() {})
			Pending(tb, c, 2)
		}, fails: "1 timers pending, waiting for 2"},
		{name: "receive gets the value", run: func(tb testing.TB) {
			ch := make(chan int)
			go func() { ch <- 7 }()
			if got := Receive(tb, "a value", ch); got != 7 {
				tb.Fatalf("Receive = %d", got)
			}
		}},
		{name: "receive gets nothing", ended: true, run: func(tb testing.TB) {
			Receive(tb, "the answer", make(chan int))
		}, fails: "the answer"},
		{name: "advance stops at the deadline that does it", run: func(tb testing.TB) {
			// A worker wakes every 3 s and, at its second wake, is done; a
			// timer at 5 s that does nothing lies in between. Settled once
			// every callback that fired has ended (the worker's sets its
			// next wake first): without that barrier the move to 5 s could
			// overtake the wake at 3 s, and the next wake come at 8 s.
			c := clock.NewFake(time.Unix(0, 0))
			var wakes, ran atomic.Int32
			var wake func()
			wake = func() {
				wakes.Add(1)
				c.AfterFunc(3*time.Second, wake)
				ran.Add(1)
			}
			c.AfterFunc(3*time.Second, wake)
			c.AfterFunc(5*time.Second, func() { ran.Add(1) })
			settled := func() bool { return int(ran.Load()) == c.Fired() }
			if got := AdvanceUntil(tb, c, time.Minute, settled, func() bool { return wakes.Load() == 2 }); got != 6*time.Second {
				tb.Fatalf("AdvanceUntil moved %v, want 6s", got)
			}
		}},
		{name: "advance no further than max", run: func(tb testing.TB) {
			c := clock.NewFake(time.Unix(0, 0))
			c.AfterFunc(time.Second, func() {})
			c.AfterFunc(time.Minute, func() {})
			AdvanceUntil(tb, c, 30*time.Second, func() bool { return true }, func() bool { return false })
		}, fails: "condition not met after advancing 1s; the next timer is due 59s later"},
		{name: "advance runs out of timers", run: func(tb testing.TB) {
			c := clock.NewFake(time.Unix(0, 0))
			AdvanceUntil(tb, c, time.Minute, func() bool { return true }, func() bool { return false })
		}, fails: "no timer waits"},
		{name: "never after the barrier", run: func(tb testing.TB) {
			// A worker counts once, then waits on the clock; once it waits,
			// it cannot count again until the clock moves.
			c := clock.NewFake(time.Unix(0, 0))
			var n atomic.Int32
			go func() {
				n.Add(1)
				c.AfterFunc(time.Minute, func() { n.Add(1) })
			}()
			Never(tb, "a second count", func() { Pending(tb, c, 1) }, func() bool { return n.Load() != 1 })
		}},
		{name: "never sees what happened", run: func(tb testing.TB) {
			c := clock.NewFake(time.Unix(0, 0))
			var n atomic.Int32
			go func() {
				n.Add(2)
				c.AfterFunc(time.Minute, func() {})
			}()
			Never(tb, "a second count", func() { Pending(tb, c, 1) }, func() bool { return n.Load() != 1 })
		}, fails: "a second count"},
		{name: "never checks only after settling", run: func(tb testing.TB) {
			settled := false
			Never(tb, "a check before the barrier", func() { settled = true }, func() bool { return !settled })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder(t, tc.ended)
			tc.run(r)
			switch {
			case tc.fails == "" && r.failed != "":
				t.Fatalf("failed: %s", r.failed)
			case tc.fails != "" && !strings.Contains(r.failed, tc.fails):
				t.Fatalf("failure = %q, want one naming %q", r.failed, tc.fails)
			}
		})
	}
}
