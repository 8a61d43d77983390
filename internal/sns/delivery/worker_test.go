package delivery

import (
	"context"
	"fmt"
	"io"
	"log/slog"
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

// fakeSubscriptions is SNS's side of deliveries for one subscription of
// one topic, and its counts.
type fakeSubscriptions struct {
	mu     sync.Mutex
	sub    Subscription
	topic  *Topic
	counts map[Counter]int
	// removed: another node removed the subscription, which Live does not
	// show yet.
	removed bool
	// failures are the failed attempts told, oldest first.
	failures []Failure
	// delivered are the retried at-once notifications delivered.
	delivered []string
}

func (f *fakeSubscriptions) Deliver(_ context.Context, _ *Topic, _ *Subscription, m *Message, _, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delivered = append(f.delivered, m.ID)
	return nil
}

func (f *fakeSubscriptions) Live(arn string) (Subscription, *Topic, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sub, f.topic, arn == f.sub.ARN
}

// Stored is Live unless the test has removed the subscription from the
// store behind the service's back (removed).
func (f *fakeSubscriptions) Stored(ctx context.Context, arn string) (Subscription, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sub, arn == f.sub.ARN && !f.removed, nil
}

func (f *fakeSubscriptions) Count(arn string, c Counter, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[c] += n
}

func (f *fakeSubscriptions) Failed(_ string, fl Failure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = append(f.failures, fl)
}

func (f *fakeSubscriptions) count(c Counter) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[c]
}

// newTestService runs deliveries on an in-memory engine and a fake clock,
// without jitter, for sub of a topic with attributes topicAttrs. Its
// delivery queue exists; its worker does not run yet.
func newTestService(t *testing.T, sub Subscription, topicAttrs map[string]string) (*Service, *fakeSubscriptions, *embedded.Engine, *clock.Fake) {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	eng, err := embedded.Open(ctx, embedded.Options{InMemory: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	topic, err := NewTopic(sub.TopicARN, "t", false, topicAttrs)
	if err != nil {
		t.Fatal(err)
	}
	subs := &fakeSubscriptions{sub: sub, topic: topic, counts: map[Counter]int{}}
	d, err := New(Config{Backend: eng, SQS: sqs.NewPort(sqs.Config{Backend: eng}), Subscriptions: subs, Clock: clk,
		Logger: slog.New(slog.DiscardHandler), Options: Options{BaseURL: "http://ferry.test"}})
	if err != nil {
		t.Fatal(err)
	}
	d.jitter = func(d time.Duration) time.Duration { return d }
	t.Cleanup(func() {
		d.Close()
		eng.Close()
	})
	if err := d.CreateQueue(ctx, sub.Queue); err != nil {
		t.Fatal(err)
	}
	return d, subs, eng, clk
}

// httpSubscription is a confirmed HTTP subscription of endpoint with a
// DeliveryPolicy.
func httpSubscription(t *testing.T, endpoint, policy string) Subscription {
	t.Helper()
	p, err := ParseSubscriptionPolicy(policy)
	if err != nil {
		t.Fatal(err)
	}
	const topicARN = "arn:aws:sns:us-east-1:000000000000:t"
	arn := topicARN + ":5b1e1c4e-0000-4000-8000-000000000000"
	return Subscription{ARN: arn, TopicARN: topicARN, Protocol: ProtoHTTP, Endpoint: endpoint, Queue: NewQueueName(arn), Policy: p}
}

// TestRetryScheduleOnTheClock checks that retries come exactly at the
// policy's delays (no jitter) and that the policy's end is the end.
func TestRetryScheduleOnTheClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var (
		mu    sync.Mutex
		times []time.Time
		clk   *clock.Fake
	)
	ep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		times = append(times, clk.Now())
		mu.Unlock()
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer ep.Close()
	hits := func() int { mu.Lock(); defer mu.Unlock(); return len(times) }

	policy := `{"healthyRetryPolicy":{"numRetries":4,"minDelayTarget":2,"maxDelayTarget":16,"backoffFunction":"geometric"}}`
	sub := httpSubscription(t, ep.URL, policy)
	d, subs, eng, fake := newTestService(t, sub, nil)
	mu.Lock()
	clk = fake
	mu.Unlock()
	d.Start(&sub)
	if err := d.Enqueue(ctx, &sub, []*Message{{ID: "m1", Body: "m", Timestamp: clk.Now()}}); err != nil {
		t.Fatal(err)
	}
	failed := func(n int) func() bool {
		return func() bool { return subs.count(Failed) >= n }
	}
	testwait.Eventually(t, "first attempt", failed(1))
	// Between attempts the clock holds the retry's visibility timer and the
	// worker's long poll, which no advance below reaches: a move of the
	// clock that fires no timer leaves nothing that could attempt again;
	// one that fires a timer (an early retry) is followed by its attempt.
	advance := func(wait time.Duration, attempts int) func() {
		return func() {
			fired := clk.Fired()
			clk.Advance(wait)
			if clk.Fired() != fired {
				testwait.Eventually(t, "the early attempt", func() bool { return hits() > attempts })
			}
		}
	}
	for i, wait := range []time.Duration{2, 4, 8, 16} {
		testwait.Never(t, fmt.Sprintf("retry %d came before %v", i+1, wait*time.Second),
			advance((wait-1)*time.Second, i+1), func() bool { return hits() != i+1 })
		clk.Advance(time.Second)
		testwait.Eventually(t, "retry", failed(i+2))
	}
	// After the last attempt the delivery leaves its queue: once it has,
	// nothing is left to attempt.
	gone := func() {
		clk.Advance(time.Hour)
		testwait.Eventually(t, "the delivery to be given up", func() bool {
			st, err := eng.Stats(ctx, QueueAccount, sub.Queue)
			return err == nil && st.Visible+st.NotVisible+st.Delayed == 0
		})
	}
	testwait.Never(t, "a sixth attempt", gone, func() bool { return hits() != 5 })
	if f, dl := subs.count(Failed), subs.count(Delivered); f != 5 || dl != 0 {
		t.Errorf("failed %d, delivered %d", f, dl)
	}
	// Each failed attempt is told, the last without a retry.
	subs.mu.Lock()
	defer subs.mu.Unlock()
	if len(subs.failures) != 5 {
		t.Fatalf("%d failures told, want 5", len(subs.failures))
	}
	for i, fl := range subs.failures {
		if fl.Status != http.StatusBadGateway || fl.Retry != (i < 4) || fl.Endpoint == "" || fl.At.IsZero() {
			t.Errorf("failure %d: %+v", i, fl)
		}
	}
}

// TestStopEndsTheWorker: Stop ends the subscription's worker, which no
// longer takes deliveries, and Start after Stop starts a new one.
func TestStopEndsTheWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	delivered := make(chan string, 4)
	ep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		delivered <- r.Header.Get("X-Amz-Sns-Message-Id")
	}))
	defer ep.Close()
	sub := httpSubscription(t, ep.URL, `{}`)
	d, _, eng, _ := newTestService(t, sub, nil)
	send := func(id string) {
		t.Helper()
		if err := d.Enqueue(ctx, &sub, []*Message{{ID: id, Body: "m"}}); err != nil {
			t.Fatal(err)
		}
	}
	d.Start(&sub)
	send("first")
	if got := testwait.Receive(t, "the first delivery", delivered); got != "first" {
		t.Fatalf("delivered %q", got)
	}
	d.Stop(sub.ARN)
	d.bg.mu.Lock()
	n := len(d.bg.workers)
	d.bg.mu.Unlock()
	if n != 0 {
		t.Errorf("%d workers after Stop", n)
	}
	// Stop returned once the worker had ended: nothing takes the next
	// delivery from the queue until a worker starts again.
	send("second")
	if st, err := eng.Stats(ctx, QueueAccount, sub.Queue); err != nil || st.Visible != 1 || len(delivered) != 0 {
		t.Fatalf("queue without a worker: %+v %v, %d delivered", st, err, len(delivered))
	}
	d.Start(&sub)
	if got := testwait.Receive(t, "the second delivery", delivered); got != "second" {
		t.Fatalf("delivered %q", got)
	}
}

// TestWorkerRemakesOnlyAStoredSubscriptionsQueue: a worker whose delivery
// queue is gone makes it again only while the store still has the
// subscription with that queue; once another node has removed the
// subscription (which this node has not heard of yet) the worker ends,
// leaving no queue behind.
func TestWorkerRemakesOnlyAStoredSubscriptionsQueue(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		removed bool
	}{
		{"stored", false},
		{"removed through another node", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			sub := httpSubscription(t, "http://127.0.0.1:1/", `{}`)
			d, subs, eng, _ := newTestService(t, sub, nil)
			subs.mu.Lock()
			subs.removed = tt.removed
			subs.mu.Unlock()
			// A queue that does not exist (a deleted one's name stays
			// taken for a minute).
			sub.Queue = NewQueueName(sub.ARN)
			subs.mu.Lock()
			subs.sub = sub
			subs.mu.Unlock()
			d.Start(&sub)
			if !tt.removed {
				testwait.Eventually(t, "the queue to be made again", func() bool {
					_, err := eng.GetQueue(ctx, QueueAccount, sub.Queue)
					return err == nil
				})
				return
			}
			d.bg.mu.Lock()
			done := d.bg.workers[sub.ARN].done
			d.bg.mu.Unlock()
			testwait.Receive(t, "the worker to end", done)
			if _, err := eng.GetQueue(ctx, QueueAccount, sub.Queue); err == nil {
				t.Error("the queue of a removed subscription was made again")
			}
		})
	}
}
