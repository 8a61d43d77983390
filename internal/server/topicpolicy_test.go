package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/server"
	"github.com/ferrymq/ferry/internal/sigv4"
)

// carol is a third account's caller, for what neither owner may be.
const carolKey, carolSecret, carolAccount = "AKIACAROL000000003", "carol/secret", "333333333333"

// threeAccounts are the callers of the topic policy tests: alice owns
// the topics, bob and carol are other accounts. With auth off a 12-digit
// key is its account; with verification each key is checked and belongs
// to its account.
type threeAccounts struct {
	f                             *ferry
	alice, bob, carol             authClients
	aliceAcct, bobAcct, carolAcct string
	verified                      bool
}

func startThree(t *testing.T, verify bool) *threeAccounts {
	t.Helper()
	if !verify {
		f := start(t)
		return &threeAccounts{f: f, verified: false,
			alice:     clientsOf(f.srv.URL(), aliceAccount, "x", "us-east-1"),
			bob:       clientsOf(f.srv.URL(), bobAccount, "x", "us-east-1"),
			carol:     clientsOf(f.srv.URL(), carolAccount, "x", "us-east-1"),
			aliceAcct: aliceAccount, bobAcct: bobAccount, carolAcct: carolAccount}
	}
	creds, err := sigv4.ParseCredentials(strings.NewReader(authCredentials+"\n[carol]\naws_access_key_id = "+carolKey+
		"\naws_secret_access_key = "+carolSecret+"\naws_account_id = "+carolAccount+"\n"), server.DefaultAccount)
	if err != nil {
		t.Fatal(err)
	}
	f := start(t, func(c *server.Config) {
		c.AuthVerify, c.Credentials = true, creds
		c.Clock = clock.NewFake(time.Now()) // the SDKs sign with the wall clock
	})
	return &threeAccounts{f: f, verified: true,
		alice:     clientsOf(f.srv.URL(), aliceKey, aliceSecret, "us-east-1"),
		bob:       clientsOf(f.srv.URL(), bobKey, bobSecret, "us-east-1"),
		carol:     clientsOf(f.srv.URL(), carolKey, carolSecret, "us-east-1"),
		aliceAcct: aliceAccount, bobAcct: bobAccount, carolAcct: carolAccount}
}

// bothAuthModes runs fn with auth off and with signatures verified.
func bothAuthModes(t *testing.T, fn func(t *testing.T, w *threeAccounts)) {
	for _, verify := range []bool{false, true} {
		name := "auth off"
		if verify {
			name = "auth verify"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, startThree(t, verify))
		})
	}
}

// TestTopicPolicyCrossAccount: alice's topic policy decides what bob may
// do with her topic, with auth off and verified alike: SNS's default
// policy lets no other account in; AddPermission's grants let bob in and
// RemovePermission takes them back; an explicit Deny wins; conditions on
// the caller's address, transport and account, and on Subscribe's
// protocol, are evaluated; aws:SourceAccount is a service's key, absent
// from a caller's request; the tag actions stay alice's whatever the
// policy grants. Refusals are AuthorizationError (403) worded as IAM
// words them.
func TestTopicPolicyCrossAccount(t *testing.T) {
	t.Parallel()
	bothAuthModes(t, testTopicPolicyCrossAccount)
}

func testTopicPolicyCrossAccount(t *testing.T, w *threeAccounts) {
	ctx := ctxT(t)
	bobQueue := "arn:aws:sqs:us-east-1:" + w.bobAcct + ":inbox"
	createQueueIn(ctx, t, w.bob, "inbox")
	bobRoot := `{"AWS":"arn:aws:iam::` + w.bobAcct + `:root"}`
	const topicRef = "TOPIC" // the case's topic ARN, put in its policy

	for i, tt := range []struct {
		name string
		// policy is the case's statements; "" keeps the default policy.
		policy string
		// grant, when set, is AddPermission's ActionName list for bob;
		// revoke removes it again.
		grant  []string
		revoke bool
		action string // what bob does
		reason string // "" allowed; else the refusal's ending
	}{
		{name: "default policy: publish", action: "publish", reason: "because no resource-based policy allows the SNS:Publish action"},
		{name: "default policy: subscribe", action: "subscribe", reason: "because no resource-based policy allows the SNS:Subscribe action"},
		{name: "default policy: attributes", action: "get", reason: "because no resource-based policy allows the SNS:GetTopicAttributes action"},
		{name: "default policy: delete", action: "delete", reason: "because no resource-based policy allows the SNS:DeleteTopic action"},
		{name: "AddPermission publish", grant: []string{"Publish"}, action: "publish"},
		{name: "AddPermission publish: batch", grant: []string{"Publish"}, action: "batch"},
		{name: "AddPermission publish, not subscribe", grant: []string{"Publish"}, action: "subscribe", reason: "because no resource-based policy allows the SNS:Subscribe action"},
		{name: "AddPermission then RemovePermission", grant: []string{"Publish"}, revoke: true, action: "publish", reason: "because no resource-based policy allows the SNS:Publish action"},
		{name: "AddPermission subscribe", grant: []string{"Subscribe", "GetTopicAttributes"}, action: "subscribe"},
		{name: "AddPermission list subscriptions", grant: []string{"ListSubscriptionsByTopic"}, action: "list"},
		{name: "granted get attributes", policy: `{"Effect":"Allow","Principal":` + bobRoot + `,"Action":"sns:GetTopicAttributes","Resource":"TOPIC"}`, action: "get"},
		{name: "granted set attributes", policy: `{"Effect":"Allow","Principal":{"AWS":"` + w.bobAcct + `"},"Action":"SNS:SetTopicAttributes"}`, action: "set"},
		{name: "granted delete", policy: `{"Effect":"Allow","Principal":` + bobRoot + `,"Action":"sns:DeleteTopic","Resource":"TOPIC"}`, action: "delete"},
		{name: "granted AddPermission", policy: `{"Effect":"Allow","Principal":` + bobRoot + `,"Action":"sns:AddPermission","Resource":"TOPIC"}`, action: "addpermission"},
		{name: "granted list tags", policy: `{"Effect":"Allow","Principal":` + bobRoot + `,"Action":"sns:ListTagsForResource"}`, action: "listtags"},
		{name: "everything to everyone", policy: `{"Effect":"Allow","Principal":"*","Action":"*"}`, action: "publish"},
		{name: "everything to everyone but tagging", policy: `{"Effect":"Allow","Principal":"*","Action":"*"}`, action: "tag", reason: "because no resource-based policy allows the SNS:TagResource action"},
		{name: "another account's grant", policy: `{"Effect":"Allow","Principal":{"AWS":"` + w.carolAcct + `"},"Action":"sns:Publish"}`, action: "publish", reason: "because no resource-based policy allows the SNS:Publish action"},
		{name: "another topic's grant", policy: `{"Effect":"Allow","Principal":` + bobRoot + `,"Action":"sns:Publish","Resource":"arn:aws:sns:us-east-1:` + w.aliceAcct + `:other"}`, action: "publish", reason: "because no resource-based policy allows the SNS:Publish action"},
		{name: "explicit deny wins", policy: `{"Effect":"Allow","Principal":"*","Action":"sns:Publish"},{"Effect":"Deny","Principal":` + bobRoot + `,"Action":"sns:Publish"}`, action: "publish", reason: "with an explicit deny in a resource-based policy"},
		{name: "deny of another action", policy: `{"Effect":"Allow","Principal":"*","Action":"sns:Publish"},{"Effect":"Deny","Principal":` + bobRoot + `,"Action":"sns:Subscribe"}`, action: "publish"},
		{name: "deny by NotAction", policy: `{"Effect":"Allow","Principal":"*","Action":["sns:Publish","sns:Subscribe"]},{"Effect":"Deny","Principal":` + bobRoot + `,"NotAction":"sns:Publish"}`, action: "subscribe", reason: "with an explicit deny in a resource-based policy"},
		{name: "source account is a service's key", policy: `{"Effect":"Allow","Principal":"*","Action":"sns:Publish","Condition":{"StringEquals":{"aws:SourceAccount":"` + w.bobAcct + `"}}}`, action: "publish", reason: "because no resource-based policy allows the SNS:Publish action"},
		{name: "source arn is a service's key", policy: `{"Effect":"Allow","Principal":"*","Action":"sns:Publish","Condition":{"ArnLike":{"aws:SourceArn":"arn:aws:s3:::*"}}}`, action: "publish", reason: "because no resource-based policy allows the SNS:Publish action"},
		{name: "principal account condition", policy: `{"Effect":"Allow","Principal":"*","Action":"sns:Publish","Condition":{"StringEquals":{"aws:PrincipalAccount":"` + w.bobAcct + `"}}}`, action: "publish"},
		{name: "source ip matches", policy: `{"Effect":"Allow","Principal":` + bobRoot + `,"Action":"sns:Publish","Condition":{"IpAddress":{"aws:SourceIp":"127.0.0.0/8"}}}`, action: "publish"},
		{name: "source ip does not match", policy: `{"Effect":"Allow","Principal":` + bobRoot + `,"Action":"sns:Publish","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}`, action: "publish", reason: "because no resource-based policy allows the SNS:Publish action"},
		{name: "secure transport required", policy: `{"Effect":"Allow","Principal":"*","Action":"sns:Publish"},{"Effect":"Deny","Principal":"*","Action":"sns:Publish","Condition":{"Bool":{"aws:SecureTransport":"false"}}}`, action: "publish", reason: "with an explicit deny in a resource-based policy"},
		{name: "subscribe over https only", policy: `{"Effect":"Allow","Principal":` + bobRoot + `,"Action":"sns:Subscribe","Condition":{"StringEquals":{"sns:Protocol":"https"}}}`, action: "subscribe", reason: "because no resource-based policy allows the SNS:Subscribe action"},
		{name: "subscribe sqs only", policy: `{"Effect":"Allow","Principal":` + bobRoot + `,"Action":"sns:Subscribe","Condition":{"StringEquals":{"sns:Protocol":"sqs"}}}`, action: "subscribe"},
		{name: "subscribe own queues only", policy: `{"Effect":"Allow","Principal":` + bobRoot + `,"Action":"sns:Subscribe","Condition":{"ArnLike":{"sns:Endpoint":"arn:aws:sqs:*:` + w.bobAcct + `:*"}}}`, action: "subscribe"},
		{name: "subscribe others' queues only", policy: `{"Effect":"Allow","Principal":` + bobRoot + `,"Action":"sns:Subscribe","Condition":{"ArnLike":{"sns:Endpoint":"arn:aws:sqs:*:` + w.carolAcct + `:*"}}}`, action: "subscribe", reason: "because no resource-based policy allows the SNS:Subscribe action"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("shared%d", i)
			topic := createTopic(ctx, t, w.alice, name)
			if tt.policy != "" {
				doc := `{"Version":"2012-10-17","Statement":[` + strings.ReplaceAll(tt.policy, topicRef, topic) + `]}`
				if _, err := w.alice.sns.SetTopicAttributes(ctx, &snssdk.SetTopicAttributesInput{TopicArn: &topic,
					AttributeName: aws.String("Policy"), AttributeValue: &doc}); err != nil {
					t.Fatalf("alice sets the policy: %v", err)
				}
			}
			if tt.grant != nil {
				if _, err := w.alice.sns.AddPermission(ctx, &snssdk.AddPermissionInput{TopicArn: &topic, Label: aws.String("bob"),
					AWSAccountId: []string{w.bobAcct}, ActionName: tt.grant}); err != nil {
					t.Fatalf("AddPermission: %v", err)
				}
			}
			if tt.revoke {
				if _, err := w.alice.sns.RemovePermission(ctx, &snssdk.RemovePermissionInput{TopicArn: &topic, Label: aws.String("bob")}); err != nil {
					t.Fatalf("RemovePermission: %v", err)
				}
			}
			err := bobActs(ctx, w, topic, bobQueue, tt.action)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("bob refused: %v", err)
				}
				return
			}
			wantAPIError(t, err, "AuthorizationError", http.StatusForbidden)
			action := map[string]string{"publish": "Publish", "batch": "Publish", "subscribe": "Subscribe", "get": "GetTopicAttributes",
				"delete": "DeleteTopic", "tag": "TagResource"}[tt.action]
			want := "User: arn:aws:iam::" + w.bobAcct + ":root is not authorized to perform: SNS:" + action + " on resource: " + topic + " " + tt.reason
			var api smithy.APIError
			if errors.As(err, &api) && api.ErrorMessage() != want {
				t.Errorf("message %q, want %q", api.ErrorMessage(), want)
			}
			// The topic is alice's as it was.
			if _, err := w.alice.sns.GetTopicAttributes(ctx, &snssdk.GetTopicAttributesInput{TopicArn: &topic}); err != nil {
				t.Errorf("alice's topic after bob's attempt: %v", err)
			}
		})
	}
}

// bobActs has bob perform action on alice's topic.
func bobActs(ctx context.Context, w *threeAccounts, topic, queue, action string) error {
	c := w.bob.sns
	var err error
	switch action {
	case "publish":
		_, err = c.Publish(ctx, &snssdk.PublishInput{TopicArn: &topic, Message: aws.String("from bob")})
	case "batch":
		var out *snssdk.PublishBatchOutput
		out, err = c.PublishBatch(ctx, &snssdk.PublishBatchInput{TopicArn: &topic,
			PublishBatchRequestEntries: []snstypes.PublishBatchRequestEntry{{Id: aws.String("1"), Message: aws.String("from bob")}}})
		if err == nil && len(out.Successful) != 1 {
			err = fmt.Errorf("batch: %+v", out)
		}
	case "subscribe":
		var out *snssdk.SubscribeOutput
		out, err = c.Subscribe(ctx, &snssdk.SubscribeInput{TopicArn: &topic, Protocol: aws.String("sqs"), Endpoint: &queue})
		if err == nil && !strings.HasPrefix(aws.ToString(out.SubscriptionArn), topic+":") {
			err = fmt.Errorf("subscription %q, want one under the topic", aws.ToString(out.SubscriptionArn))
		}
	case "get":
		var out *snssdk.GetTopicAttributesOutput
		out, err = c.GetTopicAttributes(ctx, &snssdk.GetTopicAttributesInput{TopicArn: &topic})
		if err == nil && out.Attributes["Owner"] != w.aliceAcct {
			err = fmt.Errorf("owner %q", out.Attributes["Owner"])
		}
	case "set":
		_, err = c.SetTopicAttributes(ctx, &snssdk.SetTopicAttributesInput{TopicArn: &topic, AttributeName: aws.String("DisplayName"), AttributeValue: aws.String("bob's")})
	case "delete":
		if _, err = c.DeleteTopic(ctx, &snssdk.DeleteTopicInput{TopicArn: &topic}); err == nil {
			if _, gerr := w.alice.sns.GetTopicAttributes(ctx, &snssdk.GetTopicAttributesInput{TopicArn: &topic}); gerr == nil {
				err = errors.New("the topic is still there")
			}
		}
	case "list":
		_, err = c.ListSubscriptionsByTopic(ctx, &snssdk.ListSubscriptionsByTopicInput{TopicArn: &topic})
	case "addpermission":
		_, err = c.AddPermission(ctx, &snssdk.AddPermissionInput{TopicArn: &topic, Label: aws.String("carol"),
			AWSAccountId: []string{w.carolAcct}, ActionName: []string{"Publish"}})
		if err == nil {
			_, err = w.carol.sns.Publish(ctx, &snssdk.PublishInput{TopicArn: &topic, Message: aws.String("from carol")})
		}
	case "listtags":
		_, err = c.ListTagsForResource(ctx, &snssdk.ListTagsForResourceInput{ResourceArn: &topic})
	case "tag":
		_, err = c.TagResource(ctx, &snssdk.TagResourceInput{ResourceArn: &topic, Tags: []snstypes.Tag{{Key: aws.String("k"), Value: aws.String("v")}}})
	default:
		err = fmt.Errorf("no action %q", action)
	}
	return err
}

// TestTopicPolicyOwnerDeny: a Deny in alice's own topic policy refuses
// alice only when her signature is verified, as for queues; with auth off
// the account she claims is not proven and she is never refused.
func TestTopicPolicyOwnerDeny(t *testing.T) {
	t.Parallel()
	bothAuthModes(t, func(t *testing.T, w *threeAccounts) {
		ctx := ctxT(t)
		topic := createTopic(ctx, t, w.alice, "guarded")
		doc := `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"sns:Publish","Resource":"` + topic +
			`","Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}`
		if _, err := w.alice.sns.SetTopicAttributes(ctx, &snssdk.SetTopicAttributesInput{TopicArn: &topic,
			AttributeName: aws.String("Policy"), AttributeValue: &doc}); err != nil {
			t.Fatal(err)
		}
		_, err := w.alice.sns.Publish(ctx, &snssdk.PublishInput{TopicArn: &topic, Message: aws.String("over plain HTTP")})
		if !w.verified {
			if err != nil {
				t.Fatalf("alice refused with auth off: %v", err)
			}
		} else {
			wantAPIError(t, err, "AuthorizationError", http.StatusForbidden)
			var api smithy.APIError
			if errors.As(err, &api) && !strings.HasSuffix(api.ErrorMessage(), " with an explicit deny in a resource-based policy") {
				t.Errorf("message %q", api.ErrorMessage())
			}
		}
		// What the Deny does not name stays hers.
		if _, err := w.alice.sns.GetTopicAttributes(ctx, &snssdk.GetTopicAttributesInput{TopicArn: &topic}); err != nil {
			t.Errorf("alice's GetTopicAttributes: %v", err)
		}
	})
}

// TestTopicPolicySubscriptions: subscriptions across accounts. Bob,
// allowed to subscribe, subscribes his own queue to alice's topic: no
// confirmation, the subscription's ARN under the topic's, bob its owner,
// listed among bob's subscriptions and not alice's, managed by bob and by
// alice and by nobody else. Alice subscribes bob's queues: each waits
// for its confirmation, which SNS sends into the queue only if the
// queue's policy lets the topic in, and bob confirms it with the token.
func TestTopicPolicySubscriptions(t *testing.T) {
	t.Parallel()
	bothAuthModes(t, testTopicPolicySubscriptions)
}

func testTopicPolicySubscriptions(t *testing.T, w *threeAccounts) {
	ctx := ctxT(t)
	topic := createTopic(ctx, t, w.alice, "events")
	doc := `{"Version":"2012-10-17","Statement":[{"Sid":"bob","Effect":"Allow","Principal":{"AWS":"` + w.bobAcct +
		`"},"Action":"sns:Subscribe","Resource":"` + topic + `"}]}`
	if _, err := w.alice.sns.SetTopicAttributes(ctx, &snssdk.SetTopicAttributesInput{TopicArn: &topic,
		AttributeName: aws.String("Policy"), AttributeValue: &doc}); err != nil {
		t.Fatal(err)
	}
	// Bob's queues let alice's topic send.
	queueARN := func(name string) string { return "arn:aws:sqs:us-east-1:" + w.bobAcct + ":" + name }
	lets := func(name string) map[string]string {
		return map[string]string{"Policy": `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},` +
			`"Action":"sqs:SendMessage","Resource":"` + queueARN(name) + `","Condition":{"ArnEquals":{"aws:SourceArn":"` + topic + `"}}}]}`}
	}
	bobQueue := func(name string, attrs map[string]string) string {
		out, err := w.bob.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: &name, Attributes: attrs})
		if err != nil {
			t.Fatalf("CreateQueue %s: %v", name, err)
		}
		return aws.ToString(out.QueueUrl)
	}
	ownURL := bobQueue("own", lets("own"))
	confirmURL := bobQueue("confirm", lets("confirm"))
	closedURL := bobQueue("closed", nil)

	// Bob subscribes his own queue: confirmed at once.
	out, err := w.bob.sns.Subscribe(ctx, &snssdk.SubscribeInput{TopicArn: &topic, Protocol: aws.String("sqs"), Endpoint: aws.String(queueARN("own"))})
	if err != nil {
		t.Fatalf("bob subscribes: %v", err)
	}
	bobSub := aws.ToString(out.SubscriptionArn)
	if !strings.HasPrefix(bobSub, topic+":") {
		t.Fatalf("bob's subscription %q, want it under %s", bobSub, topic)
	}
	attrs, err := w.bob.sns.GetSubscriptionAttributes(ctx, &snssdk.GetSubscriptionAttributesInput{SubscriptionArn: &bobSub})
	if err != nil {
		t.Fatalf("bob reads his subscription: %v", err)
	}
	for k, v := range map[string]string{"Owner": w.bobAcct, "TopicArn": topic, "PendingConfirmation": "false",
		"SubscriptionPrincipal": "arn:aws:iam::" + w.bobAcct + ":root"} {
		if attrs.Attributes[k] != v {
			t.Errorf("bob's subscription %s = %q, want %q", k, attrs.Attributes[k], v)
		}
	}
	if _, err := w.alice.sns.GetSubscriptionAttributes(ctx, &snssdk.GetSubscriptionAttributesInput{SubscriptionArn: &bobSub}); err != nil {
		t.Errorf("alice, the topic's owner, reads bob's subscription: %v", err)
	}
	_, err = w.carol.sns.GetSubscriptionAttributes(ctx, &snssdk.GetSubscriptionAttributesInput{SubscriptionArn: &bobSub})
	wantAPIError(t, err, "AuthorizationError", http.StatusForbidden)
	if _, err := w.bob.sns.SetSubscriptionAttributes(ctx, &snssdk.SetSubscriptionAttributesInput{SubscriptionArn: &bobSub,
		AttributeName: aws.String("RawMessageDelivery"), AttributeValue: aws.String("true")}); err != nil {
		t.Errorf("bob sets his subscription's attribute: %v", err)
	}
	_, err = w.carol.sns.SetSubscriptionAttributes(ctx, &snssdk.SetSubscriptionAttributesInput{SubscriptionArn: &bobSub,
		AttributeName: aws.String("RawMessageDelivery"), AttributeValue: aws.String("false")})
	wantAPIError(t, err, "AuthorizationError", http.StatusForbidden)
	// Carol may not subscribe: the policy names bob.
	_, err = w.carol.sns.Subscribe(ctx, &snssdk.SubscribeInput{TopicArn: &topic, Protocol: aws.String("sqs"), Endpoint: aws.String(queueARN("own"))})
	wantAPIError(t, err, "AuthorizationError", http.StatusForbidden)

	// Alice subscribes bob's queues: pending. The one whose policy lets
	// her topic in receives the SubscriptionConfirmation; the other
	// receives nothing.
	pending := map[string]string{}
	for _, name := range []string{"confirm", "closed"} {
		out, err := w.alice.sns.Subscribe(ctx, &snssdk.SubscribeInput{TopicArn: &topic, Protocol: aws.String("sqs"),
			Endpoint: aws.String(queueARN(name)), ReturnSubscriptionArn: true})
		if err != nil {
			t.Fatalf("alice subscribes bob's %s: %v", name, err)
		}
		pending[name] = aws.ToString(out.SubscriptionArn)
		attrs, err := w.alice.sns.GetSubscriptionAttributes(ctx, &snssdk.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(pending[name])})
		if err != nil || attrs.Attributes["PendingConfirmation"] != "true" || attrs.Attributes["Owner"] != w.aliceAcct {
			t.Errorf("alice's subscription of bob's %s: %v (%v), want pending, alice's", name, attrs, err)
		}
	}
	if got := receiveBodies(ctx, t, w.bob, closedURL); len(got) != 0 {
		t.Errorf("the queue that does not let the topic in got %q", got)
	}
	got := receiveBodies(ctx, t, w.bob, confirmURL)
	if len(got) != 1 {
		t.Fatalf("bob's queue got %d messages, want the SubscriptionConfirmation", len(got))
	}
	var conf struct{ Type, Token, TopicArn, Message, SubscribeURL, Signature string }
	if err := json.Unmarshal([]byte(got[0]), &conf); err != nil {
		t.Fatalf("confirmation %q: %v", got[0], err)
	}
	if conf.Type != "SubscriptionConfirmation" || conf.TopicArn != topic || conf.Token == "" || conf.Signature == "" ||
		!strings.Contains(conf.SubscribeURL, "Action=ConfirmSubscription") || !strings.Contains(conf.SubscribeURL, "Token="+conf.Token) {
		t.Errorf("confirmation %+v", conf)
	}
	if u, err := url.Parse(conf.SubscribeURL); err != nil || u.Query().Get("TopicArn") != topic {
		t.Errorf("SubscribeURL %q names another topic (%v)", conf.SubscribeURL, err)
	}
	// Nothing is delivered to a pending subscription.
	if _, err := w.alice.sns.Publish(ctx, &snssdk.PublishInput{TopicArn: &topic, Message: aws.String("first")}); err != nil {
		t.Fatal(err)
	}
	if got := receiveBodies(ctx, t, w.bob, confirmURL); len(got) != 0 {
		t.Errorf("the pending subscription's queue got %q", got)
	}
	if got := receiveBodies(ctx, t, w.bob, ownURL); len(got) != 1 || got[0] != "first" {
		t.Errorf("bob's own subscription (raw) got %q, want the message", got)
	}
	// Bob, the queue's owner, confirms with the token his queue got.
	confirmed, err := w.bob.sns.ConfirmSubscription(ctx, &snssdk.ConfirmSubscriptionInput{TopicArn: &topic, Token: &conf.Token})
	if err != nil || aws.ToString(confirmed.SubscriptionArn) != pending["confirm"] {
		t.Fatalf("bob confirms: %v (%v), want %s", confirmed, err, pending["confirm"])
	}
	if _, err := w.alice.sns.Publish(ctx, &snssdk.PublishInput{TopicArn: &topic, Message: aws.String("second")}); err != nil {
		t.Fatal(err)
	}
	if got := receiveBodies(ctx, t, w.bob, confirmURL); len(got) != 1 || !strings.Contains(got[0], `"Message" : "second"`) && !strings.Contains(got[0], `"Message":"second"`) {
		t.Errorf("the confirmed subscription's queue got %q", got)
	}
	receiveBodies(ctx, t, w.bob, ownURL)

	// Each lists its own subscriptions; the topic's owner sees them all.
	listed := func(c authClients) map[string]string {
		t.Helper()
		out, err := c.sns.ListSubscriptions(ctx, &snssdk.ListSubscriptionsInput{})
		if err != nil {
			t.Fatalf("ListSubscriptions: %v", err)
		}
		m := map[string]string{}
		for _, s := range out.Subscriptions {
			m[aws.ToString(s.Endpoint)] = aws.ToString(s.Owner)
		}
		return m
	}
	if got := listed(w.bob); len(got) != 1 || got[queueARN("own")] != w.bobAcct {
		t.Errorf("bob lists %v, want his subscription only", got)
	}
	if got := listed(w.alice); len(got) != 2 || got[queueARN("confirm")] != w.aliceAcct || got[queueARN("closed")] != w.aliceAcct {
		t.Errorf("alice lists %v, want her two", got)
	}
	byTopic, err := w.alice.sns.ListSubscriptionsByTopic(ctx, &snssdk.ListSubscriptionsByTopicInput{TopicArn: &topic})
	if err != nil || len(byTopic.Subscriptions) != 3 {
		t.Errorf("alice lists her topic's subscriptions %v (%v), want three", byTopic, err)
	}
	_, err = w.bob.sns.ListSubscriptionsByTopic(ctx, &snssdk.ListSubscriptionsByTopicInput{TopicArn: &topic})
	wantAPIError(t, err, "AuthorizationError", http.StatusForbidden)

	// Unsubscribe: the subscription's owner or the topic's, nobody else.
	_, err = w.bob.sns.Unsubscribe(ctx, &snssdk.UnsubscribeInput{SubscriptionArn: aws.String(pending["confirm"])})
	wantAPIError(t, err, "AuthorizationError", http.StatusForbidden)
	_, err = w.carol.sns.Unsubscribe(ctx, &snssdk.UnsubscribeInput{SubscriptionArn: &bobSub})
	wantAPIError(t, err, "AuthorizationError", http.StatusForbidden)
	// Bob's subscription, made by the queue's owner, takes no unsigned
	// Unsubscribe (AuthenticateOnUnsubscribe).
	unsigned := do(t, mustRequest(t, http.MethodGet, w.f.srv.URL()+"/?Action=Unsubscribe&SubscriptionArn="+url.QueryEscape(bobSub)))
	if unsigned.Status != http.StatusForbidden || !strings.Contains(unsigned.Body, "AuthorizationError") {
		t.Errorf("unsigned Unsubscribe of bob's subscription: %d %s", unsigned.Status, unsigned.Body)
	}
	if _, err := w.bob.sns.Unsubscribe(ctx, &snssdk.UnsubscribeInput{SubscriptionArn: &bobSub}); err != nil {
		t.Errorf("bob unsubscribes his own: %v", err)
	}
	if _, err := w.alice.sns.Unsubscribe(ctx, &snssdk.UnsubscribeInput{SubscriptionArn: aws.String(pending["confirm"])}); err != nil {
		t.Errorf("alice unsubscribes hers: %v", err)
	}
	// The topic's owner may end another account's subscription to it.
	out, err = w.bob.sns.Subscribe(ctx, &snssdk.SubscribeInput{TopicArn: &topic, Protocol: aws.String("sqs"), Endpoint: aws.String(queueARN("own"))})
	if err != nil {
		t.Fatalf("bob subscribes again: %v", err)
	}
	if _, err := w.alice.sns.Unsubscribe(ctx, &snssdk.UnsubscribeInput{SubscriptionArn: out.SubscriptionArn}); err != nil {
		t.Errorf("alice ends bob's subscription to her topic: %v", err)
	}
	if got := listed(w.bob); len(got) != 0 {
		t.Errorf("bob lists %v after alice ended his subscription", got)
	}
}
