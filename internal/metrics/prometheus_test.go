package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ferrymq/ferry/internal/clock"
)

func TestCollectorCounters(t *testing.T) {
	t.Parallel()
	s := New(Options{Clock: clock.NewFake(t0)})
	for _, r := range []struct {
		ns, metric, queue string
		v                 float64
	}{
		{NamespaceSQS, MessagesSent, "a", 1},
		{NamespaceSQS, MessagesSent, "a", 1},
		{NamespaceSQS, SentMessageSize, "a", 5},
		{NamespaceSQS, SentMessageSize, "a", 7},
		{NamespaceSQS, MessagesReceived, "b", 3},
		{NamespaceSQS, EmptyReceives, "b", 1},
		{NamespaceSQS, MessagesDeleted, "b", 2},
		{"AWS/SNS", "NumberOfMessagesPublished", "a", 9}, // not an SQS series
		{NamespaceSQS, "SomethingElse", "a", 9},          // not exported
	} {
		s.Record(r.ns, r.metric, Queue(r.queue), r.v)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(s, nil, "000000000000", nil))
	want := `
# HELP ferry_sqs_empty_receives_total ReceiveMessage calls that returned no message.
# TYPE ferry_sqs_empty_receives_total counter
ferry_sqs_empty_receives_total{queue="b"} 1
# HELP ferry_sqs_messages_deleted_total Successful deletes with a valid receipt handle, repeats included.
# TYPE ferry_sqs_messages_deleted_total counter
ferry_sqs_messages_deleted_total{queue="b"} 2
# HELP ferry_sqs_messages_received_total Messages returned by ReceiveMessage.
# TYPE ferry_sqs_messages_received_total counter
ferry_sqs_messages_received_total{queue="b"} 3
# HELP ferry_sqs_messages_sent_total Messages added to the queue by SendMessage and SendMessageBatch.
# TYPE ferry_sqs_messages_sent_total counter
ferry_sqs_messages_sent_total{queue="a"} 2
# HELP ferry_sqs_sent_message_size_bytes Size of the messages added to the queue.
# TYPE ferry_sqs_sent_message_size_bytes summary
ferry_sqs_sent_message_size_bytes_sum{queue="a"} 12
ferry_sqs_sent_message_size_bytes_count{queue="a"} 2
`
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	got, _ := io.ReadAll(rec.Body)
	if strings.TrimSpace(string(got)) != strings.TrimSpace(want) {
		t.Errorf("scrape:\n%s\nwant:\n%s", got, want)
	}
}

// A request's latency lands in its label set's histogram without an
// allocation once the label set has been seen.
func TestRequestsObserve(t *testing.T) {
	r := NewRequests()
	r.Observe("sqs", "SendMessage", 200, 3*time.Millisecond)
	r.Observe("sqs", "SendMessage", 200, 30*time.Second)
	r.Observe("sqs", "", 418, time.Millisecond)
	if n := testing.AllocsPerRun(100, func() { r.Observe("sqs", "SendMessage", 200, time.Millisecond) }); n != 0 {
		t.Errorf("Observe allocates %v times", n)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r.Collector())
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, line := range []string{
		// AllocsPerRun observes 101 times 1 ms.
		`ferry_http_request_duration_seconds_bucket{action="SendMessage",code="200",service="sqs",le="0.0005"} 0`,
		`ferry_http_request_duration_seconds_bucket{action="SendMessage",code="200",service="sqs",le="0.001"} 101`,
		`ferry_http_request_duration_seconds_bucket{action="SendMessage",code="200",service="sqs",le="0.005"} 102`,
		`ferry_http_request_duration_seconds_bucket{action="SendMessage",code="200",service="sqs",le="20"} 102`,
		`ferry_http_request_duration_seconds_bucket{action="SendMessage",code="200",service="sqs",le="30"} 103`,
		`ferry_http_request_duration_seconds_count{action="SendMessage",code="200",service="sqs"} 103`,
		`ferry_http_request_duration_seconds_count{action="",code="418",service="sqs"} 1`,
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("scrape lacks %q:\n%s", line, body)
		}
	}
}
