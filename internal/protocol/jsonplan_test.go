package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestPlanJSONChoice(t *testing.T) {
	pc := &planCache{}
	for _, tt := range []struct {
		t    reflect.Type
		want bool
	}{
		{reflect.TypeFor[sendBatchInput](), false},
		{reflect.TypeFor[receiveOutput](), false},
		{reflect.TypeFor[scalars](), false},
		{reflect.TypeFor[cwDescribeAlarmsInput](), false},
		{reflect.TypeFor[cwDeleteAlarmsInput](), false},
		{reflect.TypeFor[cwGetMetricDataInput](), true},
		{reflect.TypeFor[cwDescribeAlarmsOutput](), true}, // deep: MetricAlarms[].Threshold
		{reflect.TypeFor[cwBlobs](), true},                // float32
	} {
		c, err := pc.plan(tt.t)
		if err != nil {
			t.Fatal(err)
		}
		if got := usesPlanJSON(c); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.t, got, tt.want)
		}
	}
}

func TestPlanJSONDecode(t *testing.T) {
	h := &Handler{}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	body := `{"MetricDataQueries":[{"Id":"m1","MetricStat":{"Metric":{"Namespace":"AWS/SQS","Dimensions":[{"Name":"QueueName","Value":"jobs"}]},"Period":60,"Stat":"Sum"},"ReturnData":true},
		{"id":"e1","Expression":"m1*2","Label":null}],
		"StartTime":1767323045,"EndTime":1767323045.123,"Unused":"2026-01-02T03:04:05Z","MaxDatapoints":100,"Other":{"x":[1,2]}}`
	var got cwGetMetricDataInput
	if err := h.decodeJSONInput(reflect.TypeFor[cwGetMetricDataInput](), []byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want := cwGetMetricDataInput{
		MetricDataQueries: []cwQuery{
			{Id: "m1", ReturnData: ptr(true), MetricStat: &cwMetricStat{
				Metric: cwMetric{Namespace: "AWS/SQS", Dimensions: []cwDimension{{Name: "QueueName", Value: "jobs"}}}, Period: 60, Stat: "Sum"}},
			{Id: "e1", Expression: ptr("m1*2")},
		},
		StartTime: t0, EndTime: t0.Add(123 * time.Millisecond), Unused: &t0, MaxDatapoints: ptr(int32(100)),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}

	var blobs cwBlobs
	if err := h.decodeJSONInput(reflect.TypeFor[cwBlobs](), []byte(`{"Data":"AAEC","Tags":{"a":"b"},"I64":-9223372036854775808,"F32":"-Infinity","Flag":true,"Skip":"x","-":"y"}`), &blobs); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(blobs, cwBlobs{Data: []byte{0, 1, 2}, Tags: map[string]string{"a": "b"}, I64: ptr(int64(math.MinInt64)), F32: float32(math.Inf(-1)), Flag: true}) {
		t.Errorf("blobs %+v", blobs)
	}
	var nan cwStatisticSet
	if err := h.decodeJSONInput(reflect.TypeFor[cwStatisticSet](), []byte(`{"Sum":"NaN","Minimum":1e-7,"Maximum":"Infinity"}`), &nan); err != nil ||
		!math.IsNaN(*nan.Sum) || *nan.Minimum != 1e-7 || !math.IsInf(*nan.Maximum, 1) {
		t.Errorf("non-finite doubles: %v %+v", err, nan)
	}
	for _, empty := range []string{"", "  ", "{}", "null"} {
		var v cwGetMetricDataInput
		if err := h.decodeJSONInput(reflect.TypeFor[cwGetMetricDataInput](), []byte(empty), &v); err != nil || !reflect.DeepEqual(v, cwGetMetricDataInput{}) {
			t.Errorf("%q: %v %+v", empty, err, v)
		}
	}
}

func TestPlanJSONDecodeErrors(t *testing.T) {
	h := &Handler{}
	for _, tt := range []struct {
		body, msg string
	}{
		{`{"MaxDatapoints":"10"}`, "STRING_VALUE can not be converted to an Integer"},
		{`{"MaxDatapoints":1.5}`, "NUMBER_VALUE can not be converted to an Integer"},
		{`{"MaxDatapoints":2147483648}`, "NUMBER_VALUE can not be converted to an Integer"},
		{`{"MaxDatapoints":true}`, "BOOLEAN_VALUE can not be converted to an Integer"},
		{`{"MetricDataQueries":{}}`, "Start of structure or map found where not expected."},
		{`{"MetricDataQueries":[[]]}`, "Start of list found where not expected."},
		{`{"ScanBy":5}`, "NUMBER_VALUE can not be converted to a String"},
		{`{"StartTime":"yesterday"}`, "STRING_VALUE can not be converted to a Timestamp"},
		{`{"StartTime":true}`, "BOOLEAN_VALUE can not be converted to a Timestamp"},
		{`{"StartTime":1e300}`, "is not a valid timestamp"},
		{`{"MetricDataQueries":[{"ReturnData":"yes"}]}`, "STRING_VALUE can not be converted to a Boolean"},
		{`{"MetricDataQueries":[{"MetricStat":{"Period":"x"}}]}`, "STRING_VALUE can not be converted to an Integer"},
		{`[]`, "Start of list found where not expected."},
		{`{"StartTime":1`, "not valid JSON"},
		{`{} {}`, "more than one JSON value"},
	} {
		var v cwGetMetricDataInput
		err := h.decodeJSONInput(reflect.TypeFor[cwGetMetricDataInput](), []byte(tt.body), &v)
		e, ok := err.(*Error)
		if !ok || e.Shape != "SerializationException" || !strings.Contains(e.Message, tt.msg) {
			t.Errorf("%s: got %v, want a SerializationException saying %q", tt.body, err, tt.msg)
		}
	}
	var b cwBlobs
	if err := h.decodeJSONInput(reflect.TypeFor[cwBlobs](), []byte(`{"Data":"!!"}`), &b); err == nil || !strings.Contains(err.Error(), "base64") {
		t.Errorf("bad base64: %v", err)
	}
	if err := h.decodeJSONInput(reflect.TypeFor[cwBlobs](), []byte(`{"F32":"nan"}`), &b); err == nil {
		t.Error("a double accepted the string nan")
	}
}

func TestPlanJSONEncode(t *testing.T) {
	h := &Handler{}
	a := Define("GetMetricData", func(_ context.Context, _ *cwGetMetricDataInput) (*cwGetMetricDataOutput, error) { return nil, nil })
	out := &cwGetMetricDataOutput{MetricDataResults: []cwResult{{
		Id: "m1", Label: "a \"label\"\n<&>\u2028\x01\xff", StatusCode: "Complete",
		Timestamps: []time.Time{time.Unix(1767323045, 0), time.Unix(1767323045, 123e6)},
		Values:     []float64{1, 0.5, 1e-7, 1e21, 123456789, math.NaN(), math.Inf(1), math.Inf(-1), -0.25},
	}}, Messages: []cwMessage{}}
	var b bytes.Buffer
	if err := h.encodeJSONOutput(&b, a, out); err != nil {
		t.Fatal(err)
	}
	want := `{"MetricDataResults":[{"Id":"m1","Label":"a \"label\"\n<&>\u2028\u0001\ufffd","Timestamps":[1767323045,1767323045.123],` +
		`"Values":[1,0.5,1e-7,1e+21,123456789,"NaN","Infinity","-Infinity",-0.25],"StatusCode":"Complete"}]}`
	if b.String() != want {
		t.Errorf("got  %s\nwant %s", b.String(), want)
	}
	for _, nilOut := range []any{nil, (*cwGetMetricDataOutput)(nil)} {
		b.Reset()
		if err := h.encodeJSONOutput(&b, a, nilOut); err != nil || strings.TrimSpace(b.String()) != "{}" {
			t.Errorf("%#v: %v %q", nilOut, err, b.String())
		}
	}
	// Types without timestamps or doubles keep encoding/json's output.
	b.Reset()
	sqsA := Define("ListQueues", func(_ context.Context, _ *listQueuesInput) (*listQueuesOutput, error) { return nil, nil })
	if err := h.encodeJSONOutput(&b, sqsA, &listQueuesOutput{QueueUrls: []string{"u"}}); err != nil || b.String() != "{\"QueueUrls\":[\"u\"]}\n" {
		t.Errorf("encoding/json path: %v %q", err, b.String())
	}
}

// TestJSONStringsAsEncodingJSON: the plan writer quotes strings and writes
// finite doubles exactly as encoding/json does.
func TestJSONStringsAsEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `"\`, "\x00\x1f\x7f", "tab\tnl\ncr\r", "<&>", "\u2028\u2029", "\xff\xfe", "😀", "a\xc3", "\ufffd"} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		if got := string(appendJSONString(nil, s)); got != strings.TrimSuffix(want.String(), "\n") {
			t.Errorf("%q: got %s, want %s", s, got, want.String())
		}
	}
	for _, f := range []float64{0, 1, -1, 0.1, 1e-6, 9.99e-7, 1e20, 1e21, 123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64, -2.5e-300} {
		want, _ := json.Marshal(f)
		if got := string(appendJSONDouble(nil, f, 64)); got != string(want) {
			t.Errorf("%v: got %s, want %s", f, got, want)
		}
	}
	want, _ := json.Marshal(float32(0.1))
	if got := string(appendJSONDouble(nil, float64(float32(0.1)), 32)); got != string(want) {
		t.Errorf("float32: got %s, want %s", got, want)
	}
}

// TestJSONWireCloudWatch: awsJson1_0 with X-Amz-Target
// GraniteServiceVersion20100801.* (what the .NET and other SDKs send to
// CloudWatch) through the handler.
func TestJSONWireCloudWatch(t *testing.T) {
	h, rec, _ := newCWHandler(t)
	rq := request{header: map[string]string{"X-Amz-Target": cwRPCService + ".GetMetricData", "Content-Type": jsonContentType, "X-Amz-Query-Mode": "true"},
		body: `{"StartTime":1767322800,"EndTime":1767326400.5,"MetricDataQueries":[{"Id":"q","Expression":"1"}]}`}
	res, body := rq.do(t, h)
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	want := `{"MetricDataResults":[{"Id":"q","Label":"q","Timestamps":[1767322800,1767326400.5],"Values":[1,0.5,0.00001,-22500000000],"StatusCode":"Complete"}]}`
	if body != want {
		t.Errorf("body %s\nwant %s", body, want)
	}
	if _, in, info := rec.last(); info.Protocol != "json" || !in.(*cwGetMetricDataInput).EndTime.Equal(time.Unix(1767326400, 500e6)) {
		t.Errorf("%s %+v", info.Protocol, in)
	}
	rq = request{header: map[string]string{"X-Amz-Target": cwRPCService + ".DeleteAlarms", "Content-Type": jsonContentType}, body: `{}`}
	res, body = rq.do(t, h)
	if res.StatusCode != 404 || res.Header.Get("x-amzn-query-error") != "ResourceNotFound;Sender" ||
		body != `{"__type":"com.amazonaws.cloudwatch#ResourceNotFound","message":"The named resource does not exist."}`+"\n" {
		t.Errorf("error: %d %q %s", res.StatusCode, res.Header.Get("x-amzn-query-error"), body)
	}
}
