package sns

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine/embedded"
	"github.com/ferrymq/ferry/internal/faults"
	"github.com/ferrymq/ferry/internal/metrics"
	"github.com/ferrymq/ferry/internal/sns/delivery"
	"github.com/ferrymq/ferry/internal/sns/delivery/deliverytest"
	"github.com/ferrymq/ferry/internal/sqs"
	"github.com/ferrymq/ferry/internal/testwait"
)

// sharedEngine is an embedded engine that says other nodes share it: two
// services on one engine are then two nodes on one store, whose news the
// test delivers by hand (RecordChanged), as the store's notifications
// would.
type sharedEngine struct{ *embedded.Engine }

func (sharedEngine) Shared() bool { return true }

// newNodes starts n SNS services on one in-memory engine and a fake clock,
// each with the delivery options opts gives it, if any. Each stops with
// the test, unless the test stops it first.
func newNodes(t *testing.T, n int, opts ...func(node int, o *delivery.Options)) ([]*Service, *embedded.Engine) {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	eng, err := embedded.Open(ctx, embedded.Options{InMemory: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	nodes := make([]*Service, n)
	t.Cleanup(func() {
		for _, s := range nodes {
			if s != nil {
				s.Close()
			}
		}
		eng.Close()
	})
	for i := range nodes {
		m := metrics.New(metrics.Options{Clock: clk})
		o := delivery.Options{BaseURL: "http://node" + string(rune('a'+i))}
		for _, opt := range opts {
			opt(i, &o)
		}
		nodes[i], err = New(ctx, Config{Backend: eng, SQS: sqs.NewPort(sqs.Config{Backend: eng, Metrics: m}), Records: eng, Sequences: eng,
			Cluster: sharedEngine{eng}, Clock: clk, Metrics: m, Delivery: o})
		if err != nil {
			t.Fatal(err)
		}
	}
	return nodes, eng
}

// known reports whether s has the topic or subscription arn in memory.
func known(s *Service, arn string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.topics[arn] != nil || s.subs[arn] != nil
}

func cachedSub(s *Service, arn string) *subscription {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.subs[arn]
}

// TestNewsKeepsNodesCurrent: news of a change made through another node
// installs, replaces and removes topics and subscriptions, keeping the
// state of what stays, whether it names one record or every record.
func TestNewsKeepsNodesCurrent(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		tell func(b *Service, kind, key string)
	}{
		{"one record", func(b *Service, kind, key string) { b.RecordChanged(kind, key) }},
		{"a kind", func(b *Service, kind, key string) { b.RecordChanged(kind, "") }},
		{"everything", func(b *Service, kind, key string) { b.RecordChanged("", "") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			nodes, _ := newNodes(t, 2)
			a, b := nodes[0], nodes[1]
			topic, err := a.createTopic(ctx, &createTopicInput{Name: "t"})
			if err != nil {
				t.Fatal(err)
			}
			sub, err := a.subscribe(ctx, &subscribeInput{TopicArn: topic.TopicArn, Protocol: "sqs",
				Endpoint: "arn:aws:sqs:us-east-1:000000000000:q", ReturnSubscriptionArn: true})
			if err != nil {
				t.Fatal(err)
			}
			tt.tell(b, kindTopic, topic.TopicArn)
			tt.tell(b, kindSubscription, sub.SubscriptionArn)
			testwait.Eventually(t, "the other node to learn of the topic and subscription", func() bool {
				return known(b, topic.TopicArn) && known(b, sub.SubscriptionArn)
			})
			state := cachedSub(b, sub.SubscriptionArn).state
			policy := `{"kind":["order"]}`
			if _, err := a.setSubscriptionAttributes(ctx, &setSubscriptionAttributesInput{SubscriptionArn: sub.SubscriptionArn,
				AttributeName: attrFilterPolicy, AttributeValue: &policy}); err != nil {
				t.Fatal(err)
			}
			tt.tell(b, kindSubscription, sub.SubscriptionArn)
			testwait.Eventually(t, "the filter policy on the other node", func() bool {
				return cachedSub(b, sub.SubscriptionArn).filter != nil
			})
			if got := cachedSub(b, sub.SubscriptionArn).state; got != state {
				t.Error("the replaced subscription lost its state")
			}
			if _, err := a.deleteTopic(ctx, &topicArnInput{TopicArn: topic.TopicArn}); err != nil {
				t.Fatal(err)
			}
			tt.tell(b, kindTopic, topic.TopicArn)
			tt.tell(b, kindSubscription, sub.SubscriptionArn)
			testwait.Eventually(t, "the other node to forget the topic and subscription", func() bool {
				return !known(b, topic.TopicArn) && !known(b, sub.SubscriptionArn)
			})
		})
	}
}

// TestReadThroughOnMiss: a node that has heard nothing finds a topic, a
// subscription and a confirmation token made through another node in the
// store, and still answers NotFound for what does not exist.
func TestReadThroughOnMiss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes, _ := newNodes(t, 2)
	a, b := nodes[0], nodes[1]
	topic, err := a.createTopic(ctx, &createTopicInput{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := a.subscribe(ctx, &subscribeInput{TopicArn: topic.TopicArn, Protocol: "email", Endpoint: "a@example.com", ReturnSubscriptionArn: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.publish(ctx, &publishInput{TopicArn: topic.TopicArn, Message: "hi"}); err != nil {
		t.Errorf("publish through the other node: %v", err)
	}
	if _, err := b.getSubscriptionAttributes(ctx, &subscriptionArnInput{SubscriptionArn: sub.SubscriptionArn}); err != nil {
		t.Errorf("subscription through the other node: %v", err)
	}
	token, ok := a.ConfirmationToken(sub.SubscriptionArn)
	if !ok {
		t.Fatal("no token")
	}
	out, err := b.confirmSubscription(ctx, &confirmSubscriptionInput{TopicArn: topic.TopicArn, Token: token})
	if err != nil || out.SubscriptionArn != sub.SubscriptionArn {
		t.Fatalf("confirm through the other node: %v %v", out, err)
	}
	// A change builds on the stored record: a's copy is still pending.
	raw := "false"
	if _, err := a.setSubscriptionAttributes(ctx, &setSubscriptionAttributesInput{SubscriptionArn: sub.SubscriptionArn,
		AttributeName: attrRawMessageDelivery, AttributeValue: &raw}); err != nil {
		t.Fatal(err)
	}
	if got := cachedSub(a, sub.SubscriptionArn); got.Pending {
		t.Error("a change through the first node undid the confirmation made through the other")
	}
	if _, err := b.publish(ctx, &publishInput{TopicArn: topic.TopicArn + "x", Message: "hi"}); err != errTopicNotFound {
		t.Errorf("publish to a missing topic: %v", err)
	}
	missing := topic.TopicArn + ":0b5d3c2f-2f6e-4a1b-9c8d-7e6f5a4b3c2d"
	if _, err := b.getSubscriptionAttributes(ctx, &subscriptionArnInput{SubscriptionArn: missing}); err != errSubscriptionNotFound {
		t.Errorf("a missing subscription: %v", err)
	}
}

// TestNewsOfAnOrphan: a subscription whose topic another node deleted
// before it knew of the subscription is removed, queue and record, by the
// node that hears of it.
func TestNewsOfAnOrphan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes, eng := newNodes(t, 2)
	a, b := nodes[0], nodes[1]
	topic, err := a.createTopic(ctx, &createTopicInput{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := a.subscribe(ctx, &subscribeInput{TopicArn: topic.TopicArn, Protocol: "email", Endpoint: "a@example.com", ReturnSubscriptionArn: true})
	if err != nil {
		t.Fatal(err)
	}
	queue := cachedSub(a, sub.SubscriptionArn).Queue
	// b deletes the topic knowing nothing of the subscription.
	if _, err := b.deleteTopic(ctx, &topicArnInput{TopicArn: topic.TopicArn}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := eng.GetRecord(ctx, kindSubscription, sub.SubscriptionArn); !ok {
		t.Fatal("the subscription went with a topic its node did not know it had")
	}
	b.RecordChanged(kindSubscription, sub.SubscriptionArn)
	testwait.Eventually(t, "the orphan's record to go", func() bool {
		_, ok, _ := eng.GetRecord(ctx, kindSubscription, sub.SubscriptionArn)
		return !ok
	})
	if _, err := eng.GetQueue(ctx, delivery.QueueAccount, queue); err == nil {
		t.Error("the orphan's delivery queue is left")
	}
}

// TestWorkersOnEveryNode: a subscription with a delivery queue made
// through one node gets a worker on the others from their news, which
// delivers once the first node has stopped.
func TestWorkersOnEveryNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes, _ := newNodes(t, 2)
	a, b := nodes[0], nodes[1]
	topic, err := a.createTopic(ctx, &createTopicInput{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := a.subscribe(ctx, &subscribeInput{TopicArn: topic.TopicArn, Protocol: "email", Endpoint: "a@example.com", ReturnSubscriptionArn: true})
	if err != nil {
		t.Fatal(err)
	}
	token, _ := a.ConfirmationToken(sub.SubscriptionArn)
	if _, err := a.confirmSubscription(ctx, &confirmSubscriptionInput{TopicArn: topic.TopicArn, Token: token}); err != nil {
		t.Fatal(err)
	}
	b.RecordChanged(kindTopic, topic.TopicArn)
	b.RecordChanged(kindSubscription, sub.SubscriptionArn)
	testwait.Eventually(t, "the other node to learn of the subscription", func() bool {
		s := cachedSub(b, sub.SubscriptionArn)
		return s != nil && !s.Pending
	})
	a.Close()
	nodes[0] = nil
	if _, err := b.publish(ctx, &publishInput{TopicArn: topic.TopicArn, Message: "to b's worker"}); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, "the other node's worker to deliver", func() bool {
		for _, r := range b.Deliveries(delivery.ProtoEmail) {
			if r.Message == "to b's worker" {
				return true
			}
		}
		return false
	})
}

// TestRetriesOnEveryNode: the retry queue a node makes for an at-once
// subscription when a fault fails a delivery is in the subscription's
// record, so another node serves it: here after the first has stopped.
func TestRetriesOnEveryNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rules := faults.New(faults.Options{})
	if _, err := rules.Add(faults.Rule{Protocol: delivery.ProtoSMS, Status: 500, Count: 1}); err != nil {
		t.Fatal(err)
	}
	nodes, _ := newNodes(t, 2, func(node int, o *delivery.Options) {
		if node == 0 {
			o.Faults = rules
		}
	})
	a, b := nodes[0], nodes[1]
	clk := a.clock.(*clock.Fake)
	topic, err := a.createTopic(ctx, &createTopicInput{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := a.subscribe(ctx, &subscribeInput{TopicArn: topic.TopicArn, Protocol: "sms", Endpoint: "+15555550100", ReturnSubscriptionArn: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.publish(ctx, &publishInput{TopicArn: topic.TopicArn, Message: "once more"}); err != nil {
		t.Fatal(err)
	}
	queue := cachedSub(a, sub.SubscriptionArn).Queue
	if queue == "" {
		t.Fatal("the failed delivery made no retry queue")
	}
	b.RecordChanged(kindTopic, topic.TopicArn)
	b.RecordChanged(kindSubscription, sub.SubscriptionArn)
	testwait.Eventually(t, "the other node to learn of the retry queue", func() bool {
		s := cachedSub(b, sub.SubscriptionArn)
		return s != nil && s.Queue == queue
	})
	a.Close()
	nodes[0] = nil
	// The customer-managed policy of SMS retries 10 s on (± jitter).
	clk.Advance(12 * time.Second)
	testwait.Eventually(t, "the other node's worker to deliver", func() bool {
		for _, r := range b.Deliveries(delivery.ProtoSMS) {
			if r.Message == "once more" {
				return true
			}
		}
		return false
	})
}

// TestOneSigningKey: the node that makes the signing key stores it for
// every node; another node serves its certificate once it hears of it,
// before signing anything, and signs with the same key.
func TestOneSigningKey(t *testing.T) {
	t.Parallel()
	nodes, _ := newNodes(t, 2)
	a, b := nodes[0], nodes[1]
	mux := http.NewServeMux()
	b.Register(mux)
	tp, err := delivery.NewTopic("arn:aws:sns:us-east-1:000000000000:t", "t", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := &delivery.Message{ID: "id", Body: "hi", Timestamp: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
	na, err := a.delivery.Notification(tp, m, "hi", "arn:aws:sns:us-east-1:000000000000:t:s")
	if err != nil {
		t.Fatal(err)
	}
	certPath := na.SigningCertURL[strings.LastIndexByte(na.SigningCertURL, '/'):]
	b.RecordChanged(kindSigningKey, "made")
	var pem []byte
	testwait.Eventually(t, "the other node to serve the certificate", func() bool {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, certPath, nil))
		pem = rec.Body.Bytes()
		return rec.Code == http.StatusOK
	})
	if err := deliverytest.Verify(pem, na.SigningFields(), na.SignatureVersion, na.Signature); err != nil {
		t.Errorf("the first node's signature does not verify with the other's certificate: %v", err)
	}
	nb, err := b.delivery.Notification(tp, &delivery.Message{ID: "id2", Body: "hi", Timestamp: m.Timestamp}, "hi", "arn:aws:sns:us-east-1:000000000000:t:s")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(nb.SigningCertURL, certPath) {
		t.Errorf("the nodes sign with different keys: %s, %s", na.SigningCertURL, nb.SigningCertURL)
	}
	if err := deliverytest.Verify(pem, nb.SigningFields(), nb.SignatureVersion, nb.Signature); err != nil {
		t.Errorf("the other node's signature does not verify: %v", err)
	}
}
