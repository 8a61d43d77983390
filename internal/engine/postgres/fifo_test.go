package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
)

// Sends through two nodes that carry the same deduplication ids in
// different orders, at once, enqueue each id once and answer every other
// send of it with the one that did, without a deadlock between their
// claims (each a FIFO send's one statement). A batch also repeats an id.
func TestFIFOSendSameKeysConcurrently(t *testing.T) {
	clk := clock.NewFake(enginetest.Start)
	ts := freshSchema(t)
	nodes := []*Store{ts.open(t, clk), ts.open(t, clk)}
	createFIFOQueue(t, nodes[0], "q.fifo")
	ctx := context.Background()
	const rounds, senders, keys = 10, 6, 8
	for round := range rounds {
		var (
			mu      sync.Mutex
			results = map[string][]engine.SendResult{} // by deduplication id
			wg      sync.WaitGroup
		)
		for w := range senders {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(round), uint64(w)))
				var batch []engine.NewMessage
				for _, k := range rng.Perm(keys) {
					batch = append(batch, engine.NewMessage{Body: fmt.Sprint("w", w), MessageGroupID: fmt.Sprint("g", k%3),
						DeduplicationID: fmt.Sprintf("r%d-k%d", round, k)})
				}
				batch = append(batch, batch[rng.IntN(keys)])
				res, err := nodes[w%2].Send(ctx, enginetest.Account, "q.fifo", batch)
				if err != nil {
					t.Errorf("round %d sender %d: %v", round, w, err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for i, r := range res {
					results[batch[i].DeduplicationID] = append(results[batch[i].DeduplicationID], r)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		for id, rs := range results {
			fresh := 0
			for _, r := range rs {
				if !r.Duplicate {
					fresh++
				}
				if r.MessageID != rs[0].MessageID || r.SequenceNumber != rs[0].SequenceNumber {
					t.Errorf("%s answered %+v and %+v", id, rs[0], r)
				}
			}
			if fresh != 1 {
				t.Errorf("%s enqueued by %d sends of %d", id, fresh, len(rs))
			}
		}
	}
	var n int64
	if err := nodes[1].pool.QueryRow(ctx, "SELECT count(*) FROM messages WHERE queue_id = $1", queueID(t, nodes[1], "q.fifo")).
		Scan(&n); err != nil || n != rounds*keys {
		t.Fatalf("the queue holds %d messages, want %d (%v)", n, rounds*keys, err)
	}
}
