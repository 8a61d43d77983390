package sns

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/embedded"
	"github.com/ferrymq/ferry/internal/metrics"
)

// BenchmarkPublishFanout publishes 256-byte messages to a topic with four
// SQS subscriptions (one raw, one filtered on an attribute the messages
// carry, one filtered out), on an in-memory engine: the publish path
// without the wire.
func BenchmarkPublishFanout(b *testing.B) {
	benchmarkPublish(b, []map[string]string{
		nil,
		{"RawMessageDelivery": "true"},
		{"FilterPolicy": `{"kind":["order"]}`},
		{"FilterPolicy": `{"kind":["refund"]}`},
	})
}

// BenchmarkPublishFanoutRaw is the same with raw deliveries only: no
// envelope to sign, so what is left is Ferry's own work.
func BenchmarkPublishFanoutRaw(b *testing.B) {
	raw := func(filter string) map[string]string {
		m := map[string]string{"RawMessageDelivery": "true"}
		if filter != "" {
			m["FilterPolicy"] = filter
		}
		return m
	}
	benchmarkPublish(b, []map[string]string{raw(""), raw(""), raw(`{"kind":["order"]}`), raw(`{"kind":["refund"]}`)})
}

func benchmarkPublish(b *testing.B, subs []map[string]string) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	eng, err := embedded.Open(ctx, embedded.Options{InMemory: true, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	s, err := newBenchService(ctx, eng, clk)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { s.Close(); eng.Close() }()
	topic, err := s.createTopic(ctx, &createTopicInput{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	for i, attrs := range subs {
		name := fmt.Sprintf("q%d", i)
		if _, _, err := eng.CreateQueue(ctx, engine.Queue{Account: DefaultAccount, Name: name,
			ARN: "arn:aws:sqs:us-east-1:" + DefaultAccount + ":" + name, Created: clk.Now(), Modified: clk.Now()}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.subscribe(ctx, &subscribeInput{TopicArn: topic.TopicArn, Protocol: "sqs",
			Endpoint: "arn:aws:sqs:us-east-1:" + DefaultAccount + ":" + name, Attributes: attrs}); err != nil {
			b.Fatal(err)
		}
	}
	body := strings.Repeat("x", 256)
	kind := "order"
	in := &publishInput{TopicArn: topic.TopicArn, Message: body,
		MessageAttributes: map[string]messageAttributeValue{"kind": {DataType: "String", StringValue: &kind}}}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := s.publish(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}

// newBenchService records metrics, as a server does.
func newBenchService(ctx context.Context, eng *embedded.Engine, clk clock.Clock) (*Service, error) {
	return New(ctx, Config{Backend: eng, Records: eng, Clock: clk, Metrics: metrics.New(metrics.Options{Clock: clk})})
}
