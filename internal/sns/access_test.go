package sns

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/protocol"
)

const (
	ownerAcct = "111111111111"
	otherAcct = "222222222222"
	thirdAcct = "333333333333"
	aclTopic  = "arn:aws:sns:us-east-1:" + ownerAcct + ":t"
)

func accessService() *Service {
	return &Service{account: DefaultAccount, region: DefaultRegion, clock: clock.NewFake(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))}
}

// policyTopic is the topic aclTopic with the policy doc ("" none).
func policyTopic(doc string) *topic {
	t := &topic{ARN: aclTopic, Name: "t", Attrs: map[string]string{}}
	if doc != "" {
		t.Attrs[attrPolicy] = doc
	}
	t.access = newTopicAccess(doc)
	return t
}

func statements(sts ...string) string {
	return `{"Version":"2012-10-17","Statement":[` + strings.Join(sts, ",") + `]}`
}

func TestAuthorizeTopic(t *testing.T) {
	t.Parallel()
	s := accessService()
	def := DefaultPolicy(aclTopic)
	other := `{"AWS":"` + otherAcct + `"}`
	noAllow := func(acct, action string) string {
		return "User: arn:aws:iam::" + acct + ":root is not authorized to perform: SNS:" + action + " on resource: " + aclTopic +
			" because no resource-based policy allows the SNS:" + action + " action"
	}
	denied := func(acct, action string) string {
		return "User: arn:aws:iam::" + acct + ":root is not authorized to perform: SNS:" + action + " on resource: " + aclTopic +
			" with an explicit deny in a resource-based policy"
	}
	denyHTTP := `{"Effect":"Deny","Principal":"*","Action":"sns:*","Condition":{"Bool":{"aws:SecureTransport":"false"}}}`
	for _, tt := range []struct {
		name     string
		policy   string
		caller   string
		verified bool
		tls      bool
		ip       string
		action   string
		keys     *subscribeKeys
		msg      string // "" allowed
	}{
		{name: "owner, no policy", caller: ownerAcct, action: "Publish"},
		{name: "owner verified, no policy", caller: ownerAcct, verified: true, action: "Publish"},
		{name: "owner, default policy", policy: def, caller: ownerAcct, verified: true, action: "DeleteTopic"},
		{name: "other, no policy", caller: otherAcct, action: "Publish", msg: noAllow(otherAcct, "Publish")},
		{name: "other, default policy", policy: def, caller: otherAcct, action: "Publish", msg: noAllow(otherAcct, "Publish")},
		{name: "other verified, default policy", policy: def, caller: otherAcct, verified: true, action: "Subscribe", msg: noAllow(otherAcct, "Subscribe")},
		{name: "the configured account calling", policy: def, caller: "", action: "GetTopicAttributes", msg: noAllow(DefaultAccount, "GetTopicAttributes")},
		{name: "other granted", policy: statements(`{"Effect":"Allow","Principal":` + other + `,"Action":"sns:Publish"}`), caller: otherAcct, action: "Publish"},
		{name: "other granted as root", policy: statements(`{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam::` + otherAcct + `:root"]},"Action":"SNS:Publish","Resource":"` + aclTopic + `"}`), caller: otherAcct, action: "Publish"},
		{name: "third not granted", policy: statements(`{"Effect":"Allow","Principal":` + other + `,"Action":"sns:Publish"}`), caller: thirdAcct, action: "Publish", msg: noAllow(thirdAcct, "Publish")},
		{name: "grant of another action", policy: statements(`{"Effect":"Allow","Principal":` + other + `,"Action":"sns:Publish"}`), caller: otherAcct, action: "Subscribe", msg: noAllow(otherAcct, "Subscribe")},
		{name: "wildcard action", policy: statements(`{"Effect":"Allow","Principal":"*","Action":"*"}`), caller: otherAcct, action: "ListSubscriptionsByTopic"},
		{name: "owner-only action", policy: statements(`{"Effect":"Allow","Principal":"*","Action":"*"}`), caller: otherAcct, action: "TagResource", msg: noAllow(otherAcct, "TagResource")},
		{name: "owner-only action, untag", policy: statements(`{"Effect":"Allow","Principal":"*","Action":"*"}`), caller: otherAcct, action: "UntagResource", msg: noAllow(otherAcct, "UntagResource")},
		{name: "explicit deny wins", policy: statements(`{"Effect":"Allow","Principal":"*","Action":"*"}`, `{"Effect":"Deny","Principal":`+other+`,"Action":"sns:Publish"}`), caller: otherAcct, action: "Publish", msg: denied(otherAcct, "Publish")},
		{name: "owner denied, unverified", policy: statements(denyHTTP), caller: ownerAcct, action: "Publish"},
		{name: "owner denied, verified", policy: statements(denyHTTP), caller: ownerAcct, verified: true, action: "Publish", msg: denied(ownerAcct, "Publish")},
		{name: "owner verified over TLS", policy: statements(denyHTTP), caller: ownerAcct, verified: true, tls: true, action: "Publish"},
		{name: "owner verified, Deny of another", policy: statements(`{"Effect":"Deny","Principal":"*","Action":"sns:DeleteTopic"}`), caller: ownerAcct, verified: true, action: "Publish"},
		{name: "other granted, over HTTP denied", policy: statements(`{"Effect":"Allow","Principal":"*","Action":"sns:Publish"}`, denyHTTP), caller: otherAcct, action: "Publish", msg: denied(otherAcct, "Publish")},
		{name: "other granted, over TLS", policy: statements(`{"Effect":"Allow","Principal":"*","Action":"sns:Publish"}`, denyHTTP), caller: otherAcct, tls: true, action: "Publish"},
		{name: "source ip in", policy: statements(`{"Effect":"Allow","Principal":"*","Action":"sns:Publish","Condition":{"IpAddress":{"aws:SourceIp":"192.0.2.0/24"}}}`), caller: otherAcct, ip: "192.0.2.7", action: "Publish"},
		{name: "source ip out", policy: statements(`{"Effect":"Allow","Principal":"*","Action":"sns:Publish","Condition":{"IpAddress":{"aws:SourceIp":"192.0.2.0/24"}}}`), caller: otherAcct, ip: "198.51.100.7", action: "Publish", msg: noAllow(otherAcct, "Publish")},
		{name: "source account is a service's", policy: statements(`{"Effect":"Allow","Principal":"*","Action":"sns:Publish","Condition":{"StringEquals":{"aws:SourceAccount":"` + otherAcct + `"}}}`), caller: otherAcct, action: "Publish", msg: noAllow(otherAcct, "Publish")},
		{name: "source owner is a service's", policy: statements(`{"Effect":"Allow","Principal":"*","Action":"sns:Publish","Condition":{"StringEquals":{"AWS:SourceOwner":"` + otherAcct + `"}}}`), caller: otherAcct, action: "Publish", msg: noAllow(otherAcct, "Publish")},
		{name: "negated source account holds when absent", policy: statements(`{"Effect":"Allow","Principal":"*","Action":"sns:Publish"}`, `{"Effect":"Deny","Principal":"*","Action":"sns:Publish","Condition":{"StringNotEquals":{"aws:SourceAccount":"`+ownerAcct+`"}}}`), caller: otherAcct, action: "Publish", msg: denied(otherAcct, "Publish")},
		{name: "subscribe protocol", policy: statements(`{"Effect":"Allow","Principal":` + other + `,"Action":"sns:Subscribe","Condition":{"StringEquals":{"sns:Protocol":"https"}}}`), caller: otherAcct, action: "Subscribe", keys: &subscribeKeys{protocol: "https", endpoint: "https://example.com/"}},
		{name: "subscribe protocol refused", policy: statements(`{"Effect":"Allow","Principal":` + other + `,"Action":"sns:Subscribe","Condition":{"StringEquals":{"sns:Protocol":"https"}}}`), caller: otherAcct, action: "Subscribe", keys: &subscribeKeys{protocol: "http", endpoint: "http://example.com/"}, msg: noAllow(otherAcct, "Subscribe")},
		{name: "subscribe endpoint", policy: statements(`{"Effect":"Allow","Principal":` + other + `,"Action":"sns:Subscribe","Condition":{"StringLike":{"SNS:Endpoint":"*@example.com"}}}`), caller: otherAcct, action: "Subscribe", keys: &subscribeKeys{protocol: "email", endpoint: "ops@example.com"}},
		{name: "subscribe endpoint refused", policy: statements(`{"Effect":"Allow","Principal":` + other + `,"Action":"sns:Subscribe","Condition":{"StringLike":{"sns:Endpoint":"*@example.com"}}}`), caller: otherAcct, action: "Subscribe", keys: &subscribeKeys{protocol: "email", endpoint: "ops@example.org"}, msg: noAllow(otherAcct, "Subscribe")},
		{name: "invalid stored policy grants nothing", policy: `{"Statement":"nonsense"}`, caller: otherAcct, action: "Publish", msg: noAllow(otherAcct, "Publish")},
		{name: "invalid stored policy denies nothing", policy: `{"Statement":"nonsense"}`, caller: ownerAcct, verified: true, action: "Publish"},
	} {
		ctx := protocol.WithInfo(context.Background(), &protocol.RequestInfo{Account: tt.caller, Verified: tt.verified, TLS: tt.tls, SourceIP: tt.ip})
		err := s.authorizeTopic(ctx, policyTopic(tt.policy), tt.action, tt.keys)
		code := ""
		if tt.msg != "" {
			code = "AuthorizationError"
		}
		wantErr(t, tt.name, err, code, tt.msg)
	}
}

func TestTopicAccessDenies(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		doc            string
		parsed, denies bool
	}{
		{"", false, false},
		{DefaultPolicy(aclTopic), true, false},
		{statements(`{"Effect":"Allow","Principal":"*","Action":"sns:Publish"}`, `{"Effect":"Deny","Principal":"*","Action":"sns:Subscribe"}`), true, true},
		{"{", false, false},
	} {
		a := newTopicAccess(tt.doc)
		if (a.policy != nil) != tt.parsed || a.denies != tt.denies {
			t.Errorf("%s: parsed %v, denies %v; want %v, %v", tt.doc, a.policy != nil, a.denies, tt.parsed, tt.denies)
		}
	}
}

func TestAuthorizeSubscription(t *testing.T) {
	t.Parallel()
	s := accessService()
	sub := &subscription{ARN: aclTopic + ":5b1e1c4e-0000-4000-8000-000000000000", TopicARN: aclTopic, Owner: otherAcct}
	for _, tt := range []struct {
		caller string
		ok     bool
	}{
		{otherAcct, true}, // the subscriber
		{ownerAcct, true}, // the topic's owner
		{thirdAcct, false},
	} {
		ctx := protocol.WithInfo(context.Background(), &protocol.RequestInfo{Account: tt.caller, Verified: true})
		err := s.authorizeSubscription(ctx, sub, "Unsubscribe")
		code, msg := "", ""
		if !tt.ok {
			code, msg = "AuthorizationError", "User: arn:aws:iam::"+tt.caller+":root is not authorized to perform: SNS:Unsubscribe on resource: "+sub.ARN
		}
		wantErr(t, tt.caller, err, code, msg)
	}
}

// TestPermissionStatements: what AddPermission writes is evaluated as AWS
// would (the account, as its root, is granted the actions on the topic),
// and RemovePermission takes it back; the default policy it extends lets
// no other account in.
func TestPermissionStatements(t *testing.T) {
	t.Parallel()
	s, _, topicARN, _ := newFanoutFixture(t, nil)
	owner := context.Background() // the configured account's
	other := protocol.WithInfo(context.Background(), &protocol.RequestInfo{Account: otherAcct})
	current := func() *topic {
		s.mu.RLock()
		defer s.mu.RUnlock()
		return s.topics[topicARN]
	}
	may := func(action string) bool { return s.authorizeTopic(other, current(), action, nil) == nil }
	if may("Publish") || may("Subscribe") {
		t.Fatal("the default policy lets another account in")
	}
	if _, err := s.addPermission(owner, &addPermissionInput{TopicArn: topicARN, Label: "grant", AWSAccountId: []string{otherAcct, thirdAcct},
		ActionName: []string{"Publish", "GetTopicAttributes"}}); err != nil {
		t.Fatal(err)
	}
	if !may("Publish") || !may("GetTopicAttributes") || may("Subscribe") {
		t.Errorf("after AddPermission: publish %v, get %v, subscribe %v; want true, true, false", may("Publish"), may("GetTopicAttributes"), may("Subscribe"))
	}
	if _, err := s.publish(other, &publishInput{TopicArn: topicARN, Message: "m"}); err != nil {
		t.Errorf("the granted account publishes: %v", err)
	}
	if _, err := s.removePermission(owner, &removePermissionInput{TopicArn: topicARN, Label: "grant"}); err != nil {
		t.Fatal(err)
	}
	if may("Publish") {
		t.Error("RemovePermission left the grant in force")
	}
	_, err := s.publish(other, &publishInput{TopicArn: topicARN, Message: "m"})
	wantErr(t, "publish after RemovePermission", err, "AuthorizationError", "User: arn:aws:iam::"+otherAcct+
		":root is not authorized to perform: SNS:Publish on resource: "+topicARN+" because no resource-based policy allows the SNS:Publish action")
}

// TestConfirmationIntoQueue: the topic's owner subscribing a queue of
// another account leaves the subscription pending and sends its
// SubscriptionConfirmation into the queue when the queue's policy lets
// the topic in (a FIFO queue takes it in a group of its own), and sends
// nothing when it does not; the queue's owner then confirms with the
// token, from its own account.
func TestConfirmationIntoQueue(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		fifo, lets bool
	}{
		{"standard, let in", false, true},
		{"standard, no policy", false, false},
		{"fifo, let in", true, true},
		{"fifo, no policy", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, eng, _, _ := newFanoutFixture(t, nil)
			ctx := context.Background() // the topic's owner, the configured account
			suffix, attrs := "", map[string]string{}
			if tt.fifo {
				suffix, attrs = ".fifo", map[string]string{attrFifoTopic: "true"}
			}
			topic, err := s.createTopic(ctx, &createTopicInput{Name: "orders" + suffix, Attributes: attrs})
			if err != nil {
				t.Fatal(err)
			}
			queue := "inbox" + suffix
			queueARN := "arn:aws:sqs:us-east-1:" + otherAcct + ":" + queue
			q := engine.Queue{Account: otherAcct, Name: queue, ARN: queueARN, Attributes: map[string]string{},
				Settings: engine.QueueSettings{FIFO: tt.fifo}}
			if tt.lets {
				q.Attributes["Policy"] = statements(`{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage",` +
					`"Resource":"` + queueARN + `","Condition":{"ArnEquals":{"aws:SourceArn":"` + topic.TopicArn + `"}}}`)
			}
			if _, _, err := eng.CreateQueue(ctx, q); err != nil {
				t.Fatal(err)
			}
			out, err := s.subscribe(ctx, &subscribeInput{TopicArn: topic.TopicArn, Protocol: "sqs", Endpoint: queueARN})
			if err != nil || out.SubscriptionArn != pendingARN {
				t.Fatalf("Subscribe: %v (%v), want pending", out, err)
			}
			msgs, err := eng.Receive(ctx, otherAcct, queue, engine.ReceiveRequest{Max: 10})
			if err != nil {
				t.Fatal(err)
			}
			if !tt.lets {
				if len(msgs) != 0 {
					t.Errorf("the queue that does not let the topic in got %d messages", len(msgs))
				}
				return
			}
			if len(msgs) != 1 {
				t.Fatalf("%d messages, want the confirmation", len(msgs))
			}
			var conf struct{ Type, Token, TopicArn string }
			if err := json.Unmarshal([]byte(msgs[0].Body), &conf); err != nil || conf.Type != "SubscriptionConfirmation" || conf.TopicArn != topic.TopicArn {
				t.Fatalf("confirmation %s (%v)", msgs[0].Body, err)
			}
			if tt.fifo && msgs[0].MessageGroupID == "" {
				t.Error("the FIFO queue's confirmation has no group")
			}
			queueOwner := protocol.WithInfo(context.Background(), &protocol.RequestInfo{Account: otherAcct, AccessKey: otherAcct})
			confirmed, err := s.confirmSubscription(queueOwner, &confirmSubscriptionInput{TopicArn: topic.TopicArn, Token: conf.Token})
			if err != nil {
				t.Fatalf("the queue's owner confirms: %v", err)
			}
			sub, err := s.cachedSubscription(ctx, confirmed.SubscriptionArn)
			if err != nil || sub.Pending || sub.Owner != DefaultAccount || !sub.Authenticated {
				t.Errorf("confirmed subscription %+v (%v): want active, the subscriber's, authenticated", sub, err)
			}
		})
	}
}
