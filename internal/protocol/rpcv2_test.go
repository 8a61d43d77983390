package protocol

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// cborErrorBody is an RPC v2 error body.
type cborErrorBody struct {
	Type    string `json:"__type"`
	Message string `json:"message"`
}

func newCWHandler(t testing.TB) (*Handler, *recorder, *bytes.Buffer) {
	t.Helper()
	rec := &recorder{}
	sqs, sns := testServices(rec)
	logs := &bytes.Buffer{}
	h := &Handler{Services: []*Service{sqs, sns, cwService(rec)}, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	if err := h.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	return h, rec, logs
}

func cborReq(op string, body []byte) request {
	return request{
		path:   "/service/" + cwRPCService + "/operation/" + url.PathEscape(op),
		header: map[string]string{"Smithy-Protocol": "rpc-v2-cbor", "Content-Type": "application/cbor", "Accept": "application/cbor"},
		body:   string(body),
	}
}

func gzipped(t testing.TB, b []byte) string {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestRPCv2Wire(t *testing.T) {
	t.Parallel()
	h, rec, logs := newCWHandler(t)
	pc := &planCache{}
	alarmsIn := encodeCBORValue(t, pc, &cwDescribeAlarmsInput{AlarmNames: []string{"high-cpu"}})
	alarmsOut := hex.EncodeToString(encodeCBORValue(t, pc, &cwDescribeAlarmsOutput{MetricAlarms: cwAlarms}))
	noHeader := cborReq("DescribeAlarms", alarmsIn)
	delete(noHeader.header, "Smithy-Protocol")
	prefixed := cborReq("DescribeAlarms", alarmsIn)
	prefixed.path = "/some/prefix" + prefixed.path
	get := cborReq("DescribeAlarms", nil)
	get.method = http.MethodGet
	gz := cborReq("DescribeAlarms", nil).with("Content-Encoding", "gzip")
	gz.body = gzipped(t, alarmsIn)

	for _, tt := range []struct {
		name       string
		rq         request
		status     int
		body       string // hex of a success body
		errType    string
		queryError string
		action     string
	}{
		{"success", cborReq("DescribeAlarms", alarmsIn), 200, alarmsOut, "", "", "DescribeAlarms"},
		{"found by path and content type alone", noHeader, 200, alarmsOut, "", "", "DescribeAlarms"},
		{"path with a prefix", prefixed, 200, alarmsOut, "", "", "DescribeAlarms"},
		{"empty input body, any content type", cborReq("DescribeAlarms", nil).with("Content-Type", ""), 200, alarmsOut, "", "", "DescribeAlarms"},
		{"gzipped body", gz, 200, alarmsOut, "", "", "DescribeAlarms"},
		{"Accept */*", cborReq("DescribeAlarms", nil).with("Accept", "text/html, */*;q=0.1"), 200, alarmsOut, "", "", "DescribeAlarms"},
		{"empty output", cborReq("PutMetricData", nil), 200, "a0", "", "", "PutMetricData"},
		{"modeled error", cborReq("DeleteAlarms", nil), 404, "", "com.amazonaws.cloudwatch#ResourceNotFound", "ResourceNotFound;Sender", "DeleteAlarms"},
		{"query code differs", cborReq("PutMetricAlarm", encodeCBORValue(t, pc, &cwMetricAlarm{Threshold: ptr(-1.0)})),
			400, "", "com.amazonaws.cloudwatch#InvalidParameterValueException", "InvalidParameterValue;Sender", "PutMetricAlarm"},
		{"unknown operation", cborReq("Nope", nil), 404, "", "com.amazon.coral.service#UnknownOperationException", "UnknownOperationException;Sender", ""},
		{"unknown service", func() request {
			r := cborReq("DescribeAlarms", nil)
			r.path = "/service/AmazonSQS/operation/ListQueues"
			return r
		}(),
			404, "", "com.amazon.coral.service#UnknownOperationException", "UnknownOperationException;Sender", ""},
		{"header without a path", func() request { r := cborReq("DescribeAlarms", nil); r.path = "/"; return r }(),
			404, "", "com.amazon.coral.service#UnknownOperationException", "UnknownOperationException;Sender", ""},
		{"wrong content type", cborReq("DescribeAlarms", alarmsIn).with("Content-Type", "application/json"),
			415, "", "com.amazon.coral.service#UnsupportedMediaTypeException", "UnsupportedMediaTypeException;Sender", ""},
		{"not acceptable", cborReq("DescribeAlarms", nil).with("Accept", "application/json"),
			406, "", "com.amazon.coral.service#NotAcceptableException", "NotAcceptableException;Sender", ""},
		{"GET", get, 405, "", "com.amazon.coral.service#MethodNotAllowedException", "MethodNotAllowed;Sender", ""},
		{"malformed CBOR", cborReq("DescribeAlarms", []byte{0xa1, 0x61}), 400, "", "com.amazon.coral.service#SerializationException", "SerializationException;Sender", ""},
		{"wrong member type", cborReq("DescribeAlarms", hexBytes(t, "a1"+ctext("MaxRecords")+ctext("10"))),
			400, "", "com.amazon.coral.service#SerializationException", "SerializationException;Sender", ""},
		{"bad gzip", cborReq("DescribeAlarms", alarmsIn).with("Content-Encoding", "gzip"),
			400, "", "com.amazon.coral.service#SerializationException", "SerializationException;Sender", ""},
		{"unsupported encoding", cborReq("DescribeAlarms", alarmsIn).with("Content-Encoding", "br"),
			415, "", "com.amazon.coral.service#UnsupportedMediaTypeException", "UnsupportedMediaTypeException;Sender", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec.record(t.Context(), "", nil)
			res, body := tt.rq.do(t, h)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d; body %x", res.StatusCode, tt.status, body)
			}
			if got := res.Header.Get("Smithy-Protocol"); got != "rpc-v2-cbor" {
				t.Errorf("smithy-protocol %q", got)
			}
			if got := res.Header.Get("Content-Type"); got != "application/cbor" {
				t.Errorf("content type %q", got)
			}
			if got := res.Header.Get("x-amzn-query-error"); got != tt.queryError {
				t.Errorf("x-amzn-query-error %q, want %q", got, tt.queryError)
			}
			if res.Header.Get("x-amzn-RequestId") == "" {
				t.Error("no request id")
			}
			if tt.errType == "" {
				if got := hex.EncodeToString([]byte(body)); got != tt.body {
					t.Errorf("body %s\nwant %s", got, tt.body)
				}
			} else {
				e, err := decodeCBORInto[cborErrorBody](t, pc, []byte(body))
				if err != nil || e.Type != tt.errType {
					t.Errorf("error body %+v (%v), want __type %s", e, err, tt.errType)
				}
			}
			if name, _, info := rec.last(); name != tt.action || (name != "" && info.Protocol != "rpcv2-cbor") {
				t.Errorf("action %q (%s), want %q", name, info.Protocol, tt.action)
			}
		})
	}
	if logs.Len() > 0 {
		t.Errorf("client errors were logged as failures:\n%s", logs)
	}
}

// TestRPCv2DoesNotCaptureOthers: the other wires are detected as before
// next to a service that speaks RPC v2.
func TestRPCv2DoesNotCaptureOthers(t *testing.T) {
	t.Parallel()
	h, rec, _ := newCWHandler(t)
	for _, tt := range []struct {
		name   string
		rq     request
		action string
		proto  string
	}{
		{"JSON", jsonReq("ListQueues", `{}`), "ListQueues", "json"},
		{"query", formReq("Action=ListQueues&Version=2012-11-05"), "ListQueues", "query"},
		{"query on an RPC v2-looking path", func() request {
			r := formReq("Action=DescribeAlarms&Version=2010-08-01")
			r.path = "/service/x/operation/y"
			return r
		}(), "DescribeAlarms", "query"},
		{"JSON for CloudWatch", request{header: map[string]string{"X-Amz-Target": cwRPCService + ".DescribeAlarms",
			"Content-Type": jsonContentType}, body: `{"AlarmNames":["a"]}`}, "DescribeAlarms", "json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, body := tt.rq.do(t, h)
			if res.StatusCode != 200 || res.Header.Get("Smithy-Protocol") != "" {
				t.Fatalf("status %d, smithy-protocol %q: %s", res.StatusCode, res.Header.Get("Smithy-Protocol"), body)
			}
			if name, _, info := rec.last(); name != tt.action || info.Protocol != tt.proto {
				t.Errorf("action %s over %s", name, info.Protocol)
			}
		})
	}
}

// TestGzipBodies: a gzipped body is read on every wire, and its inflated
// size is held to the body limit.
func TestGzipBodies(t *testing.T) {
	t.Parallel()
	h, rec, _ := newCWHandler(t)
	h.MaxBodyBytes = 4 << 10
	q := formReq("").with("Content-Encoding", "gzip")
	q.body = gzipped(t, []byte("Action=DescribeAlarms&Version=2010-08-01&AlarmNames.member.1=a"))
	if res, body := q.do(t, h); res.StatusCode != 200 {
		t.Fatalf("query: %d %s", res.StatusCode, body)
	}
	if _, in, _ := rec.last(); !reflect.DeepEqual(in.(*cwDescribeAlarmsInput).AlarmNames, []string{"a"}) {
		t.Errorf("query input %+v", in)
	}
	j := request{header: map[string]string{"X-Amz-Target": "AmazonSQS.CreateQueue", "Content-Type": jsonContentType, "Content-Encoding": "gzip"},
		body: gzipped(t, []byte(`{"QueueName":"z"}`))}
	if res, body := j.do(t, h); res.StatusCode != 200 {
		t.Fatalf("json: %d %s", res.StatusCode, body)
	}
	bomb := cborReq("DescribeAlarms", nil).with("Content-Encoding", "gzip")
	bomb.body = gzipped(t, bytes.Repeat([]byte{0}, 1<<20))
	if len(bomb.body) > 4<<10 {
		t.Fatalf("test body %d bytes is over the limit before inflating", len(bomb.body))
	}
	res, body := bomb.do(t, h)
	if res.StatusCode != 413 || !strings.Contains(body, "RequestEntityTooLarge") {
		t.Errorf("inflating past the limit: %d %q", res.StatusCode, body)
	}
}
