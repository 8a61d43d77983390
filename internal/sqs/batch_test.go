package sqs

import (
	"strconv"
	"strings"
	"testing"
)

func TestCheckBatch(t *testing.T) {
	t.Parallel()
	ids := func(ids ...string) []DeleteMessageBatchRequestEntry {
		var es []DeleteMessageBatchRequestEntry
		for _, id := range ids {
			es = append(es, DeleteMessageBatchRequestEntry{Id: id})
		}
		return es
	}
	eleven := make([]string, 11)
	for i := range eleven {
		eleven[i] = strconv.Itoa(i)
	}
	tests := []struct {
		name    string
		entries []DeleteMessageBatchRequestEntry
		code    string
		message string
	}{
		{"one", ids("a"), "", ""},
		{"ten of the longest", ids(strings.Repeat("a", 80), "b", "c", "d", "e", "f", "g", "h", "i", "A_-9"), "", ""},
		{"none", nil, "AWS.SimpleQueueService.EmptyBatchRequest", "There should be at least one DeleteMessageBatchRequestEntry in the request."},
		{"eleven", ids(eleven...), "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", "Maximum number of entries per request are 10. You have sent 11."},
		{"bad id", ids("a", "b c"), "AWS.SimpleQueueService.InvalidBatchEntryId",
			"A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long."},
		{"empty id", ids(""), "AWS.SimpleQueueService.InvalidBatchEntryId", ""},
		{"long id", ids(strings.Repeat("a", 81)), "AWS.SimpleQueueService.InvalidBatchEntryId", ""},
		{"repeated id", ids("idA", "idA"), "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", "Id idA repeated."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkBatch("DeleteMessageBatchRequestEntry", tt.entries, func(e *DeleteMessageBatchRequestEntry) string { return e.Id })
			switch {
			case tt.code == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.code != "" && (err == nil || err.Code != tt.code || tt.message != "" && err.Message != tt.message):
				t.Errorf("error = %v, want %s %q", err, tt.code, tt.message)
			}
		})
	}
}

func TestSendMessageBatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("q", map[string]string{"MaximumMessageSize": "1024"})
	out := must[SendMessageBatchOutput](h, "SendMessageBatch", &SendMessageBatchInput{QueueUrl: url, Entries: []SendMessageBatchRequestEntry{
		{Id: "ok-1", MessageBody: "msg", MessageAttributes: map[string]MessageAttributeValue{"Foo": {DataType: "String", StringValue: "Bar"}}},
		{Id: "empty", MessageBody: ""},
		{Id: "big", MessageBody: strings.Repeat("x", 1025)},
		{Id: "reserved", MessageBody: "m", MessageAttributes: map[string]MessageAttributeValue{"AWS.x": {DataType: "String", StringValue: "v"}}},
		{Id: "delay", MessageBody: "m", DelaySeconds: ptr(1800)},
		{Id: "ok-2", MessageBody: "second", DelaySeconds: ptr(0)},
	}})
	if len(out.Successful) != 2 || out.Successful[0].Id != "ok-1" || out.Successful[1].Id != "ok-2" {
		t.Fatalf("successful = %+v", out.Successful)
	}
	if s := out.Successful[0]; s.MD5OfMessageBody != "6e2baaf3b97dbeef01c0043275f9a0e7" || s.MD5OfMessageAttributes != "ae7155c6026991b6d54b11589678bf9c" || s.MessageId == "" {
		t.Errorf("first = %+v", s)
	}
	if out.Successful[1].MD5OfMessageAttributes != "" {
		t.Errorf("second = %+v", out.Successful[1])
	}
	want := []BatchResultErrorEntry{
		{Id: "empty", SenderFault: true, Code: "EmptyValue", Message: "The request must contain the parameter MessageBody."},
		{Id: "big", SenderFault: true, Code: "InvalidParameterValue", Message: "One or more parameters cannot be validated. Reason: Message must be shorter than 1024 bytes."},
		{Id: "reserved", SenderFault: true, Code: "InvalidParameterValue"},
		{Id: "delay", SenderFault: true, Code: "InvalidParameterValue", Message: "Value 1800 for parameter DelaySeconds is invalid. Reason: DelaySeconds must be >= 0 and <= 900."},
	}
	if len(out.Failed) != len(want) {
		t.Fatalf("failed = %+v", out.Failed)
	}
	for i, f := range out.Failed {
		w := want[i]
		if f.Id != w.Id || f.SenderFault != w.SenderFault || f.Code != w.Code || w.Message != "" && f.Message != w.Message {
			t.Errorf("failed[%d] = %+v, want %+v", i, f, w)
		}
	}
	msgs := h.receive(&ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: ptr(10)})
	if len(msgs) != 2 {
		t.Errorf("%d messages stored, want 2", len(msgs))
	}

	// An all-failed batch is still a success with empty Successful.
	out = must[SendMessageBatchOutput](h, "SendMessageBatch", &SendMessageBatchInput{QueueUrl: url, Entries: []SendMessageBatchRequestEntry{{Id: "a"}}})
	if out.Successful == nil || len(out.Successful) != 0 || len(out.Failed) != 1 {
		t.Errorf("all failed = %+v", out)
	}
	out = must[SendMessageBatchOutput](h, "SendMessageBatch", &SendMessageBatchInput{QueueUrl: url, Entries: []SendMessageBatchRequestEntry{{Id: "a", MessageBody: "m"}}})
	if out.Failed == nil || len(out.Failed) != 0 {
		t.Errorf("none failed = %+v", out)
	}
}

func TestSendMessageBatchRequestErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("q", nil)
	entries := func(n int, body string) []SendMessageBatchRequestEntry {
		es := make([]SendMessageBatchRequestEntry, n)
		for i := range es {
			es[i] = SendMessageBatchRequestEntry{Id: "m" + strconv.Itoa(i), MessageBody: body}
		}
		return es
	}
	fails(h, "SendMessageBatch", &SendMessageBatchInput{QueueUrl: url}, "AWS.SimpleQueueService.EmptyBatchRequest",
		"There should be at least one SendMessageBatchRequestEntry in the request.")
	fails(h, "SendMessageBatch", &SendMessageBatchInput{QueueUrl: url, Entries: entries(20, "m")}, "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
		"Maximum number of entries per request are 10. You have sent 20.")
	// 1 MiB + 1 in all, though each entry is within the queue's maximum.
	big := entries(2, strings.Repeat("x", 1<<19))
	big[1].MessageBody += "y"
	fails(h, "SendMessageBatch", &SendMessageBatchInput{QueueUrl: url, Entries: big}, "AWS.SimpleQueueService.BatchRequestTooLong",
		"Batch requests cannot be longer than 1048576 bytes. You have sent 1048577 bytes.")
	big[1].MessageBody = big[1].MessageBody[1:]
	must[SendMessageBatchOutput](h, "SendMessageBatch", &SendMessageBatchInput{QueueUrl: url, Entries: big})
	fails(h, "SendMessageBatch", &SendMessageBatchInput{QueueUrl: "nope", Entries: entries(1, "m")}, "AWS.SimpleQueueService.NonExistentQueue", "")
}

func TestDeleteMessageBatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("q", nil)
	h.send(url, "a")
	h.send(url, "b")
	msgs := h.receive(&ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: ptr(2)})
	out := must[DeleteMessageBatchOutput](h, "DeleteMessageBatch", &DeleteMessageBatchInput{QueueUrl: url, Entries: []DeleteMessageBatchRequestEntry{
		{Id: "bad", ReceiptHandle: "invalid-receipt-handle"},
		{Id: "a", ReceiptHandle: msgs[0].ReceiptHandle},
		{Id: "none"},
		{Id: "b", ReceiptHandle: msgs[1].ReceiptHandle},
	}})
	if len(out.Successful) != 2 || out.Successful[0].Id != "a" || out.Successful[1].Id != "b" {
		t.Errorf("successful = %+v", out.Successful)
	}
	if len(out.Failed) != 2 || out.Failed[1] != (BatchResultErrorEntry{Id: "none", SenderFault: true, Code: "MissingParameter", Message: "The request must contain the parameter ReceiptHandle."}) ||
		out.Failed[0] != (BatchResultErrorEntry{Id: "bad", SenderFault: true, Code: "ReceiptHandleIsInvalid", Message: `The input receipt handle "invalid-receipt-handle" is not a valid receipt handle.`}) {
		t.Errorf("failed = %+v", out.Failed)
	}
	if got := h.attributes(url, "ApproximateNumberOfMessagesNotVisible")["ApproximateNumberOfMessagesNotVisible"]; got != "0" {
		t.Errorf("in flight after delete: %s", got)
	}
	fails(h, "DeleteMessageBatch", &DeleteMessageBatchInput{QueueUrl: url}, "AWS.SimpleQueueService.EmptyBatchRequest",
		"There should be at least one DeleteMessageBatchRequestEntry in the request.")
	fails(h, "DeleteMessageBatch", &DeleteMessageBatchInput{QueueUrl: url, Entries: []DeleteMessageBatchRequestEntry{{Id: "dup-id", ReceiptHandle: "x"}, {Id: "dup-id", ReceiptHandle: "x"}}},
		"AWS.SimpleQueueService.BatchEntryIdsNotDistinct", "Id dup-id repeated.")
}

func TestChangeMessageVisibilityBatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("q", nil)
	h.send(url, "a")
	h.send(url, "b")
	msgs := h.receive(&ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: ptr(2)})
	out := must[ChangeMessageVisibilityBatchOutput](h, "ChangeMessageVisibilityBatch", &ChangeMessageVisibilityBatchInput{QueueUrl: url, Entries: []ChangeMessageVisibilityBatchRequestEntry{
		{Id: "show", ReceiptHandle: msgs[0].ReceiptHandle, VisibilityTimeout: ptr(0)},
		{Id: "range", ReceiptHandle: msgs[1].ReceiptHandle, VisibilityTimeout: ptr(43201)},
		{Id: "nil", ReceiptHandle: msgs[1].ReceiptHandle},
		{Id: "garbage", ReceiptHandle: "garbage", VisibilityTimeout: ptr(5)},
		{Id: "hide", ReceiptHandle: msgs[1].ReceiptHandle, VisibilityTimeout: ptr(300)},
	}})
	if len(out.Successful) != 2 || out.Successful[0].Id != "show" || out.Successful[1].Id != "hide" {
		t.Errorf("successful = %+v", out.Successful)
	}
	codes := map[string]string{}
	for _, f := range out.Failed {
		codes[f.Id] = f.Code
		if !f.SenderFault {
			t.Errorf("%s: not the sender's fault", f.Id)
		}
	}
	if len(codes) != 3 || codes["range"] != "InvalidParameterValue" || codes["nil"] != "MissingParameter" || codes["garbage"] != "ReceiptHandleIsInvalid" {
		t.Errorf("failed = %+v", out.Failed)
	}
	if got := h.receive(&ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: ptr(10)}); len(got) != 1 || got[0].Body != msgs[0].Body {
		t.Errorf("visible = %+v", got)
	}
	fails(h, "ChangeMessageVisibilityBatch", &ChangeMessageVisibilityBatchInput{QueueUrl: url}, "AWS.SimpleQueueService.EmptyBatchRequest",
		"There should be at least one ChangeMessageVisibilityBatchRequestEntry in the request.")
}
