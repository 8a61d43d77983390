package sqs

import (
	"errors"
	"testing"

	"github.com/ferrymq/ferry/internal/protocol"
)

// TestAccess: who may act on a queue, with the caller's account and the
// verification of its signature as the protocol layer sets them.
func TestAccess(t *testing.T) {
	t.Parallel()
	const other = "222222222222"
	h := newHarness(t)
	url := h.createQueue("shared", nil)
	denyPurge := `{"Version":"2012-10-17","Statement":[` +
		`{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::` + other + `:root"},"Action":["sqs:SendMessage","sqs:Receive*","sqs:GetQueueAttributes","sqs:PurgeQueue"],"Resource":"arn:aws:sqs:` + testRegion + `:` + testAccount + `:shared"},` +
		`{"Effect":"Deny","Principal":"*","Action":"sqs:PurgeQueue"}]}`
	must[EmptyOutput](h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: url, Attributes: map[string]string{"Policy": denyPurge}})
	h.createQueue("private", nil)
	privateURL := testBase + "/" + testAccount + "/private"
	ctxOf := func(account string, verified bool) *protocol.RequestInfo {
		return &protocol.RequestInfo{Account: account, Verified: verified, SourceIP: "127.0.0.1"}
	}
	for _, tt := range []struct {
		name   string
		info   *protocol.RequestInfo
		action string
		in     any
		code   string // "" allowed
	}{
		{"other: granted send", ctxOf(other, true), "SendMessage", &SendMessageInput{QueueUrl: url, MessageBody: "x"}, ""},
		{"other: batch is its single action", ctxOf(other, true), "SendMessageBatch", &SendMessageBatchInput{QueueUrl: url,
			Entries: []SendMessageBatchRequestEntry{{Id: "a", MessageBody: "x"}}}, ""},
		{"other: granted by wildcard", ctxOf(other, true), "ReceiveMessage", &ReceiveMessageInput{QueueUrl: url}, ""},
		{"other: not granted", ctxOf(other, true), "DeleteMessage", &DeleteMessageInput{QueueUrl: url, ReceiptHandle: "h"}, "AccessDenied"},
		{"other: granted but denied", ctxOf(other, true), "PurgeQueue", &QueueInput{QueueUrl: url}, "AccessDenied"},
		{"other: owner-only action", ctxOf(other, true), "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: url, Attributes: map[string]string{"DelaySeconds": "1"}}, "AccessDenied"},
		{"other: delete queue", ctxOf(other, true), "DeleteQueue", &QueueInput{QueueUrl: url}, "AccessDenied"},
		{"other: no policy", ctxOf(other, true), "GetQueueAttributes", &GetQueueAttributesInput{QueueUrl: privateURL}, "AccessDenied"},
		{"other: missing queue looks denied", ctxOf(other, true), "SendMessage", &SendMessageInput{QueueUrl: testBase + "/" + testAccount + "/nope", MessageBody: "x"}, "AccessDenied"},
		{"other, unverified: the policy still decides", ctxOf(other, false), "DeleteMessage", &DeleteMessageInput{QueueUrl: url, ReceiptHandle: "h"}, "AccessDenied"},
		{"other, unverified: granted", ctxOf(other, false), "GetQueueAttributes", &GetQueueAttributesInput{QueueUrl: url}, ""},
		{"owner verified: denied", ctxOf(testAccount, true), "PurgeQueue", &QueueInput{QueueUrl: url}, "AccessDenied"},
		{"owner verified: not denied", ctxOf(testAccount, true), "GetQueueAttributes", &GetQueueAttributesInput{QueueUrl: url}, ""},
		{"owner unverified: a deny does not lock the laptop out", ctxOf(testAccount, false), "PurgeQueue", &QueueInput{QueueUrl: url}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var err *protocol.Error
			if _, herr := h.svc.Actions[tt.action].Handle(protocol.WithInfo(h.ctx, tt.info), tt.in); herr != nil {
				if !errors.As(herr, &err) {
					t.Fatalf("not an AWS error: %v", herr)
				}
			}
			switch {
			case tt.code == "" && err != nil && err.Code == "AccessDenied":
				t.Errorf("refused: %v", err)
			case tt.code != "" && (err == nil || err.Code != tt.code || err.Status != 403):
				t.Errorf("got %v, want %s (403)", err, tt.code)
			}
		})
	}
}
