package embedded

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
	"github.com/ferrymq/ferry/internal/testwait"
)

// tableRecords counts the records in the table of an in-memory store's
// queue name.
func tableRecords(t *testing.T, e *Engine, name string) int {
	t.Helper()
	q, err := e.lookup(acct, name)
	if err != nil {
		t.Fatal(err)
	}
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

// In memory, sends racing purges leave the table holding exactly the
// indexed messages, as Pebble's range deletes do on disk
// (TestPurgeRacingSends).
func TestTablePurgeRacingSends(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, Options{InMemory: true, Clock: clk})
	mustCreate(t, e, engine.Queue{Name: "q", Settings: settings()})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msgs := []engine.NewMessage{{Body: "a"}, {Body: "b"}, {Body: "c"}}
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := e.Send(ctx, acct, "q", msgs); err != nil {
					t.Errorf("send: %v", err)
					return
				}
			}
		}()
	}
	for range 50 {
		clk.Advance(engine.PurgeInterval)
		if err := e.Purge(ctx, acct, "q"); err != nil {
			t.Fatalf("purge: %v", err)
		}
	}
	close(stop)
	wg.Wait()
	mustVerify(t, e)
	if n, s := tableRecords(t, e, "q"), mustStats(t, e, "q"); n != int(s.Visible) {
		t.Fatalf("%d records for %+v", n, s)
	}
}

// A purge or queue delete landing between a send's seq allocation and its
// commit: the send's records must not outlive it in the table
// (TestSendCommitAfterPurge).
func TestTableSendCommitAfterPurge(t *testing.T) {
	ctx := context.Background()
	for _, purge := range []bool{true, false} {
		e := openTest(t, Options{InMemory: true, Clock: clock.NewFake(enginetest.Start)})
		mustCreate(t, e, engine.Queue{Name: "q", Settings: settings()})
		mustSend(t, e, "q", engine.NewMessage{Body: "before"})
		q, err := e.lookup(acct, "q")
		if err != nil {
			t.Fatal(err)
		}
		e.beforeSendCommit = func() {
			e.beforeSendCommit = nil
			if purge {
				err = e.Purge(ctx, acct, "q")
			} else {
				err = e.DeleteQueue(ctx, acct, "q")
			}
			if err != nil {
				t.Error(err)
			}
		}
		_, err = e.Send(ctx, acct, "q", []engine.NewMessage{{Body: "racing"}, {Body: "racing"}})
		if purge {
			if err != nil {
				t.Fatalf("send across a purge: %v", err)
			}
			mustSend(t, e, "q", engine.NewMessage{Body: "after"})
			got := mustReceive(t, e, "q", engine.ReceiveRequest{Max: 10})
			if len(got) != 1 || got[0].Body != "after" {
				t.Fatalf("after the purge: %+v", got)
			}
		} else if !errors.Is(err, engine.ErrQueueNotFound) {
			t.Fatalf("send across a queue delete: %v", err)
		}
		want := 0
		if purge {
			want = 1
		}
		q.bodies.mu.RLock()
		n := len(q.bodies.m)
		q.bodies.mu.RUnlock()
		if n != want {
			t.Fatalf("purge %v: %d records, want %d", purge, n, want)
		}
		mustVerify(t, e)
	}
}

// In memory, sends racing their queue's delete leave no record behind
// (TestDeleteQueueRacingSends).
func TestTableDeleteQueueRacingSends(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, Options{InMemory: true, Clock: clk})
	for round := range 20 {
		mustCreate(t, e, engine.Queue{Name: "q", Settings: settings()})
		q, err := e.lookup(acct, "q")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var sent atomic.Int64
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				msgs := []engine.NewMessage{{Body: "a"}, {Body: "b"}, {Body: "c"}}
				for {
					_, err := e.Send(ctx, acct, "q", msgs)
					if errors.Is(err, engine.ErrQueueNotFound) {
						return
					}
					if err != nil {
						t.Errorf("send: %v", err)
						return
					}
					sent.Add(1)
				}
			}()
		}
		testwait.Eventually(t, "sends under way", func() bool { return sent.Load() >= int64(round%4*round) })
		if err := e.DeleteQueue(ctx, acct, "q"); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		q.bodies.mu.RLock()
		n := len(q.bodies.m)
		q.bodies.mu.RUnlock()
		if n != 0 {
			t.Fatalf("round %d: %d records left by the deleted queue", round, n)
		}
		clk.Advance(engine.RecreateDelay)
	}
	mustVerify(t, e)
}

// In memory, messages moved to a dead-letter queue take their records and
// stories along: the histories name them, and the source keeps nothing
// (TestHistoryRecordsFollowTheirMessages).
func TestTableDeadLetterHistories(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := openTest(t, Options{InMemory: true, Clock: clk})
	ctx := context.Background()
	mustCreate(t, e, engine.Queue{Name: "dlq", ARN: arn("dlq"), Settings: settings()})
	mustCreate(t, e, engine.Queue{Name: "src", ARN: arn("src"), Settings: redriveTo("dlq", 2)})
	sendBodies(t, e, "src", 3)
	zero := time.Duration(0)
	c := &engine.Consumer{SourceIP: "127.0.0.1", UserAgent: "test", AccessKey: "AKID"}
	for range 3 { // two receives each, then the move
		mustReceive(t, e, "src", engine.ReceiveRequest{Max: 10, Visibility: &zero, Consumer: c})
	}
	if n := tableRecords(t, e, "src"); n != 0 {
		t.Fatalf("%d records left in the source", n)
	}
	if n := tableRecords(t, e, "dlq"); n != 3 {
		t.Fatalf("%d records in the dead-letter queue, want 3", n)
	}
	hs, _, err := e.MessageHistories(ctx, acct, "dlq", "", 10)
	if err != nil || len(hs) != 3 {
		t.Fatalf("%d histories (%v)", len(hs), err)
	}
	for _, h := range hs {
		if h.MessageID == "" || len(h.Events) < 2 {
			t.Fatalf("history %+v", h)
		}
		got, ok, err := e.MessageHistory(ctx, acct, "dlq", h.MessageID)
		if err != nil || !ok || len(got.Events) != len(h.Events) {
			t.Fatalf("history of %s: %v, %v, %+v", h.MessageID, ok, err, got)
		}
	}
	mustVerify(t, e)
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
			var got []uint64
			for seq, _, ok := bt.after(0); ok; seq, _, ok = bt.after(seq + 1) {
				got = append(got, seq)
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
