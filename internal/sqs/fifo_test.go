package sqs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

const sha256OfHello = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"

// createFifo creates a FIFO queue with the given extra attributes.
func (h *harness) createFifo(name string, kv ...string) string {
	h.t.Helper()
	attrs := map[string]string{"FifoQueue": "true"}
	for i := 0; i+1 < len(kv); i += 2 {
		attrs[kv[i]] = kv[i+1]
	}
	return h.createQueue(name, attrs)
}

// sendFifo sends body to a FIFO queue in group with an explicit
// deduplication id, or a content-based one when dedup is "".
func (h *harness) sendFifo(url, body, group, dedup string) *SendMessageOutput {
	h.t.Helper()
	in := &SendMessageInput{QueueUrl: url, MessageBody: body, MessageGroupId: &group}
	if dedup != "" {
		in.MessageDeduplicationId = &dedup
	}
	return must[SendMessageOutput](h, "SendMessage", in)
}

func (h *harness) count(url, attr string) string {
	h.t.Helper()
	return h.attributes(url, attr)[attr]
}

// seq reads a sequence number, failing on anything but a decimal of at
// least 20 digits.
func seq(t *testing.T, s string) *big.Int {
	t.Helper()
	n, ok := new(big.Int).SetString(s, 10)
	if !ok || len(s) < 20 || n.Sign() < 0 {
		t.Fatalf("sequence number %q", s)
	}
	return n
}

func TestCreateFifoQueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("jobs.fifo", map[string]string{"FifoQueue": "True"})
	if url != testBase+"/"+testAccount+"/jobs.fifo" {
		t.Errorf("url = %q", url)
	}
	got := h.attributes(url, "All")
	want := map[string]string{
		"ApproximateNumberOfMessages":           "0",
		"ApproximateNumberOfMessagesNotVisible": "0",
		"ApproximateNumberOfMessagesDelayed":    "0",
		"CreatedTimestamp":                      got["CreatedTimestamp"],
		"LastModifiedTimestamp":                 got["LastModifiedTimestamp"],
		"DelaySeconds":                          "0",
		"MaximumMessageSize":                    "1048576",
		"MessageRetentionPeriod":                "345600",
		"QueueArn":                              testARN("jobs.fifo"),
		"ReceiveMessageWaitTimeSeconds":         "0",
		"SqsManagedSseEnabled":                  "true",
		"VisibilityTimeout":                     "30",
		"ContentBasedDeduplication":             "false",
		"DeduplicationScope":                    "queue",
		"FifoQueue":                             "true",
		"FifoThroughputLimit":                   "perQueue",
	}
	if got["CreatedTimestamp"] == "" || !maps.Equal(got, want) {
		t.Errorf("attributes = %v\nwant %v", got, want)
	}
	q, err := h.eng.GetQueue(h.ctx, testAccount, "jobs.fifo")
	if err != nil || !q.Settings.FIFO || q.Settings.DeduplicationScope != "queue" {
		t.Errorf("engine settings = %+v, %v", q.Settings, err)
	}
	// FIFO names resolve everywhere a queue is named.
	if got := must[GetQueueUrlOutput](h, "GetQueueUrl", &GetQueueUrlInput{QueueName: "jobs.fifo"}).QueueUrl; got != url {
		t.Errorf("GetQueueUrl = %q", got)
	}
	if got := must[ListQueuesOutput](h, "ListQueues", &ListQueuesInput{QueueNamePrefix: "jobs"}).QueueUrls; !slices.Equal(got, []string{url}) {
		t.Errorf("ListQueues = %v", got)
	}

	// Idempotency: the FIFO attributes count, omitted ones at their defaults.
	for _, same := range []map[string]string{
		{"FifoQueue": "true"},
		{"FifoQueue": "TRUE", "ContentBasedDeduplication": "False", "DeduplicationScope": "queue", "FifoThroughputLimit": "perQueue"},
	} {
		if again := h.createQueue("jobs.fifo", same); again != url {
			t.Errorf("%v: second create = %q", same, again)
		}
	}
	fails(h, "CreateQueue", &CreateQueueInput{QueueName: "jobs.fifo", Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}},
		"QueueAlreadyExists", "A queue already exists with the same name and a different value for attribute ContentBasedDeduplication")
	fails(h, "CreateQueue", &CreateQueueInput{QueueName: "jobs.fifo", Attributes: map[string]string{"FifoQueue": "true", "DeduplicationScope": "messageGroup"}},
		"QueueAlreadyExists", "A queue already exists with the same name and a different value for attribute DeduplicationScope")
	// The name without FifoQueue=true is a bad standard name, not the queue.
	fails(h, "CreateQueue", &CreateQueueInput{QueueName: "jobs.fifo"}, "InvalidParameterValue",
		"Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length")

	// High throughput takes both attributes.
	ht := h.createFifo("fast.fifo", "DeduplicationScope", "messageGroup", "FifoThroughputLimit", "perMessageGroupId", "ContentBasedDeduplication", "true")
	got = h.attributes(ht, "ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit", "FifoQueue")
	if !maps.Equal(got, map[string]string{"ContentBasedDeduplication": "true", "DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId", "FifoQueue": "true"}) {
		t.Errorf("high throughput attributes = %v", got)
	}
	if q, _ := h.eng.GetQueue(h.ctx, testAccount, "fast.fifo"); q.Settings.DeduplicationScope != "messageGroup" {
		t.Errorf("engine scope = %q", q.Settings.DeduplicationScope)
	}
	// A standard queue shows none of the FIFO attributes.
	std := h.createQueue("plain", nil)
	for _, name := range []string{"FifoQueue", "ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit"} {
		if _, ok := h.attributes(std, "All")[name]; ok {
			t.Errorf("standard queue shows %s", name)
		}
	}
}

func TestSetFifoQueueAttributes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createFifo("q.fifo")
	set := func(kv ...string) *SetQueueAttributesInput {
		in := &SetQueueAttributesInput{QueueUrl: url, Attributes: map[string]string{}}
		for i := 0; i+1 < len(kv); i += 2 {
			in.Attributes[kv[i]] = kv[i+1]
		}
		return in
	}
	tests := []struct {
		name    string
		in      *SetQueueAttributesInput
		code    string
		message string
	}{
		{"type change", set("FifoQueue", "false"), "InvalidAttributeValue", "Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not supported."},
		{"type garbage", set("FifoQueue", "no"), "InvalidAttributeValue", "Invalid value for the parameter FifoQueue."},
		{"per-group limit alone", set("FifoThroughputLimit", "perMessageGroupId"), "InvalidAttributeValue",
			"Invalid value for the parameter FifoThroughputLimit. Reason: To set FifoThroughputLimit to perMessageGroupId, the DeduplicationScope must be messageGroup."},
		{"bad scope", set("DeduplicationScope", "none"), "InvalidAttributeValue", "Invalid value for the parameter DeduplicationScope."},
		{"bad content dedup", set("ContentBasedDeduplication", "sometimes"), "InvalidAttributeValue", "Invalid value for the parameter ContentBasedDeduplication."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := fails(h, "SetQueueAttributes", tt.in, tt.code, tt.message); err.Status != http.StatusBadRequest {
				t.Errorf("status %d", err.Status)
			}
		})
	}
	before := h.attributes(url, "All")
	must[EmptyOutput](h, "SetQueueAttributes", set("FifoQueue", "true"))
	if got := h.attributes(url, "FifoQueue", "ContentBasedDeduplication"); !maps.Equal(got, map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": before["ContentBasedDeduplication"]}) {
		t.Errorf("after a no-op: %v", got)
	}
	must[EmptyOutput](h, "SetQueueAttributes", set("ContentBasedDeduplication", "TRUE", "DeduplicationScope", "messageGroup", "FifoThroughputLimit", "perMessageGroupId"))
	got := h.attributes(url, "ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit")
	if !maps.Equal(got, map[string]string{"ContentBasedDeduplication": "true", "DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"}) {
		t.Errorf("attributes = %v", got)
	}
	q, err := h.eng.GetQueue(h.ctx, testAccount, "q.fifo")
	if err != nil || !q.Settings.FIFO || q.Settings.DeduplicationScope != "messageGroup" {
		t.Errorf("settings = %+v, %v", q.Settings, err)
	}
	// Going back to queue scope while the limit is per group is refused.
	fails(h, "SetQueueAttributes", set("DeduplicationScope", "queue"), "InvalidAttributeValue",
		"Invalid value for the parameter FifoThroughputLimit. Reason: To set FifoThroughputLimit to perMessageGroupId, the DeduplicationScope must be messageGroup.")
	must[EmptyOutput](h, "SetQueueAttributes", set("DeduplicationScope", "queue", "FifoThroughputLimit", "perQueue"))

	// A standard queue refuses the FIFO attributes with AWS's two wordings.
	std := h.createQueue("plain", nil)
	for attr, message := range map[string]string{
		"FifoQueue":                 "Unknown Attribute FifoQueue.",
		"ContentBasedDeduplication": "Unknown Attribute ContentBasedDeduplication.",
		"DeduplicationScope":        "You can specify the DeduplicationScope only when FifoQueue is set to true.",
		"FifoThroughputLimit":       "You can specify the FifoThroughputLimit only when FifoQueue is set to true.",
	} {
		fails(h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: std, Attributes: map[string]string{attr: "true"}}, "InvalidAttributeName", message)
	}
}

func TestFifoSendValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createFifo("q.fifo")
	g, d := ptr("g"), ptr("d")
	tests := []struct {
		name    string
		in      SendMessageInput
		code    string
		message string
	}{
		{"no group", SendMessageInput{MessageBody: "m", MessageDeduplicationId: d}, "MissingParameter", "The request must contain the parameter MessageGroupId."},
		{"no dedup id", SendMessageInput{MessageBody: "m", MessageGroupId: g}, "InvalidParameterValue",
			"The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly"},
		{"message delay", SendMessageInput{MessageBody: "m", MessageGroupId: g, MessageDeduplicationId: d, DelaySeconds: ptr(1)}, "InvalidParameterValue",
			"Value 1 for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type."},
		{"bad dedup id", SendMessageInput{MessageBody: "m", MessageGroupId: g, MessageDeduplicationId: ptr("d\td")}, "InvalidParameterValue",
			"Value d\td for parameter MessageDeduplicationId is invalid. Reason: MessageDeduplicationId can only include alphanumeric and punctuation characters. 1 to 128 in length."},
		{"bad group id", SendMessageInput{MessageBody: "m", MessageGroupId: ptr(strings.Repeat("g", 129)), MessageDeduplicationId: d}, "InvalidParameterValue",
			"Value " + strings.Repeat("g", 129) + " for parameter MessageGroupId is invalid. Reason: MessageGroupId can only include alphanumeric and punctuation characters. 1 to 128 in length."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.QueueUrl = url
			if err := fails(h, "SendMessage", &in, tt.code, tt.message); err.Status != http.StatusBadRequest {
				t.Errorf("status %d", err.Status)
			}
		})
	}
	if n := h.count(url, "ApproximateNumberOfMessages"); n != "0" {
		t.Errorf("%s messages stored by refused sends", n)
	}
	// DelaySeconds=0 is accepted, and the queue's own delay still applies.
	slow := h.createFifo("slow.fifo", "DelaySeconds", "5")
	must[SendMessageOutput](h, "SendMessage", &SendMessageInput{QueueUrl: slow, MessageBody: "m", MessageGroupId: g, MessageDeduplicationId: d, DelaySeconds: ptr(0)})
	if n := h.count(slow, "ApproximateNumberOfMessagesDelayed"); n != "1" {
		t.Errorf("delayed = %s, want the queue's delay", n)
	}
}

func TestFifoSendMessageBatchValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createFifo("q.fifo")
	entry := func(id string, group, dedup *string) SendMessageBatchRequestEntry {
		return SendMessageBatchRequestEntry{Id: id, MessageBody: "body " + id, MessageGroupId: group, MessageDeduplicationId: dedup}
	}
	g, d := ptr("g"), ptr("d")
	tests := []struct {
		name    string
		entries []SendMessageBatchRequestEntry
		message string
	}{
		{"group missing in one entry", []SendMessageBatchRequestEntry{entry("a", g, d), entry("b", nil, ptr("d2"))}, "The request must contain the parameter MessageGroupId."},
		{"dedup missing in one entry", []SendMessageBatchRequestEntry{entry("a", g, d), entry("b", g, nil)},
			"The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := fails(h, "SendMessageBatch", &SendMessageBatchInput{QueueUrl: url, Entries: tt.entries}, "InvalidParameterValue", tt.message)
			if err.Status != http.StatusBadRequest {
				t.Errorf("status %d", err.Status)
			}
		})
	}
	if n := h.count(url, "ApproximateNumberOfMessages"); n != "0" {
		t.Errorf("%s messages stored by refused batches", n)
	}
	// Other FIFO rules fail only their entry; the rest are sent.
	out := must[SendMessageBatchOutput](h, "SendMessageBatch", &SendMessageBatchInput{QueueUrl: url, Entries: []SendMessageBatchRequestEntry{
		entry("ok", g, d),
		{Id: "delayed", MessageBody: "x", MessageGroupId: g, MessageDeduplicationId: ptr("d2"), DelaySeconds: ptr(3)},
		entry("badid", g, ptr("has space")),
	}})
	if len(out.Successful) != 1 || out.Successful[0].Id != "ok" || len(out.Failed) != 2 {
		t.Fatalf("batch = %+v", out)
	}
	for _, f := range out.Failed {
		if f.Code != "InvalidParameterValue" || !f.SenderFault {
			t.Errorf("failure = %+v", f)
		}
	}
	if out.Failed[0].Message != "Value 3 for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type." {
		t.Errorf("delay failure = %q", out.Failed[0].Message)
	}
	seq(t, out.Successful[0].SequenceNumber)
}

// recorder wraps a backend and keeps what the SQS layer handed it.
type recorder struct {
	engine.Backend
	mu       sync.Mutex
	sent     []engine.NewMessage
	receives []engine.ReceiveRequest
}

func (r *recorder) Send(ctx context.Context, account, name string, msgs []engine.NewMessage) ([]engine.SendResult, error) {
	r.mu.Lock()
	r.sent = append(r.sent, msgs...)
	r.mu.Unlock()
	return r.Backend.Send(ctx, account, name, msgs)
}

func (r *recorder) Receive(ctx context.Context, account, name string, req engine.ReceiveRequest) ([]engine.Message, error) {
	r.mu.Lock()
	r.receives = append(r.receives, req)
	r.mu.Unlock()
	return r.Backend.Receive(ctx, account, name, req)
}

func newRecordingHarness(t *testing.T) (*harness, *recorder) {
	h := newHarness(t)
	rec := &recorder{Backend: h.eng}
	h.svc = NewService(Config{Account: testAccount, Region: testRegion, Backend: rec, Clock: h.clk, QueueURLBase: testBase})
	return h, rec
}

// TestFifoWhatTheEngineGets checks the SQS layer's half of the seam:
// deduplication ids, batch order and attempt ids as the engine sees them.
func TestFifoWhatTheEngineGets(t *testing.T) {
	t.Parallel()
	h, rec := newRecordingHarness(t)
	url := h.createFifo("q.fifo", "ContentBasedDeduplication", "true")
	h.sendFifo(url, "hello", "g", "")
	h.sendFifo(url, "hello", "g", "explicit")
	must[SendMessageBatchOutput](h, "SendMessageBatch", &SendMessageBatchInput{QueueUrl: url, Entries: []SendMessageBatchRequestEntry{
		{Id: "c", MessageBody: "third", MessageGroupId: ptr("g")},
		{Id: "a", MessageBody: "first", MessageGroupId: ptr("g"), MessageDeduplicationId: ptr("x")},
		{Id: "b", MessageBody: "second", MessageGroupId: ptr("h"), DelaySeconds: ptr(0)},
	}})
	var got []string
	for _, m := range rec.sent {
		if m.Delay != nil {
			t.Errorf("%q carries a delay", m.Body)
		}
		got = append(got, m.Body+"/"+m.MessageGroupID+"/"+m.DeduplicationID)
	}
	want := []string{
		"hello/g/" + sha256OfHello,
		"hello/g/explicit",
		"third/g/" + hexSHA256("third"),
		"first/g/x",
		"second/h/" + hexSHA256("second"),
	}
	if !slices.Equal(got, want) {
		t.Errorf("engine got\n%v\nwant\n%v", got, want)
	}

	std := h.createQueue("plain", nil)
	h.receive(&ReceiveMessageInput{QueueUrl: url, ReceiveRequestAttemptId: "attempt-1"})
	h.receive(&ReceiveMessageInput{QueueUrl: std, ReceiveRequestAttemptId: "attempt-2"})
	// A standard queue ignores the attempt id, whatever its form.
	h.receive(&ReceiveMessageInput{QueueUrl: std, ReceiveRequestAttemptId: "not valid on FIFO"})
	if len(rec.receives) != 3 || rec.receives[0].AttemptID != "attempt-1" || rec.receives[1].AttemptID != "" || rec.receives[2].AttemptID != "" {
		t.Errorf("receives = %+v", rec.receives)
	}
}

func TestFifoReceiveAttemptIDValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createFifo("q.fifo")
	for _, id := range []string{"has space", strings.Repeat("a", 129), "caf\u00e9"} {
		fails(h, "ReceiveMessage", &ReceiveMessageInput{QueueUrl: url, ReceiveRequestAttemptId: id}, "InvalidParameterValue",
			"Value "+id+" for parameter ReceiveRequestAttemptId is invalid. Reason: ReceiveRequestAttemptId can only include alphanumeric and punctuation characters. 1 to 128 in length.")
	}
	h.receive(&ReceiveMessageInput{QueueUrl: url, ReceiveRequestAttemptId: strings.Repeat("a", 128)})
}

func TestFifoDeduplication(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createFifo("q.fifo", "ContentBasedDeduplication", "true")

	// A duplicate answers exactly like the original and stores nothing.
	first := h.sendFifo(url, "hello", "g", "")
	seq(t, first.SequenceNumber)
	again := h.sendFifo(url, "hello", "g", "")
	if *again != *first {
		t.Errorf("duplicate answered %+v, original %+v", again, first)
	}
	// An explicit id wins over the body's hash, so the same body with a new
	// id is a new message, and another body with a used id is a duplicate.
	byID := h.sendFifo(url, "hello", "g", "id-1")
	if byID.MessageId == first.MessageId {
		t.Error("an explicit id did not override the content hash")
	}
	if dup := h.sendFifo(url, "other body", "g", "id-1"); dup.MessageId != byID.MessageId || dup.SequenceNumber != byID.SequenceNumber {
		t.Errorf("duplicate by id = %+v, original %+v", dup, byID)
	}
	// An explicit id equal to the body's hash is the same key.
	if dup := h.sendFifo(url, "hello again", "g", sha256OfHello); dup.MessageId != first.MessageId {
		t.Error("the content-based key and the same explicit id differ")
	}
	if n := h.count(url, "ApproximateNumberOfMessages"); n != "2" {
		t.Fatalf("%s messages stored, want 2", n)
	}

	// Deleting a message does not end its deduplication window.
	msgs := h.receive(&ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: ptr(10)})
	if len(msgs) != 2 || msgs[0].MessageId != first.MessageId || msgs[1].MessageId != byID.MessageId {
		t.Fatalf("received %+v", msgs)
	}
	for _, m := range msgs {
		must[EmptyOutput](h, "DeleteMessage", &DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle})
	}
	if dup := h.sendFifo(url, "hello", "g", ""); dup.MessageId != first.MessageId {
		t.Error("a deleted message's key was forgotten within the window")
	}

	// After the window the same key enqueues again.
	h.clk.Advance(engine.DeduplicationWindow + time.Second)
	fresh := h.sendFifo(url, "hello", "g", "")
	if fresh.MessageId == first.MessageId || seq(t, fresh.SequenceNumber).Cmp(seq(t, first.SequenceNumber)) <= 0 {
		t.Errorf("after the window: %+v, original %+v", fresh, first)
	}
	if n := h.count(url, "ApproximateNumberOfMessages"); n != "1" {
		t.Errorf("%s messages after the window, want 1", n)
	}

	// Duplicates in a batch answer like their original.
	out := must[SendMessageBatchOutput](h, "SendMessageBatch", &SendMessageBatchInput{QueueUrl: url, Entries: []SendMessageBatchRequestEntry{
		{Id: "a", MessageBody: "batch", MessageGroupId: ptr("g")},
		{Id: "b", MessageBody: "batch", MessageGroupId: ptr("g")},
		{Id: "c", MessageBody: "hello", MessageGroupId: ptr("g")},
	}})
	if len(out.Successful) != 3 || out.Successful[0].MessageId != out.Successful[1].MessageId ||
		out.Successful[0].SequenceNumber != out.Successful[1].SequenceNumber || out.Successful[2].MessageId != fresh.MessageId {
		t.Errorf("batch = %+v", out.Successful)
	}
}

func TestFifoDeduplicationScope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scope string
		want  string // messages stored by the same id in two groups
	}{
		{"queue", "1"},
		{"messageGroup", "2"},
	}
	for _, tt := range tests {
		t.Run(tt.scope, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			url := h.createFifo("q.fifo", "DeduplicationScope", tt.scope)
			a := h.sendFifo(url, "m", "g1", "same")
			b := h.sendFifo(url, "m", "g2", "same")
			if n := h.count(url, "ApproximateNumberOfMessages"); n != tt.want {
				t.Errorf("%s messages, want %s", n, tt.want)
			}
			if (a.MessageId == b.MessageId) != (tt.want == "1") {
				t.Errorf("ids %s and %s", a.MessageId, b.MessageId)
			}
			// The same group always deduplicates.
			if c := h.sendFifo(url, "m", "g1", "same"); c.MessageId != a.MessageId {
				t.Error("same group, same id: not a duplicate")
			}
		})
	}
}

func TestFifoOrderAndSystemAttributes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createFifo("q.fifo")
	type sent struct {
		body, group string
		out         *SendMessageOutput
	}
	var all []sent
	for i, g := range []string{"a", "b", "a", "a", "b"} {
		body := fmt.Sprintf("%s-%d", g, i)
		all = append(all, sent{body, g, h.sendFifo(url, body, g, "d"+body)})
	}
	// Sequence numbers grow with every message enqueued.
	for i := 1; i < len(all); i++ {
		if seq(t, all[i].out.SequenceNumber).Cmp(seq(t, all[i-1].out.SequenceNumber)) <= 0 {
			t.Errorf("sequence %s after %s", all[i].out.SequenceNumber, all[i-1].out.SequenceNumber)
		}
	}

	// One message of group a is in flight: its group waits, b does not.
	head := h.receive(&ReceiveMessageInput{QueueUrl: url, AttributeNames: []string{"All"}})
	if len(head) != 1 || head[0].Body != "a-0" {
		t.Fatalf("first receive = %+v", head)
	}
	want := map[string]string{
		"SequenceNumber":         all[0].out.SequenceNumber,
		"MessageDeduplicationId": "da-0",
		"MessageGroupId":         "a",
	}
	for k, v := range want {
		if head[0].Attributes[k] != v {
			t.Errorf("%s = %q, want %q", k, head[0].Attributes[k], v)
		}
	}
	rest := h.receive(&ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: ptr(10),
		MessageSystemAttributeNames: []string{"SequenceNumber"}, AttributeNames: []string{"MessageGroupId"}})
	var bodies []string
	for _, m := range rest {
		bodies = append(bodies, m.Body)
		if _, ok := m.Attributes["MessageDeduplicationId"]; ok || m.Attributes["SequenceNumber"] == "" || m.Attributes["MessageGroupId"] != "b" {
			t.Errorf("%s: attributes %v", m.Body, m.Attributes)
		}
	}
	if !slices.Equal(bodies, []string{"b-1", "b-4"}) {
		t.Errorf("while a is blocked: %v", bodies)
	}
	// Deleting the head frees group a, still in order.
	must[EmptyOutput](h, "DeleteMessage", &DeleteMessageInput{QueueUrl: url, ReceiptHandle: head[0].ReceiptHandle})
	bodies = nil
	for _, m := range h.receive(&ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: ptr(10)}) {
		bodies = append(bodies, m.Body)
		if m.Attributes != nil {
			t.Errorf("unrequested attributes %v", m.Attributes)
		}
	}
	if !slices.Equal(bodies, []string{"a-2", "a-3"}) {
		t.Errorf("group a after its head: %v", bodies)
	}
}

func TestFifoReceiveAttemptID(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createFifo("q.fifo", "ContentBasedDeduplication", "true")
	for _, b := range []string{"one", "two", "three"} {
		h.sendFifo(url, b, "g", "")
	}
	in := func() *ReceiveMessageInput {
		return &ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: ptr(2), ReceiveRequestAttemptId: "attempt-1"}
	}
	first := h.receive(in())
	if len(first) != 2 {
		t.Fatalf("received %d", len(first))
	}
	// A retry of the same attempt gets the same messages and handles.
	again := h.receive(in())
	if !slices.EqualFunc(first, again, func(a, b Message) bool { return a.MessageId == b.MessageId && a.ReceiptHandle == b.ReceiptHandle }) {
		t.Errorf("retry = %+v\nfirst = %+v", again, first)
	}
	for _, m := range again {
		must[EmptyOutput](h, "DeleteMessage", &DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle})
	}
	// Another attempt id is a new receive.
	next := h.receive(&ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: ptr(2), ReceiveRequestAttemptId: "attempt-2"})
	if len(next) != 1 || next[0].Body != "three" {
		t.Errorf("next attempt = %+v", next)
	}
}

func TestFifoExpiredReceiptHandle(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createFifo("q.fifo", "ContentBasedDeduplication", "true")
	h.sendFifo(url, "one", "g", "")
	h.sendFifo(url, "two", "h", "")
	msgs := h.receive(&ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: ptr(10), VisibilityTimeout: ptr(10)})
	if len(msgs) != 2 {
		t.Fatalf("received %d", len(msgs))
	}
	h.clk.Advance(11 * time.Second)
	expired := func(handle string) string {
		return "Value " + handle + " for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired."
	}
	h0, h1 := msgs[0].ReceiptHandle, msgs[1].ReceiptHandle
	fails(h, "DeleteMessage", &DeleteMessageInput{QueueUrl: url, ReceiptHandle: h0}, "InvalidParameterValue", expired(h0))
	fails(h, "ChangeMessageVisibility", &ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: h0, VisibilityTimeout: ptr(30)}, "InvalidParameterValue", expired(h0))
	del := must[DeleteMessageBatchOutput](h, "DeleteMessageBatch", &DeleteMessageBatchInput{QueueUrl: url, Entries: []DeleteMessageBatchRequestEntry{
		{Id: "a", ReceiptHandle: h0}, {Id: "b", ReceiptHandle: h1},
	}})
	if len(del.Successful) != 0 || len(del.Failed) != 2 {
		t.Fatalf("delete batch = %+v", del)
	}
	for i, f := range del.Failed {
		handle := []string{h0, h1}[i]
		if f.Code != "InvalidParameterValue" || !f.SenderFault || f.Message != expired(handle) {
			t.Errorf("failure %d = %+v", i, f)
		}
	}
	vis := must[ChangeMessageVisibilityBatchOutput](h, "ChangeMessageVisibilityBatch", &ChangeMessageVisibilityBatchInput{QueueUrl: url,
		Entries: []ChangeMessageVisibilityBatchRequestEntry{{Id: "a", ReceiptHandle: h1, VisibilityTimeout: ptr(5)}}})
	if len(vis.Failed) != 1 || vis.Failed[0].Code != "InvalidParameterValue" || vis.Failed[0].Message != expired(h1) {
		t.Errorf("visibility batch = %+v", vis)
	}
	// Nothing was deleted: both come back.
	if again := h.receive(&ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: ptr(10)}); len(again) != 2 {
		t.Errorf("received %d after the refused deletes", len(again))
	}
}

// TestExpiredHandleMapping checks the error mapping alone, wrapped errors
// included, for both handle actions.
func TestExpiredHandleMapping(t *testing.T) {
	t.Parallel()
	const expired = "Value h1 for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired."
	tests := []struct {
		name    string
		err     error
		delCode string // "" for success
		delMsg  string
		visCode string
		visMsg  string
	}{
		{"expired", engine.ErrReceiptHandleExpired, "InvalidParameterValue", expired, "InvalidParameterValue", expired},
		{"expired, wrapped", fmt.Errorf("queue q: %w", engine.ErrReceiptHandleExpired), "InvalidParameterValue", expired, "InvalidParameterValue", expired},
		{"invalid", engine.ErrReceiptHandleInvalid, "ReceiptHandleIsInvalid", `The input receipt handle "h1" is not a valid receipt handle.`,
			"ReceiptHandleIsInvalid", `The input receipt handle "h1" is not a valid receipt handle.`},
		{"not in flight", engine.ErrMessageNotInflight, "", "", "InvalidParameterValue",
			"Value h1 for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			del := deleteError("h1", []error{tt.err}, 0)
			switch {
			case tt.delCode == "" && del != nil:
				t.Errorf("delete: %v", del)
			case tt.delCode != "" && (del == nil || del.Code != tt.delCode || del.Message != tt.delMsg):
				t.Errorf("delete: %v, want %s %q", del, tt.delCode, tt.delMsg)
			}
			vis := visibilityError(tt.err, "h1", 30)
			if vis == nil || vis.Code != tt.visCode || vis.Message != tt.visMsg {
				t.Errorf("visibility: %v, want %s %q", vis, tt.visCode, tt.visMsg)
			}
		})
	}
	if !errors.Is(fmt.Errorf("x: %w", engine.ErrReceiptHandleExpired), engine.ErrReceiptHandleExpired) {
		t.Fatal("errors.Is")
	}
}

func TestFifoDeadLetterQueueTypes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.createQueue("dlq", nil)
	h.createFifo("dlq.fifo")
	fifoSrc := h.createFifo("src.fifo")
	stdSrc := h.createQueue("src", nil)
	const sameType = "Dead-letter queue must be same type of queue as the source.."
	reason := func(raw string) string {
		return "Value " + raw + " for parameter RedrivePolicy is invalid. Reason: " + sameType
	}
	tests := []struct {
		name, url, target string
	}{
		{"FIFO source, standard target", fifoSrc, testARN("dlq")},
		{"standard source, FIFO target", stdSrc, testARN("dlq.fifo")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := policy(tt.target, 3)
			fails(h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: tt.url, Attributes: map[string]string{"RedrivePolicy": raw}}, "InvalidParameterValue", reason(raw))
		})
	}
	raw := policy(testARN("dlq"), 3)
	fails(h, "CreateQueue", &CreateQueueInput{QueueName: "new.fifo", Attributes: map[string]string{"FifoQueue": "true", "RedrivePolicy": raw}}, "InvalidParameterValue", reason(raw))
	raw = policy(testARN("dlq.fifo"), 3)
	fails(h, "CreateQueue", &CreateQueueInput{QueueName: "new", Attributes: map[string]string{"RedrivePolicy": raw}}, "InvalidParameterValue", reason(raw))

	// Same types are accepted, at creation and later.
	h.createFifo("other.fifo", "RedrivePolicy", policy(testARN("dlq.fifo"), 2))
	must[EmptyOutput](h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: fifoSrc, Attributes: map[string]string{"RedrivePolicy": policy(testARN("dlq.fifo"), 1)}})
	must[EmptyOutput](h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: stdSrc, Attributes: map[string]string{"RedrivePolicy": policy(testARN("dlq"), 1)}})
	q, err := h.eng.GetQueue(h.ctx, testAccount, "src.fifo")
	if err != nil || q.Settings.Redrive == nil || q.Settings.Redrive.TargetName != "dlq.fifo" || !q.Settings.FIFO {
		t.Errorf("settings = %+v, %v", q.Settings, err)
	}
	dlqURL := testBase + "/" + testAccount + "/dlq.fifo"
	got := must[ListDeadLetterSourceQueuesOutput](h, "ListDeadLetterSourceQueues", &ListDeadLetterSourceQueuesInput{QueueUrl: dlqURL}).QueueUrls
	if !slices.Equal(got, []string{testBase + "/" + testAccount + "/other.fifo", fifoSrc}) {
		t.Errorf("dead-letter sources = %v", got)
	}

	// Move tasks go between queues of one type.
	fails(h, "StartMessageMoveTask", &StartMessageMoveTaskInput{SourceArn: testARN("dlq.fifo"), DestinationArn: testARN("src")}, "InvalidParameterValue",
		"The source queue and destination queue must be of the same queue type.")
	fails(h, "StartMessageMoveTask", &StartMessageMoveTaskInput{SourceArn: testARN("dlq"), DestinationArn: testARN("src.fifo")}, "InvalidParameterValue",
		"The source queue and destination queue must be of the same queue type.")
	start := must[StartMessageMoveTaskOutput](h, "StartMessageMoveTask", &StartMessageMoveTaskInput{SourceArn: testARN("dlq.fifo"), DestinationArn: testARN("other.fifo")})
	if start.TaskHandle == "" {
		t.Error("no task handle")
	}
}

// TestFifoRedrive moves a FIFO message to its FIFO dead-letter queue, where
// its system attributes show the move.
func TestFifoRedrive(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dlq := h.createFifo("dlq.fifo")
	src := h.createFifo("src.fifo", "RedrivePolicy", policy(testARN("dlq.fifo"), 1), "ContentBasedDeduplication", "true")
	sent := h.sendFifo(src, "poison", "g", "")
	h.sendFifo(src, "next", "g", "")
	if got := h.receive(&ReceiveMessageInput{QueueUrl: src, VisibilityTimeout: ptr(0)}); len(got) != 1 || got[0].Body != "poison" {
		t.Fatalf("first receive = %+v", got)
	}
	// The next receive moves the head away and unblocks its group.
	if got := h.receive(&ReceiveMessageInput{QueueUrl: src}); len(got) != 1 || got[0].Body != "next" {
		t.Errorf("after the move = %+v", got)
	}
	moved := h.receive(&ReceiveMessageInput{QueueUrl: dlq, AttributeNames: []string{"All"}})
	if len(moved) != 1 || moved[0].MessageId != sent.MessageId || moved[0].Attributes["DeadLetterQueueSourceArn"] != testARN("src.fifo") ||
		moved[0].Attributes["MessageGroupId"] != "g" || moved[0].Attributes["SequenceNumber"] == "" {
		t.Errorf("in the dead-letter queue: %+v", moved)
	}
}

func hexSHA256(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
