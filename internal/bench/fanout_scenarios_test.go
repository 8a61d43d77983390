package bench

import "testing"

// TestFilteredLedger books fan-outs to three queues of which the first
// filters (fanoutSpec.expects): an even publish is due in all three, an
// odd one in the last two only, and a copy in the filtered queue of an
// odd publish is wrong.
func TestFilteredLedger(t *testing.T) {
	f := fanoutSpec{queues: 3, filtered: 1}
	cases := []struct {
		name    string
		ops     []op
		want    Tally
		pending int
	}{
		{"every expected copy once", []op{sent(true), sent(true), gotCopy(0, 0), gotCopy(0, 1), gotCopy(0, 2), gotCopy(1, 1), gotCopy(1, 2)},
			Tally{Issued: 2, Acked: 2, Received: 5}, 0},
		{"a filtered copy is not missing", []op{sent(true), sent(true), gotCopy(0, 0), gotCopy(0, 1), gotCopy(0, 2), gotCopy(1, 2)},
			Tally{Issued: 2, Acked: 2, Received: 4, Missing: 1}, 1},
		{"a copy the filter excludes arrives", []op{sent(true), sent(true), gotCopy(1, 0), gotCopy(1, 1), gotCopy(1, 2), gotCopy(1, 0)},
			Tally{Issued: 2, Acked: 2, Received: 2, Missing: 3, Dups: 2}, 3},
		{"an expected copy twice", []op{sent(true), gotCopy(0, 0), gotCopy(0, 0), gotCopy(0, 1), gotCopy(0, 2)},
			Tally{Issued: 1, Acked: 1, Received: 3, Dups: 1}, 0},
		{"an excluded copy before the ack", []op{sent(false), sent(false), gotCopy(1, 0), {seq: 1, copy: -1}, gotCopy(1, 1), gotCopy(1, 2)},
			Tally{Issued: 2, Acked: 1, Received: 2, Dups: 1}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkStory(t, NewFilteredLedger(f.queues, f.expects), tc.ops, tc.want, tc.pending)
		})
	}
}

// TestFanoutSpecCopies: copies agrees with expects for both kinds of
// publish.
func TestFanoutSpecCopies(t *testing.T) {
	f := fanoutSpec{queues: manyQueues, filtered: manyFiltered}
	for seq := range uint64(4) {
		n := 0
		for q := range f.queues {
			if f.expects(seq, q) {
				n++
			}
		}
		if n != f.copies(seq) {
			t.Errorf("seq %d: %d queues expect it, copies says %d", seq, n, f.copies(seq))
		}
	}
	if f.copies(0) != 50 || f.copies(1) != 30 {
		t.Errorf("copies %d and %d, want 50 and 30", f.copies(0), f.copies(1))
	}
}
