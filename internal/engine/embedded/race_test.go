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

// Sends racing purges: whatever the interleaving, the index and the store
// agree, during the run and after a restart.
func TestPurgeRacingSends(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, Options{Dir: dir, Clock: clk})
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
	e = reopen(t, e, dir, clk)
	if got := mustStats(t, e, "q"); got != stats {
		t.Fatalf("after restart %+v, before %+v", got, stats)
	}
	storedMessageIDs(t, e, "q")
}

// A purge or queue delete landing between a send's seq allocation and its
// commit: the send's records must not outlive the purge in the store.
func TestSendCommitAfterPurge(t *testing.T) {
	ctx := context.Background()
	for _, purge := range []bool{true, false} {
		clk := clock.NewFake(enginetest.Start)
		dir := t.TempDir()
		e := openTest(t, Options{Dir: dir, Clock: clk})
		mustCreate(t, e, engine.Queue{Name: "q", Settings: settings()})
		mustSend(t, e, "q", engine.NewMessage{Body: "before"})
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
		_, err := e.Send(ctx, acct, "q", []engine.NewMessage{{Body: "racing"}, {Body: "racing"}})
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
		if n := countMsgRecords(t, e); n != want {
			t.Fatalf("purge %v: %d message records, want %d", purge, n, want)
		}
		e = reopen(t, e, dir, clk)
		if n := countMsgRecords(t, e); n != want {
			t.Fatalf("purge %v: %d message records after restart, want %d", purge, n, want)
		}
	}
}

// Sends racing the queue's delete leave nothing behind.
func TestDeleteQueueRacingSends(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, Options{Dir: dir, Clock: clk})
	for round := range 20 {
		mustCreate(t, e, engine.Queue{Name: "q", Settings: settings()})
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
		clk.Advance(engine.RecreateDelay)
	}
	e = reopen(t, e, dir, clk)
	if n := countMsgRecords(t, e); n != 0 {
		t.Fatalf("%d message records left by deleted queues", n)
	}
}
