package server_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine/postgres/pgtest"
	"github.com/ferrymq/ferry/internal/sns/delivery/deliverytest"
	"github.com/ferrymq/ferry/internal/testwait"
)

// Several Ferry nodes on one PostgreSQL schema act as one SNS: these tests
// start two or three servers on stores opened on the same schema and one
// fake clock, and drive each through its own clients.

// startNodes starts n nodes on one new schema and one fake clock.
func startNodes(t *testing.T, n int) []*ferry {
	t.Helper()
	url, schema := pgtest.Schema(t)
	clk := clock.NewFake(epoch)
	nodes := make([]*ferry, n)
	for i := range nodes {
		nodes[i] = start(t, onClock(clk), onSharedSchema(t, url, schema))
	}
	return nodes
}

// onNode points a link one node wrote (a SubscribeURL, a SigningCertURL)
// at another node f.
func onNode(t testing.TB, link string, f *ferry) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatalf("link %q: %v", link, err)
	}
	u.Host = strings.TrimPrefix(f.srv.URL(), "http://")
	return u.String()
}

// lists reports whether f, from what it knows, lists subscription sub of
// topic (ListSubscriptionsByTopic answers from the node's memory).
func (f *ferry) lists(t testing.TB, topic, sub string) bool {
	out, err := f.sns.ListSubscriptionsByTopic(ctxT(t), &snssdk.ListSubscriptionsByTopicInput{TopicArn: aws.String(topic)})
	if err != nil {
		return false
	}
	return slices.ContainsFunc(out.Subscriptions, func(s snstypes.Subscription) bool { return aws.ToString(s.SubscriptionArn) == sub })
}

// subscriptionAttr is one attribute of sub as node f has it.
func (f *ferry) subscriptionAttr(t testing.TB, sub, name string) string {
	out, err := f.sns.GetSubscriptionAttributes(ctxT(t), &snssdk.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(sub)})
	if err != nil {
		return ""
	}
	return out.Attributes[name]
}

// TestSNSNodesFanout: a topic created through one node is published to
// through a second and delivered into a queue subscribed through a third;
// a filter policy set through one node applies to publishes through
// another once its news has arrived; an unsubscribe and a topic's delete
// through one node are seen by the others.
func TestSNSNodesFanout(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	a, b, c := nodes[0], nodes[1], nodes[2]
	topic := a.createTopic(t, "across", nil)
	qURL := c.createQueue(t, "into", nil)
	sub := c.subscribe(t, topic, "sqs", arnPrefix+"into", map[string]string{"RawMessageDelivery": "true"})
	testwait.Eventually(t, "the node that publishes to hear of the subscription", func() bool { return b.lists(t, topic, sub) })
	b.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("from b")})
	if got := aws.ToString(a.receiveOne(t, qURL).Body); got != "from b" {
		t.Errorf("received %q", got)
	}

	policy := `{"kind":["wanted"]}`
	if _, err := a.sns.SetSubscriptionAttributes(ctxT(t), &snssdk.SetSubscriptionAttributesInput{SubscriptionArn: aws.String(sub),
		AttributeName: aws.String("FilterPolicy"), AttributeValue: aws.String(policy)}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	testwait.Eventually(t, "the filter policy to reach the node that publishes", func() bool {
		return b.subscriptionAttr(t, sub, "FilterPolicy") == policy
	})
	t.Logf("the filter policy's news reached the other node within %v", time.Since(began))
	for _, kind := range []string{"unwanted", "wanted"} {
		b.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String(kind),
			MessageAttributes: map[string]snstypes.MessageAttributeValue{"kind": strAttr(kind)}})
	}
	if got := aws.ToString(c.receiveOne(t, qURL).Body); got != "wanted" {
		t.Errorf("received %q through the filter", got)
	}
	c.wantEmpty(t, qURL)

	if _, err := b.sns.Unsubscribe(ctxT(t), &snssdk.UnsubscribeInput{SubscriptionArn: aws.String(sub)}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*ferry{a, c} {
		testwait.Eventually(t, "the other nodes to hear of the unsubscribe", func() bool { return !f.lists(t, topic, sub) })
	}
	a.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("wanted"),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{"kind": strAttr("wanted")}})
	c.wantEmpty(t, qURL)

	if _, err := c.sns.DeleteTopic(ctxT(t), &snssdk.DeleteTopicInput{TopicArn: aws.String(topic)}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*ferry{a, b} {
		testwait.Eventually(t, "the other nodes to hear of the topic's delete", func() bool {
			out, err := f.sns.ListTopics(ctxT(t), &snssdk.ListTopicsInput{})
			return err == nil && len(out.Topics) == 0
		})
		_, err := f.sns.Publish(ctxT(t), &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("gone")})
		wantSNSError(t, err, "NotFound", 404, "Topic does not exist")
	}
}

// TestSNSNodesHTTP: an HTTP subscription made through one node is
// confirmed through another; its notifications, published through a
// third, verify against the certificate every node serves.
func TestSNSNodesHTTP(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	a, b, c := nodes[0], nodes[1], nodes[2]
	topic := a.createTopic(t, "web", nil)
	e := newEndpoint(t, a, always(200))
	out, err := a.sns.Subscribe(ctxT(t), &snssdk.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("http"),
		Endpoint: aws.String(e.srv.URL + "/hook")})
	if err != nil || aws.ToString(out.SubscriptionArn) != "pending confirmation" {
		t.Fatalf("Subscribe: %v %v", out, err)
	}
	e.waitHits(1)
	conf := parseEnvelope(t, e.get(0).body)
	r := do(t, mustRequest(t, "GET", onNode(t, conf.str("SubscribeURL"), b)))
	if r.Status != 200 {
		t.Fatalf("GET SubscribeURL on another node: %d %s", r.Status, r.Body)
	}
	_, rest, _ := strings.Cut(r.Body, "<SubscriptionArn>")
	sub, _, _ := strings.Cut(rest, "</SubscriptionArn>")
	testwait.Eventually(t, "the confirmation to reach the node that publishes", func() bool {
		return c.subscriptionAttr(t, sub, "PendingConfirmation") == "false"
	})
	c.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("signed")})
	e.waitHits(2)
	n := parseEnvelope(t, e.get(1).body)
	if n.str("Message") != "signed" || n.str("SubscriptionArn") == "" && n.str("UnsubscribeURL") == "" {
		t.Fatalf("notification %v", n)
	}
	fields := make(map[string]string, len(n))
	for k := range n {
		fields[k] = n.str(k)
	}
	for _, f := range nodes {
		for _, env := range []envelope{conf, n} {
			resp, err := http.Get(onNode(t, env.str("SigningCertURL"), f))
			if err != nil {
				t.Fatal(err)
			}
			pem, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("certificate on %s: %d", f.srv.URL(), resp.StatusCode)
			}
			ef := make(map[string]string, len(env))
			for k := range env {
				ef[k] = env.str(k)
			}
			if err := deliverytest.Verify(pem, ef, env.str("SignatureVersion"), env.str("Signature")); err != nil {
				t.Errorf("%s does not verify against the certificate of %s: %v", env.str("Type"), f.srv.URL(), err)
			}
		}
	}
}

// TestSNSNodesRetryCarriesOn: a delivery whose first attempt failed is
// retried by another node once the node that made the attempt has closed.
func TestSNSNodesRetryCarriesOn(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 2)
	a := nodes[0]
	topic := a.createTopic(t, "flaky", nil)
	e := newEndpoint(t, a, func(n int) int {
		if n == 1 {
			return 500 // the first attempt of the notification
		}
		return 200
	})
	sub := a.confirmHTTP(t, topic, e, nil)
	for _, f := range nodes {
		testwait.Eventually(t, "every node to hear of the confirmation", func() bool {
			return f.subscriptionAttr(t, sub, "PendingConfirmation") == "false"
		})
	}
	a.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("again")})
	e.waitHits(2)
	// The node that made the attempt holds its retry's wait.
	var took, other *ferry
	testwait.Eventually(t, "the failed attempt's retry to be scheduled", func() bool {
		for i, f := range nodes {
			if len(f.srv.SNS().DeliveryWaits()) == 1 && f.deliveriesSettled() {
				took, other = f, nodes[1-i]
				return true
			}
		}
		return false
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := took.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// One move past the retry's time, jitter included: AdvanceUntil's
	// steps from timer to timer would need a barrier for the other node's
	// long poll, which waits on the database between its timers.
	other.clk.Advance(23 * time.Second)
	e.waitHits(3)
	if waited := e.get(2).at.Sub(e.get(1).at); waited < 18*time.Second {
		t.Errorf("the retry came %v after the failure, before the policy's 20 s less jitter", waited)
	}
	if got := parseEnvelope(t, e.get(2).body); got.str("Message") != "again" {
		t.Errorf("retried %v", got)
	}
	testwait.Eventually(t, "the retry to count as delivered", func() bool {
		cn, _ := other.srv.SNS().SubscriptionCounters(sub)
		return cn.Delivered == 1
	})
}
