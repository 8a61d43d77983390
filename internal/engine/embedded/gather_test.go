package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
	"github.com/ferrymq/ferry/internal/testwait"
)

// TestGather drives a long poll's gather (gatherMore) on the fake clock.
// Every step moves the clock to at, sends send messages, and then, while
// the poll is still gathering, waits until its window ends at armed (all
// times from the start): the window is the earliest timer.
func TestGather(t *testing.T) {
	const win = 200 * time.Microsecond
	type step struct {
		at    time.Duration
		send  int
		armed time.Duration // zero: the poll has answered
	}
	tests := []struct {
		name  string
		pre   int // sent before the receive, which finds them at once
		max   int
		wait  time.Duration
		steps []step
		end   time.Duration // the clock moves here after the steps
		want  int
	}{
		{name: "arrivals inside the window are gathered", max: 10, wait: 20 * time.Second,
			steps: []step{{0, 1, win}, {100 * time.Microsecond, 1, 300 * time.Microsecond}, {250 * time.Microsecond, 1, 450 * time.Microsecond}},
			end:   450 * time.Microsecond, want: 3},
		{name: "a quiet window answers with the one", max: 10, wait: 20 * time.Second,
			steps: []step{{0, 1, win}}, end: win, want: 1},
		{name: "max ends the gather at once", max: 3, wait: 20 * time.Second,
			steps: []step{{0, 1, win}, {50 * time.Microsecond, 2, 0}}, want: 3},
		{name: "a steady flow is cut after five windows", max: 10, wait: 20 * time.Second,
			steps: []step{{0, 1, 200 * time.Microsecond}, {150 * time.Microsecond, 1, 350 * time.Microsecond},
				{300 * time.Microsecond, 1, 500 * time.Microsecond}, {450 * time.Microsecond, 1, 650 * time.Microsecond},
				{600 * time.Microsecond, 1, 800 * time.Microsecond}, {750 * time.Microsecond, 1, 950 * time.Microsecond},
				{900 * time.Microsecond, 1, 1000 * time.Microsecond}},
			end: 1000 * time.Microsecond, want: 7},
		{name: "the gather never outlasts the wait", max: 10, wait: time.Second,
			// The window would end at 1s+100µs; the wait ends at 1s.
			steps: []step{{time.Second - 100*time.Microsecond, 1, time.Second}}, end: time.Second, want: 1},
		{name: "a receive that found messages does not linger", pre: 2, max: 10, wait: 20 * time.Second, want: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(enginetest.Start)
			h := &enginetest.H{T: t, Clk: clk, Ctx: context.Background(),
				B: openChecked(t, Options{InMemory: true, Clock: clk, Gather: win})}
			t.Cleanup(func() { _ = h.B.Close() })
			h.Create("q", nil)
			body := func(n int) []engine.NewMessage {
				msgs := make([]engine.NewMessage, n)
				for i := range msgs {
					msgs[i] = enginetest.Plain("m")
				}
				return msgs
			}
			req := engine.ReceiveRequest{Max: tc.max, Wait: tc.wait}
			var ch <-chan enginetest.Result
			if tc.pre > 0 {
				h.Send("q", body(tc.pre)...)
				ch = h.ReceiveAsync(h.Ctx, "q", req)
			} else {
				ch = h.StartWait(h.Ctx, "q", req)
			}
			for _, s := range tc.steps {
				clk.Set(enginetest.Start.Add(s.at))
				h.Send("q", body(s.send)...)
				if s.armed == 0 {
					continue
				}
				want := enginetest.Start.Add(s.armed)
				testwait.Eventually(t, "the gather window to end at "+s.armed.String(), func() bool {
					next, ok := clk.Next()
					return ok && next.Equal(want)
				})
				select {
				case r := <-ch:
					t.Fatalf("answered with %d messages before its window ended", len(r.Msgs))
				default:
				}
			}
			if tc.end > 0 {
				clk.Set(enginetest.Start.Add(tc.end))
			}
			r := h.Await(ch)
			if r.Err != nil {
				t.Fatalf("Receive: %v", r.Err)
			}
			if len(r.Msgs) != tc.want {
				t.Fatalf("Receive answered %d messages, want %d", len(r.Msgs), tc.want)
			}
		})
	}
}
