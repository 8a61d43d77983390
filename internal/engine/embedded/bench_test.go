package embedded

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
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

// fifoBench opens a FIFO queue and returns a function that fills a batch
// of new messages spread over the groups, round robin.
func fifoBench(b *testing.B, groups int) (*Engine, func([]engine.NewMessage)) {
	b.Helper()
	e := openTest(b, Options{Dir: b.TempDir()})
	s := settings()
	s.FIFO = true
	if _, _, err := e.CreateQueue(context.Background(), engine.Queue{Account: acct, Name: "q.fifo", Settings: s}); err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	return e, func(msgs []engine.NewMessage) {
		first := n.Add(int64(len(msgs))) - int64(len(msgs))
		for i := range msgs {
			k := first + int64(i)
			msgs[i].MessageGroupID = "g" + strconv.Itoa(int(k)%groups)
			msgs[i].DeduplicationID = strconv.FormatInt(k, 10)
		}
	}
}

// consumeFIFO receives and deletes (one delete call per receive) until it
// has deleted n messages.
func consumeFIFO(b *testing.B, e *Engine, n int) error {
	ctx := context.Background()
	hour := time.Hour
	handles := make([]string, 0, 10)
	for n > 0 {
		// Never more than its share, or parallel callers starve each other.
		// Long polls, as clients do: a caller facing a blocked group waits
		// to be handed messages instead of spinning.
		got, err := e.Receive(ctx, acct, "q.fifo", engine.ReceiveRequest{Max: min(10, n), Visibility: &hour, Wait: 20 * time.Second})
		if err != nil {
			return err
		}
		handles = handles[:0]
		for _, m := range got {
			handles = append(handles, m.ReceiptHandle)
		}
		if len(handles) > 0 {
			if _, err := e.Delete(ctx, acct, "q.fifo", handles); err != nil {
				return err
			}
		}
		n -= len(got)
	}
	return nil
}

// BenchmarkFIFO: per op one SendMessageBatch of 10, then receives and
// deletes until 10 are gone; one caller, so every send and delete waits for
// its own fsync. With one group a receive takes the 10 at once; with 100,
// the batch spreads over 10 groups.
func BenchmarkFIFO(b *testing.B) {
	for _, groups := range []int{1, 100} {
		b.Run(fmt.Sprint("groups=", groups), func(b *testing.B) {
			e, fill := fifoBench(b, groups)
			msgs := benchBatch()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				fill(msgs)
				if _, err := e.Send(ctx, acct, "q.fifo", msgs); err != nil {
					b.Fatal(err)
				}
				if err := consumeFIFO(b, e, len(msgs)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(10*b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkFIFOParallel: 16 callers each send a batch of 10 and then
// receive and delete 10 (anyone's); they share fsyncs. With one group only
// one caller at a time can hold messages, the others wait for the group:
// the group is the limit, as on SQS.
func BenchmarkFIFOParallel(b *testing.B) {
	for _, groups := range []int{1, 100} {
		b.Run(fmt.Sprint("groups=", groups), func(b *testing.B) {
			e, fill := fifoBench(b, groups)
			ctx := context.Background()
			b.ReportAllocs()
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				msgs := benchBatch()
				for pb.Next() {
					fill(msgs)
					if _, err := e.Send(ctx, acct, "q.fifo", msgs); err != nil {
						b.Error(err)
						return
					}
					if err := consumeFIFO(b, e, len(msgs)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(10*b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
