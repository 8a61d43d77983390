package bench

import (
	"context"
	"sync"
)

// Ledger is a scenario's book of every message it sends, by sequence
// number, and of every copy it receives. A message is sent once and must
// arrive exactly once in each of the ledger's copies (one per subscribed
// queue for a fan-out, one otherwise). A send that failed leaves its
// message uncertain: the broker may or may not have taken it, so its
// absence is no loss, though a second arrival is still a duplicate.
//
// Against the ceiling, whose answers carry none of the run's messages, a
// ledger only counts: receives Claim acknowledged messages before they
// ask, and Count books what they got, unchecked. A ledger is used one way
// or the other, never both.
type Ledger struct {
	mu      sync.Mutex
	copies  int
	acked   []bool
	seen    []uint8 // per seq and copy: arrivals, saturating at 255
	pending int     // acknowledged copies not yet seen
	nacked  int     // acknowledged sends
	arrived int64   // distinct copies seen
	unknown int64   // arrivals of sequence numbers never handed out
	dups    int64
	expect  func(seq uint64, copy int) bool // nil: every copy
	// Counting, per copy: messages claimed by receives, and counted.
	claimed, counted []int
	wake             chan struct{} // closed by the next Ack, for Claim
}

// NewLedger returns a ledger expecting each message in copies places.
func NewLedger(copies int) *Ledger {
	return &Ledger{copies: max(copies, 1)}
}

// NewFilteredLedger returns a ledger of copies places in which copy c of
// message seq is expected only where expect(seq, c): a fan-out whose
// subscriptions' filter policies keep some copies back. A copy that
// arrives where none was expected counts as a duplicate, once per arrival.
// It checks and never counts (Claim, Count): its scenarios do not run
// against the ceiling.
func NewFilteredLedger(copies int, expect func(seq uint64, copy int) bool) *Ledger {
	return &Ledger{copies: max(copies, 1), expect: expect}
}

func (l *Ledger) expected(seq uint64, copy int) bool { return l.expect == nil || l.expect(seq, copy) }

// Next hands out the next sequence number, before its message is sent.
func (l *Ledger) Next() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	seq := uint64(len(l.acked))
	l.acked = append(l.acked, false)
	for range l.copies {
		l.seen = append(l.seen, 0)
	}
	return seq
}

// Issued is how many sequence numbers were handed out.
func (l *Ledger) Issued() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// Ack records that the broker acknowledged the send of seq.
func (l *Ledger) Ack(seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq >= uint64(len(l.acked)) || l.acked[seq] {
		return
	}
	l.acked[seq] = true
	l.nacked++
	if l.wake != nil {
		close(l.wake)
		l.wake = nil
	}
	for c := range l.copies {
		if l.seen[int(seq)*l.copies+c] == 0 && l.expected(seq, c) {
			l.pending++
		}
	}
}

// Arrival is what a ledger made of one received copy.
type Arrival int

// Arrival outcomes.
const (
	First     Arrival = iota // the first time this copy arrived
	Duplicate                // it had arrived before
	Unknown                  // no such message was sent
)

// Seen records the arrival of seq in place copy (0 ≤ copy < copies).
func (l *Ledger) Seen(seq uint64, copy int) Arrival {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq >= uint64(len(l.acked)) || copy < 0 || copy >= l.copies {
		l.unknown++
		return Unknown
	}
	if !l.expected(seq, copy) {
		l.dups++
		return Duplicate
	}
	i := int(seq)*l.copies + copy
	if l.seen[i] < 255 {
		l.seen[i]++
	}
	if l.seen[i] > 1 {
		l.dups++
		return Duplicate
	}
	l.arrived++
	if l.acked[seq] {
		l.pending--
	}
	return First
}

// Stray records the arrival of a body that is none of this ledger's
// messages: another run's, or one the broker mangled.
func (l *Ledger) Stray() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unknown++
}

// Pending is how many acknowledged copies have not arrived yet.
func (l *Ledger) Pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pending
}

// Counts is how many sends were acknowledged and how many distinct copies
// arrived so far, without counting the whole book as Tally does.
func (l *Ledger) Counts() (acked int, received int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nacked, l.arrived
}

// Claim waits until place copy has acknowledged messages that no receive
// claimed yet, or ctx ends, and claims up to n of them; it returns how
// many (0 when ctx ended). A receive from the ceiling, which would answer
// at once whatever was sent, claims first, as a long poll of a broker
// would wait for a message before it answered.
func (l *Ledger) Claim(ctx context.Context, copy, n int) int {
	for {
		l.mu.Lock()
		if copy < 0 || copy >= l.copies {
			l.mu.Unlock()
			return 0
		}
		l.counting()
		if avail := l.nacked - l.claimed[copy]; avail > 0 {
			k := min(n, avail)
			l.claimed[copy] += k
			l.mu.Unlock()
			return k
		}
		if l.wake == nil {
			l.wake = make(chan struct{})
		}
		wake := l.wake
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return 0
		case <-wake:
		}
	}
}

// Unclaim gives back n messages of copy that a failed receive claimed.
func (l *Ledger) Unclaim(copy, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if copy >= 0 && copy < l.copies {
		l.counting()
		l.claimed[copy] = max(l.claimed[copy]-n, 0)
	}
}

// Count books the arrival in place copy of n messages that carry no
// sequence number, each for an acknowledged message not counted yet, and
// returns how many it booked: never more than were acknowledged.
func (l *Ledger) Count(copy, n int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if copy < 0 || copy >= l.copies {
		l.unknown += int64(n)
		return 0
	}
	l.counting()
	k := max(min(n, l.nacked-l.counted[copy]), 0)
	l.counted[copy] += k
	l.arrived += int64(k)
	l.pending -= k
	return k
}

// counting makes the counters of a counting ledger; l.mu is held.
func (l *Ledger) counting() {
	if l.claimed == nil {
		l.claimed, l.counted = make([]int, l.copies), make([]int, l.copies)
	}
}

// Tally is a ledger's account.
type Tally struct {
	Issued   int   // sequence numbers handed out
	Acked    int   // sends the broker acknowledged
	Received int64 // distinct copies that arrived
	Missing  int64 // acknowledged copies that never arrived
	Dups     int64 // arrivals beyond the first, or of a copy not expected at all
	Unknown  int64 // arrivals of messages never sent
}

// Tally counts the ledger.
func (l *Ledger) Tally() Tally {
	l.mu.Lock()
	defer l.mu.Unlock()
	// arrived is the copies seen, or counted.
	return Tally{Issued: len(l.acked), Acked: l.nacked, Received: l.arrived, Missing: int64(l.pending), Dups: l.dups, Unknown: l.unknown}
}

// Order checks that the messages of each group arrive in the order they
// were sent. Call Observe for the first arrival of each message only (a
// redelivery is the ledger's business), in the order the broker handed
// them out: for a FIFO queue, before deleting them.
type Order struct {
	mu    sync.Mutex
	last  map[string]uint64 // next index expected at the least, per group
	wrong int64
}

// NewOrder returns an empty order checker.
func NewOrder() *Order { return &Order{last: make(map[string]uint64)} }

// Observe records that the message at position idx of group arrived and
// reports whether it came in order: after every earlier arrival of its
// group with a smaller position. A gap is not a reordering by itself (the
// missing message may be lost, which the ledger reports); the late
// arrival of the message that filled it is.
func (o *Order) Observe(group string, idx uint64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	next, ok := o.last[group]
	if ok && idx < next {
		o.wrong++
		return false
	}
	o.last[group] = idx + 1
	return true
}

// OutOfOrder is how many arrivals came after a later message of their group.
func (o *Order) OutOfOrder() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.wrong
}
