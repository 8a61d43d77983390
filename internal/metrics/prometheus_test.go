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

// The counters of every account's queues are shown, labelled with the
// account: the same queue name in two accounts is two series.
func TestCollectorCounters(t *testing.T) {
	t.Parallel()
	s := New(Options{Clock: clock.NewFake(t0), Account: acct})
	for _, r := range []struct {
		account, ns, metric, queue string
		v                          float64
	}{
		{acct, NamespaceSQS, MessagesSent, "a", 1},
		{acct, NamespaceSQS, MessagesSent, "a", 1},
		{other, NamespaceSQS, MessagesSent, "a", 1},
		{acct, NamespaceSQS, SentMessageSize, "a", 5},
		{acct, NamespaceSQS, SentMessageSize, "a", 7},
		{acct, NamespaceSQS, MessagesReceived, "b", 3},
		{acct, NamespaceSQS, EmptyReceives, "b", 1},
		{other, NamespaceSQS, MessagesDeleted, "b", 2},
		{acct, "AWS/SNS", "NumberOfMessagesPublished", "a", 9}, // not an SQS series
		{acct, NamespaceSQS, "SomethingElse", "a", 9},          // not exported
	} {
		s.Record(r.account, r.ns, r.metric, Queue(r.queue), r.v)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(s, nil, nil, nil))
	want := `
# HELP ferry_sqs_empty_receives_total ReceiveMessage calls that returned no message.
# TYPE ferry_sqs_empty_receives_total counter
ferry_sqs_empty_receives_total{account="123456789012",queue="b"} 1
# HELP ferry_sqs_messages_deleted_total Successful deletes with a valid receipt handle, repeats included.
# TYPE ferry_sqs_messages_deleted_total counter
ferry_sqs_messages_deleted_total{account="222222222222",queue="b"} 2
# HELP ferry_sqs_messages_received_total Messages returned by ReceiveMessage.
# TYPE ferry_sqs_messages_received_total counter
ferry_sqs_messages_received_total{account="123456789012",queue="b"} 3
# HELP ferry_sqs_messages_sent_total Messages added to the queue by SendMessage and SendMessageBatch.
# TYPE ferry_sqs_messages_sent_total counter
ferry_sqs_messages_sent_total{account="123456789012",queue="a"} 2
ferry_sqs_messages_sent_total{account="222222222222",queue="a"} 1
# HELP ferry_sqs_sent_message_size_bytes Size of the messages added to the queue.
# TYPE ferry_sqs_sent_message_size_bytes summary
ferry_sqs_sent_message_size_bytes_sum{account="123456789012",queue="a"} 12
ferry_sqs_sent_message_size_bytes_count{account="123456789012",queue="a"} 2
`
	if got := scrape(reg); strings.TrimSpace(got) != strings.TrimSpace(want) {
		t.Errorf("scrape:\n%s\nwant:\n%s", got, want)
	}
}

// The gauges are read from the engine for every account's queues but the
// hidden accounts', with each account's queue count and stored messages.
func TestCollectorGauges(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	eng := queuesIn(t, clk, []testQueue{{acct, "a", 2}, {acct, "b", 0}, {other, "a", 1}, {"hidden", "h", 5}})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(New(Options{Clock: clk}), eng, []string{"hidden"}, nil))
	got := scrape(reg)
	for _, line := range []string{
		`ferry_sqs_messages_visible{account="123456789012",queue="a"} 2`,
		`ferry_sqs_messages_visible{account="123456789012",queue="b"} 0`,
		`ferry_sqs_messages_visible{account="222222222222",queue="a"} 1`,
		`ferry_sqs_queues{account="123456789012"} 2`,
		`ferry_sqs_queues{account="222222222222"} 1`,
		`ferry_sqs_messages_stored{account="123456789012"} 2`,
		`ferry_sqs_messages_stored{account="222222222222"} 1`,
	} {
		if !strings.Contains(got, line+"\n") {
			t.Errorf("scrape lacks %q:\n%s", line, got)
		}
	}
	if strings.Contains(got, "hidden") {
		t.Errorf("scrape shows the hidden account's queue:\n%s", got)
	}
}

// scrape is what Prometheus reads of reg.
func scrape(reg *prometheus.Registry) string {
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	got, _ := io.ReadAll(rec.Body)
	return string(got)
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
