package delivery

import (
	"slices"
	"sync"
	"time"
)

// deliveryWaits records when each delivery that waits on the clock is due:
// a failed one until its retry, a throttled one until its turn, one whose
// dead-letter write failed until the next try. A wait whose time has come
// stays until the attempt it was for has ended. Nothing in the service
// reads it: tests do, through Waits, to move a fake clock from one
// deadline to the next without overtaking an attempt. The engine holds the
// retry's timer; only the service knows that a delivery waits behind it.
type deliveryWaits struct {
	mu    sync.Mutex
	last  uint64
	waits map[waitKey]deliveryWait
}

// waitKey names a delivery: a message of a subscription's delivery queue.
type waitKey struct{ sub, msg string }

type deliveryWait struct {
	at   time.Time // zero (due) until the wait's time is known
	hold uint64    // the hold that set it
}

// hold marks the delivery due while the caller sets up its wait, and
// returns the hold that until needs. A later hold, or end, replaces it:
// so the attempt before a retry, finishing its bookkeeping, cannot undo
// what the retry, already under way, has recorded.
func (w *deliveryWaits) hold(k waitKey) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waits == nil {
		w.waits = map[waitKey]deliveryWait{}
	}
	w.last++
	w.waits[k] = deliveryWait{hold: w.last}
	return w.last
}

// until sets the time of the wait that hold h began, unless it has been
// replaced meanwhile.
func (w *deliveryWaits) until(k waitKey, h uint64, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if cur, ok := w.waits[k]; ok && cur.hold == h {
		w.waits[k] = deliveryWait{at: at, hold: h}
	}
}

// end removes the delivery's wait: the attempt it was for has ended.
func (w *deliveryWaits) end(k waitKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.waits, k)
}

// endSubscription removes the waits of a subscription whose worker has
// stopped: nothing will attempt them.
func (w *deliveryWaits) endSubscription(sub string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k := range w.waits {
		if k.sub == sub {
			delete(w.waits, k)
		}
	}
}

// Waits reports when each delivery that waits on the clock is due,
// soonest first: a retry, a throttled attempt's turn, the next try of a
// dead-letter write. A time that has come (or a zero one, while the wait
// is being set up) stays until the attempt it was for has ended. A test
// that moves a fake clock is therefore free to move it on once no time
// reported is due: no attempt is under way, none can start before the
// clock moves, and the engine's timers bring each retry at its time. A
// retry scheduled before a restart is not among them.
func (d *Service) Waits() []time.Time {
	w := &d.waits
	w.mu.Lock()
	out := make([]time.Time, 0, len(w.waits))
	for _, dw := range w.waits {
		out = append(out, dw.at)
	}
	w.mu.Unlock()
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}
