package server_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/server"
)

// realClock runs the server on the wall clock, as in production.
func realClock(c *server.Config) { c.Clock = clock.Real{} }

// BenchmarkSendMessageBatch sends batches of 10 × 256 bytes over the JSON
// protocol to an on-disk, fsyncing Ferry from 16 concurrent clients; the
// msgs/s metric is what the closing notes quote.
func BenchmarkSendMessageBatch(b *testing.B) {
	f := start(b, onDisk(b.TempDir()), realClock)
	url := f.createQueue(b, "bench", nil)
	body := strings.Repeat("x", 256)
	entries := make([]types.SendMessageBatchRequestEntry, 10)
	for i := range entries {
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(body)}
	}
	b.SetParallelism(8) // × GOMAXPROCS clients
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := f.json.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N*10)/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkSendMessage sends one 256-byte message per request.
func BenchmarkSendMessage(b *testing.B) {
	f := start(b, onDisk(b.TempDir()), realClock)
	url := f.createQueue(b, "bench", nil)
	body := aws.String(strings.Repeat("x", 256))
	b.SetParallelism(8)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := f.json.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: body}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkReceiveDelete receives up to 10 messages and deletes them in
// one batch per op, from 16 concurrent clients; the queue is filled
// before the timer starts.
func BenchmarkReceiveDelete(b *testing.B) {
	f := start(b, onDisk(b.TempDir()), realClock)
	url := f.createQueue(b, "bench", nil)
	body := strings.Repeat("x", 256)
	entries := make([]types.SendMessageBatchRequestEntry, 10)
	for i := range entries {
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(body)}
	}
	for range b.N + 16 {
		if _, err := f.json.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}); err != nil {
			b.Fatal(err)
		}
	}
	b.SetParallelism(8)
	b.ResetTimer()
	start := time.Now()
	var total atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		del := make([]types.DeleteMessageBatchRequestEntry, 0, 10)
		for pb.Next() {
			out, err := f.json.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 3600})
			if err != nil {
				b.Error(err)
				return
			}
			if len(out.Messages) == 0 {
				continue
			}
			del = del[:0]
			for i, m := range out.Messages {
				del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
			}
			if _, err := f.json.DeleteMessageBatch(context.Background(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del}); err != nil {
				b.Error(err)
				return
			}
			total.Add(int64(len(out.Messages)))
		}
	})
	b.ReportMetric(float64(total.Load())/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkStartup measures an on-disk start to the first answered request
// with an empty store.
func BenchmarkStartup(b *testing.B) {
	var total time.Duration
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		t0 := time.Now()
		srv, err := server.Start(context.Background(), server.Config{Listen: "127.0.0.1:0", DataDir: dir, Logger: testLogger(b)})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := jsonClient(srv.URL()).ListQueues(context.Background(), &sqs.ListQueuesInput{}); err != nil {
			b.Fatal(err)
		}
		total += time.Since(t0)
		srv.Shutdown(context.Background())
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/start")
}
