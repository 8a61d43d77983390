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
	"github.com/ferrymq/ferry/internal/engine/postgres"
	"github.com/ferrymq/ferry/internal/engine/postgres/pgtest"
	"github.com/ferrymq/ferry/internal/metrics"
	"github.com/ferrymq/ferry/internal/sqs"
)

// BenchmarkPublishFIFO publishes 256-byte messages, each with a
// deduplication id of its own, one after another to a FIFO topic with one
// raw SQS FIFO subscription, on a durable store: the embedded store on
// disk (fsync on), and one PostgreSQL node when FERRY_TEST_POSTGRES_URL is
// set. msgs/s is publishes a second.
func BenchmarkPublishFIFO(b *testing.B) {
	b.Run("embedded", func(b *testing.B) {
		eng, err := embedded.Open(context.Background(), embedded.Options{Dir: b.TempDir(), Clock: benchClock()})
		if err != nil {
			b.Fatal(err)
		}
		benchmarkPublishFIFO(b, eng)
	})
	b.Run("postgres", func(b *testing.B) {
		url, schema := pgtest.Schema(b)
		st, err := postgres.Open(context.Background(), postgres.Options{URL: url, Schema: schema, Clock: benchClock()})
		if err != nil {
			b.Fatal(err)
		}
		benchmarkPublishFIFO(b, st)
	})
}

func benchClock() *clock.Fake { return clock.NewFake(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)) }

func benchmarkPublishFIFO(b *testing.B, eng engine.Store) {
	ctx := context.Background()
	clk := benchClock()
	m := metrics.New(metrics.Options{Clock: clk})
	s, err := New(ctx, Config{Backend: eng, SQS: sqs.NewPort(sqs.Config{Backend: eng, Metrics: m}), Records: eng, Sequences: eng,
		Clock: clk, Metrics: m})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close(); eng.Close() })
	topic, err := s.createTopic(ctx, &createTopicInput{Name: "bench.fifo", Attributes: map[string]string{"FifoTopic": "true"}})
	if err != nil {
		b.Fatal(err)
	}
	queueARN := "arn:aws:sqs:us-east-1:" + DefaultAccount + ":q.fifo"
	if _, _, err := eng.CreateQueue(ctx, engine.Queue{Account: DefaultAccount, Name: "q.fifo", ARN: queueARN,
		Settings: engine.QueueSettings{FIFO: true, MaximumSize: 262144, Retention: 4 * 24 * time.Hour}, Created: clk.Now(), Modified: clk.Now()}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.subscribe(ctx, &subscribeInput{TopicArn: topic.TopicArn, Protocol: "sqs", Endpoint: queueARN,
		Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
		b.Fatal(err)
	}
	body, group := strings.Repeat("x", 256), "g"
	b.ReportAllocs()
	b.ResetTimer()
	began := time.Now()
	for i := range b.N {
		dedup := fmt.Sprint("d", i)
		out, err := s.publish(ctx, &publishInput{TopicArn: topic.TopicArn, Message: body, MessageGroupId: &group, MessageDeduplicationId: &dedup})
		if err != nil {
			b.Fatal(err)
		}
		if out.SequenceNumber == "" {
			b.Fatal("no sequence number")
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "msgs/s")
}
