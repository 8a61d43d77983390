package sns

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine/embedded"
	"github.com/ferrymq/ferry/internal/sqs"
	"github.com/ferrymq/ferry/internal/testwait"
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
	s, err := New(ctx, Config{Backend: eng, SQS: sqs.NewPort(sqs.Config{Backend: eng}), Records: eng, Clock: clk, BaseURL: "http://ferry.test"})
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
	testwait.Eventually(t, "first attempt", failed(1))
	// Between attempts the clock holds the retry's visibility timer and the
	// worker's long poll, which no advance below reaches: a move of the
	// clock that fires no timer leaves nothing that could attempt again;
	// one that fires a timer (an early retry) is followed by its attempt.
	advance := func(d time.Duration, attempts int) func() {
		return func() {
			fired := clk.Fired()
			clk.Advance(d)
			if clk.Fired() != fired {
				testwait.Eventually(t, "the early attempt", func() bool { return hits() > attempts })
			}
		}
	}
	for i, d := range []time.Duration{2, 4, 8, 16} {
		testwait.Never(t, fmt.Sprintf("retry %d came before %v", i+1, d*time.Second),
			advance((d-1)*time.Second, i+1), func() bool { return hits() != i+1 })
		clk.Advance(time.Second)
		testwait.Eventually(t, "retry", failed(int64(i+2)))
	}
	// After the last attempt the delivery leaves its queue: once it has,
	// nothing is left to attempt.
	gone := func() {
		clk.Advance(time.Hour)
		queue := s.liveSubscription(sub.SubscriptionArn).Queue
		testwait.Eventually(t, "the delivery to be given up", func() bool {
			st, err := s.backend.Stats(ctx, DeliveryAccount, queue)
			return err == nil && st.Visible+st.NotVisible+st.Delayed == 0
		})
	}
	testwait.Never(t, "a sixth attempt", gone, func() bool { return hits() != 5 })
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
