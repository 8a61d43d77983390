package server_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/postgres/pgtest"
	"github.com/ferrymq/ferry/internal/server"
	"github.com/ferrymq/ferry/internal/testwait"
)

// Calls through several nodes at the same moment that build on one SNS
// record: every node's goroutine waits on one channel, so that the calls
// leave together, many rounds over.

// startNodesAndStore starts n nodes on one new schema, as startNodes
// does, and opens one more store on it, through which the test reads
// what the nodes stored.
func startNodesAndStore(t *testing.T, n int) ([]*ferry, engine.Store) {
	t.Helper()
	url, schema := pgtest.Schema(t)
	clk := clock.NewFake(epoch)
	nodes := make([]*ferry, n)
	for i := range nodes {
		nodes[i] = start(t, onClock(clk), onSharedSchema(t, url, schema))
	}
	st := openSchema(t, server.Config{Clock: clk, Logger: testLogger(t)}, url, schema)
	t.Cleanup(func() { st.Close() })
	return nodes, st
}

// together runs call(i) for every node i at once and waits for them.
func together(n int, call func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			call(i)
		}()
	}
	close(start)
	wg.Wait()
}

// storedSubscription is what the test reads of a subscription record.
type storedSubscription struct {
	ARN      string            `json:"arn"`
	TopicARN string            `json:"topicArn"`
	Endpoint string            `json:"endpoint"`
	Attrs    map[string]string `json:"attrs"`
	Deleted  bool              `json:"deleted"`
}

// storedSubscriptions reads the live subscription records of topic.
func storedSubscriptions(t *testing.T, st engine.Store, topic string) []storedSubscription {
	t.Helper()
	recs, err := st.Records(ctxT(t), "sns-subscription")
	if err != nil {
		t.Fatal(err)
	}
	var out []storedSubscription
	for _, r := range recs {
		var s storedSubscription
		if err := json.Unmarshal(r.Value, &s); err != nil {
			t.Fatal(err)
		}
		if s.TopicARN == topic && !s.Deleted {
			out = append(out, s)
		}
	}
	return out
}

// invalidParameter reports whether err is SNS's InvalidParameter.
func invalidParameter(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "InvalidParameter"
}

// TestSNSNodesRaces: CreateTopic and Subscribe of one name or endpoint
// through three nodes at once make one topic and one subscription (every
// caller gets its ARN, or InvalidParameter when its attributes differ),
// and changes of one topic's or subscription's attributes through three
// nodes at once are all kept, as every node and the store see them.
func TestSNSNodesRaces(t *testing.T) {
	t.Parallel()
	nodes, st := startNodesAndStore(t, 3)
	const rounds = 8
	queues := []string{"same", "differ"}
	for _, q := range queues {
		nodes[0].createQueue(t, q, nil)
	}
	for r := range rounds {
		// CreateTopic: nodes 0 and 1 ask for one display name, node 2
		// for another.
		name := fmt.Sprint("race-", r)
		var (
			arns [3]string
			errs [3]error
		)
		together(3, func(i int) {
			display := "first"
			if i == 2 {
				display = "second"
			}
			out, err := nodes[i].sns.CreateTopic(ctxT(t), &snssdk.CreateTopicInput{Name: aws.String(name),
				Attributes: map[string]string{"DisplayName": display}})
			errs[i] = err
			if err == nil {
				arns[i] = aws.ToString(out.TopicArn)
			}
		})
		switch {
		case errs[0] == nil && errs[1] == nil && invalidParameter(errs[2]) && arns[0] == arns[1]:
		case errs[2] == nil && invalidParameter(errs[0]) && invalidParameter(errs[1]):
		default:
			t.Fatalf("round %d: CreateTopic through three nodes at once: ARNs %q, errors %v", r, arns, errs)
		}
		topic, won := arns[0], "first"
		if errs[2] == nil {
			topic, won = arns[2], "second"
		}
		for i, f := range nodes {
			if got := f.topicAttrs(t, topic)["DisplayName"]; got != won {
				t.Fatalf("round %d: node %d has DisplayName %q; %q won", r, i, got, won)
			}
		}

		// Subscribe: one endpoint with the same attributes through all
		// three; another with different attributes through node 2.
		var subs [2][3]string
		var subErrs [2][3]error
		together(6, func(k int) {
			i, q := k%3, queues[k/3]
			raw := "true"
			if q == "differ" && i == 2 {
				raw = "false"
			}
			out, err := nodes[i].sns.Subscribe(ctxT(t), &snssdk.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("sqs"),
				Endpoint: aws.String(arnPrefix + q), Attributes: map[string]string{"RawMessageDelivery": raw}, ReturnSubscriptionArn: true})
			subErrs[k/3][i] = err
			if err == nil {
				subs[k/3][i] = aws.ToString(out.SubscriptionArn)
			}
		})
		same := subs[0]
		if subErrs[0] != [3]error{} || same[0] == "" || same[0] != same[1] || same[1] != same[2] {
			t.Fatalf("round %d: Subscribe of one endpoint through three nodes at once: %q, %v", r, same, subErrs[0])
		}
		differ, derrs := subs[1], subErrs[1]
		switch {
		case derrs[0] == nil && derrs[1] == nil && invalidParameter(derrs[2]) && differ[0] == differ[1]:
		case derrs[2] == nil && invalidParameter(derrs[0]) && invalidParameter(derrs[1]):
		default:
			t.Fatalf("round %d: Subscribe with different attributes through three nodes at once: %q, %v", r, differ, derrs)
		}
		stored := storedSubscriptions(t, st, topic)
		if len(stored) != 2 {
			t.Fatalf("round %d: the store has %d subscriptions of the topic: %+v; want 2", r, len(stored), stored)
		}

		// Three changes of one subscription and of one topic at once.
		sub := same[0]
		policy := fmt.Sprintf(`{"round":[%d]}`, r)
		redrive := `{"deadLetterTargetArn":"` + arnPrefix + `differ"}`
		together(6, func(k int) {
			var err error
			f := nodes[k%3]
			switch k {
			case 0:
				err = f.setSubscriptionAttr(t, sub, "FilterPolicy", policy)
			case 1:
				err = f.setSubscriptionAttr(t, sub, "RedrivePolicy", redrive)
			case 2:
				err = f.setSubscriptionAttr(t, sub, "RawMessageDelivery", "false")
			case 3:
				_, err = f.sns.SetTopicAttributes(ctxT(t), &snssdk.SetTopicAttributesInput{TopicArn: aws.String(topic),
					AttributeName: aws.String("DisplayName"), AttributeValue: aws.String("changed")})
			case 4:
				_, err = f.sns.TagResource(ctxT(t), &snssdk.TagResourceInput{ResourceArn: aws.String(topic),
					Tags: []snstypes.Tag{{Key: aws.String("round"), Value: aws.String(fmt.Sprint(r))}}})
			case 5:
				_, err = f.sns.AddPermission(ctxT(t), &snssdk.AddPermissionInput{TopicArn: aws.String(topic), Label: aws.String("p"),
					AWSAccountId: []string{"111122223333"}, ActionName: []string{"Publish"}})
			}
			if err != nil {
				t.Errorf("round %d: change %d: %v", r, k, err)
			}
		})
		if t.Failed() {
			return
		}
		for _, s := range storedSubscriptions(t, st, topic) {
			if s.ARN == sub && (s.Attrs["FilterPolicy"] != policy || s.Attrs["RedrivePolicy"] != redrive || s.Attrs["RawMessageDelivery"] != "false") {
				t.Fatalf("round %d: the store's subscription lost a change: %v", r, s.Attrs)
			}
		}
		for i, f := range nodes {
			testwait.Eventually(t, fmt.Sprintf("node %d to see the three changes", i), func() bool {
				return f.subscriptionAttr(t, sub, "FilterPolicy") == policy && f.subscriptionAttr(t, sub, "RedrivePolicy") == redrive &&
					f.subscriptionAttr(t, sub, "RawMessageDelivery") == "false" && f.topicChanged(t, topic, r)
			})
		}
	}
}

func (f *ferry) setSubscriptionAttr(t *testing.T, sub, name, value string) error {
	_, err := f.sns.SetSubscriptionAttributes(ctxT(t), &snssdk.SetSubscriptionAttributesInput{SubscriptionArn: aws.String(sub),
		AttributeName: aws.String(name), AttributeValue: aws.String(value)})
	return err
}

// topicChanged reports whether f sees round r's three changes of topic.
func (f *ferry) topicChanged(t *testing.T, topic string, r int) bool {
	out, err := f.sns.GetTopicAttributes(ctxT(t), &snssdk.GetTopicAttributesInput{TopicArn: aws.String(topic)})
	if err != nil {
		return false
	}
	tags, err := f.sns.ListTagsForResource(ctxT(t), &snssdk.ListTagsForResourceInput{ResourceArn: aws.String(topic)})
	if err != nil {
		return false
	}
	var policy struct{ Statement []struct{ Sid string } }
	_ = json.Unmarshal([]byte(out.Attributes["Policy"]), &policy)
	return out.Attributes["DisplayName"] == "changed" &&
		slices.ContainsFunc(tags.Tags, func(tg snstypes.Tag) bool {
			return aws.ToString(tg.Key) == "round" && aws.ToString(tg.Value) == fmt.Sprint(r)
		}) &&
		slices.ContainsFunc(policy.Statement, func(s struct{ Sid string }) bool { return s.Sid == "p" })
}

// TestSNSNodesFIFO: a FIFO topic published to through three nodes acts as
// one: a duplicate through any node, or through all at once, answers the
// first publish's MessageId and SequenceNumber; publishes through every
// node at once get distinct numbers, growing for each caller; and the
// subscribed FIFO queue receives each message once, with its number.
func TestSNSNodesFIFO(t *testing.T) {
	t.Parallel()
	nodes, _ := startNodesAndStore(t, 3)
	a, b, c := nodes[0], nodes[1], nodes[2]
	topic := a.createTopic(t, "orders.fifo", map[string]string{"FifoTopic": "true", "ContentBasedDeduplication": "true"})
	fq := b.createQueue(t, "orders.fifo", map[string]string{"FifoQueue": "true"})
	sub := b.subscribe(t, topic, "sqs", arnPrefix+"orders.fifo", nil)
	for _, f := range nodes {
		testwait.Eventually(t, "every node to hear of the subscription", func() bool { return f.lists(t, topic, sub) })
	}
	type published struct{ id, seq string }
	var (
		mu   sync.Mutex
		want = map[string]string{} // message id → sequence number, of the messages delivered
	)
	pub := func(f *ferry, body, dedup string) published {
		in := &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String(body), MessageGroupId: aws.String("g")}
		if dedup != "" {
			in.MessageDeduplicationId = aws.String(dedup)
		}
		out := f.publish(t, in)
		p := published{aws.ToString(out.MessageId), aws.ToString(out.SequenceNumber)}
		mu.Lock()
		if seq, ok := want[p.id]; ok && seq != p.seq {
			t.Errorf("message %s numbered %s and %s", p.id, seq, p.seq)
		}
		want[p.id] = p.seq
		mu.Unlock()
		return p
	}

	// Duplicates through the other nodes, by id and by content.
	first := pub(a, "one", "d1")
	for _, f := range []*ferry{b, c} {
		if got := pub(f, "one again", "d1"); got != first {
			t.Fatalf("duplicate through another node: %+v; want %+v", got, first)
		}
	}
	byContent := pub(b, "same body", "")
	for _, f := range []*ferry{a, c} {
		if got := pub(f, "same body", ""); got != byContent {
			t.Fatalf("duplicate by content through another node: %+v; want %+v", got, byContent)
		}
	}
	// One deduplication id through all three at once, many rounds.
	const rounds = 10
	for r := range rounds {
		var got [3]published
		together(3, func(i int) { got[i] = pub(nodes[i], fmt.Sprint("race ", r), fmt.Sprint("race-", r)) })
		if got[0] != got[1] || got[1] != got[2] {
			t.Fatalf("round %d: one deduplication id through three nodes at once: %+v", r, got)
		}
	}
	// Distinct messages through all three at once, each caller in turn.
	const perNode = 15
	var seqs [3][]string
	together(3, func(i int) {
		for k := range perNode {
			p := pub(nodes[i], fmt.Sprint("node ", i, " message ", k), "")
			seqs[i] = append(seqs[i], p.seq)
		}
	})
	var all []string
	for i, s := range seqs {
		for k := 1; k < len(s); k++ {
			if s[k] <= s[k-1] {
				t.Errorf("node %d: number %s after %s", i, s[k], s[k-1])
			}
		}
		all = append(all, s...)
	}
	sort.Strings(all)
	if n := len(slices.Compact(all)); n != 3*perNode {
		t.Errorf("%d distinct numbers for %d messages", n, 3*perNode)
	}
	// A batch through one node whose entries repeat other nodes' messages.
	out, err := c.sns.PublishBatch(ctxT(t), &snssdk.PublishBatchInput{TopicArn: aws.String(topic), PublishBatchRequestEntries: []snstypes.PublishBatchRequestEntry{
		{Id: aws.String("dup"), Message: aws.String("x"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d1")},
		{Id: aws.String("new"), Message: aws.String("batch body"), MessageGroupId: aws.String("g")},
		{Id: aws.String("again"), Message: aws.String("batch body"), MessageGroupId: aws.String("g")},
	}})
	if err != nil || len(out.Successful) != 3 {
		t.Fatalf("PublishBatch: %+v, %v", out, err)
	}
	res := out.Successful
	if got := (published{aws.ToString(res[0].MessageId), aws.ToString(res[0].SequenceNumber)}); got != first {
		t.Errorf("batch entry repeating d1: %+v; want %+v", got, first)
	}
	if aws.ToString(res[2].MessageId) != aws.ToString(res[1].MessageId) || aws.ToString(res[1].SequenceNumber) <= all[len(all)-1] {
		t.Errorf("batch entries: %+v", res)
	}
	want[aws.ToString(res[1].MessageId)] = aws.ToString(res[1].SequenceNumber)

	// The queue gets every message once, with the number its publish got.
	got := map[string]string{}
	testwait.Eventually(t, "the FIFO queue to receive every message", func() bool {
		for _, m := range a.receiveAll(t, fq, 10) {
			e := parseEnvelope(t, aws.ToString(m.Body))
			if _, dup := got[e.str("MessageId")]; dup {
				t.Errorf("message %s received twice", e.str("MessageId"))
			}
			got[e.str("MessageId")] = e.str("SequenceNumber")
			if _, err := a.json.DeleteMessage(ctxT(t), &sqs.DeleteMessageInput{QueueUrl: aws.String(fq), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
		return len(got) >= len(want)
	})
	a.wantEmpty(t, fq)
	for id, seq := range want {
		if got[id] != seq {
			t.Errorf("message %s: delivered with number %q, published with %q", id, got[id], seq)
		}
	}
	if len(got) != len(want) {
		t.Errorf("the queue received %d messages; %d were published", len(got), len(want))
	}
}
