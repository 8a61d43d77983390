package embedded

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
)

// Peeks and deletes by ref racing sends, receives, deletes and visibility
// changes, on a standard and a FIFO queue: every walk sees each message
// at most once and in seq order, and afterwards the index and the store
// agree, also after a restart.
func TestPeekRacing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, Options{Dir: dir, Clock: clk})
	names := []string{"q", "q.fifo"}
	for _, name := range names {
		s := settings()
		s.FIFO = name == "q.fifo"
		mustCreate(t, e, engine.Queue{Name: name, Settings: s})
	}
	const rounds = 60
	var wg sync.WaitGroup
	run := func(fn func(name string, i int) error) {
		for _, name := range names {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range rounds {
					if err := fn(name, i); err != nil {
						t.Errorf("%s: %v", name, err)
						return
					}
				}
			}()
		}
	}
	// Senders.
	run(func(name string, i int) error {
		msgs := make([]engine.NewMessage, 4)
		for j := range msgs {
			b := fmt.Sprint(i, "-", j)
			msgs[j] = engine.NewMessage{Body: b, MessageGroupID: fmt.Sprint("g", j%3), DeduplicationID: b}
		}
		_, err := e.Send(ctx, acct, name, msgs)
		return err
	})
	// Receivers: delete one of two, hand the other back.
	run(func(name string, i int) error {
		msgs, err := e.Receive(ctx, acct, name, engine.ReceiveRequest{Max: 3})
		if err != nil {
			return err
		}
		for k, m := range msgs {
			if k%2 == 0 {
				_, err = e.Delete(ctx, acct, name, []string{m.ReceiptHandle})
			} else {
				_, err = e.ChangeVisibility(ctx, acct, name, []engine.VisibilityChange{{ReceiptHandle: m.ReceiptHandle}})
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	// Walkers.
	run(func(name string, i int) error {
		req := engine.PeekRequest{Limit: 1 + i%9}
		if i%3 == 0 {
			req.Filter.BodyContains = "-1"
			req.MaxScan = 5
		}
		var prev uint64
		for pages := 0; ; pages++ {
			p, err := e.Peek(ctx, acct, name, req)
			if err != nil {
				return err
			}
			for _, m := range p.Messages {
				seq, ok := parseRef(m.Ref)
				if !ok || seq <= prev {
					return fmt.Errorf("ref %q after %d in a walk", m.Ref, prev)
				}
				prev = seq
			}
			if p.Next == "" {
				return nil
			}
			if pages > 10000 {
				return fmt.Errorf("the walk does not end")
			}
			req.After = p.Next
		}
	})
	// Deleters by ref: the first page's every other message.
	run(func(name string, i int) error {
		p, err := e.Peek(ctx, acct, name, engine.PeekRequest{Limit: 6})
		if err != nil {
			return err
		}
		var refs []string
		for k, m := range p.Messages {
			if k%2 == 1 {
				refs = append(refs, m.Ref)
			}
		}
		_, err = e.DeleteRefs(ctx, acct, name, refs)
		return err
	})
	// The clock moves: visibility runs out.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range rounds {
			clk.Advance(10 * time.Second)
		}
	}()
	wg.Wait()
	if err := verifyStore(e); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, name := range names {
		s := mustStats(t, e, name)
		n := len(storedMessageIDs(t, e, name))
		if int(s.Visible+s.NotVisible+s.Delayed) != n {
			t.Fatalf("%s: stats %+v, %d stored", name, s, n)
		}
		want[name] = n
	}
	e = reopen(t, e, dir, clk)
	for _, name := range names {
		all := 0
		req := engine.PeekRequest{Limit: engine.PeekMaxLimit}
		for {
			p, err := e.Peek(ctx, acct, name, req)
			if err != nil {
				t.Fatal(err)
			}
			all += len(p.Messages)
			if p.Next == "" {
				break
			}
			req.After = p.Next
		}
		if all != want[name] {
			t.Fatalf("%s: %d peeked after the restart, %d stored before", name, all, want[name])
		}
	}
}

// BenchmarkPeekDeepQueue: one page per op of a queue of 100,000 stored
// messages, on disk and in memory: the first page of 50, a page of 50 at the 90,000th message
// (its cursor found beforehand), and filtered pages that examine 5,000
// messages (MaxScan) and find none, from the start and deep in the queue.
func BenchmarkPeekDeepQueue(b *testing.B) {
	for _, memory := range []bool{false, true} {
		name := "disk"
		if memory {
			name = "memory"
		}
		b.Run(name, func(b *testing.B) { benchmarkPeekDeepQueue(b, memory) })
	}
}

func benchmarkPeekDeepQueue(b *testing.B, memory bool) {
	const n = 100_000
	var e *Engine
	if memory {
		e = openTest(b, Options{InMemory: true})
		if _, _, err := e.CreateQueue(context.Background(), engine.Queue{Account: acct, Name: "q", Settings: settings()}); err != nil {
			b.Fatal(err)
		}
		fillQueue(b, e, "q", n)
	} else {
		e = openTest(b, Options{Dir: filledStore(b, n)})
	}
	ctx := context.Background()
	// A filter nothing matches walks the queue: its Next after 90,000
	// examined is the cursor of the page there.
	deep, err := e.Peek(ctx, acct, "q", engine.PeekRequest{Limit: 1, MaxScan: 90_000, Filter: engine.PeekFilter{BodyContains: "!"}})
	if err != nil || deep.Scanned != 90_000 || deep.Next == "" {
		b.Fatalf("the deep cursor: scanned %d, next %q, %v", deep.Scanned, deep.Next, err)
	}
	for _, bc := range []struct {
		name string
		req  engine.PeekRequest
		want int // messages, or examined when filtered
	}{
		{"first-page-50", engine.PeekRequest{Limit: 50}, 50},
		{"deep-page-50", engine.PeekRequest{Limit: 50, After: deep.Next}, 50},
		{"filtered-scan-5000", engine.PeekRequest{Limit: 50, MaxScan: 5000, Filter: engine.PeekFilter{BodyContains: "!"}}, 5000},
		{"deep-filtered-scan-5000", engine.PeekRequest{Limit: 50, MaxScan: 5000, After: deep.Next, Filter: engine.PeekFilter{BodyContains: "!"}}, 5000},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p, err := e.Peek(ctx, acct, "q", bc.req)
				if err != nil {
					b.Fatal(err)
				}
				if got := max(len(p.Messages), p.Scanned*min(len(bc.req.Filter.BodyContains), 1)); got != bc.want || p.Next == "" {
					b.Fatalf("%d messages, %d examined, next %q", len(p.Messages), p.Scanned, p.Next)
				}
			}
		})
	}
}
