// Package testwait lets tests wait on events rather than on time. Ferry's
// goroutines (long polls, delivery workers, move tasks, alarm evaluation)
// react to the fake clock in goroutines of their own, so a test either
// waits for a state to be reached (Eventually, Some) or a value to arrive
// (Receive), waits for goroutines to reach their wait on the clock
// (Pending), moves the clock from deadline to deadline until something
// happens (AdvanceUntil), or checks that something did not happen once the
// system has settled (Never).
//
// Every wait is bounded by Deadline, which is generous: it only limits how
// long a broken test hangs, it never paces a passing one.
package testwait

import (
	"context"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
)

// Deadline bounds every wait.
const Deadline = 10 * time.Second

// Backoff between two checks of a condition: short, so that a passing test
// waits barely longer than the event it waits for.
const (
	firstBackoff = 100 * time.Microsecond
	maxBackoff   = 10 * time.Millisecond
)

// Eventually waits until cond holds, failing the test with what (what the
// test waits for) after Deadline. cond runs in the test's goroutine.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	EventuallyWithin(t, what, 0, cond)
}

// EventuallyWithin is Eventually for an event that comes only after a span
// of real time the test cannot move (a lease on the database's clock
// running out): it waits up to that span plus Deadline.
func EventuallyWithin(t testing.TB, what string, span time.Duration, cond func() bool) {
	t.Helper()
	if !poll(t.Context(), span+Deadline, cond) {
		t.Fatalf("waited %v for %s", span+Deadline, what)
	}
}

// Some waits until fn returns at least one element and returns them: for
// reads, such as a receive, whose result is the thing waited for.
func Some[T any](t testing.TB, what string, fn func() []T) []T {
	t.Helper()
	var got []T
	Eventually(t, what, func() bool { got = fn(); return len(got) > 0 })
	return got
}

// Pending waits until at least n timers wait on the fake clock, i.e. until
// the goroutines under test have reached their waits on it.
func Pending(t testing.TB, c *clock.Fake, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), Deadline)
	defer cancel()
	if err := c.WaitPending(ctx, n); err != nil {
		t.Fatalf("waiting for goroutines to wait on the clock: %v", err)
	}
}

// Never fails the test if cond holds once settle has returned. Waiting
// cannot prove that something does not happen (a sleep only makes a bug
// rarer to see), so the check needs a barrier: settle must return only
// when whatever could make cond true has either happened or can no longer
// happen, for instance once the goroutine under test is back at its wait
// on the fake clock (Pending), or once a counter says the work is done
// (Eventually). Never then checks cond exactly once.
func Never(t testing.TB, what string, settle func(), cond func() bool) {
	t.Helper()
	settle()
	if cond() {
		t.Fatalf("%s, which must not happen", what)
	}
}

// Receive waits for a value from ch and returns it, failing the test with
// what after Deadline: for a goroutine's answer, or a channel it closes.
func Receive[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), Deadline)
	defer cancel()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("waited %v for %s", Deadline, what)
		var zero T
		return zero
	}
}

// AdvanceUntil moves c from one timer's deadline to the next until cond
// holds, and returns how far the clock moved: how long cond took on the
// clock, to the deadline. Moving to the next deadline and no further wakes
// only the goroutines whose time has come, in their order; settled is the
// barrier that says they have done what that woke them for, so that the
// next move cannot overtake them. AdvanceUntil waits for settled before
// each check of cond and each move. It fails the test if cond does not
// hold once the clock has moved max, or if no timer is left to move to.
func AdvanceUntil(t testing.TB, c *clock.Fake, max time.Duration, settled, cond func() bool) time.Duration {
	t.Helper()
	start := c.Now()
	for {
		Eventually(t, "the clock's goroutines to settle", settled)
		moved := c.Now().Sub(start)
		if cond() {
			return moved
		}
		next, ok := c.Next()
		switch {
		case !ok:
			t.Fatalf("condition not met after advancing %v, and no timer waits", moved)
			return moved
		case next.Sub(start) > max:
			t.Fatalf("condition not met after advancing %v; the next timer is due %v later", moved, next.Sub(start)-moved)
			return moved
		}
		c.Set(next)
	}
}

// poll checks cond with a growing backoff until it holds, limit passes or
// ctx ends.
func poll(ctx context.Context, limit time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	backoff := firstBackoff
	for !cond() {
		select {
		case <-ctx.Done():
			return cond()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
	return true
}
