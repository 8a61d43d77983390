package enginetest

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

// The conditional writes of records (RecordStore.InsertRecord, SwapRecord,
// DeleteRecordIf) and the sequences of SNS FIFO topics (Sequencer), alone
// and under callers racing each other.

var conditionalTests = []test{
	{"RecordConditional", testRecordConditional},
	{"RecordConditionalConcurrent", testRecordConditionalConcurrent},
	{"Sequence", testSequence},
	{"SequenceRelease", testSequenceRelease},
	{"SequenceConcurrent", testSequenceConcurrent},
}

// wantWrite checks the outcome of a conditional write.
func (h *H) wantWrite(what string, got bool, err error, want bool) {
	h.Helper()
	if err != nil || got != want {
		h.Fatalf("%s = %v, %v; want %v", what, got, err, want)
	}
}

func testRecordConditional(h *H) {
	putTestRecords(h)
	b := func(s string) []byte { return []byte(s) }
	ok, err := h.B.InsertRecord(h.Ctx, "topic", "n", b("new"))
	h.wantWrite("InsertRecord(topic/n)", ok, err, true)
	ok, err = h.B.InsertRecord(h.Ctx, "topic", "n", b("other"))
	h.wantWrite("InsertRecord(topic/n) again", ok, err, false)
	ok, err = h.B.InsertRecord(h.Ctx, "topic", "a", b("over a put"))
	h.wantWrite("InsertRecord over a PutRecord", ok, err, false)
	h.WantRecord("topic", "n", b("new"))
	h.WantRecord("topic", "a", b("1"))
	// A kind whose name starts with another's, and a key of another kind.
	ok, err = h.B.InsertRecord(h.Ctx, "topics", "n", b("its own"))
	h.wantWrite("InsertRecord(topics/n)", ok, err, true)
	ok, err = h.B.InsertRecord(h.Ctx, "sub", "x", b("its own"))
	h.wantWrite("InsertRecord(sub/x)", ok, err, true)

	for _, c := range []struct {
		what       string
		key        string
		old, value string
		want       bool
		after      string
	}{
		{"a stale value", "n", "old", "lost", false, "new"},
		{"a prefix of the value", "n", "ne", "lost", false, "new"},
		{"the value", "n", "new", "newer", true, "newer"},
		{"the value before", "n", "new", "lost", false, "newer"},
		{"a PutRecord's value", "b", "two", "2'", true, "2'"},
		{"the same value again", "b", "2'", "2'", true, "2'"},
	} {
		ok, err := h.B.SwapRecord(h.Ctx, "topic", c.key, b(c.old), b(c.value))
		h.wantWrite("SwapRecord with "+c.what, ok, err, c.want)
		h.WantRecord("topic", c.key, b(c.after))
	}
	ok, err = h.B.SwapRecord(h.Ctx, "topic", "missing", nil, b("x"))
	h.wantWrite("SwapRecord of no record", ok, err, false)
	h.WantRecord("topic", "missing", nil)
	// The empty value is a value: nil or empty, it is compared as empty.
	ok, err = h.B.SwapRecord(h.Ctx, "sub", "é", nil, b("filled"))
	h.wantWrite("SwapRecord of an empty value", ok, err, true)
	ok, err = h.B.SwapRecord(h.Ctx, "sub", "é", b("filled"), []byte{})
	h.wantWrite("SwapRecord to an empty value", ok, err, true)
	h.WantRecord("sub", "é", []byte{})

	ok, err = h.B.DeleteRecordIf(h.Ctx, "topic", "n", b("new"))
	h.wantWrite("DeleteRecordIf with a stale value", ok, err, false)
	h.WantRecord("topic", "n", b("newer"))
	ok, err = h.B.DeleteRecordIf(h.Ctx, "topic", "n", b("newer"))
	h.wantWrite("DeleteRecordIf with the value", ok, err, true)
	h.WantRecord("topic", "n", nil)
	ok, err = h.B.DeleteRecordIf(h.Ctx, "topic", "n", b("newer"))
	h.wantWrite("DeleteRecordIf of no record", ok, err, false)
	// Once deleted, a record can be inserted again.
	ok, err = h.B.InsertRecord(h.Ctx, "topic", "n", b("again"))
	h.wantWrite("InsertRecord after DeleteRecordIf", ok, err, true)
	h.WantRecords("topic", "a=1", "b=2'", "n=again")
	h.WantRecords("topics", "n=its own", "x=a kind whose name starts with another's")
}

// testRecordConditionalConcurrent: callers that insert one record at once
// insert it once, and read-modify-write loops on one record, racing, lose
// no change.
func testRecordConditionalConcurrent(h *H) {
	const callers, rounds = 6, 15
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		inserted []int
		errs     []error
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	start := make(chan struct{})
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ok, err := h.B.InsertRecord(h.Ctx, "counter", "c", []byte(strconv.Itoa(i)))
			if err != nil {
				fail(err)
				return
			}
			if ok {
				mu.Lock()
				inserted = append(inserted, i)
				mu.Unlock()
			}
			for range rounds {
				for {
					v, found, err := h.B.GetRecord(h.Ctx, "counter", "n")
					if err != nil {
						fail(err)
						return
					}
					if !found {
						ok, err = h.B.InsertRecord(h.Ctx, "counter", "n", []byte("1"))
					} else {
						n, _ := strconv.Atoi(string(v))
						ok, err = h.B.SwapRecord(h.Ctx, "counter", "n", v, []byte(strconv.Itoa(n+1)))
					}
					if err != nil {
						fail(err)
						return
					}
					if ok {
						break
					}
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(errs) > 0 {
		h.Fatal(errs[0])
	}
	if len(inserted) != 1 {
		h.Fatalf("%d callers inserted counter/c at once: %v; want exactly one", len(inserted), inserted)
	}
	h.WantRecord("counter", "c", []byte(strconv.Itoa(inserted[0])))
	h.WantRecord("counter", "n", []byte(strconv.Itoa(callers*rounds)))
}

// claim takes numbers of a sequence, failing the test on an error.
func (h *H) claim(name string, claims ...engine.SequenceClaim) []engine.SequenceTicket {
	h.Helper()
	out, err := h.B.Sequence(h.Ctx, name, h.Clk.Now(), claims)
	if err != nil {
		h.Fatalf("Sequence(%s): %v", name, err)
	}
	if len(out) != len(claims) {
		h.Fatalf("Sequence(%s): %d tickets for %d claims", name, len(out), len(claims))
	}
	return out
}

// wantFresh checks that a ticket numbers its own claim, after last.
func (h *H) wantFresh(what string, tk engine.SequenceTicket, c engine.SequenceClaim, last string) {
	h.Helper()
	if tk.Duplicate || tk.ID != c.ID || len(tk.Number) != 22 || tk.Number <= last {
		h.Fatalf("%s: ticket %+v; want a number above %q for %s", what, tk, last, c.ID)
	}
}

func testSequence(h *H) {
	sc := func(key, id string) engine.SequenceClaim { return engine.SequenceClaim{Key: key, ID: id} }
	stamp := strconv.FormatInt(h.Clk.Now().UnixMicro(), 10)
	got := h.claim("t1", sc("a", "a1"), sc("b", "b1"), sc("c", "c1"))
	h.wantFresh("first claim", got[0], sc("a", "a1"), "")
	if got[0].Number != stamp+"000000" {
		h.Fatalf("first number %s; want the clock's microseconds %s and 000000", got[0].Number, stamp)
	}
	h.wantFresh("second claim", got[1], sc("b", "b1"), got[0].Number)
	h.wantFresh("third claim", got[2], sc("c", "c1"), got[1].Number)
	aNumber, last := got[0].Number, got[2].Number

	// A key claimed again is a duplicate, in a call with fresh keys too,
	// which are numbered after the earlier ones.
	h.Clk.Advance(time.Minute)
	got = h.claim("t1", sc("d", "d1"), sc("a", "a2"), sc("e", "e1"))
	h.wantFresh("a claim beside a duplicate", got[0], sc("d", "d1"), last)
	for _, tk := range []engine.SequenceTicket{got[1], h.claim("t1", sc("a", "a3"))[0]} {
		if !tk.Duplicate || tk.ID != "a1" || tk.Number != aNumber {
			h.Fatalf("a claimed again: %+v; want a duplicate of a1, %s", tk, aNumber)
		}
	}
	h.wantFresh("a claim after a duplicate", got[2], sc("e", "e1"), got[0].Number)
	last = got[2].Number

	// Another sequence knows nothing of these keys, and numbers on its own.
	other := h.claim("t2", sc("a", "x1"))
	h.wantFresh("the same key in another sequence", other[0], sc("a", "x1"), "")

	// The window runs from the claim that took the key: a's ends four
	// minutes from now, d's five.
	h.Clk.Advance(4*time.Minute - time.Millisecond)
	if tk := h.claim("t1", sc("a", "a4"))[0]; !tk.Duplicate || tk.ID != "a1" {
		h.Fatalf("a just before its window ends: %+v; want a duplicate of a1", tk)
	}
	h.Clk.Advance(time.Millisecond)
	tk := h.claim("t1", sc("a", "a5"))[0]
	h.wantFresh("a once its window ended", tk, sc("a", "a5"), last)
	if dup := h.claim("t1", sc("a", "a6"))[0]; dup.ID != "a5" || dup.Number != tk.Number {
		h.Fatalf("a in its new window: %+v; want a5's", dup)
	}
	if dup := h.claim("t1", sc("d", "d2"))[0]; dup.ID != "d1" {
		h.Fatalf("d within its window: %+v; want d1's", dup)
	}
	last = tk.Number

	// Numbers follow the clock when it is ahead of the sequence.
	h.Clk.Advance(time.Hour)
	tk = h.claim("t1", sc("f", "f1"))[0]
	if want := strconv.FormatInt(h.Clk.Now().UnixMicro(), 10) + "000000"; tk.Number != want {
		h.Fatalf("number an hour on: %s; want %s", tk.Number, want)
	}
	if tk.Number <= last {
		h.Fatalf("number %s after %s", tk.Number, last)
	}

	// A dropped sequence starts anew: its keys are forgotten, and no
	// other sequence's.
	h.claim("t2", sc("g", "g1"))
	if err := h.B.DropSequence(h.Ctx, "t1"); err != nil {
		h.Fatal(err)
	}
	h.wantFresh("f after a drop", h.claim("t1", sc("f", "f2"))[0], sc("f", "f2"), "")
	if dup := h.claim("t2", sc("g", "g2"))[0]; dup.ID != "g1" {
		h.Fatalf("another sequence after a drop: %+v; want g1's", dup)
	}
	if err := h.B.DropSequence(h.Ctx, "never"); err != nil {
		h.Fatalf("DropSequence of no sequence: %v", err)
	}
}

// testSequenceRelease: a released key can be claimed again, unless
// another claim holds it.
func testSequenceRelease(h *H) {
	sc := func(key, id string) engine.SequenceClaim { return engine.SequenceClaim{Key: key, ID: id} }
	got := h.claim("t", sc("a", "a1"), sc("b", "b1"))
	if err := h.B.ReleaseSequence(h.Ctx, "t", []engine.SequenceClaim{sc("a", "other"), sc("b", "b1")}); err != nil {
		h.Fatal(err)
	}
	if tk := h.claim("t", sc("a", "a2"))[0]; tk.ID != "a1" {
		h.Fatalf("a after a release by another id: %+v; want a1's", tk)
	}
	tk := h.claim("t", sc("b", "b2"))[0]
	h.wantFresh("b after its release", tk, sc("b", "b2"), got[1].Number)
	if err := h.B.ReleaseSequence(h.Ctx, "none", []engine.SequenceClaim{sc("a", "a1")}); err != nil {
		h.Fatalf("ReleaseSequence of no sequence: %v", err)
	}
}

// testSequenceConcurrent: callers claiming keys of one sequence at once,
// each key by several of them, number every key once; every other claim
// of it is answered with that one; and each caller sees its numbers grow.
func testSequenceConcurrent(h *H) {
	const callers, rounds, keys = 6, 20, 30
	type result struct {
		claim engine.SequenceClaim
		tk    engine.SequenceTicket
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		all  []result
		errs []error
	)
	start := make(chan struct{})
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			last := ""
			for r := range rounds {
				// Two claims a call: keys that other callers claim too.
				cl := []engine.SequenceClaim{
					{Key: fmt.Sprint("k", (c+r)%keys), ID: fmt.Sprint(c, "/", r, "/a")},
					{Key: fmt.Sprint("k", (c*7+r*3+1)%keys+keys), ID: fmt.Sprint(c, "/", r, "/b")},
				}
				out, err := h.B.Sequence(h.Ctx, "t", h.Clk.Now(), cl)
				if err == nil && len(out) != len(cl) {
					err = fmt.Errorf("%d tickets for %d claims", len(out), len(cl))
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				mu.Lock()
				for i := range cl {
					all = append(all, result{cl[i], out[i]})
					if !out[i].Duplicate {
						if out[i].Number <= last {
							errs = append(errs, fmt.Errorf("caller %d: number %s after %s", c, out[i].Number, last))
						}
						last = out[i].Number
					}
				}
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(errs) > 0 {
		h.Fatal(errs[0])
	}
	owner := map[string]engine.SequenceTicket{} // key → its one fresh ticket
	var numbers []string
	for _, r := range all {
		if r.tk.Duplicate {
			continue
		}
		if prev, dup := owner[r.claim.Key]; dup {
			h.Fatalf("key %s numbered twice: %+v and %+v", r.claim.Key, prev, r.tk)
		}
		if r.tk.ID != r.claim.ID {
			h.Fatalf("fresh ticket %+v for claim %+v", r.tk, r.claim)
		}
		owner[r.claim.Key] = r.tk
		numbers = append(numbers, r.tk.Number)
	}
	for _, r := range all {
		if want := owner[r.claim.Key]; r.tk.Duplicate && (r.tk.ID != want.ID || r.tk.Number != want.Number) {
			h.Fatalf("duplicate of %s answered %+v; the key's ticket is %+v", r.claim.Key, r.tk, want)
		}
	}
	slices.Sort(numbers)
	if len(slices.Compact(numbers)) != len(owner) {
		h.Fatalf("%d distinct numbers for %d keys", len(slices.Compact(numbers)), len(owner))
	}
}
