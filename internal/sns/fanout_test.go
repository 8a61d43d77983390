package sns

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/digest"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/sns/delivery"
	"github.com/ferrymq/ferry/internal/sns/delivery/deliverytest"
	"github.com/ferrymq/ferry/internal/sns/filterpolicy"
)

// TestFanoutCopies publishes to enveloped and raw SQS subscriptions of one
// topic and checks every copy as its subscriber sees it: each envelope
// verifies against the signing certificate and names its own
// subscription, the raw copies carry the message and its attributes, and
// every digest matches.
func TestFanoutCopies(t *testing.T) {
	t.Parallel()
	kind := "order"
	attrs := map[string]messageAttributeValue{"kind": {DataType: "String", StringValue: &kind}}
	for _, tt := range []struct {
		name, version, structure, message, sqsText string
	}{
		{"v1", "1", "", "hello", "hello"},
		{"v2", "2", "", "hello", "hello"},
		{"v1 structured", "1", "json", `{"default":"d","sqs":"to sqs"}`, "to sqs"},
		{"v2 structured", "2", "json", `{"default":"d","sqs":"to sqs"}`, "to sqs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			raw := map[string]string{"RawMessageDelivery": "true"}
			s, eng, topicARN, subARNs := newFanoutFixture(t, []map[string]string{nil, raw, nil, raw, nil})
			version := tt.version
			if _, err := s.setTopicAttributes(ctx, &setTopicAttributesInput{TopicArn: topicARN,
				AttributeName: "SignatureVersion", AttributeValue: &version}); err != nil {
				t.Fatal(err)
			}
			out, err := s.publish(ctx, &publishInput{TopicArn: topicARN, Message: tt.message,
				MessageStructure: tt.structure, MessageAttributes: attrs})
			if err != nil {
				t.Fatal(err)
			}
			for i, subARN := range subARNs {
				msgs, err := eng.Receive(ctx, DefaultAccount, fmt.Sprintf("q%d", i), engine.ReceiveRequest{Max: 10})
				if err != nil {
					t.Fatal(err)
				}
				if len(msgs) != 1 {
					t.Fatalf("q%d: %d messages, want 1", i, len(msgs))
				}
				m := msgs[0]
				if m.MD5OfBody != digest.MD5Hex(m.Body) || m.MD5OfAttrs != digest.MD5OfAttributes(m.Attributes) {
					t.Errorf("q%d: digests %s %s do not match the copy", i, m.MD5OfBody, m.MD5OfAttrs)
				}
				if i%2 == 1 { // raw
					wantAttrs := 1
					if tt.structure != "" {
						wantAttrs = 0
					}
					if m.Body != tt.sqsText || len(m.Attributes) != wantAttrs {
						t.Errorf("q%d raw copy: body %q, %d attributes", i, m.Body, len(m.Attributes))
					}
					continue
				}
				f := deliverytest.Decode(t, []byte(m.Body))
				if f["MessageId"] != out.MessageId || f["Message"] != tt.sqsText || f["SignatureVersion"] != tt.version {
					t.Errorf("q%d envelope: %v", i, f)
				}
				if f["UnsubscribeURL"] != "http://localhost/?Action=Unsubscribe&SubscriptionArn="+subARN {
					t.Errorf("q%d: UnsubscribeURL %q, want that of %s", i, f["UnsubscribeURL"], subARN)
				}
				if err := deliverytest.Verify(certAt(t, s, f["SigningCertURL"]), f, f["SignatureVersion"], f["Signature"]); err != nil {
					t.Errorf("q%d: signature does not verify: %v", i, err)
				}
			}
		})
	}
}

// TestFanoutConcurrentPublishes publishes from many goroutines to more
// subscriptions than there are fan-out workers: every queue gets every
// message exactly once.
func TestFanoutConcurrentPublishes(t *testing.T) {
	t.Parallel()
	const (
		queues     = fanoutWorkers + 6
		publishers = 8
		each       = 5
	)
	raw := map[string]string{"RawMessageDelivery": "true"}
	subs := make([]map[string]string, queues)
	for i := range subs {
		subs[i] = raw
	}
	s, eng, topicARN, _ := newFanoutFixture(t, subs)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, publishers*each)
	for p := range publishers {
		wg.Go(func() {
			for i := range each {
				if _, err := s.publish(ctx, &publishInput{TopicArn: topicARN, Message: fmt.Sprintf("m%d-%d", p, i)}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	hidden := time.Hour // the queues have no visibility timeout of their own
	for q := range queues {
		seen := map[string]int{}
		for {
			msgs, err := eng.Receive(ctx, DefaultAccount, fmt.Sprintf("q%d", q), engine.ReceiveRequest{Max: 10, Visibility: &hidden})
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) == 0 {
				break
			}
			for _, m := range msgs {
				seen[m.Body]++
			}
		}
		if len(seen) != publishers*each {
			t.Errorf("q%d: %d distinct messages, want %d", q, len(seen), publishers*each)
		}
		for body, n := range seen {
			if n != 1 {
				t.Errorf("q%d: %q %d times", q, body, n)
			}
		}
	}
}

// certAt fetches the signing certificate from SigningCertURL, as a
// subscriber does.
func certAt(t *testing.T, s *Service, url string) []byte {
	t.Helper()
	mux := http.NewServeMux()
	s.Register(mux)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d", url, rec.Code)
	}
	return rec.Body.Bytes()
}

// TestFanoutSubscriptionMix publishes to a topic whose SQS subscriptions
// each take another way: standard queues of the account (written
// together), one delayed, one filtered out, one whose queue is gone (its
// copy goes to the subscription's dead-letter queue) and one in another
// region (unreachable). Each gets what it would get alone, and the
// counters say so.
func TestFanoutSubscriptionMix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	raw := func(more map[string]string) map[string]string {
		m := map[string]string{"RawMessageDelivery": "true"}
		for k, v := range more {
			m[k] = v
		}
		return m
	}
	dlqARN := "arn:aws:sqs:us-east-1:" + DefaultAccount + ":dlq"
	s, eng, topicARN, subARNs := newFanoutFixture(t, []map[string]string{
		raw(nil), // q0
		nil,      // q1: enveloped
		raw(map[string]string{"FilterPolicy": `{"kind":["refund"]}`}),                       // q2: filtered out
		raw(map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqARN + `"}`}), // q3: deleted below
		raw(nil), // q4: delayed below
	})
	if _, _, err := eng.CreateQueue(ctx, engine.Queue{Account: DefaultAccount, Name: "dlq", ARN: dlqARN}); err != nil {
		t.Fatal(err)
	}
	if err := eng.DeleteQueue(ctx, DefaultAccount, "q3"); err != nil {
		t.Fatal(err)
	}
	if err := eng.UpdateQueue(ctx, DefaultAccount, "q4", func(q *engine.Queue) error {
		q.Settings.Delay = time.Minute
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	remote, err := s.subscribe(ctx, &subscribeInput{TopicArn: topicARN, Protocol: "sqs",
		Endpoint: "arn:aws:sqs:eu-west-1:" + DefaultAccount + ":q0", Attributes: raw(nil)})
	if err != nil {
		t.Fatal(err)
	}

	kind := "order"
	out, err := s.publish(ctx, &publishInput{TopicArn: topicARN, Message: "hello",
		MessageAttributes: map[string]messageAttributeValue{"kind": {DataType: "String", StringValue: &kind}}})
	if err != nil {
		t.Fatal(err)
	}
	hidden := time.Hour
	receive := func(name string) []engine.Message {
		t.Helper()
		msgs, err := eng.Receive(ctx, DefaultAccount, name, engine.ReceiveRequest{Max: 10, Visibility: &hidden})
		if err != nil {
			t.Fatalf("receive %s: %v", name, err)
		}
		return msgs
	}
	if got := receive("q0"); len(got) != 1 || got[0].Body != "hello" || len(got[0].Attributes) != 1 {
		t.Errorf("q0 (raw): %+v", got)
	}
	if got := receive("q1"); len(got) != 1 || deliverytest.Decode(t, []byte(got[0].Body))["MessageId"] != out.MessageId {
		t.Errorf("q1 (envelope): %+v", got)
	}
	if got := receive("q2"); len(got) != 0 {
		t.Errorf("q2 (filtered out) got %d messages", len(got))
	}
	if got := receive("dlq"); len(got) != 1 || got[0].Body != "hello" {
		t.Errorf("dead-letter queue of q3: %+v", got)
	}
	if got := receive("q4"); len(got) != 0 {
		t.Errorf("q4 (delayed) got %d messages at once", len(got))
	}
	st, err := eng.Stats(ctx, DefaultAccount, "q4")
	if err != nil || st.Delayed != 1 {
		t.Errorf("q4 stats %+v (%v), want 1 delayed", st, err)
	}

	for _, tc := range []struct {
		sub                                      string
		delivered, failed, filtered, redrivenDLQ int64
	}{
		{subARNs[0], 1, 0, 0, 0},
		{subARNs[1], 1, 0, 0, 0},
		{subARNs[2], 0, 0, 1, 0},
		{subARNs[3], 0, 1, 0, 1},
		{subARNs[4], 1, 0, 0, 0},
		{remote.SubscriptionArn, 0, 1, 0, 0},
	} {
		c, ok := s.SubscriptionCounters(tc.sub)
		if !ok || c.Delivered != tc.delivered || c.Failed != tc.failed || c.FilteredOut != tc.filtered || c.RedrivenToDLQ != tc.redrivenDLQ {
			t.Errorf("%s: counters %+v", tc.sub, c)
		}
	}
}

// TestFanoutFIFOTopic publishes to a FIFO topic with two FIFO queues: both
// get every message once, in order, with the topic's deduplication.
func TestFanoutFIFOTopic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, eng, _, _ := newFanoutFixture(t, nil)
	topic, err := s.createTopic(ctx, &createTopicInput{Name: "orders.fifo",
		Attributes: map[string]string{"FifoTopic": "true", "ContentBasedDeduplication": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a.fifo", "b.fifo"} {
		arn := "arn:aws:sqs:us-east-1:" + DefaultAccount + ":" + name
		if _, _, err := eng.CreateQueue(ctx, engine.Queue{Account: DefaultAccount, Name: name, ARN: arn,
			Settings: engine.QueueSettings{FIFO: true}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.subscribe(ctx, &subscribeInput{TopicArn: topic.TopicArn, Protocol: "sqs", Endpoint: arn,
			Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
			t.Fatal(err)
		}
	}
	group := "g"
	hidden := time.Hour
	for _, body := range []string{"one", "two", "one", "three"} {
		if _, err := s.publish(ctx, &publishInput{TopicArn: topic.TopicArn, Message: body, MessageGroupId: &group}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"a.fifo", "b.fifo"} {
		var bodies []string
		for {
			msgs, err := eng.Receive(ctx, DefaultAccount, name, engine.ReceiveRequest{Max: 1, Visibility: &hidden})
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) == 0 {
				break
			}
			bodies = append(bodies, msgs[0].Body)
			// Let the group's next message go.
			if errs, err := eng.Delete(ctx, DefaultAccount, name, []string{msgs[0].ReceiptHandle}); err != nil || errs[0] != nil {
				t.Fatal(err, errs)
			}
		}
		if fmt.Sprint(bodies) != "[one two three]" {
			t.Errorf("%s: %v", name, bodies)
		}
	}
}

// TestPassing keeps the messages a filter policy lets through, in order.
func TestPassing(t *testing.T) {
	t.Parallel()
	fp, err := filterpolicy.Parse(`{"kind":["order"]}`, "")
	if err != nil {
		t.Fatal(err)
	}
	s, _, _, _ := newFanoutFixture(t, nil)
	sub := &subscription{Protocol: delivery.ProtoSQS, filter: fp, state: &subState{}}
	msg := func(kind string) *message {
		return &message{Message: delivery.Message{ID: kind, Attributes: map[string]MessageAttribute{"kind": {DataType: "String", StringValue: kind}}}}
	}
	for _, tc := range []struct {
		kinds []string
		want  string
	}{
		{nil, "[]"},
		{[]string{"order"}, "[order]"},
		{[]string{"refund"}, "[]"},
		{[]string{"order", "order"}, "[order order]"},
		{[]string{"refund", "order"}, "[order]"},
		{[]string{"order", "refund", "order"}, "[order order]"},
		{[]string{"order", "order", "refund"}, "[order order]"},
	} {
		var msgs []*message
		for _, k := range tc.kinds {
			msgs = append(msgs, msg(k))
		}
		var ids []string
		for _, m := range s.passing(sub, msgs) {
			ids = append(ids, m.ID)
		}
		if got := fmt.Sprint(ids); got != tc.want {
			t.Errorf("%v: passing %s, want %s", tc.kinds, got, tc.want)
		}
	}
}
