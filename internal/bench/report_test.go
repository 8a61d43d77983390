package bench

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	smithy "github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

func TestFeature(t *testing.T) {
	status := func(code int) error {
		return &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: code}}, Err: errors.New("boom")}
	}
	cases := []struct {
		name        string
		err         error
		unsupported bool
	}{
		{"400 answer", status(400), true},
		{"404 answer", status(404), true},
		{"500 answer", status(500), false},
		{"503 answer", status(503), false},
		{"modelled error without status", &smithy.GenericAPIError{Code: "InvalidAction"}, true},
		{"no answer at all", errors.New("connection refused"), false},
	}
	for _, tc := range cases {
		err := feature("Op", tc.err)
		var u *unsupportedError
		if got := errors.As(err, &u); got != tc.unsupported {
			t.Errorf("%s: unsupported=%v (%v)", tc.name, got, err)
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("%s: %v does not wrap the cause", tc.name, err)
		}
	}
	if feature("Op", nil) != nil {
		t.Error("nil error became one")
	}
}

// recordingTransport keeps the request it was given.
type recordingTransport struct{ req *http.Request }

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r.req = req
	return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
}

func TestPlainBodiesHidesWriterTo(t *testing.T) {
	rec := &recordingTransport{}
	body := io.NopCloser(bytes.NewReader([]byte("payload"))) // a WriterTo, as the SDK's
	if _, ok := body.(io.WriterTo); !ok {
		t.Fatal("test body should be a WriterTo")
	}
	req, _ := http.NewRequest("POST", "http://127.0.0.1:1/", nil)
	req.Body = body
	if _, err := (PlainBodies{rec}).RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if _, ok := rec.req.Body.(io.WriterTo); ok {
		t.Error("the transport still sees a WriterTo")
	}
	if req.Body != body {
		t.Error("the caller's request was changed")
	}
	if b, _ := io.ReadAll(rec.req.Body); string(b) != "payload" {
		t.Errorf("body read as %q", b)
	}
}

func f(v float64) *float64 { return &v }

func sampleColumns() []Column {
	return []Column{
		{Broker: "ceiling", Report: &Report{Results: []Result{
			{Name: "send", Status: StatusCeiling, Rate: 24691.2, Unit: "msgs/s", Latency: "request", P50ms: f(0.2), P99ms: f(1),
				ServerCPU: f(20), ServerCPUPerRequest: f(18), ClientCPU: f(50), PerReceive: f(10), Note: "holds nothing; not verified"},
			{Name: "long-poll-wakeup", Status: StatusUnsupported, Note: "the ceiling: it holds nothing"},
			{Name: "sns-fanout", Status: StatusCeiling, Rate: 4000, Unit: "publishes/s", Note: "holds nothing; not verified"},
		}}},
		{Broker: "ferry", Report: &Report{Results: []Result{
			{Name: "send", Status: StatusOK, Rate: 12345.6, Unit: "msgs/s", Messages: 123456, Latency: "request", P50ms: f(0.4), P99ms: f(3.2),
				ServerCPU: f(80), ServerCPUPerRequest: f(70.25), ClientCPU: f(95), PerReceive: f(9.5)},
			{Name: "long-poll-wakeup", Status: StatusOK, Rate: 19.9, Unit: "msgs/s", Latency: "wake-up", P50ms: f(0.1), P99ms: f(0.3)},
			{Name: "sns-fanout", Status: StatusOK, Rate: 2000, Unit: "publishes/s", Unverified: 1234},
		}}},
		{Broker: "peer <x>", Report: &Report{Results: []Result{
			{Name: "send", Status: StatusFail, Rate: 99999, Unit: "msgs/s", Lost: 3, Errors: 2, Note: "first error: a|b"},
			{Name: "long-poll-wakeup", Status: StatusOK, Rate: 19.5, Unit: "msgs/s", Latency: "wake-up", P50ms: f(48), P99ms: f(99)},
			{Name: "sns-fanout", Status: StatusUnsupported, Note: "CreateTopic: InvalidAction"},
		}}},
	}
}

// nodeColumns are one broker alone and on three nodes with a database.
func nodeColumns() []Column {
	return []Column{
		{Broker: "embedded", Report: &Report{Results: []Result{
			{Name: "send", Status: StatusOK, Rate: 8000, Unit: "msgs/s", Latency: "request", P50ms: f(2), P99ms: f(6), ServerCPU: f(200)},
			{Name: "send-batch", Status: StatusOK, Rate: 40000, Unit: "msgs/s", ServerCPU: f(40)},
			{Name: "receive-delete", Status: StatusFail, Rate: 1, Unit: "msgs/s"},
		}}},
		{Broker: "3 nodes", Report: &Report{Results: []Result{
			{Name: "send", Status: StatusOK, Rate: 2000, Unit: "msgs/s", Latency: "request", P50ms: f(5), P99ms: f(20), ServerCPU: f(150), DBCPU: f(250)},
			{Name: "send-batch", Status: StatusError, Note: "no"},
			{Name: "receive-delete", Status: StatusOK, Rate: 1, Unit: "msgs/s"},
		}}},
	}
}

func TestWriteMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMarkdown(&b, Page{Title: "Peers", Script: "scripts/compare-peers", Image: "results.svg", Facts: []string{"CPU: test"}},
		sampleColumns()); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"# Peers\n",
		"`scripts/compare-peers` reproduces the page",
		"![results](results.svg)",
		"- CPU: test",
		"The ceiling is `ferry ceiling`",
		"| Scenario | Latency measured | ceiling | ferry | peer &lt;x> |",
		"| send | request | 24,691 msgs/s<br>p50 0.200ms, p99 1.0ms | 12,346 msgs/s<br>p50 0.400ms, p99 3.2ms<br>50% of the ceiling | " +
			"**FAIL** 99,999 msgs/s<br>lost 3, dup 0, out of order 0, errors 2<br>405% of the ceiling |",
		"| long-poll-wakeup | wake-up | unsupported | 19.9 msgs/s<br>p50 0.100ms, p99 0.300ms | 19.5 msgs/s<br>p50 48.0ms, p99 99.0ms |",
		"| sns-fanout |  | 4,000 publishes/s | 2,000 publishes/s<br>1,234 not received in time, still queued<br>50% of the ceiling | unsupported |",
		"### CPU and round trips",
		"| Scenario | ceiling | ferry | peer &lt;x> |",
		"| send | server 20.0 µs/msg, 18.0 µs/req<br>client 50.0 µs/msg<br>10.00 msgs/receive | " +
			"server 80.0 µs/msg, 70.2 µs/req<br>client 95.0 µs/msg<br>9.50 msgs/receive | – |",
		"| long-poll-wakeup | unsupported | – | – |",
		`first error: a\|b`,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	// The ceiling's results say what they are in the text above the
	// tables, not each in the notes.
	if strings.Contains(md, "**ceiling, send**") {
		t.Errorf("the ceiling's note is among the notes:\n%s", md)
	}
	// Rows follow the catalogue, not the reports.
	if strings.Index(md, "| send |") > strings.Index(md, "| long-poll-wakeup |") {
		t.Error("rows out of catalogue order")
	}
}

// TestWriteMarkdownRatios: each broker against the first, for the
// scenarios both ran correctly; the database's CPU counts with the nodes'.
func TestWriteMarkdownRatios(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMarkdown(&b, Page{Title: "Nodes", Script: "scripts/bench-postgres", Image: "postgres.svg", Ratios: true},
		nodeColumns()); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"![results](postgres.svg)",
		"| send | request | 8,000 msgs/s<br>p50 2.0ms, p99 6.0ms | 2,000 msgs/s<br>p50 5.0ms, p99 20.0ms |",
		"| send | server 200 µs/msg | server 150 µs/msg<br>db 250 µs/msg |",
		"| send-batch | server 40.0 µs/msg | error |",
		"### Against embedded",
		"| Scenario | 3 nodes ÷ embedded |",
		"| send | rate 0.25×, p50 2.50×, CPU 2.00× |",
		"| send-batch | error |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	// A scenario the first broker failed has nothing to be compared with.
	if strings.Contains(md, "| receive-delete | rate") {
		t.Errorf("ratio against a failed result:\n%s", md)
	}
	// Without a ceiling there is no share of it.
	if strings.Contains(md, "of the ceiling") || strings.Contains(md, "The ceiling is") {
		t.Errorf("a ceiling where there is none:\n%s", md)
	}
	b.Reset()
	if err := WriteMarkdown(&b, Page{Title: "Peers"}, sampleColumns()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "### Against") {
		t.Error("ratios written though not asked for")
	}
	// With the ceiling first, the ratios are the brokers' against the
	// first broker: the ceiling has its share in the table already.
	b.Reset()
	if err := WriteMarkdown(&b, Page{Title: "Peers", Ratios: true}, sampleColumns()); err != nil {
		t.Fatal(err)
	}
	md = b.String()
	for _, want := range []string{"### Against ferry", "| Scenario | peer &lt;x> ÷ ferry |", "| send | FAIL |", "| long-poll-wakeup | rate 0.98×, p50 480.00× |"} {
		if !strings.Contains(md, want) {
			t.Errorf("ratios with a ceiling lack %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "÷ ceiling") || strings.Contains(md, "ceiling ÷") {
		t.Errorf("the ceiling among the ratios:\n%s", md)
	}
}

func TestWriteSVG(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSVG(&b, sampleColumns()); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	wellFormed(t, svg)
	for _, want := range []string{"peer &lt;x&gt;", ">FAIL<", ">unsupported<", "12,346", "48.0ms", "lower is better", "(1,234 still queued)", "(ceiling: holds nothing, not verified)"} {
		if !strings.Contains(svg, want) {
			t.Errorf("svg lacks %q", want)
		}
	}
	// Each panel has its own scale: both brokers' best bars are full width.
	if n := strings.Count(svg, `width="520.0"`); n != 3 {
		t.Errorf("%d full-width bars, want 3 (send, long-poll-wakeup, sns-fanout)", n)
	}
}

func TestLine(t *testing.T) {
	cases := []struct {
		r    Result
		want []string
	}{
		{Result{Name: "send", Status: StatusOK, Rate: 1234, Unit: "msgs/s", Messages: 5, Latency: "request", P50ms: f(1), P99ms: f(2)},
			[]string{"send", "ok", "1,234 msgs/s", "p50    1.0ms", "(request)", "lost=0 dup=0 ooo=0 err=0"}},
		{Result{Name: "send", Status: StatusFail, Rate: 1, Unit: "msgs/s", Lost: 1, Unverified: 4, Note: "why"},
			[]string{"FAIL", "lost=1", "unverified=4", "[why]"}},
		{Result{Name: "send", Status: StatusOK, Rate: 1, Unit: "msgs/s", ServerCPU: f(123.45), DBCPU: f(6)},
			[]string{"cpu=123.5µs/msg db-cpu=6.0µs/msg"}},
		{Result{Name: "produce-consume", Status: StatusOK, Rate: 1, Unit: "msgs/s", PerReceive: f(2.071)},
			[]string{"msgs/receive=2.07", "requests=0"}},
		{Result{Name: "send", Status: StatusCeiling, Rate: 1, Unit: "msgs/s", ServerCPU: f(10), ServerCPUPerRequest: f(9.04),
			ClientCPU: f(30), Requests: 12, Note: "holds nothing; not verified"},
			[]string{"ceiling", "cpu=10.0µs/msg cpu=9.0µs/req client-cpu=30.0µs/msg requests=12", "[holds nothing; not verified]"}},
		{Result{Name: "sns-fanout", Status: StatusUnsupported, Note: "CreateTopic: no"},
			[]string{"unsupported", "CreateTopic: no"}},
	}
	for _, tc := range cases {
		line := tc.r.Line()
		for _, w := range tc.want {
			if !strings.Contains(line, w) {
				t.Errorf("%q lacks %q", line, w)
			}
		}
	}
}

func TestThousands(t *testing.T) {
	for v, want := range map[float64]string{0: "0.0", 19.94: "19.9", 100: "100", 999.5: "1,000", 12345.6: "12,346", 1234567: "1,234,567"} {
		if got := Thousands(v); got != want {
			t.Errorf("Thousands(%v) = %q, want %q", v, got, want)
		}
	}
}
