package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

// TestBacklogWorkFlat: what a send, receive and delete cost per message
// must not grow with the messages waiting before them. The same traffic
// runs on top of a small and a large backlog, held in the store's tables
// as in a store that has run a while, and two kinds of work are counted,
// not timed: the index's entry moves (a heap over every message made each
// delete of an old one sift through log n levels, each a cache miss once
// the backlog outgrew the CPU's caches) and the store's block reads per
// received message (a receive that walked over deleted or earlier entries
// would read more of them).
func TestBacklogWorkFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a backlog of 200,000 messages")
	}
	type work struct{ moves, blocks float64 }
	const ops = 100 // of 10 messages: fewer than the small backlog holds
	measure := func(depth int) work {
		ctx := context.Background()
		e := openTest(t, Options{InMemory: true})
		if _, _, err := e.CreateQueue(ctx, engine.Queue{Account: acct, Name: "q", Settings: settings()}); err != nil {
			t.Fatal(err)
		}
		fillQueue(t, e, "q", depth)
		if err := e.db.Flush(); err != nil {
			t.Fatal(err)
		}
		q, err := e.lookup(acct, "q")
		if err != nil {
			t.Fatal(err)
		}
		moves := func() int {
			q.mu.Lock()
			defer q.mu.Unlock()
			return q.ages.work() + q.oldest.work() + q.timers.moves
		}
		reads := func() int64 {
			m := e.db.Metrics().BlockCache
			return m.Hits + m.Misses
		}
		moves0, reads0 := moves(), reads()
		msgs := benchBatch()
		hour := time.Hour
		received := 0
		for range ops {
			if _, err := e.Send(ctx, acct, "q", msgs); err != nil {
				t.Fatal(err)
			}
			got, err := e.Receive(ctx, acct, "q", engine.ReceiveRequest{Max: 10, Visibility: &hour})
			if err != nil || len(got) != 10 {
				t.Fatalf("received %d: %v", len(got), err)
			}
			received += len(got)
			handles := make([]string, 0, len(got))
			for _, m := range got {
				handles = append(handles, m.ReceiptHandle)
			}
			if _, err := e.Delete(ctx, acct, "q", handles); err != nil {
				t.Fatal(err)
			}
		}
		return work{
			moves:  float64(moves()-moves0) / float64(received),
			blocks: float64(reads()-reads0) / float64(received),
		}
	}
	small, large := measure(2_000), measure(200_000)
	t.Logf("per message: index moves %.2f at 2,000, %.2f at 200,000; block reads %.2f, %.2f",
		small.moves, large.moves, small.blocks, large.blocks)
	if large.moves > small.moves+1 {
		t.Errorf("index moves per message grow with the backlog: %.2f at 2,000, %.2f at 200,000", small.moves, large.moves)
	}
	if large.blocks > 1.25*small.blocks+0.5 {
		t.Errorf("block reads per received message grow with the backlog: %.2f at 2,000, %.2f at 200,000", small.blocks, large.blocks)
	}
}
