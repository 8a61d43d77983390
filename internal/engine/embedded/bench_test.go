package embedded

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

// Benchmarks run on disk with the default fsync policy.

func benchBatch() []engine.NewMessage {
	body := strings.Repeat("x", 256)
	msgs := make([]engine.NewMessage, 10)
	for i := range msgs {
		msgs[i] = engine.NewMessage{
			Body:       body,
			Attributes: []engine.MessageAttribute{{Name: "kind", DataType: "String", StringValue: "bench"}},
			MD5OfBody:  "0123456789abcdef0123456789abcdef",
			MD5OfAttrs: "0123456789abcdef0123456789abcdef",
		}
	}
	return msgs
}

func benchEngine(b *testing.B, dir string, noSync bool) *Engine {
	b.Helper()
	e := openTest(b, Options{Dir: dir, NoSync: noSync})
	if _, _, err := e.CreateQueue(context.Background(), engine.Queue{Account: acct, Name: "q", Settings: settings()}); err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkSend10: one SendMessageBatch of 10 per op, one caller: every op
// waits for its own fsync.
func BenchmarkSend10(b *testing.B) {
	e := benchEngine(b, b.TempDir(), false)
	msgs := benchBatch()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Send(ctx, acct, "q", msgs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(10*b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkSend10Parallel: many callers share each fsync (group commit).
func BenchmarkSend10Parallel(b *testing.B) {
	e := benchEngine(b, b.TempDir(), false)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		msgs := benchBatch()
		for pb.Next() {
			if _, err := e.Send(ctx, acct, "q", msgs); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(10*b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkReceiveDelete10: one ReceiveMessage of 10 and one
// DeleteMessageBatch of their handles per op.
func BenchmarkReceiveDelete10(b *testing.B) {
	dir := b.TempDir()
	ctx := context.Background()
	// Fill without fsync, then reopen with it: only receive and delete are
	// timed.
	fill := benchEngine(b, dir, true)
	msgs := benchBatch()
	for range b.N + 1 {
		if _, err := fill.Send(ctx, acct, "q", msgs); err != nil {
			b.Fatal(err)
		}
	}
	if err := fill.Close(); err != nil {
		b.Fatal(err)
	}
	e := openTest(b, Options{Dir: dir})
	hour := time.Hour
	handles := make([]string, 0, 10)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
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
