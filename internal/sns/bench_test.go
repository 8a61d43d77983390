package sns

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/embedded"
	"github.com/ferrymq/ferry/internal/metrics"
	"github.com/ferrymq/ferry/internal/sqs"
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

// BenchmarkPublishFanoutEnvelopes publishes to four enveloped SQS
// subscriptions: their copies share one signature, so this costs about
// what one enveloped subscription costs.
func BenchmarkPublishFanoutEnvelopes(b *testing.B) {
	benchmarkPublish(b, []map[string]string{nil, nil, nil, nil})
}

// BenchmarkPublishFanoutDisk publishes from 16 goroutines to four raw SQS
// subscriptions on an on-disk engine that fsyncs, as a server does: the
// fan-out's engine writes and their group commits. cpu-ns/op is the
// process's CPU time (user and system) per publish.
func BenchmarkPublishFanoutDisk(b *testing.B) {
	raw := map[string]string{"RawMessageDelivery": "true"}
	s, _, topicARN, _ := newFanoutFixtureWith(b, embedded.Options{Dir: b.TempDir()}, []map[string]string{raw, raw, raw, raw})
	in := &publishInput{TopicArn: topicARN, Message: strings.Repeat("x", 256)}
	ctx := context.Background()
	before := cpuTime(b)
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.publish(ctx, in); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(cpuTime(b)-before)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the CPU time the process has used.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchmarkPublish(b *testing.B, subs []map[string]string) {
	s, _, topicARN, _ := newFanoutFixture(b, subs)
	body := strings.Repeat("x", 256)
	kind := "order"
	in := &publishInput{TopicArn: topicARN, Message: body,
		MessageAttributes: map[string]messageAttributeValue{"kind": {DataType: "String", StringValue: &kind}}}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := s.publish(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}

// newFanoutFixture is a service on an in-memory engine with a topic that
// has one SQS subscription with each of subs' attributes, to queues q0,
// q1, … of the default account. It returns the topic's ARN and the
// subscriptions' in order.
func newFanoutFixture(tb testing.TB, subs []map[string]string) (_ *Service, _ *embedded.Engine, topicARN string, subARNs []string) {
	tb.Helper()
	return newFanoutFixtureWith(tb, embedded.Options{InMemory: true}, subs)
}

// newFanoutFixtureWith is newFanoutFixture on an engine opened with opts
// (and a fake clock).
func newFanoutFixtureWith(tb testing.TB, opts embedded.Options, subs []map[string]string) (_ *Service, _ *embedded.Engine, topicARN string, subARNs []string) {
	tb.Helper()
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	opts.Clock = clk
	eng, err := embedded.Open(ctx, opts)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := newBenchService(ctx, eng, clk)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close(); eng.Close() })
	topic, err := s.createTopic(ctx, &createTopicInput{Name: "bench"})
	if err != nil {
		tb.Fatal(err)
	}
	for i, attrs := range subs {
		name := fmt.Sprintf("q%d", i)
		if _, _, err := eng.CreateQueue(ctx, engine.Queue{Account: DefaultAccount, Name: name,
			ARN: "arn:aws:sqs:us-east-1:" + DefaultAccount + ":" + name, Created: clk.Now(), Modified: clk.Now()}); err != nil {
			tb.Fatal(err)
		}
		sub, err := s.subscribe(ctx, &subscribeInput{TopicArn: topic.TopicArn, Protocol: "sqs",
			Endpoint: "arn:aws:sqs:us-east-1:" + DefaultAccount + ":" + name, Attributes: attrs})
		if err != nil {
			tb.Fatal(err)
		}
		subARNs = append(subARNs, sub.SubscriptionArn)
	}
	return s, eng, topic.TopicArn, subARNs
}

// newBenchService records metrics, as a server does.
func newBenchService(ctx context.Context, eng *embedded.Engine, clk clock.Clock) (*Service, error) {
	m := metrics.New(metrics.Options{Clock: clk})
	return New(ctx, Config{Backend: eng, SQS: sqs.NewPort(sqs.Config{Backend: eng, Metrics: m}), Records: eng, Sequences: eng, Clock: clk, Metrics: m})
}

// BenchmarkPublishFanout50 publishes to 50 raw SQS subscriptions, 20 of
// them filtered on an attribute that every other publish matches (as
// ferry bench's sns-fanout-50), on an in-memory engine: the cost of each
// subscription a publish serves. cpu-ns/op is the process's CPU time per
// publish.
func BenchmarkPublishFanout50(b *testing.B) {
	subs := make([]map[string]string, 50)
	for i := range subs {
		subs[i] = map[string]string{"RawMessageDelivery": "true"}
		if i < 20 {
			subs[i]["FilterPolicy"] = `{"kind":["match"]}`
		}
	}
	s, _, topicARN, _ := newFanoutFixture(b, subs)
	body := strings.Repeat("x", 256)
	var ins [2]*publishInput
	for i, kind := range []string{"match", "other"} {
		ins[i] = &publishInput{TopicArn: topicARN, Message: body,
			MessageAttributes: map[string]messageAttributeValue{"kind": {DataType: "String", StringValue: &kind}}}
	}
	ctx := context.Background()
	before := cpuTime(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.publish(ctx, ins[i%2]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime(b)-before)/float64(b.N), "cpu-ns/op")
}
