package embedded

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
	"github.com/ferrymq/ferry/internal/testwait"
)

// storeModes runs fn on disk and in memory (where the message records are
// in the table, bodies.go).
func storeModes(t *testing.T, fn func(t *testing.T, memory bool)) {
	for _, memory := range []bool{false, true} {
		name := "disk"
		if memory {
			name = "memory"
		}
		t.Run(name, func(t *testing.T) { fn(t, memory) })
	}
}

// modeOptions are the options of a store on disk in dir, or in memory.
func modeOptions(memory bool, dir string, clk clock.Clock) Options {
	if memory {
		return Options{InMemory: true, Clock: clk}
	}
	return Options{Dir: dir, Clock: clk}
}

// Sends racing purges: whatever the interleaving, the index and the store
// agree, during the run and after a restart (on disk).
func TestPurgeRacingSends(t *testing.T) { storeModes(t, testPurgeRacingSends) }

func testPurgeRacingSends(t *testing.T, memory bool) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, modeOptions(memory, dir, clk))
	mustCreate(t, e, engine.Queue{Name: "q", Settings: settings()})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msgs := make([]engine.NewMessage, 3)
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
	ids := storedMessageIDs(t, e, "q")
	stats := mustStats(t, e, "q")
	if int(stats.Visible) != len(ids) {
		t.Fatalf("stats %+v, %d stored", stats, len(ids))
	}
	if memory {
		mustVerify(t, e)
		return
	}
	e = reopen(t, e, dir, clk)
	if got := mustStats(t, e, "q"); got != stats {
		t.Fatalf("after restart %+v, before %+v", got, stats)
	}
	storedMessageIDs(t, e, "q")
}

// A purge or queue delete landing between a send's seq allocation and its
// commit: the send's records must not outlive the purge in the store.
func TestSendCommitAfterPurge(t *testing.T) { storeModes(t, testSendCommitAfterPurge) }

func testSendCommitAfterPurge(t *testing.T, memory bool) {
	ctx := context.Background()
	for _, purge := range []bool{true, false} {
		clk := clock.NewFake(enginetest.Start)
		dir := t.TempDir()
		e := openTest(t, modeOptions(memory, dir, clk))
		mustCreate(t, e, engine.Queue{Name: "q", Settings: settings()})
		mustSend(t, e, "q", engine.NewMessage{Body: "before"})
		q, err := e.lookup(acct, "q")
		if err != nil {
			t.Fatal(err)
		}
		e.beforeSendCommit = func() {
			e.beforeSendCommit = nil
			var err error
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
			if s := mustStats(t, e, "q"); s != (engine.Stats{}) {
				t.Fatalf("stats %+v", s)
			}
			mustSend(t, e, "q", engine.NewMessage{Body: "after"})
		} else if !errors.Is(err, engine.ErrQueueNotFound) {
			t.Fatalf("send across a queue delete: %v", err)
		}
		want := 0
		if purge {
			want = 1
		}
		if n := countMsgRecords(t, e) + tableRecords(q); n != want {
			t.Fatalf("purge %v: %d message records, want %d", purge, n, want)
		}
		if memory {
			mustVerify(t, e)
			continue
		}
		e = reopen(t, e, dir, clk)
		if n := countMsgRecords(t, e); n != want {
			t.Fatalf("purge %v: %d message records after restart, want %d", purge, n, want)
		}
	}
}

// Sends racing the queue's delete leave nothing behind.
func TestDeleteQueueRacingSends(t *testing.T) { storeModes(t, testDeleteQueueRacingSends) }

func testDeleteQueueRacingSends(t *testing.T, memory bool) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, modeOptions(memory, dir, clk))
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
				msgs := make([]engine.NewMessage, 3)
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
		// The delete lands at once, or after a few sends, or many.
		testwait.Eventually(t, "sends under way", func() bool { return sent.Load() >= int64(round%4*round) })
		if err := e.DeleteQueue(ctx, acct, "q"); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if n := tableRecords(q); n != 0 {
			t.Fatalf("round %d: %d records left in the table of the deleted queue", round, n)
		}
		clk.Advance(engine.RecreateDelay)
	}
	if memory {
		mustVerify(t, e)
		return
	}
	e = reopen(t, e, dir, clk)
	if n := countMsgRecords(t, e); n != 0 {
		t.Fatalf("%d message records left by deleted queues", n)
	}
}
