package sqs

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine/embedded"
	"github.com/ferrymq/ferry/internal/protocol"
)

// benchService is the SQS service on an in-memory engine, called as the
// protocol layer calls it, without HTTP or codecs.
func benchService(b *testing.B) (*protocol.Service, string) {
	eng, err := embedded.Open(context.Background(), embedded.Options{InMemory: true, Clock: clock.Real{}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = eng.Close() })
	svc := NewService(Config{Account: testAccount, Region: testRegion, Backend: eng, Clock: clock.Real{}, QueueURLBase: testBase})
	out, err := svc.Actions["CreateQueue"].Handle(context.Background(), &CreateQueueInput{QueueName: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return svc, out.(*CreateQueueOutput).QueueUrl
}

func benchBatch(url string) *SendMessageBatchInput {
	in := &SendMessageBatchInput{QueueUrl: url}
	body := strings.Repeat("x", 256)
	for i := range 10 {
		in.Entries = append(in.Entries, SendMessageBatchRequestEntry{Id: strconv.Itoa(i), MessageBody: body})
	}
	return in
}

// BenchmarkServiceSendMessageBatch is one SendMessageBatch of 10 × 256
// bytes; allocs/op over 10 is the per-message cost, the engine's included.
func BenchmarkServiceSendMessageBatch(b *testing.B) {
	svc, url := benchService(b)
	send := svc.Actions["SendMessageBatch"].Handle
	in := benchBatch(url)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := send(ctx, in)
		if err != nil || len(out.(*SendMessageBatchOutput).Successful) != 10 {
			b.Fatal(err, out)
		}
	}
}

// BenchmarkServiceReceiveDelete is one ReceiveMessage of 10 and one
// DeleteMessageBatch of them, from a queue filled beforehand.
func BenchmarkServiceReceiveDelete(b *testing.B) {
	svc, url := benchService(b)
	ctx := context.Background()
	send := svc.Actions["SendMessageBatch"].Handle
	in := benchBatch(url)
	for range b.N {
		if _, err := send(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
	receive, del := svc.Actions["ReceiveMessage"].Handle, svc.Actions["DeleteMessageBatch"].Handle
	ten, zero := 10, 0
	rin := &ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: &ten, WaitTimeSeconds: &zero}
	din := &DeleteMessageBatchInput{QueueUrl: url, Entries: make([]DeleteMessageBatchRequestEntry, 10)}
	for i := range din.Entries {
		din.Entries[i].Id = strconv.Itoa(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		out, err := receive(ctx, rin)
		msgs := out.(*ReceiveMessageOutput).Messages
		if err != nil || len(msgs) != 10 {
			b.Fatal(err, len(msgs))
		}
		for i := range msgs {
			din.Entries[i].ReceiptHandle = msgs[i].ReceiptHandle
		}
		dout, err := del(ctx, din)
		if err != nil || len(dout.(*DeleteMessageBatchOutput).Successful) != 10 {
			b.Fatal(err, dout)
		}
	}
}
