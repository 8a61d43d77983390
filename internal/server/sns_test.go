package server_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/ferrymq/ferry/internal/engine/embedded"
	"github.com/ferrymq/ferry/internal/server"
	"github.com/ferrymq/ferry/internal/sns/delivery"
	"github.com/ferrymq/ferry/internal/sns/delivery/deliverytest"
	"github.com/ferrymq/ferry/internal/testwait"
)

const (
	testAccount = "000000000000"
	topicPrefix = "arn:aws:sns:us-east-1:000000000000:"
)

// wantSNSError checks an SNS error's code, HTTP status and message (the
// message's first line, as filter policy errors add a location).
func wantSNSError(t testing.TB, err error, code string, status int, message string) {
	t.Helper()
	wantAPIError(t, err, code, status)
	var api smithy.APIError
	if errors.As(err, &api) && message != "" {
		got, _, _ := strings.Cut(api.ErrorMessage(), "\n")
		if got != message {
			t.Errorf("%s message = %q, want %q", code, got, message)
		}
	}
}

func (f *ferry) createTopic(t testing.TB, name string, attrs map[string]string) string {
	t.Helper()
	out, err := f.sns.CreateTopic(ctxT(t), &snssdk.CreateTopicInput{Name: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("CreateTopic %s: %v", name, err)
	}
	return aws.ToString(out.TopicArn)
}

func (f *ferry) topicAttrs(t testing.TB, arn string) map[string]string {
	t.Helper()
	out, err := f.sns.GetTopicAttributes(ctxT(t), &snssdk.GetTopicAttributesInput{TopicArn: aws.String(arn)})
	if err != nil {
		t.Fatalf("GetTopicAttributes %s: %v", arn, err)
	}
	return out.Attributes
}

const defaultEffectiveDeliveryPolicy = `{"http":{"defaultHealthyRetryPolicy":{"minDelayTarget":20,"maxDelayTarget":20,"numRetries":3,"numMaxDelayRetries":0,"numNoDelayRetries":0,"numMinDelayRetries":0,"backoffFunction":"linear"},"disableSubscriptionOverrides":false,"defaultRequestPolicy":{"headerContentType":"text/plain; charset=UTF-8"}}}`

func defaultPolicy(arn string) string {
	return `{"Version":"2008-10-17","Id":"__default_policy_ID","Statement":[{"Sid":"__default_statement_ID","Effect":"Allow","Principal":{"AWS":"*"},"Action":["SNS:GetTopicAttributes","SNS:SetTopicAttributes","SNS:AddPermission","SNS:RemovePermission","SNS:DeleteTopic","SNS:Subscribe","SNS:ListSubscriptionsByTopic","SNS:Publish"],"Resource":"` +
		arn + `","Condition":{"StringEquals":{"AWS:SourceOwner":"000000000000"}}}]}`
}

func TestSNSTopicLifecycle(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	arn := f.createTopic(t, "orders", nil)
	if arn != topicPrefix+"orders" {
		t.Fatalf("TopicArn = %s", arn)
	}
	want := map[string]string{
		"TopicArn": arn, "Owner": testAccount, "DisplayName": "", "Policy": defaultPolicy(arn),
		"EffectiveDeliveryPolicy": defaultEffectiveDeliveryPolicy,
		"SubscriptionsConfirmed":  "0", "SubscriptionsPending": "0", "SubscriptionsDeleted": "0",
	}
	if got := f.topicAttrs(t, arn); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("attributes of a new topic:\n got %v\nwant %v", got, want)
	}
	// Idempotent with the same attributes, refused with others.
	if again := f.createTopic(t, "orders", map[string]string{"DisplayName": ""}); again != arn {
		t.Errorf("second CreateTopic = %s", again)
	}
	_, err := f.sns.CreateTopic(ctx, &snssdk.CreateTopicInput{Name: aws.String("orders"), Attributes: map[string]string{"DisplayName": "other"}})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Attributes Reason: Topic already exists with different attributes")

	fifo := f.createTopic(t, "orders.fifo", map[string]string{"FifoTopic": "true"})
	attrs := f.topicAttrs(t, fifo)
	if attrs["FifoTopic"] != "true" || attrs["ContentBasedDeduplication"] != "false" {
		t.Errorf("FIFO topic attributes: %v", attrs)
	}
	_, err = f.sns.SetTopicAttributes(ctx, &snssdk.SetTopicAttributesInput{TopicArn: aws.String(fifo), AttributeName: aws.String("FifoTopic"), AttributeValue: aws.String("false")})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: AttributeName")

	if _, err := f.sns.SetTopicAttributes(ctx, &snssdk.SetTopicAttributesInput{TopicArn: aws.String(arn), AttributeName: aws.String("DisplayName"), AttributeValue: aws.String("Orders")}); err != nil {
		t.Fatal(err)
	}
	dp := `{"http":{"defaultHealthyRetryPolicy":{"numRetries":5,"backoffFunction":"exponential","maxDelayTarget":40},"defaultThrottlePolicy":{"maxReceivesPerSecond":3}}}`
	if _, err := f.sns.SetTopicAttributes(ctx, &snssdk.SetTopicAttributesInput{TopicArn: aws.String(arn), AttributeName: aws.String("DeliveryPolicy"), AttributeValue: aws.String(dp)}); err != nil {
		t.Fatal(err)
	}
	attrs = f.topicAttrs(t, arn)
	wantEff := `{"http":{"defaultHealthyRetryPolicy":{"minDelayTarget":20,"maxDelayTarget":40,"numRetries":5,"numMaxDelayRetries":0,"numNoDelayRetries":0,"numMinDelayRetries":0,"backoffFunction":"exponential"},"disableSubscriptionOverrides":false,"defaultThrottlePolicy":{"maxReceivesPerSecond":3},"defaultRequestPolicy":{"headerContentType":"text/plain; charset=UTF-8"}}}`
	if attrs["DisplayName"] != "Orders" || attrs["DeliveryPolicy"] != dp || attrs["EffectiveDeliveryPolicy"] != wantEff {
		t.Errorf("after SetTopicAttributes: %v", attrs)
	}

	if _, err := f.sns.DeleteTopic(ctx, &snssdk.DeleteTopicInput{TopicArn: aws.String(arn)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.sns.DeleteTopic(ctx, &snssdk.DeleteTopicInput{TopicArn: aws.String(arn)}); err != nil {
		t.Errorf("second DeleteTopic: %v", err)
	}
	_, err = f.sns.GetTopicAttributes(ctx, &snssdk.GetTopicAttributesInput{TopicArn: aws.String(arn)})
	wantSNSError(t, err, "NotFound", 404, "Topic does not exist")
	var nf *snstypes.NotFoundException
	if !errors.As(err, &nf) {
		t.Errorf("error is %T, want *types.NotFoundException", err)
	}
}

func TestSNSTopicValidation(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	long := strings.Repeat("a", 257)
	for _, tc := range []struct {
		name    string
		attrs   map[string]string
		message string
	}{
		{"", nil, "Invalid parameter: Topic Name"},
		{"bad name", nil, "Invalid parameter: Topic Name"},
		{long, nil, "Invalid parameter: Topic Name"},
		{"std.fifo", nil, "Invalid parameter: Topic Name"},
		{"nofifo", map[string]string{"FifoTopic": "true"}, "Invalid parameter: Topic Name"},
		{"t", map[string]string{"Bogus": "1"}, "Invalid parameter: Attributes Reason: Unknown attribute Bogus"},
		{"t", map[string]string{"ContentBasedDeduplication": "true"}, "Invalid parameter: Attributes Reason: ContentBasedDeduplication: ContentBasedDeduplication can only be set for FIFO topics."},
		{"t", map[string]string{"DeliveryPolicy": `{"http":{"defaultHealthyRetryPolicy":{"minDelayTarget":0}}}`},
			"Invalid parameter: Attributes Reason: DeliveryPolicy: http.defaultHealthyRetryPolicy.minDelayTarget must be greater than or equal to 1"},
		{"t", map[string]string{"Policy": "{"}, "Invalid parameter: Attributes Reason: Policy Error: null"},
	} {
		_, err := f.sns.CreateTopic(ctx, &snssdk.CreateTopicInput{Name: aws.String(tc.name), Attributes: tc.attrs})
		wantSNSError(t, err, "InvalidParameter", 400, tc.message)
	}
	if arn := f.createTopic(t, strings.Repeat("a", 256), nil); arn == "" {
		t.Error("a 256-character name is allowed")
	}
	for _, tc := range []struct {
		arn, code, message string
		status             int
	}{
		{"arn:aws:sns:us-east-1", "InvalidParameter", "Invalid parameter: TopicArn Reason: An ARN must have at least 6 elements, not 4", 400},
		{"arn:aws:sns:eu-west-1:000000000000:x", "InvalidParameter", "Invalid parameter: TopicArn", 400},
		{topicPrefix + "missing", "NotFound", "Topic does not exist", 404},
	} {
		_, err := f.sns.GetTopicAttributes(ctx, &snssdk.GetTopicAttributesInput{TopicArn: aws.String(tc.arn)})
		wantSNSError(t, err, tc.code, tc.status, tc.message)
	}
}

func TestSNSListTopicsPages(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	want := map[string]bool{}
	for i := range 205 {
		want[f.createTopic(t, fmt.Sprintf("t%03d", i), nil)] = true
	}
	got := map[string]bool{}
	var token *string
	pages := 0
	for {
		out, err := f.sns.ListTopics(ctx, &snssdk.ListTopicsInput{NextToken: token})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(out.Topics) > 100 {
			t.Errorf("page of %d topics", len(out.Topics))
		}
		for _, tp := range out.Topics {
			got[aws.ToString(tp.TopicArn)] = true
		}
		if token = out.NextToken; token == nil {
			break
		}
	}
	if pages != 3 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%d pages, %d topics", pages, len(got))
	}
}

func (f *ferry) subscribe(t testing.TB, topicARN, protocol, endpoint string, attrs map[string]string) string {
	t.Helper()
	out, err := f.sns.Subscribe(ctxT(t), &snssdk.SubscribeInput{TopicArn: aws.String(topicARN), Protocol: aws.String(protocol),
		Endpoint: aws.String(endpoint), Attributes: attrs, ReturnSubscriptionArn: true})
	if err != nil {
		t.Fatalf("Subscribe %s %s: %v", protocol, endpoint, err)
	}
	return aws.ToString(out.SubscriptionArn)
}

func (f *ferry) publish(t testing.TB, in *snssdk.PublishInput) *snssdk.PublishOutput {
	t.Helper()
	out, err := f.sns.Publish(ctxT(t), in)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	return out
}

func strAttr(v string) snstypes.MessageAttributeValue {
	return snstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}

// envelope is a JSON notification as a subscriber parses it.
type envelope map[string]any

func (e envelope) str(k string) string { s, _ := e[k].(string); return s }

func parseEnvelope(t testing.TB, body string) envelope {
	t.Helper()
	var e envelope
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("envelope %q: %v", body, err)
	}
	return e
}

// verifySignature checks an envelope's signature the way a subscriber
// does, independently of Ferry's signing code: fetch the certificate from
// SigningCertURL, then deliverytest.Verify.
func verifySignature(t testing.TB, e envelope) {
	t.Helper()
	resp, err := http.Get(e.str("SigningCertURL"))
	if err != nil {
		t.Fatalf("fetch certificate: %v", err)
	}
	pemBytes, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasSuffix(e.str("SigningCertURL"), ".pem") {
		t.Fatalf("certificate at %s: %d", e.str("SigningCertURL"), resp.StatusCode)
	}
	if v := e.str("SignatureVersion"); v != "1" && v != "2" {
		t.Fatalf("SignatureVersion %q", v)
	}
	fields := make(map[string]string, len(e))
	for k := range e {
		fields[k] = e.str(k)
	}
	if err := deliverytest.Verify(pemBytes, fields, e.str("SignatureVersion"), e.str("Signature")); err != nil {
		t.Errorf("signature of %s does not verify: %v", e.str("Type"), err)
	}
}

// receiveOne waits for one message in the queue.
func (f *ferry) receiveOne(t testing.TB, url string) types.Message {
	t.Helper()
	ms := testwait.Some(t, "nothing arrived", func() []types.Message { return f.receiveAll(t, url, 1) })
	return ms[0]
}

func (f *ferry) wantEmpty(t testing.TB, url string) {
	t.Helper()
	if ms := f.receiveAll(t, url, 10); len(ms) > 0 {
		t.Errorf("%s: unexpected %d messages, first %q", url, len(ms), aws.ToString(ms[0].Body))
	}
}

func TestSNSFanoutToSQS(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	topic := f.createTopic(t, "events", nil)
	rawQ := f.createQueue(t, "raw", nil)
	envQ := f.createQueue(t, "env", nil)
	attrQ := f.createQueue(t, "by-attr", nil)
	bodyQ := f.createQueue(t, "by-body", nil)
	rawSub := f.subscribe(t, topic, "sqs", arnPrefix+"raw", map[string]string{"RawMessageDelivery": "true"})
	envSub := f.subscribe(t, topic, "sqs", arnPrefix+"env", nil)
	attrSub := f.subscribe(t, topic, "sqs", arnPrefix+"by-attr", map[string]string{"FilterPolicy": `{"color":["red"],"n":[{"numeric":[">",3]}]}`})
	bodySub := f.subscribe(t, topic, "sqs", arnPrefix+"by-body", map[string]string{"FilterPolicy": `{"kind":["order"]}`, "FilterPolicyScope": "MessageBody"})

	body := `{"kind":"order","id":7}`
	out := f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String(body), Subject: aws.String("New order"),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{
			"color": strAttr("red"),
			"n":     {DataType: aws.String("Number"), StringValue: aws.String("5")},
			"tags":  {DataType: aws.String("String.Array"), StringValue: aws.String(`["a","b"]`)},
			"bin":   {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2}},
		}})
	id := aws.ToString(out.MessageId)
	if out.SequenceNumber != nil {
		t.Errorf("standard topic answered a SequenceNumber")
	}

	// Raw: the message itself, its attributes as SQS attributes (the SDK
	// has checked both digests).
	m := f.receiveOne(t, rawQ)
	if aws.ToString(m.Body) != body || aws.ToString(m.MD5OfMessageAttributes) == "" {
		t.Errorf("raw body %q md5 %q", aws.ToString(m.Body), aws.ToString(m.MD5OfMessageAttributes))
	}
	if a := m.MessageAttributes; aws.ToString(a["color"].StringValue) != "red" || aws.ToString(a["n"].DataType) != "Number" ||
		aws.ToString(a["tags"].DataType) != "String.Array" || string(a["bin"].BinaryValue) != "\x00\x01\x02" {
		t.Errorf("raw attributes: %v", a)
	}
	if aws.ToString(m.MessageId) == id {
		t.Error("the SQS message id is the SNS one")
	}

	// Envelope: signed, with every field.
	m = f.receiveOne(t, envQ)
	if len(m.MessageAttributes) != 0 {
		t.Errorf("envelope delivery carries SQS attributes: %v", m.MessageAttributes)
	}
	e := parseEnvelope(t, aws.ToString(m.Body))
	if e.str("Type") != "Notification" || e.str("MessageId") != id || e.str("TopicArn") != topic || e.str("Subject") != "New order" ||
		e.str("Message") != body || e.str("Timestamp") != epoch.Format("2006-01-02T15:04:05.000Z") || e.str("SignatureVersion") != "1" ||
		!strings.HasPrefix(e.str("SigningCertURL"), f.srv.URL()+"/SimpleNotificationService-") ||
		e.str("UnsubscribeURL") != f.srv.URL()+"/?Action=Unsubscribe&SubscriptionArn="+envSub {
		t.Errorf("envelope: %v", e)
	}
	attrs, _ := e["MessageAttributes"].(map[string]any)
	if fmt.Sprint(attrs["color"]) != "map[Type:String Value:red]" || fmt.Sprint(attrs["bin"]) != "map[Type:Binary Value:AAEC]" {
		t.Errorf("envelope attributes: %v", attrs)
	}
	verifySignature(t, e)

	// Both filters let the first message through, neither the second.
	if got := aws.ToString(f.receiveOne(t, attrQ).Body); !strings.Contains(got, `"MessageId" : "`+id) {
		t.Errorf("attribute-filtered queue got %s", got)
	}
	if got := aws.ToString(f.receiveOne(t, bodyQ).Body); !strings.Contains(got, `"MessageId" : "`+id) {
		t.Errorf("body-filtered queue got %s", got)
	}
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String(`{"kind":"refund"}`),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{"color": strAttr("blue"), "n": {DataType: aws.String("Number"), StringValue: aws.String("9")}}})
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String(`not json`)})
	f.receiveOne(t, rawQ)
	f.receiveOne(t, rawQ)
	f.receiveOne(t, envQ)
	f.receiveOne(t, envQ)
	f.wantEmpty(t, attrQ)
	f.wantEmpty(t, bodyQ)

	svc := f.srv.SNS()
	tc, _ := svc.TopicCounters(topic)
	if tc.Published != 3 || tc.Delivered != 8 || tc.FilteredOut != 4 || tc.FilteredOutAttributes != 2 ||
		tc.FilteredOutBody != 2 || tc.FilteredOutNoMessageAttributes != 1 || tc.FilteredOutInvalidMessageBody != 1 {
		t.Errorf("topic counters: %+v", tc)
	}
	for sub, want := range map[string]int64{rawSub: 3, envSub: 3, attrSub: 1, bodySub: 1} {
		if c, _ := svc.SubscriptionCounters(sub); c.Delivered != want {
			t.Errorf("%s delivered %d, want %d", sub, c.Delivered, want)
		}
	}

	// The UnsubscribeURL works as a plain GET.
	r := do(t, mustRequest(t, "GET", e.str("UnsubscribeURL")))
	if r.Status != 200 || !strings.Contains(r.Body, "<UnsubscribeResponse") {
		t.Fatalf("GET UnsubscribeURL = %d %s", r.Status, r.Body)
	}
	subs, err := f.sns.ListSubscriptionsByTopic(ctx, &snssdk.ListSubscriptionsByTopicInput{TopicArn: aws.String(topic)})
	if err != nil || len(subs.Subscriptions) != 3 {
		t.Fatalf("after unsubscribe: %v %v", subs, err)
	}
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("after")})
	f.receiveOne(t, rawQ)
	f.wantEmpty(t, envQ)
}

func TestSNSSubscriptionAPI(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	topic := f.createTopic(t, "subs", nil)
	fifoTopic := f.createTopic(t, "subs.fifo", map[string]string{"FifoTopic": "true"})
	f.createQueue(t, "q", nil)
	sub := f.subscribe(t, topic, "sqs", arnPrefix+"q", nil)
	if !strings.HasPrefix(sub, topic+":") || len(sub) != len(topic)+1+36 {
		t.Errorf("SubscriptionArn = %s", sub)
	}
	// Same endpoint again: the same subscription; other attributes: refused.
	if again := f.subscribe(t, topic, "sqs", arnPrefix+"q", map[string]string{"RawMessageDelivery": "false"}); again != sub {
		t.Errorf("repeated Subscribe = %s", again)
	}
	_, err := f.sns.Subscribe(ctx, &snssdk.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("sqs"), Endpoint: aws.String(arnPrefix + "q"),
		Attributes: map[string]string{"RawMessageDelivery": "true"}})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Attributes Reason: Subscription already exists with different attributes")

	get := func(arn string) map[string]string {
		t.Helper()
		out, err := f.sns.GetSubscriptionAttributes(ctx, &snssdk.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(arn)})
		if err != nil {
			t.Fatalf("GetSubscriptionAttributes: %v", err)
		}
		return out.Attributes
	}
	want := map[string]string{"SubscriptionArn": sub, "TopicArn": topic, "Owner": testAccount, "Protocol": "sqs", "Endpoint": arnPrefix + "q",
		"SubscriptionPrincipal": "arn:aws:iam::000000000000:root", "PendingConfirmation": "false", "ConfirmationWasAuthenticated": "true",
		"RawMessageDelivery": "false"}
	if got := get(sub); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("attributes:\n got %v\nwant %v", got, want)
	}
	set := func(arn, name, value string) error {
		_, err := f.sns.SetSubscriptionAttributes(ctx, &snssdk.SetSubscriptionAttributesInput{SubscriptionArn: aws.String(arn),
			AttributeName: aws.String(name), AttributeValue: aws.String(value)})
		return err
	}
	if err := set(sub, "FilterPolicy", `{"a":["b"]}`); err != nil {
		t.Fatal(err)
	}
	if err := set(sub, "RedrivePolicy", `{"deadLetterTargetArn":"`+arnPrefix+`dlq"}`); err != nil {
		t.Fatal(err)
	}
	if got := get(sub); got["FilterPolicy"] != `{"a":["b"]}` || got["FilterPolicyScope"] != "MessageAttributes" || !strings.Contains(got["RedrivePolicy"], "dlq") {
		t.Errorf("after set: %v", got)
	}

	for _, tc := range []struct {
		name, value, message string
	}{
		{"RawMessageDelivery", "yes", "Invalid parameter: RawMessageDelivery: Invalid value [yes]. Must be true or false."},
		{"FilterPolicyScope", "Body", "Invalid parameter: FilterPolicyScope: Invalid value [Body]. Please use either MessageBody or MessageAttributes"},
		{"FilterPolicy", `{"a":{"b":["c"]}}`, "Invalid parameter: Filter policy scope MessageAttributes does not support nested filter policy"},
		{"FilterPolicy", `{"a":[]}`, "Invalid parameter: FilterPolicy: Empty arrays are not allowed"},
		{"FilterPolicy", `{"a":`, "Invalid parameter: FilterPolicy: failed to parse JSON. Unexpected end-of-input: expected close marker for Object (start marker at [Source: (String)\"{\"a\":\"; line: 1, column: 1])"},
		{"DeliveryPolicy", `{"healthyRetryPolicy":{"numRetries":3}}`, "Invalid parameter: DeliveryPolicy: Delivery protocol [sqs] does not support delivery policies"},
		{"RedrivePolicy", `{"deadLetterTargetArn":"nope"}`, "Invalid parameter: RedrivePolicy: deadLetterTargetArn is an invalid arn"},
		{"Bogus", "x", "Invalid parameter: AttributeName"},
	} {
		err := set(sub, tc.name, tc.value)
		if tc.name == "FilterPolicy" && strings.HasPrefix(tc.value, `{"a":`) && !strings.Contains(tc.value, "[") {
			// Only the first line is AWS's; the location depends on the parser.
			var api smithy.APIError
			if errors.As(err, &api) && !strings.HasPrefix(api.ErrorMessage(), "Invalid parameter: FilterPolicy: failed to parse JSON.") {
				t.Errorf("bad JSON: %q", api.ErrorMessage())
			}
			continue
		}
		wantSNSError(t, err, "InvalidParameter", 400, tc.message)
	}

	for _, tc := range []struct {
		topic, protocol, endpoint string
		attrs                     map[string]string
		message                   string
	}{
		{topic, "smtp", "x", nil, "Invalid parameter: Amazon SNS does not support this protocol string: smtp"},
		{topic, "sqs", "https://sqs.us-east-1.amazonaws.com/000000000000/q", nil, "Invalid parameter: SQS endpoint ARN"},
		{topic, "sqs", arnPrefix + "q.fifo", nil, "Invalid parameter: Invalid parameter: Endpoint Reason: FIFO SQS Queues can not be subscribed to standard SNS topics"},
		{topic, "http", "https://example.com/", nil, "Invalid parameter: Endpoint must match the specified protocol"},
		{fifoTopic, "http", "http://example.com/", nil, "Invalid parameter: Invalid protocol type: http"},
		{fifoTopic, "sqs", arnPrefix + "q.fifo", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + arnPrefix + `dlq"}`},
			"Invalid parameter: RedrivePolicy: must use a FIFO queue as DLQ for a FIFO Subscription to a FIFO Topic."},
		{topic, "sqs", arnPrefix + "q2", map[string]string{"RawMessageDelivery": "maybe"},
			"Invalid parameter: Attributes Reason: RawMessageDelivery: Invalid value [maybe]. Must be true or false."},
		{topic, "sqs", arnPrefix + "q2", map[string]string{"FilterPolicy": `{"a":[{"numeric":["<"]}]}`},
			"Invalid parameter: Attributes Reason: FilterPolicy: Value of < must be numeric"},
		{topic, "http", "http://example.com/", map[string]string{"DeliveryPolicy": `{"healthyRetryPolicy":{"minDelayTarget":0}}`},
			"Invalid parameter: Attributes Reason: DeliveryPolicy: healthyRetryPolicy.minDelayTarget must be greater than or equal to 1"},
		{topic, "http", "http://example.com/", map[string]string{"DeliveryPolicy": `{"healthyRetryPolicy":{"minDelayTarget":10,"maxDelayTarget":3600,"numRetries":50,"numMaxDelayRetries":10}}`},
			"Invalid parameter: Attributes Reason: DeliveryPolicy: healthyRetryPolicy: the total time of all retries must be less than or equal to 3600 seconds"},
		{topic, "sqs", arnPrefix + "q2", map[string]string{"Bogus": "1"}, "Invalid parameter: Attributes Reason: AttributeName"},
	} {
		_, err := f.sns.Subscribe(ctx, &snssdk.SubscribeInput{TopicArn: aws.String(tc.topic), Protocol: aws.String(tc.protocol),
			Endpoint: aws.String(tc.endpoint), Attributes: tc.attrs})
		wantSNSError(t, err, "InvalidParameter", 400, tc.message)
	}
	// A FIFO topic takes FIFO and standard queues; a queue that does not
	// exist (yet) is accepted.
	f.subscribe(t, fifoTopic, "sqs", arnPrefix+"later.fifo", nil)
	f.subscribe(t, fifoTopic, "sqs", arnPrefix+"std", nil)

	// Unsubscribe: malformed ARNs are refused, unknown ones accepted.
	for _, tc := range []struct{ arn, message string }{
		{"", "Invalid parameter: SubscriptionArn Reason: no value for required parameter"},
		{"arn:aws:sns:us-east-1", "Invalid parameter: SubscriptionArn Reason: An ARN must have at least 6 elements, not 4"},
		{topic, "Invalid parameter: SubscriptionId"},
	} {
		_, err := f.sns.Unsubscribe(ctx, &snssdk.UnsubscribeInput{SubscriptionArn: aws.String(tc.arn)})
		wantSNSError(t, err, "InvalidParameter", 400, tc.message)
	}
	if _, err := f.sns.Unsubscribe(ctx, &snssdk.UnsubscribeInput{SubscriptionArn: aws.String(topic + ":00000000-0000-4000-8000-000000000000")}); err != nil {
		t.Errorf("unknown subscription: %v", err)
	}
	if _, err := f.sns.Unsubscribe(ctx, &snssdk.UnsubscribeInput{SubscriptionArn: aws.String(sub)}); err != nil {
		t.Fatal(err)
	}
	_, err = f.sns.GetSubscriptionAttributes(ctx, &snssdk.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(sub)})
	wantSNSError(t, err, "NotFound", 404, "Subscription does not exist")

	// ListSubscriptions pages by 100; deleting the topic deletes its
	// subscriptions.
	for i := range 150 {
		f.subscribe(t, topic, "sqs", fmt.Sprintf("%sq%d", arnPrefix, i), nil)
	}
	count := func(list func(*string) ([]snstypes.Subscription, *string)) int {
		n := 0
		var token *string
		for {
			subs, next := list(token)
			if len(subs) > 100 {
				t.Errorf("page of %d", len(subs))
			}
			n += len(subs)
			if token = next; token == nil {
				return n
			}
		}
	}
	all := count(func(tok *string) ([]snstypes.Subscription, *string) {
		out, err := f.sns.ListSubscriptions(ctx, &snssdk.ListSubscriptionsInput{NextToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		return out.Subscriptions, out.NextToken
	})
	byTopic := count(func(tok *string) ([]snstypes.Subscription, *string) {
		out, err := f.sns.ListSubscriptionsByTopic(ctx, &snssdk.ListSubscriptionsByTopicInput{TopicArn: aws.String(topic), NextToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		return out.Subscriptions, out.NextToken
	})
	if all != 152 || byTopic != 150 {
		t.Errorf("listed %d subscriptions, %d of the topic", all, byTopic)
	}
	if attrs := f.topicAttrs(t, topic); attrs["SubscriptionsConfirmed"] != "150" {
		t.Errorf("SubscriptionsConfirmed = %s", attrs["SubscriptionsConfirmed"])
	}
	if _, err := f.sns.DeleteTopic(ctx, &snssdk.DeleteTopicInput{TopicArn: aws.String(topic)}); err != nil {
		t.Fatal(err)
	}
	out, err := f.sns.ListSubscriptions(ctx, &snssdk.ListSubscriptionsInput{})
	if err != nil || len(out.Subscriptions) != 2 {
		t.Errorf("after DeleteTopic: %d subscriptions, %v", len(out.Subscriptions), err)
	}
	_, err = f.sns.ListSubscriptionsByTopic(ctx, &snssdk.ListSubscriptionsByTopicInput{TopicArn: aws.String(topic)})
	wantSNSError(t, err, "NotFound", 404, "Topic does not exist")
}

func TestSNSPublishValidation(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	topic := f.createTopic(t, "v", nil)
	fifo := f.createTopic(t, "v.fifo", map[string]string{"FifoTopic": "true"})
	msg := aws.String("m")
	for _, tc := range []struct {
		in      *snssdk.PublishInput
		code    string
		message string
	}{
		{&snssdk.PublishInput{TopicArn: aws.String(topic), Message: msg, Subject: aws.String("")}, "InvalidParameter", "Invalid parameter: Subject"},
		{&snssdk.PublishInput{TopicArn: aws.String(topic), Message: msg, Subject: aws.String("two\nlines")}, "InvalidParameter", "Invalid parameter: Subject"},
		{&snssdk.PublishInput{TopicArn: aws.String(topic), Message: msg, Subject: aws.String(strings.Repeat("s", 101))}, "InvalidParameter", "Invalid parameter: Subject"},
		{&snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("")}, "InvalidParameter", "Invalid parameter: Empty message"},
		{&snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String(strings.Repeat("x", 262145))}, "InvalidParameter", "Invalid parameter: Message too long"},
		{&snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String(strings.Repeat("x", 262140)),
			MessageAttributes: map[string]snstypes.MessageAttributeValue{"ab": strAttr("c")}}, "InvalidParameter", "Invalid parameter: Message too long"},
		{&snssdk.PublishInput{TopicArn: aws.String(topic), Message: msg, MessageAttributes: map[string]snstypes.MessageAttributeValue{"a^b": strAttr("c")}},
			"ParameterValueInvalid", "Invalid non-alphanumeric character '#x5E' was found in the message attribute name. Can only include alphanumeric characters, hyphens, underscores, or dots."},
		{&snssdk.PublishInput{TopicArn: aws.String(topic), Message: msg, MessageAttributes: map[string]snstypes.MessageAttributeValue{".a": strAttr("c")}},
			"ParameterValueInvalid", "Invalid message attribute name starting with character '.' was found."},
		{&snssdk.PublishInput{TopicArn: aws.String(topic), Message: msg, MessageAttributes: map[string]snstypes.MessageAttributeValue{"a.": strAttr("c")}},
			"ParameterValueInvalid", "Invalid message attribute name ending with character '.' was found."},
		{&snssdk.PublishInput{TopicArn: aws.String(topic), Message: msg, MessageAttributes: map[string]snstypes.MessageAttributeValue{"a..b": strAttr("c")}},
			"ParameterValueInvalid", "Message attribute name can not have successive '.' character."},
		{&snssdk.PublishInput{TopicArn: aws.String(topic), Message: msg, MessageAttributes: map[string]snstypes.MessageAttributeValue{"a": {DataType: aws.String("Text"), StringValue: msg}}},
			"ParameterValueInvalid", "The message attribute 'a' has an invalid message attribute type, the set of supported type prefixes is Binary, Number, and String."},
		{&snssdk.PublishInput{TopicArn: aws.String(topic), Message: msg, MessageAttributes: map[string]snstypes.MessageAttributeValue{"a": {DataType: aws.String("String"), BinaryValue: []byte("x")}}},
			"ParameterValueInvalid", "The message attribute 'a' with type 'String' must use field 'String'."},
		{&snssdk.PublishInput{TopicArn: aws.String(topic), Message: msg, MessageAttributes: map[string]snstypes.MessageAttributeValue{"a": {DataType: aws.String("Binary"), StringValue: msg}}},
			"ParameterValueInvalid", "The message attribute 'a' with type 'Binary' must use field 'Binary'."},
		{&snssdk.PublishInput{TopicArn: aws.String(topic), Message: msg, MessageAttributes: map[string]snstypes.MessageAttributeValue{"a": {DataType: aws.String("Number")}}},
			"ParameterValueInvalid", "The message attribute 'a' must contain non-empty message attribute value for message attribute type 'Number'."},
		{&snssdk.PublishInput{TopicArn: aws.String(topic), Message: msg, MessageStructure: aws.String("json")}, "InvalidParameter", "Invalid parameter: Message Structure - JSON message body failed to parse"},
		{&snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String(`{"sqs":"x"}`), MessageStructure: aws.String("json")}, "InvalidParameter",
			"Invalid parameter: Message Structure - No default entry in JSON message body"},
		{&snssdk.PublishInput{TopicArn: aws.String(topic), Message: msg, MessageDeduplicationId: aws.String("d")}, "InvalidParameter",
			"Invalid parameter: MessageDeduplicationId Reason: The request includes MessageDeduplicationId parameter that is not valid for this topic type"},
		{&snssdk.PublishInput{TopicArn: aws.String(fifo), Message: msg}, "InvalidParameter", "Invalid parameter: The MessageGroupId parameter is required for FIFO topics"},
		{&snssdk.PublishInput{TopicArn: aws.String(fifo), Message: msg, MessageGroupId: aws.String("g")}, "InvalidParameter",
			"Invalid parameter: The topic should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly"},
		{&snssdk.PublishInput{Message: msg}, "InvalidParameter", "Invalid parameter: TopicArn or TargetArn Reason: no value for required parameter"},
		{&snssdk.PublishInput{TopicArn: aws.String(topicPrefix + "gone"), Message: msg}, "NotFound", "Topic does not exist"},
		{&snssdk.PublishInput{TopicArn: aws.String("arn:aws:sns:us-east-1:000000000000"), Message: msg}, "InvalidParameter",
			"Invalid parameter: TopicArn Reason: An ARN must have at least 6 elements, not 5"},
		{&snssdk.PublishInput{TargetArn: aws.String("arn:aws:sns:us-east-1:000000000000:endpoint/GCM/app/1"), Message: msg}, "InvalidParameter",
			"Invalid parameter: TargetArn Reason: No endpoint found for the target arn specified"},
	} {
		_, err := f.sns.Publish(ctx, tc.in)
		status := 400
		if tc.code == "NotFound" {
			status = 404
		}
		wantSNSError(t, err, tc.code, status, tc.message)
	}
	// The limits themselves are allowed: AWS takes a subject of 100
	// characters, though its reference says "less than 100".
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String(strings.Repeat("x", 262144))})
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: msg, Subject: aws.String(strings.Repeat("s", 100))})
	// A missing DataType never leaves the SDK; by hand it is the
	// framework's ValidationError.
	r := f.postQuery(t, "Action=Publish&Version=2010-03-31&TopicArn="+topic+"&Message=m&MessageAttributes.entry.1.Name=a&MessageAttributes.entry.1.Value.StringValue=b")
	if r.Status != 400 || !strings.Contains(r.Body, "<Code>ValidationError</Code>") ||
		!strings.Contains(r.Body, "1 validation error detected: Value null at &apos;messageAttributes.a.member.dataType&apos; failed to satisfy constraint: Member must not be null") &&
			!strings.Contains(r.Body, "1 validation error detected: Value null at 'messageAttributes.a.member.dataType' failed to satisfy constraint: Member must not be null") {
		t.Errorf("missing DataType: %d %s", r.Status, r.Body)
	}
	if !strings.Contains(r.Body, `<ErrorResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/">`) || strings.Contains(r.Body, "<Detail/>") {
		t.Errorf("SNS error envelope: %s", r.Body)
	}

	entries := func(n int, mod func(i int, e *snstypes.PublishBatchRequestEntry)) []snstypes.PublishBatchRequestEntry {
		es := make([]snstypes.PublishBatchRequestEntry, n)
		for i := range es {
			es[i] = snstypes.PublishBatchRequestEntry{Id: aws.String(fmt.Sprint("e", i)), Message: msg}
			if mod != nil {
				mod(i, &es[i])
			}
		}
		return es
	}
	for _, tc := range []struct {
		es      []snstypes.PublishBatchRequestEntry
		code    string
		message string
	}{
		{entries(11, nil), "TooManyEntriesInBatchRequest", "The batch request contains more entries than permissible."},
		{[]snstypes.PublishBatchRequestEntry{}, "EmptyBatchRequest", ""},
		{entries(2, func(i int, e *snstypes.PublishBatchRequestEntry) { e.Id = aws.String("same") }), "BatchEntryIdsNotDistinct", "Two or more batch entries in the request have the same Id."},
		{entries(1, func(i int, e *snstypes.PublishBatchRequestEntry) { e.Id = aws.String(strings.Repeat("i", 81)) }), "InvalidBatchEntryId",
			"The Id of a batch entry in the batch request is too long: " + strings.Repeat("i", 81)},
		{entries(1, func(i int, e *snstypes.PublishBatchRequestEntry) { e.Id = aws.String("a.b") }), "InvalidBatchEntryId",
			"The Id of a batch entry in the batch request contains an impermissible character: a.b"},
		{entries(2, func(i int, e *snstypes.PublishBatchRequestEntry) { e.Message = aws.String(strings.Repeat("x", 140000)) }), "BatchRequestTooLong",
			"The length of all the messages put together is more than the limit."},
		{entries(2, func(i int, e *snstypes.PublishBatchRequestEntry) { e.Subject = aws.String("") }), "InvalidParameter", "Invalid parameter: Subject"},
	} {
		_, err := f.sns.PublishBatch(ctx, &snssdk.PublishBatchInput{TopicArn: aws.String(topic), PublishBatchRequestEntries: tc.es})
		wantSNSError(t, err, tc.code, 400, tc.message)
	}
	out, err := f.sns.PublishBatch(ctx, &snssdk.PublishBatchInput{TopicArn: aws.String(topic),
		PublishBatchRequestEntries: entries(10, func(i int, e *snstypes.PublishBatchRequestEntry) {
			e.Id = aws.String(strings.Repeat("i", 79) + fmt.Sprint(i))
		})})
	if err != nil || len(out.Successful) != 10 || len(out.Failed) != 0 {
		t.Fatalf("PublishBatch of 10: %v %v", out, err)
	}
}

func TestSNSMessageStructure(t *testing.T) {
	t.Parallel()
	f := start(t)
	topic := f.createTopic(t, "structured", nil)
	q := f.createQueue(t, "sq", nil)
	f.subscribe(t, topic, "sqs", arnPrefix+"sq", map[string]string{"RawMessageDelivery": "true"})
	lambda := f.subscribe(t, topic, "lambda", "arn:aws:lambda:us-east-1:000000000000:function:fn", nil)
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), MessageStructure: aws.String("json"),
		Message:           aws.String(`{"default":"for all","sqs":"for queues","lambda":7}`),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{"a": strAttr("b")}})
	m := f.receiveOne(t, q)
	if aws.ToString(m.Body) != "for queues" || len(m.MessageAttributes) != 0 {
		t.Errorf("sqs got %q %v", aws.ToString(m.Body), m.MessageAttributes)
	}
	ds := f.srv.SNS().Deliveries("lambda")
	if len(ds) != 1 || ds[0].Message != "for all" || ds[0].SubscriptionArn != lambda {
		t.Fatalf("lambda deliveries: %+v", ds)
	}
	var ev struct {
		Records []struct {
			EventSource string
			Sns         struct{ Type, Message, TopicArn, Signature string }
		}
	}
	if err := json.Unmarshal([]byte(ds[0].Body), &ev); err != nil || len(ev.Records) != 1 || ev.Records[0].EventSource != "aws:sns" ||
		ev.Records[0].Sns.Message != "for all" || ev.Records[0].Sns.Signature == "" {
		t.Errorf("lambda event %s: %v", ds[0].Body, err)
	}
	r := do(t, mustRequest(t, "GET", f.srv.URL()+"/_ferry/sns/deliveries?protocol=lambda"))
	if r.Status != 200 || strings.Count(r.Body, "\n") != 1 || !strings.Contains(r.Body, `"Protocol":"lambda"`) {
		t.Errorf("GET deliveries: %d %s", r.Status, r.Body)
	}
}

// hit is one POST an HTTP endpoint received.
type hit struct {
	header http.Header
	body   string
	at     time.Time // on the fake clock
}

// endpoint is an HTTP subscriber whose answers the test chooses.
type endpoint struct {
	t    testing.TB
	srv  *httptest.Server
	clk  interface{ Now() time.Time }
	mu   sync.Mutex
	hits []hit
	// answer gives the status of the n-th (0-based) request; 0 hangs
	// until the test ends.
	answer  func(n int) int
	release chan struct{}
}

func newEndpoint(t testing.TB, f *ferry, answer func(n int) int) *endpoint {
	return newEndpointOn(t, f.clk, answer)
}

// newEndpointOn is newEndpoint whose hits are timed on clk.
func newEndpointOn(t testing.TB, clk interface{ Now() time.Time }, answer func(n int) int) *endpoint {
	e := &endpoint{t: t, clk: clk, answer: answer, release: make(chan struct{})}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		n := len(e.hits)
		e.hits = append(e.hits, hit{header: r.Header.Clone(), body: string(b), at: e.clk.Now()})
		e.mu.Unlock()
		status := e.answer(n)
		if status == 0 {
			select {
			case <-e.release:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(func() { close(e.release); e.srv.Close() })
	return e
}

func always(status int) func(int) int { return func(int) int { return status } }

func (e *endpoint) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.hits)
}

func (e *endpoint) get(i int) hit {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hits[i]
}

// waitHits waits (real time) until the endpoint has had n requests.
func (e *endpoint) waitHits(n int) {
	e.t.Helper()
	testwait.Eventually(e.t, fmt.Sprintf("the endpoint's request %d", n), func() bool { return e.count() >= n })
}

// deliveriesDone waits until no SNS delivery is queued or in flight: each
// has been made, dead-lettered or given up, so nothing is left that could
// reach an endpoint. It is the barrier before checking that a delivery
// did not happen.
func (f *ferry) deliveriesDone(t testing.TB) {
	t.Helper()
	ctx, eng := ctxT(t), f.srv.Engine()
	testwait.Eventually(t, "every SNS delivery to leave its queue", func() bool {
		qs, err := eng.ListQueues(ctx, delivery.QueueAccount, "")
		if err != nil {
			return false
		}
		for _, q := range qs {
			st, err := eng.Stats(ctx, delivery.QueueAccount, q.Name)
			if err != nil || st.Visible+st.NotVisible+st.Delayed > 0 {
				return false
			}
		}
		return true
	})
}

// deliveriesSettled reports that no SNS delivery is due: each whose wait
// on the clock has ended has made its attempt, so nothing more happens
// before the clock moves again; and that a timer is set no later than the
// first wait's end, so that moving the clock to its next timer overtakes
// no retry. (The embedded store sets a retry's timer before the failure is
// counted; on PostgreSQL a long poll sets it once the notification of the
// retry's visibility comes back from the database.)
func (f *ferry) deliveriesSettled() bool {
	now := f.clk.Now()
	var first time.Time
	for _, at := range f.srv.SNS().DeliveryWaits() {
		if !at.After(now) {
			return false
		}
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	if first.IsZero() {
		return true
	}
	next, ok := f.clk.Next()
	return ok && !next.After(first)
}

// waitingDeliveries waits until n SNS deliveries wait on the clock for a
// retry or their turn, none of them due: the attempts before those waits
// have ended.
func (f *ferry) waitingDeliveries(t testing.TB, n int) {
	t.Helper()
	testwait.Eventually(t, fmt.Sprintf("%d SNS deliveries to wait on the clock", n), func() bool {
		return len(f.srv.SNS().DeliveryWaits()) == n && f.deliveriesSettled()
	})
}

// advanceUntil moves the fake clock from one timer's deadline to the next
// until cond holds, and returns how far it moved: exactly how long cond
// took on the clock. Before each move it waits until no SNS delivery is
// due, so that the clock never passes an attempt under way. An attempt
// with no wait before it (the first of a message) must have ended before
// the call: the test waits for what it did.
func (f *ferry) advanceUntil(t testing.TB, max time.Duration, cond func() bool) time.Duration {
	t.Helper()
	return testwait.AdvanceUntil(t, f.clk, max, f.deliveriesSettled, cond)
}

// failedAtLeast: the subscription has counted n failed attempts, each
// counted once its retry is scheduled.
func (f *ferry) failedAtLeast(sub string, n int64) func() bool {
	return func() bool { c, _ := f.srv.SNS().SubscriptionCounters(sub); return c.Failed >= n }
}

// confirm subscribes an HTTP endpoint and confirms it by a GET of the
// SubscribeURL of the confirmation it received (its first request).
func (f *ferry) confirmHTTP(t testing.TB, topic string, e *endpoint, attrs map[string]string) string {
	t.Helper()
	out, err := f.sns.Subscribe(ctxT(t), &snssdk.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("http"),
		Endpoint: aws.String(e.srv.URL + "/hook"), Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.SubscriptionArn) != "pending confirmation" {
		t.Fatalf("SubscriptionArn = %q", aws.ToString(out.SubscriptionArn))
	}
	e.waitHits(1)
	conf := parseEnvelope(t, e.get(0).body)
	r := do(t, mustRequest(t, "GET", conf.str("SubscribeURL")))
	if r.Status != 200 {
		t.Fatalf("GET SubscribeURL: %d %s", r.Status, r.Body)
	}
	_, rest, _ := strings.Cut(r.Body, "<SubscriptionArn>")
	arn, _, _ := strings.Cut(rest, "</SubscriptionArn>")
	return arn
}

func TestSNSHTTPSubscription(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	topic := f.createTopic(t, "web", nil)
	e := newEndpoint(t, f, always(200))
	out, err := f.sns.Subscribe(ctx, &snssdk.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("http"), Endpoint: aws.String(e.srv.URL + "/hook")})
	if err != nil || aws.ToString(out.SubscriptionArn) != "pending confirmation" {
		t.Fatalf("Subscribe: %v %v", out, err)
	}
	list, _ := f.sns.ListSubscriptionsByTopic(ctx, &snssdk.ListSubscriptionsByTopicInput{TopicArn: aws.String(topic)})
	if len(list.Subscriptions) != 1 || aws.ToString(list.Subscriptions[0].SubscriptionArn) != "PendingConfirmation" {
		t.Errorf("pending subscription listed as %v", list.Subscriptions)
	}
	if a := f.topicAttrs(t, topic); a["SubscriptionsPending"] != "1" || a["SubscriptionsConfirmed"] != "0" {
		t.Errorf("counts: %v", a)
	}
	e.waitHits(1)
	h := e.get(0)
	conf := parseEnvelope(t, h.body)
	if h.header.Get("Content-Type") != "text/plain; charset=UTF-8" || h.header.Get("X-Amz-Sns-Message-Type") != "SubscriptionConfirmation" ||
		h.header.Get("X-Amz-Sns-Topic-Arn") != topic || h.header.Get("X-Amz-Sns-Message-Id") != conf.str("MessageId") ||
		h.header.Get("User-Agent") != "Amazon Simple Notification Service Agent" || h.header.Get("X-Amz-Sns-Subscription-Arn") != "" {
		t.Errorf("confirmation headers: %v", h.header)
	}
	token := conf.str("Token")
	if conf.str("Type") != "SubscriptionConfirmation" || len(token) != 288 || conf.str("TopicArn") != topic ||
		conf.str("SubscribeURL") != f.srv.URL()+"/?Action=ConfirmSubscription&TopicArn="+topic+"&Token="+token ||
		conf.str("Message") != "You have chosen to subscribe to the topic "+topic+".\nTo confirm the subscription, visit the SubscribeURL included in this message." {
		t.Errorf("confirmation: %v", conf)
	}
	verifySignature(t, conf)

	// Bad confirmations.
	for _, tc := range []struct{ topic, token, message string }{
		{"nonsense", token, "Invalid parameter: Topic"},
		{topic, "garbage", "Invalid parameter: Token"},
		{"arn:aws:sns:eu-west-1:000000000000:web", token, "Invalid parameter: Topic"},
		{topic, token[:40] + strings.Repeat("0", 248), "Invalid token"},
		{topicPrefix + "other", token, "Invalid parameter: Token"},
	} {
		_, err := f.sns.ConfirmSubscription(ctx, &snssdk.ConfirmSubscriptionInput{TopicArn: aws.String(tc.topic), Token: aws.String(tc.token)})
		wantSNSError(t, err, "InvalidParameter", 400, tc.message)
	}
	// An unsigned GET of the SubscribeURL confirms.
	r := do(t, mustRequest(t, "GET", conf.str("SubscribeURL")))
	if r.Status != 200 || !strings.Contains(r.Body, "<ConfirmSubscriptionResult><SubscriptionArn>"+topic+":") {
		t.Fatalf("GET SubscribeURL: %d %s", r.Status, r.Body)
	}
	_, rest, _ := strings.Cut(r.Body, "<SubscriptionArn>")
	sub, _, _ := strings.Cut(rest, "</SubscriptionArn>")
	attrs, err := f.sns.GetSubscriptionAttributes(ctx, &snssdk.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(sub)})
	if err != nil || attrs.Attributes["PendingConfirmation"] != "false" || attrs.Attributes["ConfirmationWasAuthenticated"] != "false" ||
		attrs.Attributes["EffectiveDeliveryPolicy"] != `{"healthyRetryPolicy":{"minDelayTarget":20,"maxDelayTarget":20,"numRetries":3,"numMaxDelayRetries":0,"numNoDelayRetries":0,"numMinDelayRetries":0,"backoffFunction":"linear"},"sicklyRetryPolicy":null,"throttlePolicy":null,"requestPolicy":{"headerContentType":"text/plain; charset=UTF-8"},"guaranteed":false}` {
		t.Errorf("confirmed subscription: %v %v", attrs, err)
	}
	// Confirming again answers the same ARN.
	again, err := f.sns.ConfirmSubscription(ctx, &snssdk.ConfirmSubscriptionInput{TopicArn: aws.String(topic), Token: aws.String(token)})
	if err != nil || aws.ToString(again.SubscriptionArn) != sub {
		t.Errorf("second confirmation: %v %v", again, err)
	}

	// A notification, in an envelope, then raw with a JSON content type.
	pub := f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("hello"), Subject: aws.String("S"),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{"k": strAttr("v")}})
	e.waitHits(2)
	h = e.get(1)
	n := parseEnvelope(t, h.body)
	if h.header.Get("X-Amz-Sns-Message-Type") != "Notification" || h.header.Get("X-Amz-Sns-Subscription-Arn") != sub ||
		h.header.Get("X-Amz-Sns-Message-Id") != aws.ToString(pub.MessageId) || h.header.Get("X-Amz-Sns-Rawdelivery") != "" ||
		h.header.Get("Content-Type") != "text/plain; charset=UTF-8" {
		t.Errorf("notification headers: %v", h.header)
	}
	if n.str("Message") != "hello" || n.str("Subject") != "S" || n.str("MessageId") != aws.ToString(pub.MessageId) {
		t.Errorf("notification: %v", n)
	}
	verifySignature(t, n)

	for name, value := range map[string]string{"RawMessageDelivery": "true", "DeliveryPolicy": `{"requestPolicy":{"headerContentType":"application/json"}}`} {
		if _, err := f.sns.SetSubscriptionAttributes(ctx, &snssdk.SetSubscriptionAttributesInput{SubscriptionArn: aws.String(sub),
			AttributeName: aws.String(name), AttributeValue: aws.String(value)}); err != nil {
			t.Fatal(err)
		}
	}
	attrs, _ = f.sns.GetSubscriptionAttributes(ctx, &snssdk.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(sub)})
	if got := attrs.Attributes["DeliveryPolicy"]; got != `{"healthyRetryPolicy":null,"sicklyRetryPolicy":null,"throttlePolicy":null,"requestPolicy":{"headerContentType":"application/json"},"guaranteed":false}` {
		t.Errorf("stored DeliveryPolicy = %s", got)
	}
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String(`{"raw":true}`)})
	e.waitHits(3)
	h = e.get(2)
	if h.body != `{"raw":true}` || h.header.Get("X-Amz-Sns-Rawdelivery") != "true" || h.header.Get("Content-Type") != "application/json" {
		t.Errorf("raw delivery: %q %v", h.body, h.header)
	}

	// Unsubscribing sends an UnsubscribeConfirmation whose SubscribeURL
	// restores the subscription.
	if _, err := f.sns.Unsubscribe(ctx, &snssdk.UnsubscribeInput{SubscriptionArn: aws.String(sub)}); err != nil {
		t.Fatal(err)
	}
	e.waitHits(4)
	u := parseEnvelope(t, e.get(3).body)
	if u.str("Type") != "UnsubscribeConfirmation" || !strings.HasPrefix(u.str("Message"), "You have chosen to deactivate subscription "+sub+".") {
		t.Errorf("unsubscribe confirmation: %v", u)
	}
	verifySignature(t, u)
	if a := f.topicAttrs(t, topic); a["SubscriptionsDeleted"] != "1" || a["SubscriptionsConfirmed"] != "0" {
		t.Errorf("counts after unsubscribe: %v", a)
	}
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("nobody hears")})
	if r := do(t, mustRequest(t, "GET", u.str("SubscribeURL"))); r.Status != 200 || !strings.Contains(r.Body, sub) {
		t.Fatalf("restore: %d %s", r.Status, r.Body)
	}
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("back")})
	e.waitHits(5)
	if h := e.get(4); h.body != "back" {
		t.Errorf("after restore got %q", h.body)
	}
}

// TestSNSHTTPEndpointPasswordMasked: the password of an HTTP endpoint is
// "****" in every answer that shows the endpoint, and deliveries still
// authenticate with it.
func TestSNSHTTPEndpointPasswordMasked(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	topic := f.createTopic(t, "guarded", nil)
	e := newEndpoint(t, f, always(200))
	host := strings.TrimPrefix(e.srv.URL, "http://")
	endpoint := "http://user:secret@" + host + "/hook?k=v"
	masked := "http://user:****@" + host + "/hook?k=v"
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("user:secret"))

	r := f.postQuery(t, "Action=Subscribe&Version=2010-03-31&Protocol=http&TopicArn="+topic+"&Endpoint="+url.QueryEscape(endpoint))
	if r.Status != 200 || strings.Contains(r.Body, "secret") {
		t.Fatalf("Subscribe: %d %s", r.Status, r.Body)
	}
	e.waitHits(1)
	if got := e.get(0).header.Get("Authorization"); got != basic {
		t.Fatalf("confirmation sent Authorization %q, want %q", got, basic)
	}
	conf := parseEnvelope(t, e.get(0).body)
	if r := do(t, mustRequest(t, "GET", conf.str("SubscribeURL"))); r.Status != 200 {
		t.Fatalf("GET SubscribeURL: %d %s", r.Status, r.Body)
	}
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("hello")})
	e.waitHits(2)
	if h := e.get(1); h.header.Get("Authorization") != basic || parseEnvelope(t, h.body).str("Message") != "hello" {
		t.Fatalf("notification: Authorization %q, body %s", h.header.Get("Authorization"), h.body)
	}

	all, err := f.sns.ListSubscriptions(ctx, &snssdk.ListSubscriptionsInput{})
	if err != nil || len(all.Subscriptions) != 1 || aws.ToString(all.Subscriptions[0].Endpoint) != masked {
		t.Fatalf("ListSubscriptions: %+v %v", all, err)
	}
	sub := aws.ToString(all.Subscriptions[0].SubscriptionArn)
	byTopic, err := f.sns.ListSubscriptionsByTopic(ctx, &snssdk.ListSubscriptionsByTopicInput{TopicArn: aws.String(topic)})
	if err != nil || len(byTopic.Subscriptions) != 1 || aws.ToString(byTopic.Subscriptions[0].Endpoint) != masked {
		t.Fatalf("ListSubscriptionsByTopic: %+v %v", byTopic, err)
	}
	attrs, err := f.sns.GetSubscriptionAttributes(ctx, &snssdk.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(sub)})
	if err != nil || attrs.Attributes["Endpoint"] != masked {
		t.Fatalf("GetSubscriptionAttributes: %v %v", attrs.Attributes, err)
	}
	// What the wire carries, whole: the password is nowhere.
	for _, form := range []string{
		"Action=ListSubscriptions&Version=2010-03-31",
		"Action=ListSubscriptionsByTopic&Version=2010-03-31&TopicArn=" + topic,
		"Action=GetSubscriptionAttributes&Version=2010-03-31&SubscriptionArn=" + sub,
	} {
		if r := f.postQuery(t, form); r.Status != 200 || strings.Contains(r.Body, "secret") || !strings.Contains(r.Body, "user:****@") {
			t.Errorf("%s: %d %s", form, r.Status, r.Body)
		}
	}
}

func TestSNSHTTPRetriesAndDeadLetters(t *testing.T) {
	t.Parallel()
	f := start(t)
	topic := f.createTopic(t, "flaky", nil)
	dlqURL := f.createQueue(t, "sns-dlq", nil)
	redrive := map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + arnPrefix + `sns-dlq"}`}
	svc := f.srv.SNS()

	t.Run("5xx retried on the default policy, then the DLQ", func(t *testing.T) {
		e := newEndpoint(t, f, func(n int) int {
			if n == 0 {
				return 200 // the confirmation
			}
			return 500
		})
		sub := f.confirmHTTP(t, topic, e, redrive)
		id := aws.ToString(f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("retry me")}).MessageId)
		e.waitHits(2)
		for n := 3; n <= 5; n++ {
			testwait.Eventually(t, "the condition", f.failedAtLeast(sub, int64(n-2)))
			waited := f.advanceUntil(t, time.Minute, func() bool { return e.count() >= n })
			if waited < 18*time.Second || waited > 22*time.Second {
				t.Errorf("retry %d came after %v, want 20 s ± 10%%", n-2, waited)
			}
			if got := e.get(n - 1).header.Get("X-Amz-Sns-Message-Id"); got != id {
				t.Errorf("retry %d has message id %s", n-2, got)
			}
		}
		m := testwait.Some(t, "nothing arrived", func() []types.Message { return f.receiveAll(t, dlqURL, 1) })[0]
		if env := parseEnvelope(t, aws.ToString(m.Body)); env.str("MessageId") != id || env.str("Message") != "retry me" {
			t.Errorf("DLQ holds %s", aws.ToString(m.Body))
		}
		f.json.DeleteMessage(ctxT(t), &sqs.DeleteMessageInput{QueueUrl: aws.String(dlqURL), ReceiptHandle: m.ReceiptHandle})
		testwait.Eventually(t, "the condition", func() bool { c, _ := svc.SubscriptionCounters(sub); return c.Failed == 4 && c.RedrivenToDLQ == 1 })
		c, _ := svc.SubscriptionCounters(sub)
		if c.Failed != 4 || c.Delivered != 0 || c.RedrivenToDLQ != 1 {
			t.Errorf("counters: %+v", c)
		}
		// No fifth retry.
		f.clk.Advance(2 * time.Minute)
		f.deliveriesDone(t)
		if e.count() != 5 {
			t.Errorf("%d requests, want 5", e.count())
		}
		f.sns.Unsubscribe(ctxT(t), &snssdk.UnsubscribeInput{SubscriptionArn: aws.String(sub)})
	})

	t.Run("4xx is delivered", func(t *testing.T) {
		e := newEndpoint(t, f, func(n int) int {
			if n == 0 {
				return 200
			}
			return 404
		})
		sub := f.confirmHTTP(t, topic, e, nil)
		f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("gone?")})
		e.waitHits(2)
		// Moving the clock while the answer is on its way would time the
		// request out.
		testwait.Eventually(t, "the condition", func() bool { c, _ := svc.SubscriptionCounters(sub); return c.Delivered == 1 })
		// Counted before its message leaves the delivery queue: moving
		// the clock before would hand the message out again.
		f.deliveriesDone(t)
		f.clk.Advance(time.Minute)
		f.deliveriesDone(t)
		c, _ := svc.SubscriptionCounters(sub)
		if e.count() != 2 || c.Delivered != 1 || c.Failed != 0 {
			t.Errorf("%d requests, counters %+v", e.count(), c)
		}
		f.sns.Unsubscribe(ctxT(t), &snssdk.UnsubscribeInput{SubscriptionArn: aws.String(sub)})
	})

	t.Run("a timeout is retried", func(t *testing.T) {
		e := newEndpoint(t, f, func(n int) int {
			if n == 1 {
				return 0 // hang
			}
			return 200
		})
		sub := f.confirmHTTP(t, topic, e, nil)
		f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("slow")})
		e.waitHits(2)
		f.clk.Advance(15 * time.Second)
		testwait.Eventually(t, "the condition", f.failedAtLeast(sub, 1))
		if w := f.advanceUntil(t, time.Minute, func() bool { return e.count() >= 3 }); w < 18*time.Second || w > 22*time.Second {
			t.Errorf("retry after a timeout came after %v, want 20 s ± 10%%", w)
		}
		testwait.Eventually(t, "the condition", func() bool { c, _ := svc.SubscriptionCounters(sub); return c.Delivered == 1 && c.Failed == 1 })
		f.sns.Unsubscribe(ctxT(t), &snssdk.UnsubscribeInput{SubscriptionArn: aws.String(sub)})
	})

	t.Run("a refused connection follows the subscription policy; raw copies keep their attributes", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := "http://" + ln.Addr().String() + "/"
		ln.Close()
		policy := `{"healthyRetryPolicy":{"numRetries":3,"numNoDelayRetries":1,"numMinDelayRetries":1,"numMaxDelayRetries":1,"minDelayTarget":5,"maxDelayTarget":10}}`
		sub := f.subscribe(t, topic, "http", dead, map[string]string{"RawMessageDelivery": "true", "DeliveryPolicy": policy,
			"RedrivePolicy": redrive["RedrivePolicy"]})
		// The endpoint cannot confirm; the test confirms with the token.
		token := f.pendingToken(t, sub)
		if _, err := f.sns.ConfirmSubscription(ctxT(t), &snssdk.ConfirmSubscriptionInput{TopicArn: aws.String(topic), Token: aws.String(token)}); err != nil {
			t.Fatal(err)
		}
		failed := func(n int64) func() bool { return f.failedAtLeast(sub, n) }
		f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("unreachable"),
			MessageAttributes: map[string]snstypes.MessageAttributeValue{"k": strAttr("v")}})
		// Attempt 1, then an immediate retry, then 5 s, then 10 s.
		testwait.Eventually(t, "the immediate retry", failed(2))
		if w := f.advanceUntil(t, time.Minute, failed(3)); w < 4500*time.Millisecond || w > 5500*time.Millisecond {
			t.Errorf("pre-backoff retry after %v, want 5 s ± 10%%", w)
		}
		if w := f.advanceUntil(t, time.Minute, failed(4)); w < 9*time.Second || w > 11*time.Second {
			t.Errorf("last retry after %v, want 10 s ± 10%%", w)
		}
		m := testwait.Some(t, "nothing arrived", func() []types.Message { return f.receiveAll(t, dlqURL, 1) })[0]
		if aws.ToString(m.Body) != "unreachable" || aws.ToString(m.MessageAttributes["k"].StringValue) != "v" {
			t.Errorf("raw DLQ copy: %q %v", aws.ToString(m.Body), m.MessageAttributes)
		}
		f.json.DeleteMessage(ctxT(t), &sqs.DeleteMessageInput{QueueUrl: aws.String(dlqURL), ReceiptHandle: m.ReceiptHandle})

		// With its DLQ gone, the next one is dropped and counted.
		if _, err := f.json.DeleteQueue(ctxT(t), &sqs.DeleteQueueInput{QueueUrl: aws.String(dlqURL)}); err != nil {
			t.Fatal(err)
		}
		f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("lost")})
		testwait.Eventually(t, "the first attempt", failed(5))
		f.advanceUntil(t, time.Minute, func() bool { c, _ := svc.SubscriptionCounters(sub); return c.FailedToRedriveToDLQ == 1 })
		tc, _ := svc.TopicCounters(topic)
		if tc.RedrivenToDLQ != 2 || tc.FailedToRedriveToDLQ != 1 {
			t.Errorf("topic counters: %+v", tc)
		}
	})
}

// pendingToken reads a pending subscription's confirmation token from the
// store, for endpoints that cannot receive it.
func (f *ferry) pendingToken(t testing.TB, sub string) string {
	t.Helper()
	token, ok := f.srv.SNS().ConfirmationToken(sub)
	if !ok {
		t.Fatalf("no token for %s", sub)
	}
	return token
}

func TestSNSFIFOTopic(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	topic := f.createTopic(t, "orders.fifo", map[string]string{"FifoTopic": "true"})
	fq := f.createQueue(t, "orders.fifo", map[string]string{"FifoQueue": "true"})
	sq := f.createQueue(t, "audit", nil)
	f.subscribe(t, topic, "sqs", arnPrefix+"orders.fifo", map[string]string{"RawMessageDelivery": "true"})
	envSub := f.subscribe(t, topic, "sqs", arnPrefix+"audit", nil)

	pub := func(body, group, dedup string) *snssdk.PublishOutput {
		return f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String(body),
			MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(dedup)})
	}
	first := pub("m1", "g1", "d1")
	seq1 := aws.ToString(first.SequenceNumber)
	if len(seq1) < 20 {
		t.Errorf("SequenceNumber = %q", seq1)
	}
	var last string = seq1
	for i := 2; i <= 5; i++ {
		out := pub(fmt.Sprint("m", i), "g1", fmt.Sprint("d", i))
		s := aws.ToString(out.SequenceNumber)
		if len(s) < len(last) || len(s) == len(last) && s <= last {
			t.Errorf("sequence %s after %s", s, last)
		}
		last = s
	}
	// A duplicate within five minutes: the original's id and number, and
	// no delivery.
	dup := pub("m1 again", "g1", "d1")
	if aws.ToString(dup.MessageId) != aws.ToString(first.MessageId) || aws.ToString(dup.SequenceNumber) != seq1 {
		t.Errorf("duplicate answered %v %v", aws.ToString(dup.MessageId), aws.ToString(dup.SequenceNumber))
	}
	var got []string
	for len(got) < 5 {
		ms := f.receiveAll(t, fq, 10)
		for _, m := range ms {
			got = append(got, aws.ToString(m.Body))
			if m.Attributes["MessageGroupId"] != "g1" {
				t.Errorf("group = %q", m.Attributes["MessageGroupId"])
			}
			f.json.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(fq), ReceiptHandle: m.ReceiptHandle})
		}
		if len(ms) == 0 {
			break
		}
	}
	if strings.Join(got, ",") != "m1,m2,m3,m4,m5" {
		t.Errorf("FIFO queue got %v", got)
	}
	// The standard queue gets FIFO envelopes: a SequenceNumber, no signature.
	m := f.receiveOne(t, sq)
	e := parseEnvelope(t, aws.ToString(m.Body))
	if e.str("SequenceNumber") != seq1 || e.str("Signature") != "" || e.str("SigningCertURL") != "" ||
		e.str("UnsubscribeURL") != f.srv.URL()+"/?Action=Unsubscribe&SubscriptionArn="+envSub {
		t.Errorf("FIFO envelope: %v", e)
	}
	if m.Attributes["MessageGroupId"] != "g1" {
		t.Errorf("standard queue message group = %q", m.Attributes["MessageGroupId"])
	}
	// The window ends after five minutes.
	f.clk.Advance(5*time.Minute + time.Second)
	if again := pub("m1 later", "g1", "d1"); aws.ToString(again.MessageId) == aws.ToString(first.MessageId) {
		t.Error("deduplicated after the window")
	}

	// Content-based deduplication and PublishBatch: order kept, in-batch
	// duplicates answered with the original.
	cbd := f.createTopic(t, "cbd.fifo", map[string]string{"FifoTopic": "true", "ContentBasedDeduplication": "true"})
	f.subscribe(t, cbd, "sqs", arnPrefix+"orders.fifo", map[string]string{"RawMessageDelivery": "true"})
	entries := []snstypes.PublishBatchRequestEntry{
		{Id: aws.String("a"), Message: aws.String("x"), MessageGroupId: aws.String("g2")},
		{Id: aws.String("b"), Message: aws.String("y"), MessageGroupId: aws.String("g2")},
		{Id: aws.String("c"), Message: aws.String("x"), MessageGroupId: aws.String("g2")},
	}
	out, err := f.sns.PublishBatch(ctx, &snssdk.PublishBatchInput{TopicArn: aws.String(cbd), PublishBatchRequestEntries: entries})
	if err != nil || len(out.Successful) != 3 {
		t.Fatalf("PublishBatch: %v %v", out, err)
	}
	if aws.ToString(out.Successful[2].MessageId) != aws.ToString(out.Successful[0].MessageId) ||
		aws.ToString(out.Successful[2].SequenceNumber) != aws.ToString(out.Successful[0].SequenceNumber) {
		t.Errorf("in-batch duplicate: %+v", out.Successful)
	}
	got = nil
	testwait.Eventually(t, "the condition", func() bool {
		for _, m := range f.receiveAll(t, fq, 10) {
			if aws.ToString(m.MessageAttributes["x"].StringValue) == "" {
				got = append(got, aws.ToString(m.Body))
			}
			f.json.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(fq), ReceiptHandle: m.ReceiptHandle})
		}
		return len(got) >= 3
	})
	if strings.Join(got, ",") != "m1 later,x,y" {
		t.Errorf("after the batch the FIFO queue got %v", got)
	}
}

func TestSNSThrottleAndConcurrency(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	topic := f.createTopic(t, "busy", nil)

	// A hanging endpoint delays neither the publisher nor the others.
	slow := newEndpoint(t, f, func(n int) int {
		if n == 0 {
			return 200
		}
		return 0
	})
	f.confirmHTTP(t, topic, slow, nil)
	fast := newEndpoint(t, f, always(200))
	f.confirmHTTP(t, topic, fast, map[string]string{"DeliveryPolicy": `{"throttlePolicy":{"maxReceivesPerSecond":1}}`})
	var queues []string
	for i := range 100 {
		name := fmt.Sprint("fan", i)
		queues = append(queues, f.createQueue(t, name, nil))
		f.subscribe(t, topic, "sqs", arnPrefix+name, nil)
	}
	began := time.Now()
	for i := range 3 {
		f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String(fmt.Sprint("n", i))})
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("three publishes to 102 subscriptions took %v", d)
	}
	// Every queue has all three at once: the publish returned after the
	// copies were durable.
	for _, q := range queues {
		out, err := f.json.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q), AttributeNames: []types.QueueAttributeName{"ApproximateNumberOfMessages"}})
		if err != nil || out.Attributes["ApproximateNumberOfMessages"] != "3" {
			t.Fatalf("%s: %v %v", q, out.Attributes, err)
		}
	}
	slow.waitHits(4)
	// The throttled endpoint gets one a second of the fake clock, its
	// confirmation having taken the first second: its three deliveries
	// wait for their turns.
	testwait.Never(t, "the throttled endpoint got a delivery at once", func() { f.waitingDeliveries(t, 3) },
		func() bool { return fast.count() != 1 })
	for n := 2; n <= 4; n++ {
		if w := f.advanceUntil(t, 10*time.Second, func() bool { return fast.count() >= n }); w != time.Second {
			t.Errorf("throttled delivery %d after %v, want 1 s", n-1, w)
		}
	}
}

func TestSNSMissingQueueIsClientError(t *testing.T) {
	t.Parallel()
	f := start(t)
	topic := f.createTopic(t, "t", nil)
	dlq := f.createQueue(t, "dlq", nil)
	gone := f.subscribe(t, topic, "sqs", arnPrefix+"never-created", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + arnPrefix + `dlq"}`})
	noDLQ := f.subscribe(t, topic, "sqs", arnPrefix+"also-missing", nil)
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("where to?")})
	m := f.receiveOne(t, dlq)
	if e := parseEnvelope(t, aws.ToString(m.Body)); e.str("Message") != "where to?" {
		t.Errorf("DLQ got %s", aws.ToString(m.Body))
	}
	svc := f.srv.SNS()
	c1, _ := svc.SubscriptionCounters(gone)
	c2, _ := svc.SubscriptionCounters(noDLQ)
	if c1.Failed != 1 || c1.RedrivenToDLQ != 1 || c2.Failed != 1 || c2.RedrivenToDLQ != 0 {
		t.Errorf("counters %+v %+v", c1, c2)
	}
}

func TestSNSRestartKeepsTopicsSubscriptionsAndRetries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := ctxT(t)
	f := start(t, onDisk(dir))
	topic := f.createTopic(t, "durable", map[string]string{"DisplayName": "D", "SignatureVersion": "2"})
	if _, err := f.sns.TagResource(ctx, &snssdk.TagResourceInput{ResourceArn: aws.String(topic), Tags: []snstypes.Tag{{Key: aws.String("team"), Value: aws.String("a")}}}); err != nil {
		t.Fatal(err)
	}
	fifo := f.createTopic(t, "durable.fifo", map[string]string{"FifoTopic": "true", "ContentBasedDeduplication": "true"})
	qURL := f.createQueue(t, "kept", nil)
	qSub := f.subscribe(t, topic, "sqs", arnPrefix+"kept", map[string]string{"FilterPolicy": `{"pass":["yes"]}`, "RawMessageDelivery": "true"})
	e := newEndpoint(t, f, func(n int) int {
		if n == 1 {
			return 503
		}
		return 200
	})
	hSub := f.confirmHTTP(t, topic, e, nil)
	id := aws.ToString(f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("survive"),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{"pass": strAttr("yes")}}).MessageId)
	e.waitHits(2)
	testwait.Eventually(t, "the condition", f.failedAtLeast(hSub, 1))
	f.receiveOne(t, qURL)
	stop(t, f)

	// Without the disk guard, whose checks run each second on the clock,
	// no timer of the new server is due before the retry (see below).
	f2 := start(t, storeWith(t, dir, func(o *embedded.Options) { o.DiskReserve = -1 }))
	if a := f2.topicAttrs(t, topic); a["DisplayName"] != "D" || a["SignatureVersion"] != "2" || a["SubscriptionsConfirmed"] != "2" {
		t.Errorf("topic after restart: %v", a)
	}
	if a := f2.topicAttrs(t, fifo); a["ContentBasedDeduplication"] != "true" || a["FifoTopic"] != "true" {
		t.Errorf("FIFO topic after restart: %v", a)
	}
	tags, err := f2.sns.ListTagsForResource(ctx, &snssdk.ListTagsForResourceInput{ResourceArn: aws.String(topic)})
	if err != nil || len(tags.Tags) != 1 || aws.ToString(tags.Tags[0].Value) != "a" {
		t.Errorf("tags after restart: %v %v", tags, err)
	}
	sa, err := f2.sns.GetSubscriptionAttributes(ctx, &snssdk.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(qSub)})
	if err != nil || sa.Attributes["FilterPolicy"] != `{"pass":["yes"]}` || sa.Attributes["RawMessageDelivery"] != "true" {
		t.Errorf("subscription after restart: %v %v", sa, err)
	}
	// The retry scheduled before the stop, 20 s ± 10 % after the failure
	// at epoch, comes on the new clock: no timer of the new server fires
	// before 18 s, the retry's included, and the retry has come once the
	// clock reaches 22 s. (The new service does not know the retry's wait,
	// which was set before the stop, so advanceUntil could overtake it.)
	// On PostgreSQL the node also saves its metric points every 10 s on
	// the clock, so only the embedded run can count timers; both check
	// that no retry has reached the endpoint yet.
	fired := f2.clk.Fired()
	f2.clk.Set(epoch.Add(18*time.Second - time.Nanosecond))
	if n := f2.clk.Fired() - fired; n != 0 && !onPostgres(t) {
		t.Errorf("%d timers fired less than 18 s after the failure: the retry may have come early", n)
	}
	if n := e.count(); n != 2 {
		t.Errorf("the endpoint was called %d times less than 18 s after the failure, want 2", n)
	}
	f2.clk.Set(epoch.Add(22 * time.Second))
	e.waitHits(3)
	n := parseEnvelope(t, e.get(2).body)
	if n.str("MessageId") != id || n.str("Message") != "survive" || n.str("SignatureVersion") != "2" ||
		!strings.HasPrefix(n.str("SigningCertURL"), f2.srv.URL()) {
		t.Errorf("retried notification: %v", n)
	}
	verifySignature(t, n)
	// The signing key survived too: the certificate's name did not change.
	first := parseEnvelope(t, e.get(1).body)
	if path(first.str("SigningCertURL")) != path(n.str("SigningCertURL")) {
		t.Errorf("certificate changed: %s then %s", first.str("SigningCertURL"), n.str("SigningCertURL"))
	}
	// The filter still applies.
	f2.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("filtered"),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{"pass": strAttr("no")}})
	f2.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("passes"),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{"pass": strAttr("yes")}})
	if m := f2.receiveOne(t, qURL); aws.ToString(m.Body) != "passes" {
		t.Errorf("after restart the queue got %q", aws.ToString(m.Body))
	}
}

// path is a URL's path.
func path(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	if i := strings.IndexByte(u, '/'); i >= 0 {
		return u[i:]
	}
	return ""
}

// mail is one email the SMTP sink accepted.
type mail struct {
	from, to string
	data     string
}

// smtpSink is a minimal SMTP server on 127.0.0.1:0; recipients starting
// with "bad" are refused with a permanent error.
type smtpSink struct {
	ln    net.Listener
	mu    sync.Mutex
	mails []mail
	// busy is how many more connections are turned away with a 421.
	busy  atomic.Int32
	conns atomic.Int32
}

func newSMTPSink(t testing.TB) *smtpSink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &smtpSink{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return s
}

func (s *smtpSink) serve(c net.Conn) {
	defer c.Close()
	s.conns.Add(1)
	r := bufio.NewReader(c)
	say := func(line string) { fmt.Fprintf(c, "%s\r\n", line) }
	if s.busy.Add(-1) >= 0 {
		say("421 busy, try later")
		return
	}
	say("220 sink ready")
	var m mail
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		verb := strings.ToUpper(strings.SplitN(line, " ", 2)[0])
		switch {
		case verb == "EHLO" || verb == "HELO":
			say("250 sink")
		case strings.HasPrefix(strings.ToUpper(line), "MAIL FROM:"):
			m = mail{from: strings.Trim(line[len("MAIL FROM:"):], "<> ")}
			say("250 ok")
		case strings.HasPrefix(strings.ToUpper(line), "RCPT TO:"):
			m.to = strings.Trim(line[len("RCPT TO:"):], "<> ")
			if strings.HasPrefix(m.to, "bad") {
				say("550 no such user")
				continue
			}
			say("250 ok")
		case verb == "DATA":
			say("354 go on")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				b.WriteString(strings.TrimPrefix(l, "."))
			}
			m.data = b.String()
			s.mu.Lock()
			s.mails = append(s.mails, m)
			s.mu.Unlock()
			say("250 queued")
		case verb == "QUIT":
			say("221 bye")
			return
		default:
			say("250 ok")
		}
	}
}

func (s *smtpSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mails)
}

func (s *smtpSink) get(i int) mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mails[i]
}

func withSMTP(addr string) option {
	return func(c *server.Config) { c.SMTPAddr, c.SMTPFrom = addr, "sns@ferry.test" }
}

// urlIn finds the first URL in text that starts with prefix.
func urlIn(text, prefix string) string {
	i := strings.Index(text, prefix)
	if i < 0 {
		return ""
	}
	u := text[i:]
	if j := strings.IndexAny(u, " \r\n\""); j >= 0 {
		u = u[:j]
	}
	return u
}

func TestSNSEmail(t *testing.T) {
	t.Parallel()
	sink := newSMTPSink(t)
	f := start(t, withSMTP(sink.ln.Addr().String()))
	ctx := ctxT(t)
	topic := f.createTopic(t, "mail", map[string]string{"DisplayName": "Ferry Alerts"})
	dlq := f.createQueue(t, "mail-dlq", nil)
	out, err := f.sns.Subscribe(ctx, &snssdk.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("email"), Endpoint: aws.String("ops@example.com")})
	if err != nil || aws.ToString(out.SubscriptionArn) != "pending confirmation" {
		t.Fatalf("Subscribe email: %v %v", out, err)
	}
	testwait.Eventually(t, "the condition", func() bool { return sink.count() >= 1 })
	conf := sink.get(0)
	if conf.from != "sns@ferry.test" || conf.to != "ops@example.com" || !strings.Contains(conf.data, "Subject: AWS Notification - Subscription Confirmation") ||
		!strings.Contains(conf.data, "From: Ferry Alerts <sns@ferry.test>") {
		t.Errorf("confirmation mail: %+v", conf)
	}
	confirmURL := urlIn(conf.data, f.srv.URL()+"/?Action=ConfirmSubscription")
	if r := do(t, mustRequest(t, "GET", confirmURL)); r.Status != 200 {
		t.Fatalf("confirm by %q: %d %s", confirmURL, r.Status, r.Body)
	}
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("disk is full"), Subject: aws.String("Alarm")})
	testwait.Eventually(t, "the condition", func() bool { return sink.count() >= 2 })
	m := sink.get(1)
	if !strings.Contains(m.data, "Subject: Alarm\r\n") || !strings.Contains(m.data, "\r\n\r\ndisk is full\r\n") ||
		urlIn(m.data, f.srv.URL()+"/?Action=Unsubscribe") == "" {
		t.Errorf("notification mail: %q", m.data)
	}

	// email-json gets the envelope; a refused address is a permanent
	// failure that goes to the DLQ at once.
	jsub := f.subscribe(t, topic, "email-json", "json@example.com", nil)
	if _, err := f.sns.ConfirmSubscription(ctx, &snssdk.ConfirmSubscriptionInput{TopicArn: aws.String(topic), Token: aws.String(f.pendingToken(t, jsub))}); err != nil {
		t.Fatal(err)
	}
	bad := f.subscribe(t, topic, "email", "bad@example.com", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + arnPrefix + `mail-dlq"}`})
	if _, err := f.sns.ConfirmSubscription(ctx, &snssdk.ConfirmSubscriptionInput{TopicArn: aws.String(topic), Token: aws.String(f.pendingToken(t, bad))}); err != nil {
		t.Fatal(err)
	}
	base := sink.count()
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("second")})
	// The confirmation sent at Subscribe may still arrive meanwhile: the
	// notification is the mail to json@ whose envelope says so.
	var env string
	testwait.Eventually(t, "the condition", func() bool {
		for i := base; i < sink.count(); i++ {
			if mm := sink.get(i); mm.to == "json@example.com" && strings.Contains(mm.data, `"Type" : "Notification"`) {
				_, env, _ = strings.Cut(mm.data, "\r\n\r\n")
				return true
			}
		}
		return false
	})
	e := parseEnvelope(t, strings.ReplaceAll(env, "\r\n", "\n"))
	if e.str("Message") != "second" {
		t.Errorf("email-json body: %q", env)
	}
	verifySignature(t, e)
	if dm := f.receiveOne(t, dlq); aws.ToString(dm.Body) != "second" {
		t.Errorf("DLQ got %q", aws.ToString(dm.Body))
	}
	testwait.Eventually(t, "the condition", func() bool {
		c, _ := f.srv.SNS().SubscriptionCounters(bad)
		return c.Failed == 1 && c.RedrivenToDLQ == 1
	})
}

// TestSNSEmailRetries: a mail server that turns Ferry away is tried again
// on the customer-managed policy (10 s, then 10 s, then backing off).
func TestSNSEmailRetries(t *testing.T) {
	t.Parallel()
	sink := newSMTPSink(t)
	f := start(t, withSMTP(sink.ln.Addr().String()))
	topic := f.createTopic(t, "mail", nil)
	sub := f.subscribe(t, topic, "email", "ops@example.com", nil)
	testwait.Eventually(t, "the condition", func() bool { return sink.count() == 1 })
	if _, err := f.sns.ConfirmSubscription(ctxT(t), &snssdk.ConfirmSubscriptionInput{TopicArn: aws.String(topic), Token: aws.String(f.pendingToken(t, sub))}); err != nil {
		t.Fatal(err)
	}
	sink.busy.Store(2)
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("eventually")})
	testwait.Eventually(t, "the condition", func() bool { return sink.conns.Load() == 2 })
	for n := int32(3); n <= 4; n++ {
		f.waitingDeliveries(t, 1) // the attempt turned away has ended
		if w := f.advanceUntil(t, time.Minute, func() bool { return sink.conns.Load() >= n }); w < 9*time.Second || w > 11*time.Second {
			t.Errorf("attempt %d after %v, want 10 s ± 10%%", n-1, w)
		}
	}
	testwait.Eventually(t, "the condition", func() bool { return sink.count() == 2 })
	testwait.Eventually(t, "the condition", func() bool { c, _ := f.srv.SNS().SubscriptionCounters(sub); return c.Delivered == 1 })
	if c, _ := f.srv.SNS().SubscriptionCounters(sub); c.Failed != 0 {
		t.Errorf("counters: %+v", c)
	}
}

func TestSNSEmailWithoutSMTPIsRecorded(t *testing.T) {
	t.Parallel()
	f := start(t)
	topic := f.createTopic(t, "mail", nil)
	sub := f.subscribe(t, topic, "email", "ops@example.com", nil)
	testwait.Eventually(t, "the condition", func() bool { return len(f.srv.SNS().Deliveries("email")) == 1 })
	d := f.srv.SNS().Deliveries("email")[0]
	if d.Type != "SubscriptionConfirmation" || !strings.Contains(d.Body, f.pendingToken(t, sub)) {
		t.Errorf("recorded confirmation: %+v", d)
	}
}

func TestSNSTagsAndPermissions(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	topic := f.createTopic(t, "tagged", nil)
	tag := func(k, v string) snstypes.Tag { return snstypes.Tag{Key: aws.String(k), Value: aws.String(v)} }
	if _, err := f.sns.TagResource(ctx, &snssdk.TagResourceInput{ResourceArn: aws.String(topic), Tags: []snstypes.Tag{tag("b", "2"), tag("a", "")}}); err != nil {
		t.Fatal(err)
	}
	list := func() string {
		out, err := f.sns.ListTagsForResource(ctx, &snssdk.ListTagsForResourceInput{ResourceArn: aws.String(topic)})
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, tg := range out.Tags {
			s = append(s, aws.ToString(tg.Key)+"="+aws.ToString(tg.Value))
		}
		return strings.Join(s, ",")
	}
	if got := list(); got != "a=,b=2" {
		t.Errorf("tags = %s", got)
	}
	_, err := f.sns.TagResource(ctx, &snssdk.TagResourceInput{ResourceArn: aws.String(topic), Tags: []snstypes.Tag{tag("c", "1"), tag("c", "2")}})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Duplicated keys are not allowed.")
	_, err = f.sns.TagResource(ctx, &snssdk.TagResourceInput{ResourceArn: aws.String(topicPrefix + "nope"), Tags: []snstypes.Tag{tag("c", "1")}})
	wantSNSError(t, err, "ResourceNotFound", 404, "Resource does not exist")
	var many []snstypes.Tag
	for i := range 49 {
		many = append(many, tag(fmt.Sprint("k", i), "v"))
	}
	_, err = f.sns.TagResource(ctx, &snssdk.TagResourceInput{ResourceArn: aws.String(topic), Tags: many})
	wantSNSError(t, err, "TagLimitExceeded", 400, "Could not complete request: tag quota of per resource exceeded")
	if _, err := f.sns.UntagResource(ctx, &snssdk.UntagResourceInput{ResourceArn: aws.String(topic), TagKeys: []string{"a", "zz"}}); err != nil {
		t.Fatal(err)
	}
	if got := list(); got != "b=2" {
		t.Errorf("after untag: %s", got)
	}
	// CreateTopic with other tags is refused; with the same, idempotent.
	_, err = f.sns.CreateTopic(ctx, &snssdk.CreateTopicInput{Name: aws.String("tagged"), Tags: []snstypes.Tag{tag("b", "3")}})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Tags Reason: Topic already exists with different tags")
	if _, err := f.sns.CreateTopic(ctx, &snssdk.CreateTopicInput{Name: aws.String("tagged"), Tags: []snstypes.Tag{tag("b", "2")}}); err != nil {
		t.Errorf("same tags: %v", err)
	}

	if _, err := f.sns.AddPermission(ctx, &snssdk.AddPermissionInput{TopicArn: aws.String(topic), Label: aws.String("pub"),
		AWSAccountId: []string{"111122223333"}, ActionName: []string{"Publish"}}); err != nil {
		t.Fatal(err)
	}
	policy := f.topicAttrs(t, topic)["Policy"]
	want := strings.TrimSuffix(defaultPolicy(topic), "]}") + `,{"Sid":"pub","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111122223333:root"},"Action":"SNS:Publish","Resource":"` + topic + `"}]}`
	if policy != want {
		t.Errorf("policy after AddPermission:\n got %s\nwant %s", policy, want)
	}
	_, err = f.sns.AddPermission(ctx, &snssdk.AddPermissionInput{TopicArn: aws.String(topic), Label: aws.String("pub"), AWSAccountId: []string{"1"}, ActionName: []string{"Publish"}})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Statement already exists")
	_, err = f.sns.AddPermission(ctx, &snssdk.AddPermissionInput{TopicArn: aws.String(topic), Label: aws.String("x"), AWSAccountId: []string{"1"}, ActionName: []string{"SendMessage"}})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Policy statement action out of service scope!")
	if _, err := f.sns.RemovePermission(ctx, &snssdk.RemovePermissionInput{TopicArn: aws.String(topic), Label: aws.String("pub")}); err != nil {
		t.Fatal(err)
	}
	if got := f.topicAttrs(t, topic)["Policy"]; got != defaultPolicy(topic) {
		t.Errorf("policy after RemovePermission: %s", got)
	}

	if _, err := f.sns.PutDataProtectionPolicy(ctx, &snssdk.PutDataProtectionPolicyInput{ResourceArn: aws.String(topic), DataProtectionPolicy: aws.String(`{"Name":"p"}`)}); err != nil {
		t.Fatal(err)
	}
	dp, err := f.sns.GetDataProtectionPolicy(ctx, &snssdk.GetDataProtectionPolicyInput{ResourceArn: aws.String(topic)})
	if err != nil || aws.ToString(dp.DataProtectionPolicy) != `{"Name":"p"}` {
		t.Errorf("data protection policy: %v %v", dp, err)
	}
}

func TestSNSHTTPSWithCABundle(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Sns-Message-Type") == "SubscriptionConfirmation" {
			hits.Add(1)
		}
	}))
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted case fails handshakes
	ts.StartTLS()
	defer ts.Close()
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	f := start(t, func(c *server.Config) { c.CABundle = bundle })
	topic := f.createTopic(t, "secure", nil)
	f.subscribe(t, topic, "https", ts.URL+"/hook", nil)
	testwait.Eventually(t, "the condition", func() bool { return hits.Load() == 1 })

	// Without the bundle the certificate is not trusted: no delivery.
	g := start(t)
	topic = g.createTopic(t, "secure", nil)
	g.subscribe(t, topic, "https", ts.URL+"/hook", nil)
	testwait.Never(t, "the untrusted endpoint was delivered to", func() { g.waitingDeliveries(t, 1) }, // for a retry
		func() bool { return hits.Load() != 1 })
	// A bundle that is no PEM stops the start.
	bad := filepath.Join(t.TempDir(), "bad.pem")
	os.WriteFile(bad, []byte("nope"), 0o600)
	cfg := server.Config{Listen: "127.0.0.1:0", CABundle: bad}
	cfg.Store = openStore(t, cfg, nil)
	if _, err := server.Start(ctxT(t), cfg); err == nil {
		t.Error("a bad CA bundle was accepted")
	}
}

func TestSNSPlatformAndSMS(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	app, err := f.sns.CreatePlatformApplication(ctx, &snssdk.CreatePlatformApplicationInput{Name: aws.String("app"), Platform: aws.String("GCM"),
		Attributes: map[string]string{"PlatformCredential": "key"}})
	if err != nil {
		t.Fatal(err)
	}
	appARN := aws.ToString(app.PlatformApplicationArn)
	if appARN != topicPrefix+"app/GCM/app" {
		t.Errorf("PlatformApplicationArn = %s", appARN)
	}
	_, err = f.sns.CreatePlatformApplication(ctx, &snssdk.CreatePlatformApplicationInput{Name: aws.String("app"), Platform: aws.String("PIGEON"),
		Attributes: map[string]string{"PlatformCredential": "key"}})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Platform Reason: PIGEON is not supported")
	attrs, err := f.sns.GetPlatformApplicationAttributes(ctx, &snssdk.GetPlatformApplicationAttributesInput{PlatformApplicationArn: aws.String(appARN)})
	if err != nil || attrs.Attributes["Enabled"] != "true" || attrs.Attributes["PlatformCredential"] != "" {
		t.Errorf("application attributes: %v %v", attrs, err)
	}
	ep, err := f.sns.CreatePlatformEndpoint(ctx, &snssdk.CreatePlatformEndpointInput{PlatformApplicationArn: aws.String(appARN), Token: aws.String("device-1")})
	if err != nil {
		t.Fatal(err)
	}
	epARN := aws.ToString(ep.EndpointArn)
	again, _ := f.sns.CreatePlatformEndpoint(ctx, &snssdk.CreatePlatformEndpointInput{PlatformApplicationArn: aws.String(appARN), Token: aws.String("device-1")})
	if aws.ToString(again.EndpointArn) != epARN {
		t.Errorf("same token gave %s", aws.ToString(again.EndpointArn))
	}
	eps, err := f.sns.ListEndpointsByPlatformApplication(ctx, &snssdk.ListEndpointsByPlatformApplicationInput{PlatformApplicationArn: aws.String(appARN)})
	if err != nil || len(eps.Endpoints) != 1 || eps.Endpoints[0].Attributes["Token"] != "device-1" {
		t.Errorf("endpoints: %v %v", eps, err)
	}
	f.publish(t, &snssdk.PublishInput{TargetArn: aws.String(epARN), MessageStructure: aws.String("json"), Message: aws.String(`{"default":"d","GCM":"{\"data\":1}"}`)})
	if ds := f.srv.SNS().Deliveries("application"); len(ds) != 1 || ds[0].Message != `{"data":1}` || ds[0].Endpoint != epARN {
		t.Errorf("push deliveries: %+v", ds)
	}
	if _, err := f.sns.SetEndpointAttributes(ctx, &snssdk.SetEndpointAttributesInput{EndpointArn: aws.String(epARN), Attributes: map[string]string{"Enabled": "false"}}); err != nil {
		t.Fatal(err)
	}
	_, err = f.sns.Publish(ctx, &snssdk.PublishInput{TargetArn: aws.String(epARN), Message: aws.String("m")})
	wantSNSError(t, err, "EndpointDisabled", 400, "Endpoint is disabled")
	// The endpoint is checked before the message: a body no JSON either.
	_, err = f.sns.Publish(ctx, &snssdk.PublishInput{TargetArn: aws.String(epARN), MessageStructure: aws.String("json"), Message: aws.String("msg")})
	wantSNSError(t, err, "EndpointDisabled", 400, "Endpoint is disabled")
	// Subscribing needs the endpoint: a deleted one is refused.
	pushTopic := f.createTopic(t, "push", nil)
	f.subscribe(t, pushTopic, "application", epARN, nil)
	if _, err := f.sns.DeleteEndpoint(ctx, &snssdk.DeleteEndpointInput{EndpointArn: aws.String(epARN)}); err != nil {
		t.Fatal(err)
	}
	_, err = f.sns.Subscribe(ctx, &snssdk.SubscribeInput{TopicArn: aws.String(pushTopic), Protocol: aws.String("application"), Endpoint: aws.String(epARN)})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Endpoint Reason: Endpoint does not exist for endpoint arn"+epARN)
	_, err = f.sns.SetEndpointAttributes(ctx, &snssdk.SetEndpointAttributesInput{EndpointArn: aws.String(epARN), Attributes: map[string]string{"Color": "red"}})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Attributes Reason: Invalid attribute name: Color")
	if _, err := f.sns.DeletePlatformApplication(ctx, &snssdk.DeletePlatformApplicationInput{PlatformApplicationArn: aws.String(appARN)}); err != nil {
		t.Fatal(err)
	}
	_, err = f.sns.GetEndpointAttributes(ctx, &snssdk.GetEndpointAttributesInput{EndpointArn: aws.String(epARN)})
	wantSNSError(t, err, "NotFound", 404, "Endpoint does not exist")
	_, err = f.sns.GetPlatformApplicationAttributes(ctx, &snssdk.GetPlatformApplicationAttributesInput{PlatformApplicationArn: aws.String(appARN)})
	wantSNSError(t, err, "NotFound", 404, "PlatformApplication does not exist")

	// SMS: attributes, opt-outs, the sandbox, texts recorded.
	if _, err := f.sns.SetSMSAttributes(ctx, &snssdk.SetSMSAttributesInput{Attributes: map[string]string{"DefaultSMSType": "Transactional"}}); err != nil {
		t.Fatal(err)
	}
	sa, err := f.sns.GetSMSAttributes(ctx, &snssdk.GetSMSAttributesInput{})
	if err != nil || sa.Attributes["DefaultSMSType"] != "Transactional" || sa.Attributes["MonthlySpendLimit"] != "1" {
		t.Errorf("SMS attributes: %v %v", sa, err)
	}
	_, err = f.sns.SetSMSAttributes(ctx, &snssdk.SetSMSAttributesInput{Attributes: map[string]string{"Volume": "11"}})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Volume is not a valid attribute")
	_, err = f.sns.Subscribe(ctx, &snssdk.SubscribeInput{TopicArn: aws.String(pushTopic), Protocol: aws.String("sms"), Endpoint: aws.String("+15--551234567")})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid SMS endpoint: +15--551234567")
	f.publish(t, &snssdk.PublishInput{PhoneNumber: aws.String("+15555550100"), Message: aws.String("your code is 1234")})
	if ds := f.srv.SNS().Deliveries("sms"); len(ds) != 1 || ds[0].Endpoint != "+15555550100" {
		t.Errorf("sms deliveries: %+v", ds)
	}
	r := do(t, mustRequest(t, "POST", f.srv.URL()+"/_ferry/sns/sms-opt-outs?phoneNumber=%2B15555550100"))
	if r.Status != 204 {
		t.Fatalf("opt out: %d %s", r.Status, r.Body)
	}
	opted, err := f.sns.CheckIfPhoneNumberIsOptedOut(ctx, &snssdk.CheckIfPhoneNumberIsOptedOutInput{PhoneNumber: aws.String("+15555550100")})
	if err != nil || !opted.IsOptedOut {
		t.Errorf("opted out: %v %v", opted, err)
	}
	_, err = f.sns.Publish(ctx, &snssdk.PublishInput{PhoneNumber: aws.String("+15555550100"), Message: aws.String("again")})
	wantSNSError(t, err, "OptedOut", 400, "Phone number is opted out")
	list, err := f.sns.ListPhoneNumbersOptedOut(ctx, &snssdk.ListPhoneNumbersOptedOutInput{})
	if err != nil || len(list.PhoneNumbers) != 1 {
		t.Errorf("opted-out list: %v %v", list, err)
	}
	if _, err := f.sns.OptInPhoneNumber(ctx, &snssdk.OptInPhoneNumberInput{PhoneNumber: aws.String("+15555550100")}); err != nil {
		t.Fatal(err)
	}
	_, err = f.sns.Publish(ctx, &snssdk.PublishInput{PhoneNumber: aws.String("call-me"), Message: aws.String("x")})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: PhoneNumber Reason: call-me is not valid to publish to")
	status, err := f.sns.GetSMSSandboxAccountStatus(ctx, &snssdk.GetSMSSandboxAccountStatusInput{})
	if err != nil || status.IsInSandbox {
		t.Errorf("sandbox status: %v %v", status, err)
	}
	if _, err := f.sns.CreateSMSSandboxPhoneNumber(ctx, &snssdk.CreateSMSSandboxPhoneNumberInput{PhoneNumber: aws.String("+15555550101")}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.sns.VerifySMSSandboxPhoneNumber(ctx, &snssdk.VerifySMSSandboxPhoneNumberInput{PhoneNumber: aws.String("+15555550101"), OneTimePassword: aws.String("123456")}); err != nil {
		t.Fatal(err)
	}
	nums, err := f.sns.ListSMSSandboxPhoneNumbers(ctx, &snssdk.ListSMSSandboxPhoneNumbersInput{})
	if err != nil || len(nums.PhoneNumbers) != 1 || nums.PhoneNumbers[0].Status != "Verified" {
		t.Errorf("sandbox numbers: %v %v", nums, err)
	}
	_, err = f.sns.DeleteSMSSandboxPhoneNumber(ctx, &snssdk.DeleteSMSSandboxPhoneNumberInput{PhoneNumber: aws.String("+15555550199")})
	wantSNSError(t, err, "ResourceNotFound", 404, "The phone number +15555550199 is not in the SMS sandbox.")
	orig, err := f.sns.ListOriginationNumbers(ctx, &snssdk.ListOriginationNumbersInput{})
	if err != nil || len(orig.PhoneNumbers) != 0 {
		t.Errorf("origination numbers: %v %v", orig, err)
	}
}

// TestSNSBadInputNeverFails500 sends every SNS action empty and with
// garbage parameters: each answers, and none with a server error.
func TestSNSBadInputNeverFails500(t *testing.T) {
	t.Parallel()
	f := start(t)
	topic := f.createTopic(t, "fuzz", nil)
	garbage := []string{
		"",
		"TopicArn=" + topic + "&Name=%00&Protocol=sqs&Endpoint=arn:aws:sqs:us-east-1:000000000000:&Message=%FF%FE&Subject=%0A",
		"TopicArn=:::::::&SubscriptionArn=arn:aws:sns:us-east-1:000000000000:fuzz:&Token=2f2f&ResourceArn=x&TargetArn=arn::::::endpoint/",
		"TopicArn=" + topic + "&Attributes.entry.1.key=&Attributes.entry.1.value=&Tags.member.1.Key=&AttributeName=DeliveryPolicy&AttributeValue=%7B%22http%22%3A%5B%5D%7D",
		"TopicArn=" + topic + "&Message=m&MessageAttributes.entry.1.Name=a&MessageAttributes.entry.1.Value.DataType=Binary&MessageAttributes.entry.1.Value.BinaryValue=%25%25",
		"TopicArn=" + topic + "&PublishBatchRequestEntries.member.1.Id=&PublishBatchRequestEntries.member.99.Message=x&MessageStructure=json&Message=%5B%5D",
		"TopicArn=" + topic + "&Protocol=http&Endpoint=http%3A%2F%2F%5B%3A%3A1&Attributes.entry.1.key=FilterPolicy&Attributes.entry.1.value=%7B%22a%22%3A%5B%7B%22numeric%22%3A%5B%22%3E%22%2C1e999%5D%7D%5D%7D",
		"PlatformApplicationArn=arn:aws:sns:us-east-1:000000000000:app/&Attributes.entry.1.key=Enabled&Attributes.entry.1.value=maybe&Name=a&Platform=GCM&attributes.entry.1.key=x&phoneNumber=%2B&NextToken=%25&nextToken=zz",
		"NextToken=bm9wZQ&ReturnSubscriptionArn=perhaps&AWSAccountId.member.1=&ActionName.member.1=&Label=",
	}
	actions := f.srv.SNS().Protocol().Actions
	if len(actions) < 40 {
		t.Fatalf("only %d SNS actions", len(actions))
	}
	for name := range actions {
		for _, params := range garbage {
			r := f.postQuery(t, "Action="+name+"&Version=2010-03-31&"+params)
			if r.Status >= 500 || !strings.Contains(r.Body, "Response") {
				t.Errorf("%s with %q: %d %s", name, params, r.Status, r.Body)
			}
		}
	}
}

// TestSNSAuthenticatedUnsubscribe: a subscription confirmed with
// AuthenticateOnUnsubscribe cannot be ended by an unsigned GET of its
// UnsubscribeURL, only by a signed Unsubscribe.
func TestSNSAuthenticatedUnsubscribe(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	topic := f.createTopic(t, "guarded", nil)
	sub := f.subscribe(t, topic, "email-json", "ops@example.com", nil)
	out, err := f.sns.ConfirmSubscription(ctx, &snssdk.ConfirmSubscriptionInput{TopicArn: aws.String(topic),
		Token: aws.String(f.pendingToken(t, sub)), AuthenticateOnUnsubscribe: aws.String("true")})
	if err != nil || aws.ToString(out.SubscriptionArn) != sub {
		t.Fatalf("confirm: %v %v", out, err)
	}
	attrs, _ := f.sns.GetSubscriptionAttributes(ctx, &snssdk.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(sub)})
	if attrs.Attributes["ConfirmationWasAuthenticated"] != "true" || attrs.Attributes["PendingConfirmation"] != "false" {
		t.Errorf("attributes: %v", attrs.Attributes)
	}
	r := do(t, mustRequest(t, "GET", f.srv.URL()+"/?Action=Unsubscribe&SubscriptionArn="+sub))
	if r.Status != 403 || !strings.Contains(r.Body, "<Code>AuthorizationError</Code>") {
		t.Errorf("unsigned unsubscribe: %d %s", r.Status, r.Body)
	}
	if _, err := f.sns.Unsubscribe(ctx, &snssdk.UnsubscribeInput{SubscriptionArn: aws.String(sub)}); err != nil {
		t.Errorf("signed unsubscribe: %v", err)
	}
}
