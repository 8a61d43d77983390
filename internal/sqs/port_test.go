package sqs

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/metrics"
	"github.com/ferrymq/ferry/internal/protocol"
)

// newPortHarness is a harness whose service and port share a recorder.
func newPortHarness(t *testing.T) (*harness, *Port, *countingRecorder) {
	h := newHarness(t)
	rec := &countingRecorder{sums: map[string]float64{}}
	cfg := Config{Account: testAccount, Region: testRegion, Backend: h.eng, Clock: h.clk, QueueURLBase: testBase, Metrics: rec}
	h.svc = NewService(cfg)
	return h, NewPort(cfg), rec
}

// want checks the sums of the metrics named "metric queue".
func (r *countingRecorder) want(t *testing.T, sums map[string]float64) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for metric, want := range sums {
		if got := r.sums[metric]; got != want {
			t.Errorf("%s = %v, want %v", metric, got, want)
		}
	}
}

func queueARNOf(name string) string { return queueARN(testRegion, testAccount, name) }

// wantRefusal checks that err is SQS's refusal with code and message.
func wantRefusal(t *testing.T, err error, code, message string) {
	t.Helper()
	var perr *protocol.Error
	if !errors.As(err, &perr) || perr.Code != code || perr.Message != message {
		t.Fatalf("got %v, want refusal %s %q", err, code, message)
	}
}

// TestPortMessageAsSendMessage checks that a message built by the port
// carries the digests SendMessage answers for the same body and
// attributes, and that the port refuses what SQS's limits refuse, with
// the message built all the same.
func TestPortMessageAsSendMessage(t *testing.T) {
	t.Parallel()
	h, p, _ := newPortHarness(t)
	url := h.createQueue("q", nil)
	attrs := map[string]MessageAttributeValue{
		"a": {DataType: "String", StringValue: "x"},
		"b": {DataType: "Binary", BinaryValue: []byte{1, 2}},
	}
	out := must[SendMessageOutput](h, "SendMessage", &SendMessageInput{QueueUrl: url, MessageBody: "hello", MessageAttributes: attrs})
	nm, err := p.Message("hello", []engine.MessageAttribute{
		{Name: "a", DataType: "String", StringValue: "x"},
		{Name: "b", DataType: "Binary", BinaryValue: []byte{1, 2}},
	}, "sender")
	if err != nil {
		t.Fatal(err)
	}
	if nm.MD5OfBody != out.MD5OfMessageBody || nm.MD5OfAttrs != out.MD5OfMessageAttributes || nm.MD5OfSysAttrs != "" || nm.SenderID != "sender" {
		t.Errorf("port message %+v, SendMessage answered %+v", nm, out)
	}

	many := make([]engine.MessageAttribute, maxMessageAttributes+1)
	for i := range many {
		many[i] = engine.MessageAttribute{Name: fmt.Sprintf("a%02d", i), DataType: "String", StringValue: "v"}
	}
	nm, err = p.Message("crowded", many, "sender")
	wantRefusal(t, err, "InvalidParameterValue", "Number of message attributes [11] exceeds the maximum allowed [10].")
	if nm.Body != "crowded" || len(nm.Attributes) != len(many) || nm.MD5OfAttrs == "" {
		t.Errorf("refused message not built: %+v", nm)
	}
	if _, err := p.Message("ten", many[:maxMessageAttributes], "sender"); err != nil {
		t.Errorf("ten attributes refused: %v", err)
	}
}

// TestPortSend checks that the port finds queues as SQS does, refuses
// with SQS's answer to a service, drops deduplication ids for standard
// queues and counts what it enqueues as SendMessage counts.
func TestPortSend(t *testing.T) {
	t.Parallel()
	h, p, rec := newPortHarness(t)
	h.createQueue("std", nil)
	h.createQueue("q.fifo", map[string]string{"FifoQueue": "true"})
	const missing = "The specified queue does not exist or you do not have access to it."
	for _, tt := range []struct {
		name, arn string
		refused   bool
	}{
		{"standard queue", queueARNOf("std"), false},
		{"FIFO queue", queueARNOf("q.fifo"), false},
		{"missing queue", queueARNOf("gone"), true},
		{"other account", queueARN(testRegion, "000000000000", "std"), true},
		{"other region", queueARN("us-east-1", testAccount, "std"), true},
		{"other service", "arn:aws:sns:" + testRegion + ":" + testAccount + ":std", true},
		{"not an ARN", "std", true},
		{"invalid name", queueARNOf("a:b"), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			nm, _ := p.Message("body", nil, "sender")
			nm.MessageGroupID, nm.DeduplicationID = "g", "d-"+tt.name
			res, err := p.Send(h.ctx, tt.arn, []engine.NewMessage{nm})
			if tt.refused {
				wantRefusal(t, err, "AWS.SimpleQueueService.NonExistentQueue", missing)
				return
			}
			if err != nil || len(res) != 1 || res[0].MessageID == "" {
				t.Fatalf("Send: %v %+v", err, res)
			}
		})
	}
	// The FIFO queue deduplicates a second copy; the standard queue took
	// none of the ids and so keeps both.
	nm, _ := p.Message("body", nil, "sender")
	nm.MessageGroupID, nm.DeduplicationID = "g", "d-FIFO queue"
	for _, q := range []string{"q.fifo", "std"} {
		msgs := []engine.NewMessage{nm}
		if _, err := p.Send(h.ctx, queueARNOf(q), msgs); err != nil {
			t.Fatal(err)
		}
		if want := map[string]string{"q.fifo": "d-FIFO queue", "std": ""}[q]; msgs[0].DeduplicationID != want {
			t.Errorf("%s: deduplication id %q, want %q", q, msgs[0].DeduplicationID, want)
		}
	}
	rec.want(t, map[string]float64{
		metrics.MessagesSent + " std":                1 + 1,
		metrics.SentMessageSize + " std":             4 + 4,
		metrics.MessagesSent + " q.fifo":             1,
		metrics.DeduplicatedSentMessages + " q.fifo": 1,
		metrics.MessagesSent + " gone":               0,
	})
}

// TestPortSendMany checks that each part of a joint send is answered as
// Send answers it alone and counted when it was written.
func TestPortSendMany(t *testing.T) {
	t.Parallel()
	h, p, rec := newPortHarness(t)
	h.createQueue("a", nil)
	h.createQueue("b", nil)
	nm, _ := p.Message("body", nil, "sender")
	nm.DeduplicationID = "d"
	arns := []string{queueARNOf("a"), queueARN("us-east-1", testAccount, "a"), queueARNOf("gone"), queueARNOf("b")}
	batches := [][]engine.NewMessage{{nm, nm}, {nm}, {nm}, {nm}}
	outs, err := p.SendMany(h.ctx, arns, batches)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != len(arns) {
		t.Fatalf("%d outcomes for %d parts", len(outs), len(arns))
	}
	for i, want := range []int{2, -1, -1, 1} {
		if want < 0 {
			wantRefusal(t, outs[i].Err, "AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist or you do not have access to it.")
			continue
		}
		if outs[i].Err != nil || len(outs[i].Results) != want {
			t.Errorf("part %d: %+v", i, outs[i])
		}
		for _, m := range batches[i] {
			if m.DeduplicationID != "" {
				t.Errorf("part %d: a standard queue kept a deduplication id", i)
			}
		}
	}
	rec.want(t, map[string]float64{
		metrics.MessagesSent + " a": 2,
		metrics.MessagesSent + " b": 1,
	})
}

func TestPortMovedByTask(t *testing.T) {
	t.Parallel()
	_, p, rec := newPortHarness(t)
	m := &engine.NewMessage{Body: "moved", Attributes: []engine.MessageAttribute{{Name: "n", DataType: "String", StringValue: "v"}}}
	p.MovedByTask(testAccount, "dst", m)
	p.MovedByTask("000000000000", "dst", m) // another account's queue: not one of SQS's
	rec.want(t, map[string]float64{
		metrics.MessagesSent + " dst":    1,
		metrics.SentMessageSize + " dst": float64(len("moved") + len("nStringv")),
	})
}
