package sqs

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/protocol"
	"github.com/ferrymq/ferry/internal/testwait"
)

func TestSendReceiveDelete(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("q", nil)
	sentAt := h.clk.Now()
	out := must[SendMessageOutput](h, "SendMessage", &SendMessageInput{
		QueueUrl:    url,
		MessageBody: "msg",
		MessageAttributes: map[string]MessageAttributeValue{
			"Help.Me": {DataType: "String", StringValue: "Me"},
			"Hello":   {DataType: "String", StringValue: "There"},
			"General": {DataType: "String", StringValue: "Kenobi"},
		},
		MessageSystemAttributes: map[string]MessageAttributeValue{"AWSTraceHeader": {DataType: "String", StringValue: "Root=1-abc"}},
	})
	if out.MD5OfMessageBody != "6e2baaf3b97dbeef01c0043275f9a0e7" || out.MD5OfMessageAttributes != "4c360f3fdafd970e05fae2f149d997f5" ||
		out.MD5OfMessageSystemAttributes == "" || len(out.MessageId) != 36 || out.SequenceNumber != "" {
		t.Errorf("send = %+v", out)
	}
	h.clk.Advance(1500 * time.Millisecond)
	msgs := h.receive(&ReceiveMessageInput{QueueUrl: url, AttributeNames: []string{"All"}, MessageAttributeNames: []string{"All"}, VisibilityTimeout: ptr(0)})
	if len(msgs) != 1 {
		t.Fatalf("received %d", len(msgs))
	}
	m := msgs[0]
	if m.MessageId != out.MessageId || m.Body != "msg" || m.MD5OfBody != out.MD5OfMessageBody || m.ReceiptHandle == "" ||
		m.MD5OfMessageAttributes != out.MD5OfMessageAttributes || len(m.MessageAttributes) != 3 {
		t.Errorf("message = %+v", m)
	}
	wantAttrs := map[string]string{
		"SenderId":                         testAccount,
		"SentTimestamp":                    strconv.FormatInt(sentAt.UnixMilli(), 10),
		"ApproximateReceiveCount":          "1",
		"ApproximateFirstReceiveTimestamp": strconv.FormatInt(h.clk.Now().UnixMilli(), 10),
		"AWSTraceHeader":                   "Root=1-abc",
	}
	if !maps.Equal(m.Attributes, wantAttrs) {
		t.Errorf("attributes = %v\nwant %v", m.Attributes, wantAttrs)
	}

	// Each filter returns its attributes and the digest of exactly those.
	filters := []struct {
		names []string
		want  []string
		md5   string
	}{
		{nil, nil, ""},
		{[]string{".*"}, []string{"General", "Hello", "Help.Me"}, "4c360f3fdafd970e05fae2f149d997f5"},
		{[]string{"*"}, []string{"General", "Hello", "Help.Me"}, "4c360f3fdafd970e05fae2f149d997f5"},
		{[]string{"Foo", "Help"}, nil, ""},
		{[]string{"Hello", "General"}, []string{"General", "Hello"}, "fca026605781cb4126a1e9044df24232"},
		{[]string{"Foo", "Hello"}, []string{"Hello"}, "a311262e065454b75da111d535b8dacd"},
		{[]string{"Hel.*"}, []string{"Hello", "Help.Me"}, "83fee93c1bcd8b9a5a923ffacdc636c7"},
		{[]string{"AWS."}, nil, ""},
		{[]string{"..foo"}, nil, ""},
	}
	for _, f := range filters {
		msgs := h.receive(&ReceiveMessageInput{QueueUrl: url, MessageAttributeNames: f.names, VisibilityTimeout: ptr(0)})
		if len(msgs) != 1 {
			t.Fatalf("%v: received %d", f.names, len(msgs))
		}
		got := slices.Sorted(maps.Keys(msgs[0].MessageAttributes))
		if !slices.Equal(got, f.want) || msgs[0].MD5OfMessageAttributes != f.md5 || msgs[0].Attributes != nil {
			t.Errorf("%v: attributes %v, digest %q, system %v", f.names, got, msgs[0].MD5OfMessageAttributes, msgs[0].Attributes)
		}
	}

	// System attributes: each name alone, merged from both lists.
	msgs = h.receive(&ReceiveMessageInput{QueueUrl: url, AttributeNames: []string{"SenderId"}, MessageSystemAttributeNames: []string{"ApproximateReceiveCount", "SequenceNumber", "Bogus"}})
	if want := map[string]string{"SenderId": testAccount, "ApproximateReceiveCount": strconv.Itoa(len(filters) + 2)}; !maps.Equal(msgs[0].Attributes, want) {
		t.Errorf("selected attributes = %v, want %v", msgs[0].Attributes, want)
	}

	must[EmptyOutput](h, "DeleteMessage", &DeleteMessageInput{QueueUrl: url, ReceiptHandle: msgs[0].ReceiptHandle})
	// Deleting again with the same, now stale, handle succeeds.
	must[EmptyOutput](h, "DeleteMessage", &DeleteMessageInput{QueueUrl: url, ReceiptHandle: msgs[0].ReceiptHandle})
	h.clk.Advance(time.Minute)
	if msgs := h.receive(&ReceiveMessageInput{QueueUrl: url}); len(msgs) != 0 {
		t.Errorf("deleted message came back: %+v", msgs)
	}
}

func TestReceiveEmptyOmitsMessages(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("q", nil)
	out := must[ReceiveMessageOutput](h, "ReceiveMessage", &ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: ptr(0)})
	if out.Messages != nil {
		t.Errorf("messages = %v", out.Messages)
	}
}

func TestReceiveValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("q", nil)
	tests := []struct {
		in      ReceiveMessageInput
		message string
	}{
		{ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: ptr(11)}, "Value 11 for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided."},
		{ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: ptr(0)}, "Value 0 for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided."},
		{ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: ptr(21)}, "Value 21 for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided."},
		{ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: ptr(-1)}, "Value -1 for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided."},
		{ReceiveMessageInput{QueueUrl: url, VisibilityTimeout: ptr(43201)}, "Value 43201 for parameter VisibilityTimeout is invalid. Reason: Must be >= 0 and <= 43200, if provided."},
	}
	for _, tt := range tests {
		fails(h, "ReceiveMessage", &tt.in, "InvalidParameterValue", tt.message)
	}
	fails(h, "ReceiveMessage", &ReceiveMessageInput{QueueUrl: "nope"}, "AWS.SimpleQueueService.NonExistentQueue", "")
}

func TestReceiveMaxAndVisibility(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("q", nil)
	for i := range 12 {
		h.send(url, "m"+strconv.Itoa(i))
	}
	if got := h.receive(&ReceiveMessageInput{QueueUrl: url}); len(got) != 1 {
		t.Errorf("default max: %d", len(got))
	}
	if got := h.receive(&ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: ptr(10), VisibilityTimeout: ptr(100)}); len(got) != 10 {
		t.Errorf("max 10: %d", len(got))
	}
	// The first one returns with the queue's 30 s, the ten with their 100 s.
	h.clk.Advance(31 * time.Second)
	if got := h.receive(&ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: ptr(10)}); len(got) != 2 {
		t.Errorf("after 31 s: %d", len(got))
	}
}

// With no WaitTimeSeconds, a receive waits the queue's
// ReceiveMessageWaitTimeSeconds.
func TestReceiveWaitsTheQueueDefault(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("q", map[string]string{"ReceiveMessageWaitTimeSeconds": "5"})
	done := make(chan []Message, 1)
	go func() {
		out, _ := call[ReceiveMessageOutput](h, "ReceiveMessage", &ReceiveMessageInput{QueueUrl: url})
		done <- out.Messages
	}()
	testwait.Pending(t, h.clk, 1)
	fired := h.clk.Fired()
	// Advance fires every due timer before it returns: if the wait ended at
	// 4 s, its timer has fired by the time the check runs.
	testwait.Never(t, "the receive's wait ended before the queue's wait time",
		func() { h.clk.Advance(4 * time.Second) },
		func() bool {
			select {
			case <-done:
				return true
			default:
				return h.clk.Fired() != fired
			}
		})
	h.clk.Advance(time.Second)
	if msgs := testwait.Receive(t, "the receive to end after the queue's wait time", done); msgs != nil {
		t.Errorf("messages = %v", msgs)
	}
}

func TestSendMessageErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("small", map[string]string{"MaximumMessageSize": "1024"})
	fails(h, "SendMessage", &SendMessageInput{QueueUrl: url}, "MissingParameter", "The request must contain the parameter MessageBody.")
	fails(h, "SendMessage", &SendMessageInput{QueueUrl: url, MessageBody: strings.Repeat("x", 1025)}, "InvalidParameterValue",
		"One or more parameters are invalid. Reason: Message must be shorter than 1024 bytes.")
	fails(h, "SendMessage", &SendMessageInput{QueueUrl: url, MessageBody: "a\x08"}, "InvalidMessageContents", invalidCharactersMessage)
	fails(h, "SendMessage", &SendMessageInput{QueueUrl: url, MessageBody: "a", MessageDeduplicationId: ptr("d")}, "InvalidParameterValue", "")
	fails(h, "SendMessage", &SendMessageInput{QueueUrl: testBase + "/" + testAccount + "/nope", MessageBody: "a"}, "AWS.SimpleQueueService.NonExistentQueue", "")
	must[SendMessageOutput](h, "SendMessage", &SendMessageInput{QueueUrl: url, MessageBody: strings.Repeat("x", 1024)})
}

func TestSendDelayAndGroup(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("q", map[string]string{"DelaySeconds": "10"})
	h.send(url, "queue delay")
	must[SendMessageOutput](h, "SendMessage", &SendMessageInput{QueueUrl: url, MessageBody: "no delay", DelaySeconds: ptr(0), MessageGroupId: ptr("tenant-a")})
	msgs := h.receive(&ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: ptr(10), MessageSystemAttributeNames: []string{"MessageGroupId"}})
	if len(msgs) != 1 || msgs[0].Body != "no delay" || msgs[0].Attributes["MessageGroupId"] != "tenant-a" {
		t.Fatalf("before the queue delay: %+v", msgs)
	}
	h.clk.Advance(10 * time.Second)
	msgs = h.receive(&ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: ptr(10), MessageSystemAttributeNames: []string{"All"}})
	if len(msgs) != 1 || msgs[0].Body != "queue delay" {
		t.Fatalf("after the queue delay: %+v", msgs)
	}
	if _, ok := msgs[0].Attributes["MessageGroupId"]; ok {
		t.Error("a message sent without a group has no MessageGroupId")
	}
}

func TestSenderIDIsTheAccessKey(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("q", nil)
	ctx := protocol.WithInfo(h.ctx, &protocol.RequestInfo{AccessKey: "AKIDEXAMPLE"})
	if _, err := callCtx[SendMessageOutput](h, ctx, "SendMessage", &SendMessageInput{QueueUrl: url, MessageBody: "m"}); err != nil {
		t.Fatal(err)
	}
	msgs := h.receive(&ReceiveMessageInput{QueueUrl: url, AttributeNames: []string{"SenderId"}})
	if len(msgs) != 1 || msgs[0].Attributes["SenderId"] != "AKIDEXAMPLE" {
		t.Errorf("messages = %+v", msgs)
	}
}

func TestDeleteMessageErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("q", nil)
	other := h.createQueue("other", nil)
	h.send(other, "m")
	foreign := h.receive(&ReceiveMessageInput{QueueUrl: other})[0].ReceiptHandle
	fails(h, "DeleteMessage", &DeleteMessageInput{QueueUrl: url}, "MissingParameter", "The request must contain the parameter ReceiptHandle.")
	for _, handle := range []string{"garbage", foreign} {
		err := fails(h, "DeleteMessage", &DeleteMessageInput{QueueUrl: url, ReceiptHandle: handle}, "ReceiptHandleIsInvalid",
			`The input receipt handle "`+handle+`" is not a valid receipt handle.`)
		if err.Status != http.StatusNotFound {
			t.Errorf("status = %d", err.Status)
		}
	}
	fails(h, "DeleteMessage", &DeleteMessageInput{QueueUrl: "nope", ReceiptHandle: foreign}, "AWS.SimpleQueueService.NonExistentQueue", "")
}

func TestChangeMessageVisibility(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("q", nil)
	h.send(url, "m")
	handle := h.receive(&ReceiveMessageInput{QueueUrl: url})[0].ReceiptHandle

	must[EmptyOutput](h, "ChangeMessageVisibility", &ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: handle, VisibilityTimeout: ptr(3600)})
	h.clk.Advance(31 * time.Second)
	if msgs := h.receive(&ReceiveMessageInput{QueueUrl: url}); len(msgs) != 0 {
		t.Error("visible before its new timeout")
	}
	// Twelve hours count from the receive.
	h.clk.Advance(11 * time.Hour)
	fails(h, "ChangeMessageVisibility", &ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: handle, VisibilityTimeout: ptr(3600)}, "InvalidParameterValue",
		"Value 3600 for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [43200 seconds]")
	must[EmptyOutput](h, "ChangeMessageVisibility", &ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: handle, VisibilityTimeout: ptr(0)})
	msgs := h.receive(&ReceiveMessageInput{QueueUrl: url})
	if len(msgs) != 1 {
		t.Fatal("not visible after a zero timeout")
	}
	// The first handle was superseded by the second receive.
	fails(h, "ChangeMessageVisibility", &ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: handle, VisibilityTimeout: ptr(10)}, "InvalidParameterValue",
		"Value "+handle+" for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.")
	err := fails(h, "ChangeMessageVisibility", &ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: "garbage", VisibilityTimeout: ptr(10)}, "ReceiptHandleIsInvalid",
		`The input receipt handle "garbage" is not a valid receipt handle.`)
	if err.Status != http.StatusNotFound {
		t.Errorf("status = %d", err.Status)
	}
	fails(h, "ChangeMessageVisibility", &ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: msgs[0].ReceiptHandle}, "MissingParameter",
		"The request must contain the parameter VisibilityTimeout.")
	fails(h, "ChangeMessageVisibility", &ChangeMessageVisibilityInput{QueueUrl: url, VisibilityTimeout: ptr(1)}, "MissingParameter",
		"The request must contain the parameter ReceiptHandle.")
	fails(h, "ChangeMessageVisibility", &ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: msgs[0].ReceiptHandle, VisibilityTimeout: ptr(43201)}, "InvalidParameterValue",
		"Value 43201 for parameter VisibilityTimeout is invalid. Reason: Must be >= 0 and <= 43200, if provided.")
}

// A client that goes away ends its long poll: the context reaches the engine.
func TestReceiveEndsWithItsContext(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("q", nil)
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = h.svc.Actions["ReceiveMessage"].Handle(ctx, &ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: ptr(20)})
	}()
	testwait.Pending(t, h.clk, 1)
	cancel()
	testwait.Receive(t, "the receive to end with its context", done)
}
