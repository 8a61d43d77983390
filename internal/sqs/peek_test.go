package sqs

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/metrics"
)

func TestSystemAttributes(t *testing.T) {
	sent := time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)
	ms := strconv.FormatInt(sent.UnixMilli(), 10)
	for _, tc := range []struct {
		name string
		m    engine.Message
		want map[string]string
	}{
		{"never received", engine.Message{SenderID: "AIDA", SentAt: sent},
			map[string]string{"SenderId": "AIDA", "SentTimestamp": ms, "ApproximateReceiveCount": "0"}},
		{"dead-lettered FIFO", engine.Message{SenderID: "AIDA", SentAt: sent, FirstReceiveAt: sent.Add(time.Second), ReceiveCount: 3,
			MessageGroupID: "g", SequenceNumber: "00000000000000000007", DeduplicationID: "d", TraceHeader: "Root=1",
			DeadLetterSourceARN: "arn:aws:sqs:us-east-1:000000000000:q.fifo"},
			map[string]string{"SenderId": "AIDA", "SentTimestamp": ms, "ApproximateReceiveCount": "3",
				"ApproximateFirstReceiveTimestamp": strconv.FormatInt(sent.Add(time.Second).UnixMilli(), 10),
				"MessageGroupId":                   "g", "SequenceNumber": "00000000000000000007", "MessageDeduplicationId": "d",
				"AWSTraceHeader": "Root=1", "DeadLetterQueueSourceArn": "arn:aws:sqs:us-east-1:000000000000:q.fifo"}},
	} {
		got := SystemAttributes(&tc.m)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", tc.name, k, got[k], v)
			}
		}
	}
}

// TestPortDeleteRefs: a delete by refs counts as DeleteMessage's deletes,
// those it found only.
func TestPortDeleteRefs(t *testing.T) {
	t.Parallel()
	h, p, rec := newPortHarness(t)
	h.createQueue("q", nil)
	var msgs []engine.NewMessage
	for i := range 3 {
		nm, _ := p.Message(fmt.Sprint("m", i), nil, "sender")
		msgs = append(msgs, nm)
	}
	if _, err := p.Send(h.ctx, queueARNOf("q"), msgs); err != nil {
		t.Fatal(err)
	}
	page, err := h.eng.Peek(h.ctx, testAccount, "q", engine.PeekRequest{Limit: 10})
	if err != nil || len(page.Messages) != 3 {
		t.Fatalf("peek: %v %+v", err, page)
	}
	n, err := p.DeleteRefs(h.ctx, testAccount, "q", []string{page.Messages[0].Ref, page.Messages[2].Ref, "999999"})
	if err != nil || n != 2 {
		t.Fatalf("DeleteRefs: %d %v", n, err)
	}
	rec.want(t, map[string]float64{metrics.MessagesDeleted + " q": 2})
	if _, err := p.DeleteRefs(h.ctx, testAccount, "gone", []string{"1"}); !errors.Is(err, engine.ErrQueueNotFound) {
		t.Fatalf("DeleteRefs of a missing queue: %v", err)
	}
}
