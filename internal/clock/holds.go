package clock

import (
	"context"
	"sync"
	"time"
)

// Work that a timer starts in another goroutine than its callback (a
// callback that wakes a waiting goroutine, a queue timer that hands a
// message to a long poll) holds a controlled clock's step until it is done:
// the step that fired the timer waits for it (see Controlled). On any other
// clock a hold costs nothing and means nothing.

// Hold adds work that a controlled clock's current step waits for, and
// returns its release, which is safe to call more than once. Take it
// before the callback that started the work returns.
func Hold(c Clock) (release func()) {
	if cc, ok := c.(*Controlled); ok {
		return cc.hold()
	}
	return func() {}
}

// Holds are the holds one goroutine keeps while it works; the zero value
// is ready. A goroutine that waits on the clock must release them first
// (Sleep does), or the step it waits for would wait for it.
type Holds struct {
	mu  sync.Mutex
	rel []func()
}

// Add keeps release with the holds.
func (h *Holds) Add(release func()) {
	h.mu.Lock()
	h.rel = append(h.rel, release)
	h.mu.Unlock()
}

// Len counts the holds kept.
func (h *Holds) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.rel)
}

// Release releases every hold kept so far.
func (h *Holds) Release() { h.detach()() }

// detach takes the holds kept so far out of h and returns their release.
func (h *Holds) detach() func() {
	h.mu.Lock()
	rel := h.rel
	h.rel = nil
	h.mu.Unlock()
	return func() {
		for _, r := range rel {
			r()
		}
	}
}

type holdsKey struct{}

// WithHolds carries h in ctx, for the calls that hand work on to the
// goroutine that made ctx (Pass, Sleep).
func WithHolds(ctx context.Context, h *Holds) context.Context {
	return context.WithValue(ctx, holdsKey{}, h)
}

// HoldsOf returns the holds ctx carries, or nil.
func HoldsOf(ctx context.Context) *Holds {
	h, _ := ctx.Value(holdsKey{}).(*Holds)
	return h
}

// Pass hands release to the holds ctx carries, so that the work goes on
// held in the goroutine that called; without any, it releases at once.
func Pass(ctx context.Context, release func()) {
	if h := HoldsOf(ctx); h != nil {
		h.Add(release)
		return
	}
	release()
}

// Sleep waits until d has passed on c; false if ctx ended first. It
// releases the holds ctx carries once its timer is armed, and keeps with
// them a hold of the step that woke it: the goroutine's work after the
// wake-up is part of that step.
func Sleep(ctx context.Context, c Clock, d time.Duration) bool {
	h := HoldsOf(ctx)
	if d <= 0 {
		return ctx.Err() == nil
	}
	due := make(chan func(), 1)
	t := c.AfterFunc(d, func() { due <- Hold(c) })
	if h != nil {
		h.Release()
	}
	select {
	case rel := <-due:
		if h != nil {
			h.Add(rel)
		} else {
			rel()
		}
		return true
	case <-ctx.Done():
		if !t.Stop() {
			(<-due)() // fired: its callback sends
		}
		return false
	}
}

// WallOf is the clock for waits that pace I/O rather than broker time —
// an HTTP timeout, a batching window — which must not stand still while
// an operator holds Ferry's time: the wall clock under a controlled
// clock, and the clock itself otherwise, so that tests on a fake clock
// drive those waits too.
func WallOf(c Clock) Clock {
	if w, ok := c.(interface{ Wall() Clock }); ok {
		return w.Wall()
	}
	return c
}

// Handoff is Pass of a new hold on c, for a call that hands work to the
// goroutine waiting with ctx (a message to a long poll): when a step of a
// controlled clock made the work, the step waits for that goroutine too.
func Handoff(ctx context.Context, c Clock) {
	if cc, ok := c.(*Controlled); ok {
		if h := HoldsOf(ctx); h != nil {
			h.Add(cc.hold())
		}
	}
}

// ReleaseHolds releases the holds ctx carries, if any: a call that has
// set up its wait on the clock (a long poll registered, its timer armed)
// lets the step that started it move on.
func ReleaseHolds(ctx context.Context) {
	if h := HoldsOf(ctx); h != nil {
		h.Release()
	}
}

// DetachHolds takes the holds ctx carries so far out of them and returns
// their release: a wait that registers where others hand it work
// (Handoff) detaches them as it registers, under the lock the handing
// takes, and releases them once it waits. A hold handed on after the
// registration is the wait's wake-up and stays for the caller; a release
// of all the holds at that point would let the step end before the work
// it handed on.
func DetachHolds(ctx context.Context) (release func()) {
	if h := HoldsOf(ctx); h != nil {
		return h.detach()
	}
	return func() {}
}

// Deadline is the end of a long poll on a clock: C is closed when it
// comes. The step of a controlled clock that reaches it waits until the
// poll has answered and the caller has polled again: Stop hands that hold
// to the holds of the poll's ctx. It is handed on when the poll ends, not
// when the deadline fires: a poll that a message ended in the same step
// has returned by then, and its caller may be waiting again already, past
// releasing a hold handed to it late.
type Deadline struct {
	C    <-chan struct{}
	t    Timer
	held chan func()
}

// NewDeadline starts the wait of a poll that ends d from now on c.
func NewDeadline(c Clock, d time.Duration) *Deadline {
	ch := make(chan struct{})
	dl := &Deadline{C: ch, held: make(chan func(), 1)}
	dl.t = c.AfterFunc(d, func() {
		dl.held <- Hold(c)
		close(ch)
	})
	return dl
}

// Stop ends the wait as the poll returns, once: if the deadline came, the
// hold of the step that reached it goes to the holds ctx carries (Pass).
func (dl *Deadline) Stop(ctx context.Context) {
	if dl.t.Stop() {
		return
	}
	Pass(ctx, <-dl.held) // fired: its callback sends
}
