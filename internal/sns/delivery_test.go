package sns

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine/embedded"
)

// newTestService runs the service on an in-memory engine and a fake
// clock, without jitter.
func newTestService(t *testing.T) (*Service, *clock.Fake) {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	eng, err := embedded.Open(ctx, embedded.Options{InMemory: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(ctx, Config{Backend: eng, Records: eng, Clock: clk, BaseURL: "http://ferry.test"})
	if err != nil {
		t.Fatal(err)
	}
	s.jitter = func(d time.Duration) time.Duration { return d }
	t.Cleanup(func() {
		s.Close()
		eng.Close()
	})
	return s, clk
}

// eventually polls cond (real time): workers run in goroutines.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRetryScheduleOnTheClock checks that retries come exactly at the
// policy's delays (no jitter) and that the policy's end is the end.
func TestRetryScheduleOnTheClock(t *testing.T) {
	s, clk := newTestService(t)
	ctx := context.Background()
	var (
		mu    sync.Mutex
		times []time.Time
	)
	ep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Header.Get("X-Amz-Sns-Message-Type") != TypeNotification {
			return // confirmations succeed
		}
		mu.Lock()
		times = append(times, clk.Now())
		mu.Unlock()
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer ep.Close()
	hits := func() int { mu.Lock(); defer mu.Unlock(); return len(times) }

	topic, err := s.createTopic(ctx, &createTopicInput{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	policy := `{"healthyRetryPolicy":{"numRetries":4,"minDelayTarget":2,"maxDelayTarget":16,"backoffFunction":"geometric"}}`
	sub, err := s.subscribe(ctx, &subscribeInput{TopicArn: topic.TopicArn, Protocol: "http", Endpoint: ep.URL,
		Attributes: map[string]string{"DeliveryPolicy": policy}, ReturnSubscriptionArn: true})
	if err != nil {
		t.Fatal(err)
	}
	token, _ := s.ConfirmationToken(sub.SubscriptionArn)
	if _, err := s.confirmSubscription(ctx, &confirmSubscriptionInput{TopicArn: topic.TopicArn, Token: token}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.publish(ctx, &publishInput{TopicArn: topic.TopicArn, Message: "m"}); err != nil {
		t.Fatal(err)
	}
	failed := func(n int64) func() bool {
		return func() bool { c, _ := s.SubscriptionCounters(sub.SubscriptionArn); return c.Failed >= n }
	}
	eventually(t, "first attempt", failed(1))
	for i, d := range []time.Duration{2, 4, 8, 16} {
		clk.Advance((d - 1) * time.Second)
		time.Sleep(30 * time.Millisecond)
		if hits() != i+1 {
			t.Fatalf("retry %d came before %v", i+1, d*time.Second)
		}
		clk.Advance(time.Second)
		eventually(t, "retry", failed(int64(i+2)))
	}
	clk.Advance(time.Hour)
	time.Sleep(30 * time.Millisecond)
	if hits() != 5 {
		t.Errorf("%d attempts, want 5", hits())
	}
	c, _ := s.SubscriptionCounters(sub.SubscriptionArn)
	if c.Failed != 5 || c.Delivered != 0 {
		t.Errorf("counters: %+v", c)
	}
}

// TestDeleteTopicStopsDeliveries: a topic's delete stops its workers and
// removes their queues.
func TestDeleteTopicStopsDeliveries(t *testing.T) {
	s, _ := newTestService(t)
	ctx := context.Background()
	topic, _ := s.createTopic(ctx, &createTopicInput{Name: "t"})
	sub, err := s.subscribe(ctx, &subscribeInput{TopicArn: topic.TopicArn, Protocol: "email", Endpoint: "a@example.com", ReturnSubscriptionArn: true})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.RLock()
	q := s.subs[sub.SubscriptionArn].Queue
	s.mu.RUnlock()
	if _, err := s.backend.GetQueue(ctx, DeliveryAccount, q); err != nil {
		t.Fatalf("delivery queue: %v", err)
	}
	if _, err := s.deleteTopic(ctx, &topicArnInput{TopicArn: topic.TopicArn}); err != nil {
		t.Fatal(err)
	}
	s.mu.RLock()
	n := len(s.workers)
	s.mu.RUnlock()
	if n != 0 {
		t.Errorf("%d workers left", n)
	}
	if _, err := s.backend.GetQueue(ctx, DeliveryAccount, q); err == nil {
		t.Error("delivery queue left behind")
	}
	if recs, _ := s.records.Records(ctx, kindSubscription); len(recs) != 0 {
		t.Errorf("%d subscription records left", len(recs))
	}
}
