package embedded

import (
	"cmp"
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
	"github.com/ferrymq/ferry/internal/testwait"
)

// TestGather drives a long poll's gather (gatherMore) on the fake clock.
// A message is sent and received at the start; the long poll starts. Every
// step moves the clock to at, sends send messages, and then, while the
// poll is still gathering, waits until its window ends at armed (all times
// from the start): the window is the earliest timer.
func TestGather(t *testing.T) {
	const win = 200 * time.Microsecond
	type step struct {
		at    time.Duration
		send  int
		armed time.Duration // zero: the poll has answered
	}
	tests := []struct {
		name   string
		pre    int           // sent before the receive, which finds them at once
		gather time.Duration // zero: win
		max    int
		wait   time.Duration
		steps  []step
		end    time.Duration // the clock moves here after the steps
		want   int
	}{
		{name: "arrivals inside the window are gathered", max: 10, wait: 20 * time.Second,
			steps: []step{{us(100), 1, us(300)}, {us(200), 1, us(400)}, {us(350), 1, us(550)}},
			end:   us(550), want: 3},
		{name: "a quiet window answers with what it has", max: 10, wait: 20 * time.Second,
			steps: []step{{us(100), 1, us(300)}}, end: us(300), want: 1},
		{name: "a lone arrival is answered at once", max: 10, wait: 20 * time.Second,
			steps: []step{{us(1000), 1, 0}}, want: 1},
		{name: "max ends the gather at once", max: 3, wait: 20 * time.Second,
			steps: []step{{us(100), 1, us(300)}, {us(150), 2, 0}}, want: 3},
		{name: "a steady flow is cut after four windows", max: 10, wait: 20 * time.Second,
			steps: []step{{us(100), 1, us(300)}, {us(250), 1, us(450)}, {us(400), 1, us(600)}, {us(550), 1, us(750)},
				{us(700), 1, us(900)}, {us(850), 1, us(900)}},
			end: us(900), want: 6},
		{name: "the gather never outlasts the wait", gather: 2 * time.Second, max: 10, wait: time.Second,
			// The window would end at 3s; the wait ends at 1s.
			steps: []step{{time.Second - us(100), 1, time.Second}}, end: time.Second, want: 1},
		{name: "a receive that found messages does not linger", pre: 2, max: 10, wait: 20 * time.Second, want: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(enginetest.Start)
			gather := cmp.Or(tc.gather, win)
			h := &enginetest.H{T: t, Clk: clk, Ctx: context.Background(),
				B: openChecked(t, Options{InMemory: true, Clock: clk, Gather: gather})}
			t.Cleanup(func() { _ = h.B.Close() })
			h.Create("q", nil)
			// The send before the steps' first: whether sends flow is
			// judged from the last two.
			h.SendBodies("q", "warm")
			if got := h.Receive("q", engine.ReceiveRequest{}); len(got) != 1 {
				t.Fatalf("warm-up receive answered %d messages, want 1", len(got))
			}
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

func us(n int) time.Duration { return time.Duration(n) * time.Microsecond }

// TestGatherWaitsForSendsBeingWritten: a quiet window does not end a gather
// while a send to the queue is being written (in a durable store, while
// its WAL sync runs): the poll waits for it, within the gather's bound.
func TestGatherWaitsForSendsBeingWritten(t *testing.T) {
	const win = 200 * time.Microsecond
	clk := clock.NewFake(enginetest.Start)
	c := openChecked(t, Options{InMemory: true, Clock: clk, Gather: win})
	entered, release := make(chan struct{}), make(chan struct{})
	var hold atomic.Bool
	c.beforeSendCommit = func() {
		if hold.Load() {
			close(entered)
			<-release
		}
	}
	h := &enginetest.H{T: t, Clk: clk, Ctx: context.Background(), B: c}
	t.Cleanup(func() { _ = h.B.Close() })
	// Before Close (cleanups run last first): a failed test must not leave
	// the send held, which Close would wait for.
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(free)
	h.Create("q", nil)
	h.SendBodies("q", "warm")
	if got := h.Receive("q", engine.ReceiveRequest{}); len(got) != 1 {
		t.Fatalf("warm-up receive answered %d messages, want 1", len(got))
	}
	ch := h.StartWait(h.Ctx, "q", engine.ReceiveRequest{Max: 10, Wait: 20 * time.Second})
	armedAt := func(at time.Duration) {
		t.Helper()
		want := enginetest.Start.Add(at)
		testwait.Eventually(t, "a gather window to end at "+at.String(), func() bool {
			next, ok := clk.Next()
			return ok && next.Equal(want)
		})
		select {
		case r := <-ch:
			t.Fatalf("answered with %d messages while a send was being written", len(r.Msgs))
		default:
		}
	}
	clk.Set(enginetest.Start.Add(us(100)))
	h.SendBodies("q", "first") // flowing: the poll gathers until 300µs
	armedAt(us(300))

	hold.Store(true)
	sent := make(chan error, 1)
	go func() {
		_, err := c.Send(h.Ctx, acct, "q", []engine.NewMessage{enginetest.Plain("second")})
		sent <- err
	}()
	<-entered
	hold.Store(false)
	// The window passes with the send still being written: the poll waits
	// another window instead of answering.
	clk.Set(enginetest.Start.Add(us(300)))
	armedAt(us(500))
	// It arrives at 350µs: a window from then.
	clk.Set(enginetest.Start.Add(us(350)))
	free()
	if err := <-sent; err != nil {
		t.Fatalf("Send: %v", err)
	}
	armedAt(us(550))
	clk.Set(enginetest.Start.Add(us(550)))
	r := h.Await(ch)
	if r.Err != nil || len(r.Msgs) != 2 {
		t.Fatalf("Receive answered %d messages (%v), want 2", len(r.Msgs), r.Err)
	}
}

// TestGatherAtAWakeUpWhileASendIsBeingWritten: a poll woken by a message
// that does not flow (nothing arrived just before it) still gathers when
// another send to the queue is being written at that moment (in a durable
// store, one WAL sync behind), and answers with both.
func TestGatherAtAWakeUpWhileASendIsBeingWritten(t *testing.T) {
	const win = 200 * time.Microsecond
	clk := clock.NewFake(enginetest.Start)
	c := openChecked(t, Options{InMemory: true, Clock: clk, Gather: win})
	entered, release := make(chan struct{}), make(chan struct{})
	var hold atomic.Bool
	c.beforeSendCommit = func() {
		if hold.Load() {
			close(entered)
			<-release
		}
	}
	h := &enginetest.H{T: t, Clk: clk, Ctx: context.Background(), B: c}
	t.Cleanup(func() { _ = h.B.Close() })
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(free)
	h.Create("q", nil)
	ch := h.StartWait(h.Ctx, "q", engine.ReceiveRequest{Max: 10, Wait: 20 * time.Second})
	awaitWaiter(t, c.Engine, "q")

	hold.Store(true)
	sent := make(chan error, 1)
	go func() {
		_, err := c.Send(h.Ctx, acct, "q", []engine.NewMessage{enginetest.Plain("second")})
		sent <- err
	}()
	<-entered
	hold.Store(false)
	// The first message wakes the poll, which gathers for the second
	// instead of answering with one.
	clk.Set(enginetest.Start.Add(us(1000)))
	h.SendBodies("q", "first")
	testwait.Eventually(t, "a gather window to end at 1.2ms", func() bool {
		next, ok := clk.Next()
		return ok && next.Equal(enginetest.Start.Add(us(1200)))
	})
	select {
	case r := <-ch:
		t.Fatalf("answered with %d messages while a send was being written", len(r.Msgs))
	default:
	}
	clk.Set(enginetest.Start.Add(us(1100)))
	free()
	if err := <-sent; err != nil {
		t.Fatalf("Send: %v", err)
	}
	// Its arrival at 1.1ms opens a window; a quiet one ends the gather.
	testwait.Eventually(t, "a gather window to end at 1.3ms", func() bool {
		next, ok := clk.Next()
		return ok && next.Equal(enginetest.Start.Add(us(1300)))
	})
	clk.Set(enginetest.Start.Add(us(1300)))
	r := h.Await(ch)
	if r.Err != nil || len(r.Msgs) != 2 {
		t.Fatalf("Receive answered %d messages (%v), want 2", len(r.Msgs), r.Err)
	}
}
