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

// heldSendFixture is an in-memory engine with gather window win on a fake
// clock, a queue "q", and a long poll on it (ch): sendHeld starts a send
// to q whose batch is held before its commit (a send being written, as in
// a durable store while its WAL sync runs) until free; armedAt waits for
// the poll's gather window to end at the given time from the start, and
// fails if the poll has answered.
type heldSendFixture struct {
	t     *testing.T
	c     *checked
	h     *enginetest.H
	clk   *clock.Fake
	ch    <-chan enginetest.Result
	free  func()
	sent  chan error
	hold  atomic.Bool
	enter chan struct{}
}

func newHeldSendFixture(t *testing.T, win time.Duration, warm bool) *heldSendFixture {
	f := &heldSendFixture{t: t, clk: clock.NewFake(enginetest.Start), sent: make(chan error, 1), enter: make(chan struct{})}
	f.c = openChecked(t, Options{InMemory: true, Clock: f.clk, Gather: win})
	release := make(chan struct{})
	f.c.beforeSendCommit = func() {
		if f.hold.Load() {
			close(f.enter)
			<-release
		}
	}
	f.h = &enginetest.H{T: t, Clk: f.clk, Ctx: context.Background(), B: f.c}
	t.Cleanup(func() { _ = f.h.B.Close() })
	// Before Close (cleanups run last first): a failed test must not leave
	// the send held, which Close would wait for.
	var releaseOnce sync.Once
	f.free = func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(f.free)
	f.h.Create("q", nil)
	if warm {
		f.h.SendBodies("q", "warm")
		if got := f.h.Receive("q", engine.ReceiveRequest{}); len(got) != 1 {
			t.Fatalf("warm-up receive answered %d messages, want 1", len(got))
		}
	}
	f.ch = f.h.StartWait(f.h.Ctx, "q", engine.ReceiveRequest{Max: 10, Wait: 20 * time.Second})
	return f
}

// sendHeld starts the held send of body and returns once it is held.
func (f *heldSendFixture) sendHeld(body string) {
	f.hold.Store(true)
	go func() {
		_, err := f.c.Send(f.h.Ctx, acct, "q", []engine.NewMessage{enginetest.Plain(body)})
		f.sent <- err
	}()
	<-f.enter
	f.hold.Store(false)
}

// arrive lets the held send go at the given time and waits for it.
func (f *heldSendFixture) arrive(at time.Duration) {
	f.t.Helper()
	f.clk.Set(enginetest.Start.Add(at))
	f.free()
	if err := <-f.sent; err != nil {
		f.t.Fatalf("Send: %v", err)
	}
}

func (f *heldSendFixture) armedAt(at time.Duration) {
	f.t.Helper()
	want := enginetest.Start.Add(at)
	testwait.Eventually(f.t, "a gather window to end at "+at.String(), func() bool {
		next, ok := f.clk.Next()
		return ok && next.Equal(want)
	})
	select {
	case r := <-f.ch:
		f.t.Fatalf("answered with %d messages while a send was being written", len(r.Msgs))
	default:
	}
}

// answer ends the last window at the given time and expects want messages.
func (f *heldSendFixture) answer(at time.Duration, want int) {
	f.t.Helper()
	f.clk.Set(enginetest.Start.Add(at))
	r := f.h.Await(f.ch)
	if r.Err != nil || len(r.Msgs) != want {
		f.t.Fatalf("Receive answered %d messages (%v), want %d", len(r.Msgs), r.Err, want)
	}
}

// TestGatherWaitsForSendsBeingWritten: a quiet window does not end a gather
// while a send to the queue is being written (in a durable store, while
// its WAL sync runs): the poll waits for it, within the gather's bound.
func TestGatherWaitsForSendsBeingWritten(t *testing.T) {
	f := newHeldSendFixture(t, 200*time.Microsecond, true)
	f.clk.Set(enginetest.Start.Add(us(100)))
	f.h.SendBodies("q", "first") // flowing: the poll gathers until 300µs
	f.armedAt(us(300))

	f.sendHeld("second")
	// The window passes with the send still being written: the poll waits
	// another window instead of answering.
	f.clk.Set(enginetest.Start.Add(us(300)))
	f.armedAt(us(500))
	// It arrives at 350µs: a window from then.
	f.arrive(us(350))
	f.armedAt(us(550))
	f.answer(us(550), 2)
}

// TestGatherAtAWakeUpWhileASendIsBeingWritten: a poll woken by a message
// that does not flow (nothing arrived just before it) still gathers when
// another send to the queue is being written at that moment (in a durable
// store, one WAL sync behind), and answers with both.
func TestGatherAtAWakeUpWhileASendIsBeingWritten(t *testing.T) {
	f := newHeldSendFixture(t, 200*time.Microsecond, false)
	awaitWaiter(t, f.c.Engine, "q")
	f.sendHeld("second")
	// The first message wakes the poll, which gathers for the second
	// instead of answering with one.
	f.clk.Set(enginetest.Start.Add(us(1000)))
	f.h.SendBodies("q", "first")
	f.armedAt(us(1200))
	// Its arrival at 1.1ms opens a window; a quiet one ends the gather.
	f.arrive(us(1100))
	f.armedAt(us(1300))
	f.answer(us(1300), 2)
}
