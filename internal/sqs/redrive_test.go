package sqs

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/testwait"
)

// testARN is the ARN of a queue of the harness's account and region.
func testARN(name string) string { return queueARN(testRegion, testAccount, name) }

func policy(target string, max any) string {
	return fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%v}`, target, max)
}

func TestParseRedrivePolicy(t *testing.T) {
	t.Parallel()
	const notMap = "Invalid value for the parameter RedrivePolicy. Reason: Redrive policy is not a valid JSON map."
	invalid := func(raw, reason string) string {
		return "Value " + raw + " for parameter RedrivePolicy is invalid. Reason: " + reason
	}
	dlq := "arn:aws:sqs:us-east-1:000000000000:dlq"
	tests := []struct {
		name, raw string
		want      string // normalised policy when valid
		message   string
	}{
		{name: "number max", raw: policy(dlq, 5), want: `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":5}`},
		{name: "string max, other order, spaces", raw: `{ "maxReceiveCount" : "1000", "deadLetterTargetArn" : "` + dlq + `" }`,
			want: `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":1000}`},
		{name: "max 1", raw: policy(dlq, 1), want: `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":1}`},
		{name: "blank", raw: " ", message: notMap},
		{name: "number", raw: "4", message: notMap},
		{name: "array", raw: "[]", message: notMap},
		{name: "null", raw: "null", message: notMap},
		{name: "string", raw: `"{}"`, message: notMap},
		{name: "truncated", raw: `{"deadLetterTargetArn":`, message: notMap},
		{name: "empty object", raw: "{}", message: invalid("{}", "Redrive policy does not contain mandatory attribute: maxReceiveCount.")},
		{name: "no target", raw: `{"maxReceiveCount":"1000"}`,
			message: invalid(`{"maxReceiveCount":"1000"}`, "Redrive policy does not contain mandatory attribute: deadLetterTargetArn.")},
		{name: "no count", raw: `{"deadLetterTargetArn":"` + dlq + `"}`,
			message: invalid(`{"deadLetterTargetArn":"`+dlq+`"}`, "Redrive policy does not contain mandatory attribute: maxReceiveCount.")},
		{name: "extra key", raw: `{"deadLetterTargetArn":"` + dlq + `","maxReceiveCount":5,"dummyField":"x"}`,
			message: invalid(`{"deadLetterTargetArn":"`+dlq+`","maxReceiveCount":5,"dummyField":"x"}`, "Only following attributes are supported: [maxReceiveCount, deadLetterTargetArn].")},
		{name: "count 0", raw: policy(dlq, 0), message: invalid(policy(dlq, 0), "Invalid value for maxReceiveCount: 0, valid values are from 1 to 1000 both inclusive.")},
		{name: "count 1001", raw: policy(dlq, 1001), message: invalid(policy(dlq, 1001), "Invalid value for maxReceiveCount: 1001, valid values are from 1 to 1000 both inclusive.")},
		{name: "count 4023 as string", raw: policy(dlq, `"4023"`), message: invalid(policy(dlq, `"4023"`), "Invalid value for maxReceiveCount: 4023, valid values are from 1 to 1000 both inclusive.")},
		{name: "count not a number", raw: policy(dlq, `"many"`), message: invalid(policy(dlq, `"many"`), "Invalid value for maxReceiveCount: many, valid values are from 1 to 1000 both inclusive.")},
		{name: "count fractional", raw: policy(dlq, 1.5), message: invalid(policy(dlq, 1.5), "Invalid value for maxReceiveCount: 1.5, valid values are from 1 to 1000 both inclusive.")},
		{name: "count null", raw: policy(dlq, "null"), message: invalid(policy(dlq, "null"), "Invalid value for maxReceiveCount: null, valid values are from 1 to 1000 both inclusive.")},
		{name: "count huge", raw: policy(dlq, "99999999999999999999"), message: invalid(policy(dlq, "99999999999999999999"), "Invalid value for maxReceiveCount: 99999999999999999999, valid values are from 1 to 1000 both inclusive.")},
		{name: "target not a string", raw: `{"deadLetterTargetArn":5,"maxReceiveCount":5}`, message: invalid(`{"deadLetterTargetArn":5,"maxReceiveCount":5}`, "Invalid value for deadLetterTargetArn.")},
		{name: "target not an ARN", raw: policy("dlq", 5), message: invalid(policy("dlq", 5), "Invalid value for deadLetterTargetArn.")},
		{name: "target ARN too short", raw: policy("arn:aws:sqs:us-east-1:000000000000", 5), message: invalid(policy("arn:aws:sqs:us-east-1:000000000000", 5), "Invalid value for deadLetterTargetArn.")},
		{name: "target empty", raw: policy("", 5), message: invalid(policy("", 5), "Invalid value for deadLetterTargetArn.")},
		{name: "target a topic", raw: policy("arn:aws:sns:us-east-1:123456789012:MyTopic", 5),
			message: invalid(policy("arn:aws:sns:us-east-1:123456789012:MyTopic", 5), "Only SQS queues are valid resources for deadLetterTargetArn.")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parseRedrivePolicy(tt.raw)
			if tt.message != "" {
				if err == nil {
					t.Fatalf("accepted as %s", p)
				}
				if err.Code != "InvalidParameterValue" || err.Status != http.StatusBadRequest || err.Message != tt.message {
					t.Errorf("got %s %d %q\nwant InvalidParameterValue 400 %q", err.Code, err.Status, err.Message, tt.message)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %s", err.Message)
			}
			if p.String() != tt.want {
				t.Errorf("normalised = %s, want %s", p, tt.want)
			}
		})
	}
}

func TestParseRedriveAllowPolicy(t *testing.T) {
	t.Parallel()
	const unsupported = "Invalid value for the parameter RedriveAllowPolicy. Reason: Amazon SQS can't create the redrive allow policy, as it’s in an unsupported format."
	invalid := func(raw, reason string) string {
		return "Value " + raw + " for parameter RedriveAllowPolicy is invalid. Reason: Amazon SQS can't create the redrive allow policy. " + reason
	}
	var eleven []string
	for i := range 11 {
		eleven = append(eleven, fmt.Sprintf("%q", testARN(fmt.Sprint("q", i))))
	}
	tooMany := `{"redrivePermission":"byQueue","sourceQueueArns":[` + strings.Join(eleven, ",") + `]}`
	ten := `{"redrivePermission":"byQueue","sourceQueueArns":[` + strings.Join(eleven[:10], ",") + `]}`
	tests := []struct {
		name, raw string
		want      string
		message   string
	}{
		{name: "allowAll", raw: `{"redrivePermission":"allowAll"}`, want: `{"redrivePermission":"allowAll"}`},
		{name: "denyAll", raw: ` { "redrivePermission" : "denyAll" } `, want: `{"redrivePermission":"denyAll"}`},
		{name: "byQueue", raw: `{"sourceQueueArns":["a","b"],"redrivePermission":"byQueue"}`, want: `{"redrivePermission":"byQueue","sourceQueueArns":["a","b"]}`},
		{name: "byQueue with ten", raw: ten, want: ten},
		{name: "null sources with allowAll", raw: `{"redrivePermission":"allowAll","sourceQueueArns":null}`, want: `{"redrivePermission":"allowAll"}`},
		{name: "blank", raw: " ", message: unsupported},
		{name: "number", raw: "4", message: unsupported},
		{name: "array", raw: "[]", message: unsupported},
		{name: "null", raw: "null", message: unsupported},
		{name: "no permission", raw: `{"sourceQueueArns":["a"]}`, message: unsupported},
		{name: "unknown permission", raw: `{"redrivePermission":"sometimes"}`, message: unsupported},
		{name: "permission case", raw: `{"redrivePermission":"AllowAll"}`, message: unsupported},
		{name: "permission not a string", raw: `{"redrivePermission":true}`, message: unsupported},
		{name: "unknown key", raw: `{"redrivePermission":"allowAll","colour":"blue"}`, message: unsupported},
		{name: "sources not a list", raw: `{"redrivePermission":"byQueue","sourceQueueArns":"a"}`, message: unsupported},
		{name: "source not a string", raw: `{"redrivePermission":"byQueue","sourceQueueArns":["a",1]}`, message: unsupported},
		{name: "source null", raw: `{"redrivePermission":"byQueue","sourceQueueArns":[null]}`, message: unsupported},
		{name: "byQueue without sources", raw: `{"redrivePermission":"byQueue"}`,
			message: invalid(`{"redrivePermission":"byQueue"}`, "When you specify the byQueue permission type, you must also specify one or more sourceQueueArns values.")},
		{name: "byQueue with null sources", raw: `{"redrivePermission":"byQueue","sourceQueueArns":null}`,
			message: invalid(`{"redrivePermission":"byQueue","sourceQueueArns":null}`, "When you specify the byQueue permission type, you must also specify one or more sourceQueueArns values.")},
		{name: "byQueue with no sources", raw: `{"redrivePermission":"byQueue","sourceQueueArns":[]}`,
			message: invalid(`{"redrivePermission":"byQueue","sourceQueueArns":[]}`, "When you specify the byQueue permission type, you must also specify one or more sourceQueueArns values.")},
		{name: "eleven sources", raw: tooMany, message: invalid(tooMany, "The maximum number of source queue ARNs you can specify is 10.")},
		{name: "sources with allowAll", raw: `{"redrivePermission":"allowAll","sourceQueueArns":["a"]}`,
			message: invalid(`{"redrivePermission":"allowAll","sourceQueueArns":["a"]}`, "To specify one or more source queue ARNs, you must set redrivePermission to byQueue.")},
		{name: "empty sources with denyAll", raw: `{"redrivePermission":"denyAll","sourceQueueArns":[]}`,
			message: invalid(`{"redrivePermission":"denyAll","sourceQueueArns":[]}`, "To specify one or more source queue ARNs, you must set redrivePermission to byQueue.")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parseRedriveAllowPolicy(tt.raw)
			if tt.message != "" {
				if err == nil {
					t.Fatalf("accepted as %s", p)
				}
				if err.Code != "InvalidParameterValue" || err.Status != http.StatusBadRequest || err.Message != tt.message {
					t.Errorf("got %s %d %q\nwant InvalidParameterValue 400 %q", err.Code, err.Status, err.Message, tt.message)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %s", err.Message)
			}
			if p.String() != tt.want {
				t.Errorf("normalised = %s, want %s", p, tt.want)
			}
		})
	}
}

func TestRedriveAllowPolicyAllows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		policy string
		source string
		want   bool
	}{
		{`{"redrivePermission":"allowAll"}`, "arn:a", true},
		{`{"redrivePermission":"denyAll"}`, "arn:a", false},
		{`{"redrivePermission":"byQueue","sourceQueueArns":["arn:a","arn:b"]}`, "arn:b", true},
		{`{"redrivePermission":"byQueue","sourceQueueArns":["arn:a"]}`, "arn:c", false},
	}
	for _, tt := range tests {
		p, err := parseRedriveAllowPolicy(tt.policy)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.allows(tt.source); got != tt.want {
			t.Errorf("%s allows %s = %v", tt.policy, tt.source, got)
		}
	}
}

// TestRedriveTargetChecks sets policies whose target is wrong in each way
// AWS refuses, through both CreateQueue and SetQueueAttributes.
func TestRedriveTargetChecks(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.createQueue("dlq", nil)
	h.createQueue("closed", map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"denyAll"}`})
	h.createQueue("picky", map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"byQueue","sourceQueueArns":["` + testARN("friend") + `"]}`})
	// A FIFO queue by its attribute alone, which only the engine can make:
	// the type check must not rely on the name.
	if _, _, err := h.eng.CreateQueue(h.ctx, engine.Queue{Account: testAccount, Name: "oddball", ARN: testARN("oddball"),
		Attributes: map[string]string{"FifoQueue": "true"}}); err != nil {
		t.Fatal(err)
	}
	setURL := h.createQueue("src", nil)
	reason := func(raw, r string) string {
		return "Value " + raw + " for parameter RedrivePolicy is invalid. Reason: " + r
	}
	tests := []struct {
		name, target, reason string
	}{
		{"other region", "arn:aws:sqs:us-east-1:" + testAccount + ":dlq", "Dead-letter target must be in same region as the source."},
		{"other account", "arn:aws:sqs:" + testRegion + ":111111111111:dlq", "Dead-letter target owner should be same as the source."},
		{"FIFO target by name", testARN("dlq.fifo"), "Dead-letter queue must be same type of queue as the source.."},
		{"FIFO target by attribute", testARN("oddball"), "Dead-letter queue must be same type of queue as the source.."},
		{"missing target", testARN("nobody"), "Dead letter target does not exist."},
		{"invalid target name", testARN("no/body"), "Dead letter target does not exist."},
		{"other partition", "arn:aws-cn:sqs:" + testRegion + ":" + testAccount + ":dlq", "Dead letter target does not exist."},
		{"denyAll", testARN("closed"), "Dead-letter target does not allow this source queue."},
		{"byQueue without this source", testARN("picky"), "Dead-letter target does not allow this source queue."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := policy(tt.target, 3)
			err := fails(h, "CreateQueue", &CreateQueueInput{QueueName: "new", Attributes: map[string]string{"RedrivePolicy": raw}}, "InvalidParameterValue", reason(raw, tt.reason))
			if err.Status != http.StatusBadRequest {
				t.Errorf("status %d", err.Status)
			}
			fails(h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: setURL, Attributes: map[string]string{"RedrivePolicy": raw}}, "InvalidParameterValue", reason(raw, tt.reason))
		})
	}
	// A queue cannot be its own dead-letter queue.
	self := policy(testARN("src"), 3)
	fails(h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: setURL, Attributes: map[string]string{"RedrivePolicy": self}},
		"InvalidParameterValue", reason(self, "Dead-letter target must be another queue than the source."))
	// Syntax errors come before target errors, whatever the attribute.
	fails(h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: setURL, Attributes: map[string]string{"RedrivePolicy": policy(testARN("nobody"), 3), "DelaySeconds": "-1"}},
		"InvalidAttributeValue", "Invalid value for the parameter DelaySeconds.")
	// The missing queue wins over a bad policy.
	fails(h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: testBase + "/" + testAccount + "/nope", Attributes: map[string]string{"RedrivePolicy": "[]"}},
		"AWS.SimpleQueueService.NonExistentQueue", "")
	// Nothing refused was stored or created.
	if got := h.attributes(setURL, "RedrivePolicy"); got != nil {
		t.Errorf("src policy = %v", got)
	}
	fails(h, "GetQueueUrl", &GetQueueUrlInput{QueueName: "new"}, "AWS.SimpleQueueService.NonExistentQueue", "")

	// Allowed sources: by name in byQueue, and anyone for allowAll or no policy.
	h.createQueue("friend", map[string]string{"RedrivePolicy": policy(testARN("picky"), 3)})
	must[EmptyOutput](h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: setURL, Attributes: map[string]string{"RedrivePolicy": policy(testARN("dlq"), 3)}})
	h.createQueue("open", map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"allowAll"}`})
	h.createQueue("opener", map[string]string{"RedrivePolicy": policy(testARN("open"), 1)})
	// The allow policy binds new sources only: a source already pointing
	// at a queue that closes keeps its policy.
	must[EmptyOutput](h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: testBase + "/" + testAccount + "/dlq",
		Attributes: map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"denyAll"}`}})
	if got := h.attributes(setURL, "RedrivePolicy")["RedrivePolicy"]; got != policy(testARN("dlq"), 3) {
		t.Errorf("src policy = %s", got)
	}
}

func TestRedrivePolicyLifecycle(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dlqURL := h.createQueue("dlq", nil)
	spelled := `{"maxReceiveCount":"5", "deadLetterTargetArn":"` + testARN("dlq") + `"}`
	want := `{"deadLetterTargetArn":"` + testARN("dlq") + `","maxReceiveCount":5}`
	url := h.createQueue("src", map[string]string{"RedrivePolicy": spelled})
	if got := h.attributes(url, "All")["RedrivePolicy"]; got != want {
		t.Errorf("RedrivePolicy = %s, want %s", got, want)
	}
	q, err := h.eng.GetQueue(h.ctx, testAccount, "src")
	if err != nil {
		t.Fatal(err)
	}
	if q.ARN != testARN("src") {
		t.Errorf("ARN = %q", q.ARN)
	}
	if r := q.Settings.Redrive; r == nil || *r != (engine.Redrive{TargetAccount: testAccount, TargetName: "dlq", MaxReceiveCount: 5}) {
		t.Errorf("Settings.Redrive = %+v", r)
	}
	// CreateQueue compares the normalised policy.
	if again := h.createQueue("src", map[string]string{"RedrivePolicy": want}); again != url {
		t.Errorf("second create = %s", again)
	}
	fails(h, "CreateQueue", &CreateQueueInput{QueueName: "src", Attributes: map[string]string{"RedrivePolicy": policy(testARN("dlq"), 6)}},
		"QueueAlreadyExists", "A queue already exists with the same name and a different value for attribute RedrivePolicy")
	fails(h, "CreateQueue", &CreateQueueInput{QueueName: "src"},
		"QueueAlreadyExists", "A queue already exists with the same name and a different value for attribute RedrivePolicy")

	// An allow policy reads back normalised.
	must[EmptyOutput](h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: dlqURL,
		Attributes: map[string]string{"RedriveAllowPolicy": `{"sourceQueueArns":["` + testARN("src") + `"],"redrivePermission":"byQueue"}`}})
	if got := h.attributes(dlqURL, "RedriveAllowPolicy")["RedriveAllowPolicy"]; got != `{"redrivePermission":"byQueue","sourceQueueArns":["`+testARN("src")+`"]}` {
		t.Errorf("RedriveAllowPolicy = %s", got)
	}

	// Changing the count updates the engine's settings.
	must[EmptyOutput](h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: url, Attributes: map[string]string{"RedrivePolicy": policy(testARN("dlq"), 2)}})
	if q, _ = h.eng.GetQueue(h.ctx, testAccount, "src"); q.Settings.Redrive == nil || q.Settings.Redrive.MaxReceiveCount != 2 {
		t.Errorf("Settings.Redrive = %+v", q.Settings.Redrive)
	}

	// Deleting the dead-letter queue leaves the source's policy as it was.
	must[EmptyOutput](h, "DeleteQueue", &QueueInput{QueueUrl: dlqURL})
	if got := h.attributes(url, "RedrivePolicy")["RedrivePolicy"]; got != policy(testARN("dlq"), 2) {
		t.Errorf("after the target's deletion: %s", got)
	}
	// Unrelated changes still go through; a new policy must name a live target.
	must[EmptyOutput](h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: url, Attributes: map[string]string{"DelaySeconds": "1"}})
	fails(h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: url, Attributes: map[string]string{"RedrivePolicy": policy(testARN("dlq"), 3)}},
		"InvalidParameterValue", "Value "+policy(testARN("dlq"), 3)+" for parameter RedrivePolicy is invalid. Reason: Dead letter target does not exist.")

	// "" removes the policy and the engine's redrive.
	must[EmptyOutput](h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: url, Attributes: map[string]string{"RedrivePolicy": ""}})
	if got := h.attributes(url, "All"); got["RedrivePolicy"] != "" {
		t.Errorf("RedrivePolicy left: %s", got["RedrivePolicy"])
	}
	if q, _ = h.eng.GetQueue(h.ctx, testAccount, "src"); q.Settings.Redrive != nil {
		t.Errorf("Settings.Redrive left: %+v", q.Settings.Redrive)
	}
}

// TestRedriveOnReceive: a message received maxReceiveCount times moves to
// the dead-letter queue on the next receive, keeping its id and receive
// count and gaining DeadLetterQueueSourceArn; a move task without a
// destination sends it back as a new message.
func TestRedriveOnReceive(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dlq := h.createQueue("dlq", nil)
	src := h.createQueue("src", map[string]string{"RedrivePolicy": policy(testARN("dlq"), 1), "VisibilityTimeout": "5"})
	sent := h.send(src, "poison")
	first := h.receive(&ReceiveMessageInput{QueueUrl: src, AttributeNames: []string{"All"}})
	if len(first) != 1 || first[0].Attributes["ApproximateReceiveCount"] != "1" {
		t.Fatalf("first receive = %+v", first)
	}
	if _, ok := first[0].Attributes["DeadLetterQueueSourceArn"]; ok {
		t.Errorf("a message never moved shows DeadLetterQueueSourceArn: %v", first[0].Attributes)
	}
	h.clk.Advance(5 * time.Second)
	testwait.Eventually(t, "the message to be visible again", func() bool { return h.visible("src") == 1 })
	if got := h.receive(&ReceiveMessageInput{QueueUrl: src}); len(got) != 0 {
		t.Fatalf("source handed out %+v past maxReceiveCount", got)
	}
	testwait.Eventually(t, "the move", func() bool { return h.visible("dlq") == 1 })

	tests := []struct {
		name  string
		in    ReceiveMessageInput
		want  map[string]string
		count string // ApproximateReceiveCount when asked for
	}{
		{name: "by name", in: ReceiveMessageInput{MessageSystemAttributeNames: []string{"DeadLetterQueueSourceArn"}},
			want: map[string]string{"DeadLetterQueueSourceArn": testARN("src")}},
		{name: "All, deprecated list", in: ReceiveMessageInput{AttributeNames: []string{"All"}},
			want: map[string]string{"DeadLetterQueueSourceArn": testARN("src"), "ApproximateReceiveCount": "3"}},
		{name: "not asked", in: ReceiveMessageInput{MessageSystemAttributeNames: []string{"SenderId"}},
			want: map[string]string{"SenderId": testAccount}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.QueueUrl, in.VisibilityTimeout = dlq, ptr(0)
			got := h.receive(&in)
			if len(got) != 1 || got[0].MessageId != sent.MessageId || got[0].Body != "poison" {
				t.Fatalf("dead-letter receive = %+v", got)
			}
			for k, v := range tt.want {
				if got[0].Attributes[k] != v {
					t.Errorf("%s = %q, want %q (all: %v)", k, got[0].Attributes[k], v, got[0].Attributes)
				}
			}
			if _, ok := got[0].Attributes["DeadLetterQueueSourceArn"]; ok && tt.want["DeadLetterQueueSourceArn"] == "" {
				t.Errorf("unrequested DeadLetterQueueSourceArn: %v", got[0].Attributes)
			}
		})
	}
	// The first dead-letter receive counted 2: the count carried over.
	if got := h.receive(&ReceiveMessageInput{QueueUrl: dlq, VisibilityTimeout: ptr(0), AttributeNames: []string{"ApproximateReceiveCount"}}); got[0].Attributes["ApproximateReceiveCount"] != "5" {
		t.Errorf("count after five receives = %v", got[0].Attributes)
	}

	if out := must[ListDeadLetterSourceQueuesOutput](h, "ListDeadLetterSourceQueues", &ListDeadLetterSourceQueuesInput{QueueUrl: dlq}); !slices.Equal(out.QueueUrls, []string{src}) {
		t.Errorf("sources = %v", out.QueueUrls)
	}
	must[StartMessageMoveTaskOutput](h, "StartMessageMoveTask", &StartMessageMoveTaskInput{SourceArn: testARN("dlq")})
	done := h.waitStatus(testARN("dlq"), engine.MoveTaskCompleted)
	if done.ApproximateNumberOfMessagesMoved != 1 || done.DestinationArn != "" {
		t.Errorf("task = %+v", done)
	}
	back := h.receive(&ReceiveMessageInput{QueueUrl: src, AttributeNames: []string{"All"}})
	if len(back) != 1 || back[0].Body != "poison" || back[0].MessageId == sent.MessageId ||
		back[0].Attributes["ApproximateReceiveCount"] != "1" || back[0].Attributes["DeadLetterQueueSourceArn"] != "" {
		t.Errorf("redriven message = %+v", back)
	}
}
