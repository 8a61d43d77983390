package sns

import (
	"context"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine/embedded"
	"github.com/ferrymq/ferry/internal/sns/delivery"
)

// TestDeleteTopicStopsDeliveries: a topic's delete removes its
// subscriptions' delivery queues and records (it stops their workers
// first: delivery.TestStopEndsTheWorker).
func TestDeleteTopicStopsDeliveries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	eng, err := embedded.Open(ctx, embedded.Options{InMemory: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	s, err := newBenchService(ctx, eng, clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		eng.Close()
	})
	topic, _ := s.createTopic(ctx, &createTopicInput{Name: "t"})
	sub, err := s.subscribe(ctx, &subscribeInput{TopicArn: topic.TopicArn, Protocol: "email", Endpoint: "a@example.com", ReturnSubscriptionArn: true})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.RLock()
	q := s.subs[sub.SubscriptionArn].Queue
	s.mu.RUnlock()
	if _, err := eng.GetQueue(ctx, delivery.QueueAccount, q); err != nil {
		t.Fatalf("delivery queue: %v", err)
	}
	if _, err := s.deleteTopic(ctx, &topicArnInput{TopicArn: topic.TopicArn}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.GetQueue(ctx, delivery.QueueAccount, q); err == nil {
		t.Error("delivery queue left behind")
	}
	if recs, _ := s.records.Records(ctx, kindSubscription); len(recs) != 0 {
		t.Errorf("%d subscription records left", len(recs))
	}
}
