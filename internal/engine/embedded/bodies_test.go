package embedded

import (
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// tableRecords counts the records in q's table (none on disk).
func tableRecords(q *queue) int {
	q.bodies.mu.RLock()
	defer q.bodies.mu.RUnlock()
	return len(q.bodies.m)
}

// mustVerify checks that an in-memory store's tables hold the records of
// exactly the indexed messages, and Pebble none.
func mustVerify(t *testing.T, e *Engine) {
	t.Helper()
	if err := verifyStore(e); err != nil {
		t.Fatal(err)
	}
	var inPebble int
	if err := e.scan([]byte{prefixMsg}, []byte{prefixMsg + 1}, func(it *pebble.Iterator) (bool, error) {
		if _, _, kind, ok := parseMsgKey(it.Key()); ok && kind == kindBody {
			inPebble++
		}
		return false, nil
	}); err != nil {
		t.Fatal(err)
	}
	if inPebble != 0 {
		t.Fatalf("%d message records in Pebble of an in-memory store", inPebble)
	}
}

// The table's seq order, which peeks walk, through puts out of order,
// deletions (past a compaction) and purges.
func TestBodyTableOrder(t *testing.T) {
	rec := []byte("r")
	for _, tc := range []struct {
		name  string
		puts  []uint64
		drops []uint64
		below uint64 // a purge below it, 0 for none
		want  []uint64
	}{
		{"ascending", []uint64{1, 2, 3}, nil, 0, []uint64{1, 2, 3}},
		{"a concurrent send's, late", []uint64{1, 4, 5, 2, 3}, nil, 0, []uint64{1, 2, 3, 4, 5}},
		{"a repeat", []uint64{1, 2, 2}, nil, 0, []uint64{1, 2}},
		{"deleted", []uint64{1, 2, 3}, []uint64{2}, 0, []uint64{1, 3}},
		{"purged", []uint64{1, 2, 3, 7}, nil, 3, []uint64{3, 7}},
		{"compacted", seqRange(1, 200), seqRange(1, 190), 0, seqRange(190, 200)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var bt bodyTable
			for _, s := range tc.puts {
				bt.put(s, rec)
			}
			for _, s := range tc.drops {
				bt.drop(s)
			}
			if tc.below != 0 {
				bt.dropBelow(tc.below)
			}
			// Walked with hints, and with searches only.
			var got, searched []uint64
			for seq, _, i, ok := bt.after(0, -1); ok; seq, _, i, ok = bt.after(seq+1, i+1) {
				got = append(got, seq)
			}
			for seq, _, _, ok := bt.after(0, -1); ok; seq, _, _, ok = bt.after(seq+1, -1) {
				searched = append(searched, seq)
			}
			if !slices.Equal(got, searched) {
				t.Fatalf("walked %v with hints, %v without", got, searched)
			}
			// A stale hint is searched past.
			if seq, _, _, ok := bt.after(0, len(bt.order)); len(tc.want) > 0 && (!ok || seq != tc.want[0]) {
				t.Fatalf("after a stale hint: %d, %v", seq, ok)
			}
			if !slices.Equal(got, tc.want) || len(bt.m) != len(tc.want) {
				t.Fatalf("walked %v (%d records), want %v", got, len(bt.m), tc.want)
			}
			if len(bt.order) > 2*len(bt.m)+64 {
				t.Fatalf("order holds %d seqs for %d records", len(bt.order), len(bt.m))
			}
		})
	}
}

// seqRange is from, from+1, …, to-1.
func seqRange(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}
