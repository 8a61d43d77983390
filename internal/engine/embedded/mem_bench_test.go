package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

// BenchmarkCycleInMemory sends, receives and deletes a batch of 10 per op
// on an in-memory store, so that the index's own cost (heaps, lists,
// counters) shows instead of the fsync's. The queue keeps a backlog of
// 10,000 messages, so the heaps are not trivially small.
func BenchmarkCycleInMemory(b *testing.B) {
	e := openTest(b, Options{InMemory: true})
	ctx := context.Background()
	if _, _, err := e.CreateQueue(ctx, engine.Queue{Account: acct, Name: "q", Settings: settings()}); err != nil {
		b.Fatal(err)
	}
	msgs := benchBatch()
	for range 1000 {
		if _, err := e.Send(ctx, acct, "q", msgs); err != nil {
			b.Fatal(err)
		}
	}
	hour := time.Hour
	handles := make([]string, 0, 10)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := e.Send(ctx, acct, "q", msgs); err != nil {
			b.Fatal(err)
		}
		got, err := e.Receive(ctx, acct, "q", engine.ReceiveRequest{Max: 10, Visibility: &hour})
		if err != nil || len(got) != 10 {
			b.Fatalf("received %d: %v", len(got), err)
		}
		handles = handles[:0]
		for _, m := range got {
			handles = append(handles, m.ReceiptHandle)
		}
		if _, err := e.Delete(ctx, acct, "q", handles); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(10*b.N)/b.Elapsed().Seconds(), "msgs/s")
}
