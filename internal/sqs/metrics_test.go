package sqs

import (
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/metrics"
	"github.com/ferrymq/ferry/internal/protocol"
	"github.com/ferrymq/ferry/internal/testwait"
)

// countingRecorder sums the recorded values by metric and queue, the
// account first when it is not testAccount's, and counts the touches by
// account and queue.
type countingRecorder struct {
	mu      sync.Mutex
	sums    map[string]float64
	touches map[string]int
}

func (r *countingRecorder) RecordSample(account, ns, metric string, dim metrics.Dimension, v metrics.Sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ns != metrics.NamespaceSQS {
		panic("namespace " + ns)
	}
	r.sums[accountPrefix(account)+metric+" "+dim.Value] += v.Sum
}

func (r *countingRecorder) Touch(account, queue string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.touches[accountPrefix(account)+queue]++
}

func accountPrefix(account string) string {
	if account == testAccount {
		return ""
	}
	return account + " "
}

// Another account's queue is counted, and touched, in its own account's
// series: the same queue name in the configured account counts nothing.
func TestMetricsPerAccount(t *testing.T) {
	t.Parallel()
	const other = "222222222222"
	h := newHarness(t)
	rec := &countingRecorder{sums: map[string]float64{}, touches: map[string]int{}}
	h.svc = NewService(Config{Account: testAccount, Region: testRegion, Backend: h.eng, Clock: h.clk, QueueURLBase: testBase,
		Metrics: rec, Activity: rec})
	must[CreateQueueOutput](h, "CreateQueue", &CreateQueueInput{QueueName: "q"})
	h.ctx = protocol.WithInfo(h.ctx, &protocol.RequestInfo{Account: other})
	url := must[CreateQueueOutput](h, "CreateQueue", &CreateQueueInput{QueueName: "q"}).QueueUrl
	must[SendMessageOutput](h, "SendMessage", &SendMessageInput{QueueUrl: url, MessageBody: "hello"})
	ten := 10
	got := must[ReceiveMessageOutput](h, "ReceiveMessage", &ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: &ten})
	if len(got.Messages) != 1 {
		t.Fatalf("received %d messages", len(got.Messages))
	}
	must[EmptyOutput](h, "DeleteMessage", &DeleteMessageInput{QueueUrl: url, ReceiptHandle: got.Messages[0].ReceiptHandle})
	must[ReceiveMessageOutput](h, "ReceiveMessage", &ReceiveMessageInput{QueueUrl: url})
	want := map[string]float64{
		other + " " + metrics.MessagesSent + " q":     1,
		other + " " + metrics.SentMessageSize + " q":  5,
		other + " " + metrics.MessagesReceived + " q": 1,
		other + " " + metrics.MessagesDeleted + " q":  1,
		other + " " + metrics.EmptyReceives + " q":    1,
	}
	if !maps.Equal(rec.sums, want) {
		t.Errorf("recorded %v, want %v", rec.sums, want)
	}
	if rec.touches[other+" q"] == 0 || rec.touches["q"] != 0 {
		t.Errorf("touches %v, want %s's q only", rec.touches, other)
	}
}

func TestMetricsDeletes(t *testing.T) {
	t.Parallel()
	intp := func(n int) *int { return &n }
	tests := []struct {
		name  string
		attrs map[string]string
		// deletes uses the handle of the first receive after the message
		// was received twice, the first handle going stale.
		deleteStale bool
		wantDeleted float64
		wantErr     string
	}{
		{name: "current handle, twice", wantDeleted: 2},
		{name: "stale handle of a standard queue still counts", deleteStale: true, wantDeleted: 2},
		{name: "expired handle of a FIFO queue is refused", attrs: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"},
			deleteStale: true, wantErr: "InvalidParameterValue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			rec := &countingRecorder{sums: map[string]float64{}}
			h.svc = NewService(Config{Account: testAccount, Region: testRegion, Backend: h.eng, Clock: h.clk, QueueURLBase: testBase, Metrics: rec})
			name := "q"
			if tt.attrs != nil {
				name = "q.fifo"
			}
			url := must[CreateQueueOutput](h, "CreateQueue", &CreateQueueInput{QueueName: name, Attributes: tt.attrs}).QueueUrl
			send := &SendMessageInput{QueueUrl: url, MessageBody: "hello"}
			if tt.attrs != nil {
				g := "g"
				send.MessageGroupId = &g
			}
			must[SendMessageOutput](h, "SendMessage", send)
			recv := &ReceiveMessageInput{QueueUrl: url, VisibilityTimeout: intp(5)}
			first := must[ReceiveMessageOutput](h, "ReceiveMessage", recv)
			if len(first.Messages) != 1 {
				t.Fatalf("received %d", len(first.Messages))
			}
			handle := first.Messages[0].ReceiptHandle
			if tt.deleteStale {
				h.clk.Advance(5 * time.Second)
				testwait.Some(t, "a second receive", func() []Message { return must[ReceiveMessageOutput](h, "ReceiveMessage", recv).Messages })
			}
			for i := 0; i < 2; i++ {
				_, perr := call[EmptyOutput](h, "DeleteMessage", &DeleteMessageInput{QueueUrl: url, ReceiptHandle: handle})
				switch {
				case tt.wantErr == "" && perr != nil:
					t.Fatalf("delete %d: %s", i, perr.Code)
				case tt.wantErr != "" && (perr == nil || perr.Code != tt.wantErr):
					t.Fatalf("delete %d: %v, want %s", i, perr, tt.wantErr)
				}
			}
			if got := rec.sums[metrics.MessagesDeleted+" "+name]; got != tt.wantDeleted {
				t.Errorf("deleted = %v, want %v", got, tt.wantDeleted)
			}
			if got := rec.sums[metrics.MessagesSent+" "+name]; got != 1 {
				t.Errorf("sent = %v, want 1", got)
			}
			if got := rec.sums[metrics.SentMessageSize+" "+name]; got != 5 {
				t.Errorf("size = %v, want 5", got)
			}
		})
	}
}
