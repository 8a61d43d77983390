package sqs

import (
	"sync"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/metrics"
	"github.com/ferrymq/ferry/internal/testwait"
)

// countingRecorder sums the recorded values by metric and queue.
type countingRecorder struct {
	mu   sync.Mutex
	sums map[string]float64
}

func (r *countingRecorder) Record(ns, metric string, dim metrics.Dimension, v float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ns != metrics.NamespaceSQS {
		panic("namespace " + ns)
	}
	r.sums[metric+" "+dim.Value] += v
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
