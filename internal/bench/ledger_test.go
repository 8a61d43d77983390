package bench

import (
	"context"
	"testing"
)

// op is one step of a ledger story: send (and maybe ack) a message, or
// receive seq as copy.
type op struct {
	send  bool
	ack   bool
	seq   uint64
	copy  int
	stray bool
}

func sent(acked bool) op           { return op{send: true, ack: acked} }
func got(seq uint64) op            { return op{seq: seq} }
func gotCopy(seq uint64, c int) op { return op{seq: seq, copy: c} }

func TestLedger(t *testing.T) {
	cases := []struct {
		name    string
		copies  int
		ops     []op
		want    Tally
		pending int
	}{
		{"all arrive once", 1, []op{sent(true), sent(true), got(1), got(0)},
			Tally{Issued: 2, Acked: 2, Received: 2}, 0},
		{"a loss", 1, []op{sent(true), sent(true), sent(true), got(0), got(2)},
			Tally{Issued: 3, Acked: 3, Received: 2, Missing: 1}, 1},
		{"a duplicate", 1, []op{sent(true), sent(true), got(0), got(1), got(0)},
			Tally{Issued: 2, Acked: 2, Received: 2, Dups: 1}, 0},
		{"arrival before the ack", 1, []op{sent(false), got(0), {ack: true, seq: 0, send: false, copy: -1}},
			Tally{Issued: 1, Acked: 1, Received: 1}, 0},
		{"a failed send that never came is no loss", 1, []op{sent(false), sent(true), got(1)},
			Tally{Issued: 2, Acked: 1, Received: 1}, 0},
		{"a failed send that came twice is a duplicate", 1, []op{sent(false), got(0), got(0)},
			Tally{Issued: 1, Received: 1, Dups: 1}, 0},
		{"a body never sent", 1, []op{sent(true), got(0), got(7), {stray: true}},
			Tally{Issued: 1, Acked: 1, Received: 1, Unknown: 2}, 0},
		{"fan-out: every copy once", 3, []op{sent(true), gotCopy(0, 0), gotCopy(0, 2), gotCopy(0, 1)},
			Tally{Issued: 1, Acked: 1, Received: 3}, 0},
		{"fan-out: a copy lost, another twice", 3, []op{sent(true), gotCopy(0, 0), gotCopy(0, 0), gotCopy(0, 1)},
			Tally{Issued: 1, Acked: 1, Received: 2, Missing: 1, Dups: 1}, 1},
		{"fan-out: a copy number out of range", 2, []op{sent(true), gotCopy(0, 2)},
			Tally{Issued: 1, Acked: 1, Missing: 2, Unknown: 1}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkStory(t, NewLedger(tc.copies), tc.ops, tc.want, tc.pending)
		})
	}
}

// checkStory plays ops on l and checks the tally and the pending copies
// it ends with.
func checkStory(t *testing.T, l *Ledger, ops []op, want Tally, pending int) {
	t.Helper()
	for _, o := range ops {
		switch {
		case o.stray:
			l.Stray()
		case o.send:
			seq := l.Next()
			if o.ack {
				l.Ack(seq)
			}
		case o.copy == -1:
			l.Ack(o.seq)
		default:
			l.Seen(o.seq, o.copy)
		}
	}
	if got := l.Tally(); got != want {
		t.Errorf("tally %+v, want %+v", got, want)
	}
	if got := l.Pending(); got != pending {
		t.Errorf("pending %d, want %d", got, pending)
	}
}

func TestLedgerSeenOutcome(t *testing.T) {
	l := NewLedger(1)
	l.Ack(l.Next())
	l.Ack(5) // never issued: ignored
	for i, want := range []Arrival{First, Duplicate, Duplicate} {
		if got := l.Seen(0, 0); got != want {
			t.Errorf("arrival %d: %v, want %v", i, got, want)
		}
	}
	if got := l.Seen(1, 0); got != Unknown {
		t.Errorf("unissued: %v", got)
	}
	l.Ack(0) // a second ack changes nothing
	if got := l.Tally(); got.Acked != 1 || got.Missing != 0 || got.Dups != 2 {
		t.Errorf("tally %+v", got)
	}
}

func TestOrder(t *testing.T) {
	type obs struct {
		group string
		idx   uint64
	}
	cases := []struct {
		name  string
		seq   []obs
		wrong int64
	}{
		{"in order", []obs{{"a", 0}, {"a", 1}, {"a", 2}}, 0},
		{"groups interleaved", []obs{{"a", 0}, {"b", 0}, {"b", 1}, {"a", 1}}, 0},
		{"a gap alone is no reordering", []obs{{"a", 0}, {"a", 2}, {"a", 3}}, 0},
		{"the gap filled late is", []obs{{"a", 0}, {"a", 2}, {"a", 1}}, 1},
		{"a reordering in one group only", []obs{{"a", 1}, {"b", 5}, {"a", 0}, {"b", 6}}, 1},
		{"a group starting late is fine", []obs{{"a", 3}, {"a", 4}}, 0},
		{"everything backwards", []obs{{"a", 3}, {"a", 2}, {"a", 1}, {"a", 0}}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOrder()
			var wrong int64
			for _, ob := range tc.seq {
				if !o.Observe(ob.group, ob.idx) {
					wrong++
				}
			}
			if o.OutOfOrder() != tc.wrong || wrong != tc.wrong {
				t.Errorf("out of order %d (returned %d), want %d", o.OutOfOrder(), wrong, tc.wrong)
			}
		})
	}
}

// TestLedgerCounting is a counting ledger's story, as the ceiling's
// receives tell it: claims never exceed the acknowledged messages of a
// copy, counts never exceed them either, and what is counted arrived.
func TestLedgerCounting(t *testing.T) {
	type step struct {
		ack     int // acknowledge this many new messages
		claim   int // or claim up to this many of copy (want: got)
		count   int // or count this many arrivals in copy (want: got)
		unclaim int // or give back this many claims of copy
		copy    int
		want    int
	}
	cases := []struct {
		name    string
		copies  int
		steps   []step
		tally   Tally
		pending int
	}{
		{"a claim takes what was acknowledged, at most n", 1,
			[]step{{ack: 3}, {claim: 10, want: 3}, {count: 10, want: 3}},
			Tally{Issued: 3, Acked: 3, Received: 3}, 0},
		{"claims share out the acknowledged", 1,
			[]step{{ack: 25}, {claim: 10, want: 10}, {claim: 10, want: 10}, {claim: 10, want: 5},
				{count: 10, want: 10}, {count: 10, want: 10}},
			Tally{Issued: 25, Acked: 25, Received: 20, Missing: 5}, 5},
		{"a count beyond the acknowledged books none", 1,
			[]step{{ack: 2}, {count: 10, want: 2}, {count: 10, want: 0}},
			Tally{Issued: 2, Acked: 2, Received: 2}, 0},
		{"a failed receive gives its claim back", 1,
			[]step{{ack: 4}, {claim: 10, want: 4}, {unclaim: 4}, {claim: 10, want: 4}, {count: 10, want: 4}},
			Tally{Issued: 4, Acked: 4, Received: 4}, 0},
		{"copies are counted apart", 2,
			[]step{{ack: 5}, {claim: 10, copy: 1, want: 5}, {count: 10, copy: 1, want: 5},
				{claim: 10, copy: 0, want: 5}, {count: 3, copy: 0, want: 3}},
			Tally{Issued: 5, Acked: 5, Received: 8, Missing: 2}, 2},
		{"a copy out of range", 1,
			[]step{{ack: 1}, {count: 2, copy: 1, want: 0}},
			Tally{Issued: 1, Acked: 1, Missing: 1, Unknown: 2}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLedger(tc.copies)
			for i, s := range tc.steps {
				got := 0
				switch {
				case s.ack > 0:
					for range s.ack {
						l.Ack(l.Next())
					}
					continue
				case s.claim > 0:
					got = l.Claim(context.Background(), s.copy, s.claim)
				case s.count > 0:
					got = l.Count(s.copy, s.count)
				case s.unclaim > 0:
					l.Unclaim(s.copy, s.unclaim)
					continue
				}
				if got != s.want {
					t.Errorf("step %d %+v: %d, want %d", i, s, got, s.want)
				}
			}
			if got := l.Tally(); got != tc.tally {
				t.Errorf("tally %+v, want %+v", got, tc.tally)
			}
			if got := l.Pending(); got != tc.pending {
				t.Errorf("pending %d, want %d", got, tc.pending)
			}
		})
	}
}

// TestLedgerClaimWaits: a claim with nothing acknowledged to claim waits
// for the next Ack, as a long poll waits for a send, and gives up with
// its context.
func TestLedgerClaimWaits(t *testing.T) {
	l := NewLedger(1)
	got := make(chan int)
	go func() { got <- l.Claim(context.Background(), 0, 10) }()
	seq := l.Next()
	l.Ack(seq)
	if n := <-got; n != 1 {
		t.Errorf("claimed %d after one ack, want 1", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { got <- l.Claim(ctx, 0, 10) }()
	cancel()
	if n := <-got; n != 0 {
		t.Errorf("claimed %d with nothing acknowledged and the context ended, want 0", n)
	}
}
