package clock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// wallAt makes c read a wall clock that the test sets.
func wallAt(c *Controlled, start time.Time) func(time.Time) {
	var mu sync.Mutex
	w := start
	c.wall = func() time.Time { mu.Lock(); defer mu.Unlock(); return w }
	return func(t time.Time) { mu.Lock(); w = t; mu.Unlock() }
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestControlledFreezeResumeOffset(t *testing.T) {
	t.Parallel()
	c := NewControlled()
	setWall := wallAt(c, t0)
	if st := c.State(); !st.Now.Equal(t0) || st.Frozen || st.Offset != 0 {
		t.Fatalf("fresh clock: %+v", st)
	}
	st := c.Freeze()
	setWall(t0.Add(time.Hour)) // an hour passes frozen
	if got := c.Now(); !got.Equal(t0) || !st.Frozen {
		t.Fatalf("frozen clock reads %v (%+v)", got, st)
	}
	if st := c.State(); st.Offset != -time.Hour {
		t.Fatalf("offset while frozen = %v, want -1h", st.Offset)
	}
	st = c.Resume()
	if !st.Now.Equal(t0) || st.Frozen {
		t.Fatalf("resume jumped: %+v", st)
	}
	setWall(t0.Add(time.Hour + time.Minute))
	if got := c.Now(); !got.Equal(t0.Add(time.Minute)) {
		t.Fatalf("resumed clock reads %v, want a minute after the frozen instant", got)
	}
	ctx := context.Background()
	if st, err := c.Advance(ctx, 24*time.Hour); err != nil || st.Frozen || !st.Now.Equal(t0.Add(24*time.Hour+time.Minute)) {
		t.Fatalf("advance of a running clock: %+v, %v", st, err)
	}
}

func TestControlledNeverGoesBack(t *testing.T) {
	t.Parallel()
	c := NewControlled()
	wallAt(c, t0)
	c.Freeze()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		move func() (State, error)
	}{
		{"set before now", func() (State, error) { return c.Set(ctx, t0.Add(-time.Nanosecond)) }},
		{"advance by a negative duration", func() (State, error) { return c.Advance(ctx, -time.Second) }},
	} {
		st, err := tc.move()
		if !errors.Is(err, ErrBackwards) || !st.Now.Equal(t0) {
			t.Errorf("%s: %+v, %v; want ErrBackwards and the clock unmoved", tc.name, st, err)
		}
	}
	if st, err := c.Set(ctx, t0); err != nil || !st.Now.Equal(t0) {
		t.Fatalf("set to now: %+v, %v", st, err)
	}
}

// A job that re-arms itself from its callback runs at each of its
// instants during one advance, and each step sees the previous done.
func TestControlledAdvanceStepsThroughPeriodicJob(t *testing.T) {
	t.Parallel()
	c := NewControlled()
	wallAt(c, t0)
	c.Freeze()
	var (
		mu  sync.Mutex
		ran []time.Time
	)
	// As Ferry's periodic jobs, it arms for the next minute's start, so
	// that a step's lateness (up to Step) does not add up.
	var tick func()
	arm := func() {
		now := c.Now()
		c.AfterFunc(now.Truncate(time.Minute).Add(time.Minute).Sub(now), tick)
	}
	tick = func() {
		mu.Lock()
		ran = append(ran, c.Now())
		mu.Unlock()
		arm()
	}
	arm()
	st, err := c.Advance(context.Background(), time.Hour)
	if err != nil || !st.Now.Equal(t0.Add(time.Hour)) {
		t.Fatalf("advance: %+v, %v", st, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 60 {
		t.Fatalf("ran %d times in an hour, want 60", len(ran))
	}
	for i, at := range ran {
		want := t0.Add(time.Duration(i+1) * time.Minute)
		if at.Before(want) || at.After(want.Add(Step)) {
			t.Fatalf("run %d at %v, want %v (within %v)", i, at, want, Step)
		}
	}
}

// A goroutine woken through Sleep holds the step until it has done its
// work and waits again; so does work handed on with Handoff.
func TestControlledAdvanceWaitsForHeldWork(t *testing.T) {
	t.Parallel()
	c := NewControlled()
	wallAt(c, t0)
	c.Freeze()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var holds Holds
	hctx := WithHolds(ctx, &holds)
	var done atomic.Int64 // seconds of work done
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		defer holds.Release()
		for Sleep(hctx, c, time.Second) {
			// Work that takes real time after the wake-up: a step that
			// did not wait would see it unfinished.
			time.Sleep(time.Millisecond)
			done.Add(1)
		}
	}()
	// Wait until the goroutine sleeps: one timer armed.
	for c.pendingTimers() == 0 {
		time.Sleep(time.Millisecond)
	}
	for i := int64(1); i <= 10; i++ {
		if _, err := c.Advance(ctx, time.Second); err != nil {
			t.Fatal(err)
		}
		if got := done.Load(); got != i {
			t.Fatalf("after %d s advanced, %d s of work done", i, got)
		}
	}
	// Sleeping a second from a wake-up a step may have made up to Step
	// late, the goroutine wakes once a second at most.
	if _, err := c.Advance(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := done.Load(); got < 19 || got > 20 {
		t.Fatalf("after 20 s advanced, %d s of work done", got)
	}
	cancel()
	<-stopped
	if c.Stalls() != 0 {
		t.Fatalf("%d steps stalled", c.Stalls())
	}
}

// Running, timers fire on real time; frozen, they do not; Stop cancels.
func TestControlledRunningTimers(t *testing.T) {
	t.Parallel()
	c := NewControlled()
	fired := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(fired) })
	<-fired
	if c.AfterFunc(time.Hour, func() {}).Stop() != true {
		t.Fatal("Stop of a pending timer reports false")
	}
	c.Freeze()
	late := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(late) })
	select {
	case <-late:
		t.Fatal("a frozen clock fired a timer")
	case <-time.After(20 * time.Millisecond): // what is checked is that nothing fires
	}
	c.Resume()
	<-late
}

func TestParseDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "14d", want: 14 * 24 * time.Hour},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "36h", want: 36 * time.Hour},
		{in: "90s", want: 90 * time.Second},
		{in: "1d1m30s", want: 24*time.Hour + 90*time.Second},
		{in: "0d", want: 0},
		{in: "-1h", want: -time.Hour},
		{in: "", bad: true},
		{in: "d", bad: true},
		{in: "-1d", bad: true},
		{in: "1.5d", bad: true},
		{in: "2dh", bad: true},
		{in: "1d-1h", bad: true},
		{in: "999999999d", bad: true},
		{in: "14 days", bad: true},
	} {
		got, err := ParseDuration(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: got %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// A poll woken in the step that also reaches its deadline has returned by
// the time the deadline's callback runs: the deadline's hold goes to the
// caller's holds as the poll ends (Stop), and the step waits until the
// caller releases them, as it waits for the wake-up's hold.
func TestDeadlineHoldGoesToTheCallerAtStop(t *testing.T) {
	t.Parallel()
	c := NewControlled()
	wallAt(c, t0)
	c.Freeze()
	var holds Holds
	ctx := WithHolds(context.Background(), &holds)
	dl := NewDeadline(c, time.Second)
	woke := make(chan func(), 1)
	c.AfterFunc(time.Second, func() { woke <- Hold(c) }) // a message, due with the deadline
	advanced := make(chan struct{})
	go func() {
		defer close(advanced)
		if _, err := c.Advance(context.Background(), time.Second); err != nil {
			t.Error(err)
		}
	}()
	holds.Add(<-woke)
	<-dl.C
	dl.Stop(ctx)
	// The caller has its answer and both holds: its next poll releases
	// them once it waits.
	if n := len(holds.rel); n != 2 {
		t.Fatalf("caller keeps %d holds, want the wake-up's and the deadline's", n)
	}
	select {
	case <-advanced:
		t.Fatal("the step ended while the caller held it")
	default:
	}
	holds.Release()
	<-advanced
	if c.Stalls() != 0 {
		t.Fatalf("%d steps stalled", c.Stalls())
	}
	// A deadline stopped before it came hands nothing on.
	dl = NewDeadline(c, time.Second)
	dl.Stop(ctx)
	if n := len(holds.rel); n != 0 {
		t.Fatalf("a stopped deadline left %d holds", n)
	}
}

// DetachHolds takes only the holds kept so far: one handed on afterwards
// (a message to the registered wait) stays with the caller.
func TestDetachHoldsKeepsLaterHolds(t *testing.T) {
	t.Parallel()
	c := NewControlled()
	wallAt(c, t0)
	var holds Holds
	ctx := WithHolds(context.Background(), &holds)
	holds.Add(c.hold())
	release := DetachHolds(ctx)
	Handoff(ctx, c) // the wait is served before it releases
	release()
	if n := len(holds.rel); n != 1 {
		t.Fatalf("caller keeps %d holds, want the one handed on", n)
	}
	if c.holds != 1 {
		t.Fatalf("clock counts %d holds, want 1", c.holds)
	}
	holds.Release()
	if c.holds != 0 {
		t.Fatalf("clock counts %d holds after release, want 0", c.holds)
	}
	DetachHolds(context.Background())() // no holds: nothing to do
}

// Work held when a move starts (taken outside any step: a delivery, a
// poll on its way to wait) goes first; the move then steps through the
// timer it armed, rather than past it.
func TestControlledMoveWaitsForWorkHeldBefore(t *testing.T) {
	t.Parallel()
	c := NewControlled()
	wallAt(c, t0)
	c.Freeze()
	rel := Hold(c)
	advanced := make(chan struct{})
	go func() {
		defer close(advanced)
		if _, err := c.Advance(context.Background(), 2*time.Second); err != nil {
			t.Error(err)
		}
	}()
	fired := make(chan time.Time, 1)
	// Once the move is under way (or, unfixed, over), the work arms its
	// next timer and releases its hold.
	for moving := false; !moving; {
		select {
		case <-advanced:
			moving = true
		default:
			c.mu.Lock()
			moving = c.moving
			c.mu.Unlock()
			if !moving {
				time.Sleep(time.Millisecond)
			}
		}
	}
	c.AfterFunc(time.Second, func() { fired <- c.Now() })
	rel()
	<-advanced
	select {
	case at := <-fired:
		if want := t0.Add(time.Second); at.Before(want) || at.After(want.Add(Step)) {
			t.Fatalf("timer fired at %v, want %v", at, want)
		}
	default:
		t.Fatalf("the move went to %v past the timer the held work armed", c.Now())
	}
	if c.Stalls() != 0 {
		t.Fatalf("%d steps stalled", c.Stalls())
	}
}
