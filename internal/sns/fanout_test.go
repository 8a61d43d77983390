package sns

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/digest"
	"github.com/ferrymq/ferry/internal/engine"
)

// TestFanoutCopies publishes to enveloped and raw SQS subscriptions of one
// topic and checks every copy as its subscriber sees it: each envelope
// verifies against the signing certificate and names its own
// subscription, the raw copies carry the message and its attributes, and
// every digest matches.
func TestFanoutCopies(t *testing.T) {
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
				f := decode(t, []byte(m.Body))
				if f["MessageId"] != out.MessageId || f["Message"] != tt.sqsText || f["SignatureVersion"] != tt.version {
					t.Errorf("q%d envelope: %v", i, f)
				}
				if f["UnsubscribeURL"] != s.unsubscribeURL(subARN) {
					t.Errorf("q%d: UnsubscribeURL %q, want that of %s", i, f["UnsubscribeURL"], subARN)
				}
				if err := verify(t, signerOf(t, s).CertPEM(), f, f["SignatureVersion"], f["Signature"]); err != nil {
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

func signerOf(t *testing.T, s *Service) *Signer {
	t.Helper()
	k, err := s.keys.get()
	if err != nil {
		t.Fatal(err)
	}
	return k
}
