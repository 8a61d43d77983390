package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestPlanJSONChoice(t *testing.T) {
	t.Parallel()
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
		if got := smithyJSON(c) != nil; got != tt.want {
			t.Errorf("%s: %v, want %v", tt.t, got, tt.want)
		}
	}
}

func TestPlanJSONDecode(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

var smithyDecodeCases = []string{
	``, ` `, "\v", `{}`, `null`, `[]`, `{`, `{} {}`, `{"StartTime":1`,
	`{"StartTime":1767323045,"EndTime":1767323045.123,"MaxDatapoints":100}`,
	`{"StartTime":-1.5e3,"EndTime":0,"Unused":"2026-01-02T03:04:05Z"}`, `{"StartTime":"2026-01-02T03:04:05.5+01:00"}`,
	`{"StartTime":1e300}`, `{"StartTime":-62135596801}`, `{"StartTime":253402300799.9}`, `{"StartTime":"yesterday"}`,
	`{"StartTime":true}`, `{"StartTime":null}`, `{"Unused":null}`, `{"StartTime":1,"StartTime":2}`, `{"starttime":5}`,
	`{"StartTime":01}`, `{"StartTime":1.}`, `{"StartTime":"\u0032026-01-02T03:04:05Z"}`,
	`{"MetricDataQueries":[{"Id":"m1","MetricStat":{"Metric":{"Namespace":"AWS/SQS","Dimensions":[{"Name":"QueueName","Value":"jobs"}]},"Period":60,"Stat":"Sum"},"ReturnData":true}]}`,
	`{"MetricDataQueries":[{"id":"e1","Expression":"m1*2","Label":null}]}`, `{"MetricDataQueries":{}}`, `{"MetricDataQueries":[[]]}`,
	`{"MaxDatapoints":"10"}`, `{"MaxDatapoints":1.5}`, `{"MaxDatapoints":2147483648}`, `{"ScanBy":5}`,
	`{"Unknown":{"a":[1,2.5e-3,true,false,null,"s\u0041",{}]},"ScanBy":"x"}`, `{"Unknown":[1,]}`,
	`{"Namespace":"n","MetricData":[{"MetricName":"m","Value":1.5,"Values":[1,"NaN","Infinity","-Infinity",-0,1e-7],` +
		`"Counts":[1e308,1e309],"StatisticValues":{"Sum":"NaN","Minimum":1e-7,"Maximum":"Infinity","SampleCount":2},` +
		`"Timestamp":1767323045.5,"StorageResolution":1,"Unit":"Count"}],"StrictEntityValidation":false}`,
	`{"MetricData":[{"Value":"nan"}]}`, `{"MetricData":[{"Value":"1"}]}`, `{"MetricData":[{"Value":1e999}]}`,
	`{"MetricData":[{"Values":[null]}]}`, `{"MetricData":[{"Value":-}]}`,
	`{"MetricAlarms":[{"AlarmName":"a","Threshold":0.1,"StateUpdatedTimestamp":1767323045,"Metrics":[{"Id":"m"}]}],"NextToken":"t"}`,
	`{"Data":"AAEC","Tags":{"a":"b","a":"c"},"I64":-9223372036854775808,"F32":"-Infinity","Flag":true,"Skip":"x","-":"y"}`,
	`{"F32":3.5e38,"I64":9223372036854775808}`, `{"F32":1e39}`, `{"Data":"!!"}`, `{"Tags":{"\u0041":"b"}}`, "{\"Tags\":{\"a\":\"\xff\"}}",
}

// checkSmithyDecodeSame decodes body into a fresh typ along its plan and
// with the document decoder, and fails unless they agree.
func checkSmithyDecodeSame(t *testing.T, h *Handler, typ reflect.Type, body []byte) {
	t.Helper()
	c, err := h.plans.plan(typ)
	if err != nil || smithyJSON(c) == nil {
		t.Fatalf("%s: no Smithy JSON plan (%v)", typ, err)
	}
	want := reflect.New(typ)
	wantErr := decodeJSONDocument(c, body, want.Elem())
	got := reflect.New(typ)
	gotErr := h.decodeJSONInput(typ, body, got.Interface())
	if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
		t.Fatalf("%s %q: error %v, the document decoder says %v", typ, body, gotErr, wantErr)
	}
	if wantErr == nil && !sameDecoded(got.Interface(), want.Interface()) {
		t.Fatalf("%s %q:\n got %+v\nwant %+v", typ, body, got.Elem().Interface(), want.Elem().Interface())
	}
}

func TestSmithyPlanDecodesAsDocument(t *testing.T) {
	t.Parallel()
	h := &Handler{}
	for _, typ := range cwFuzzTypes {
		for _, body := range smithyDecodeCases {
			checkSmithyDecodeSame(t, h, typ, []byte(body))
		}
	}
}

// TestSmithyPlanCoversSDKShapes guards the speed: what the SDKs send to
// CloudWatch decodes along the plan, without the document decoder.
func TestSmithyPlanCoversSDKShapes(t *testing.T) {
	t.Parallel()
	h := &Handler{}
	for _, tc := range []struct {
		typ  reflect.Type
		body string
	}{
		{reflect.TypeFor[cwPutMetricDataInput](), `{"Namespace":"n","MetricData":[{"MetricName":"m","Dimensions":[{"Name":"a","Value":"b"}],` +
			`"Timestamp":1767323045.123,"Value":1.5,"Values":[1,2.5,"NaN"],"Counts":[1,2,3],"Unit":"Count","StorageResolution":60,` +
			`"StatisticValues":{"SampleCount":1,"Sum":"Infinity","Minimum":-1e-7,"Maximum":3}}]}`},
		{reflect.TypeFor[cwGetMetricDataInput](), `{"MetricDataQueries":[{"Id":"m1","MetricStat":{"Metric":{"Namespace":"AWS/SQS",` +
			`"MetricName":"x","Dimensions":[{"Name":"QueueName","Value":"jobs"}]},"Period":60,"Stat":"Sum"},"ReturnData":true}],` +
			`"StartTime":1767323045,"EndTime":"2026-01-02T03:04:05Z","MaxDatapoints":100}`},
	} {
		c, err := h.plans.plan(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		if !planDecode(smithyJSON(c), []byte(tc.body), reflect.New(tc.typ).Elem()) {
			t.Errorf("%s: %s fell back to the document decoder", tc.typ, tc.body)
		}
		checkSmithyDecodeSame(t, h, tc.typ, []byte(tc.body))
	}
}

// TestSmithyPlanEdges: what only Smithy plans meet.
func TestSmithyPlanEdges(t *testing.T) {
	t.Parallel()
	h := &Handler{}
	// Two members of one name (built here, as vet refuses it in source):
	// the document decoder sets both.
	twice := reflect.StructOf([]reflect.StructField{
		{Name: "A", Type: reflect.TypeFor[float64](), Tag: `json:"X"`},
		{Name: "B", Type: reflect.TypeFor[float64](), Tag: `json:"X"`},
	})
	checkSmithyDecodeSame(t, h, twice, []byte(`{"X":2}`))
	tw := reflect.New(twice)
	if err := h.decodeJSONInput(twice, []byte(`{"X":2}`), tw.Interface()); err != nil || tw.Elem().Field(0).Float() != 2 || tw.Elem().Field(1).Float() != 2 {
		t.Errorf("twice: %v %+v", err, tw.Elem().Interface())
	}
	// More than 64 members: the 65th and on are read by the document decoder.
	fields := []reflect.StructField{{Name: "D", Type: reflect.TypeFor[float64](), Tag: `json:"D"`}}
	for i := range 70 {
		fields = append(fields, reflect.StructField{Name: fmt.Sprintf("S%d", i), Type: reflect.TypeFor[string](), Tag: reflect.StructTag(fmt.Sprintf(`json:"S%d"`, i))})
	}
	wide := reflect.StructOf(fields)
	for _, body := range []string{`{"D":1,"S0":"a","S63":"b"}`, `{"S69":"z","D":"NaN"}`, `{"S69":"z","S69":"y"}`} {
		checkSmithyDecodeSame(t, h, wide, []byte(body))
	}
	// A nil blob in a map is "" (Smithy has no null blob), as on the CBOR wire.
	type blobs struct {
		F float64           `json:"F"`
		M map[string][]byte `json:"M" query:"M,wrapped"`
	}
	a := Define("Blobs", func(_ context.Context, _ *blobs) (*blobs, error) { return nil, nil })
	var b bytes.Buffer
	if err := h.encodeJSONOutput(&b, a, &blobs{M: map[string][]byte{"n": nil, "x": {1}}}); err != nil || b.String() != `{"F":0,"M":{"n":"","x":"AQ=="}}` {
		t.Errorf("blobs: %v %s", err, b.String())
	}
}

// sameDecoded is reflect.DeepEqual where NaN equals NaN: stricter than
// cborEqual, it tells nil from empty and compares timestamps whole.
func sameDecoded(a, b any) bool {
	return reflect.DeepEqual(strictNormalise(reflect.ValueOf(a)), strictNormalise(reflect.ValueOf(b)))
}

func strictNormalise(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return []any{strictNormalise(v.Elem())}
	case reflect.Struct:
		if v.Type() == timeType {
			return v.Interface()
		}
		out := []any{}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out = append(out, strictNormalise(v.Field(i)))
			}
		}
		return out
	case reflect.Slice, reflect.Map:
		if v.IsNil() {
			return nil
		}
		if v.Kind() == reflect.Slice {
			out := []any{}
			for i := range v.Len() {
				out = append(out, strictNormalise(v.Index(i)))
			}
			return out
		}
		out := map[string]any{}
		for _, k := range v.MapKeys() {
			out[k.String()] = strictNormalise(v.MapIndex(k))
		}
		return out
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); f != f {
			return "NaN"
		}
	}
	return v.Interface()
}
