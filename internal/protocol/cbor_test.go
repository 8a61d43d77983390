package protocol

import (
	"bytes"
	"encoding/hex"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// hexBytes reads hex with spaces for readability.
func hexBytes(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func decodeCBORInto[T any](t testing.TB, pc *planCache, body []byte) (*T, error) {
	t.Helper()
	c, err := pc.plan(reflect.TypeFor[T]())
	if err != nil {
		t.Fatal(err)
	}
	v := new(T)
	return v, decodeCBOR(c, body, reflect.ValueOf(v).Elem())
}

func encodeCBORValue(t testing.TB, pc *planCache, v any) []byte {
	t.Helper()
	rv := reflect.ValueOf(v)
	c, err := pc.plan(rv.Type().Elem())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	encodeCBOR(&b, c, rv.Elem())
	return b.Bytes()
}

// cborText and friends spell test vectors.
func ctext(s string) string {
	var e cborEncoder
	e.text(s)
	return hex.EncodeToString(e.b)
}

func TestCBORDecode(t *testing.T) {
	t.Parallel()
	pc := &planCache{}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) // 1767323045 = 0x695735a5
	blobs := []struct {
		name string
		body string
		want cwBlobs
	}{
		{"empty body", "", cwBlobs{}},
		{"empty map", "a0", cwBlobs{}},
		{"indefinite empty map", "bf ff", cwBlobs{}},
		{"bytes, definite", "a1" + ctext("Data") + "43 010203", cwBlobs{Data: []byte{1, 2, 3}}},
		{"bytes, indefinite chunks", "a1" + ctext("Data") + "5f 4101 42 0203 ff", cwBlobs{Data: []byte{1, 2, 3}}},
		{"empty bytes", "a1" + ctext("Data") + "40", cwBlobs{Data: []byte{}}},
		{"text key in chunks", "a1 7f 62 4461 62 7461 ff 41 09", cwBlobs{Data: []byte{9}}},
		{"map", "a1" + ctext("Tags") + "a2" + ctext("a") + ctext("1") + ctext("b") + ctext(""), cwBlobs{Tags: map[string]string{"a": "1", "b": ""}}},
		{"indefinite map", "a1" + ctext("Tags") + "bf" + ctext("k") + "7f 61 76 61 77 ff ff", cwBlobs{Tags: map[string]string{"k": "vw"}}},
		{"negative int64", "a1" + ctext("I64") + "3b 7fffffffffffffff", cwBlobs{I64: ptr(int64(math.MinInt64))}},
		{"uint64 max int64", "a1" + ctext("I64") + "1b 7fffffffffffffff", cwBlobs{I64: ptr(int64(math.MaxInt64))}},
		{"half float", "a1" + ctext("F32") + "f9 3e00", cwBlobs{F32: 1.5}},
		{"half subnormal", "a1" + ctext("F32") + "f9 0001", cwBlobs{F32: float32(math.Ldexp(1, -24))}},
		{"single float", "a1" + ctext("F32") + "fa 3fc00000", cwBlobs{F32: 1.5}},
		{"double", "a1" + ctext("F32") + "fb 3ff8000000000000", cwBlobs{F32: 1.5}},
		{"int as a float", "a1" + ctext("F32") + "18 64", cwBlobs{F32: 100}},
		{"negative int as a float", "a1" + ctext("F32") + "20", cwBlobs{F32: -1}},
		{"bools", "a2" + ctext("Flag") + "f5" + ctext("I64") + "f6", cwBlobs{Flag: true}},
		{"null and undefined leave members unset", "a3" + ctext("Data") + "f6" + ctext("Tags") + "f7" + ctext("I64") + "f6", cwBlobs{}},
		{"json:\"-\" is not a member", "a1" + ctext("Skip") + ctext("x"), cwBlobs{}},
		{"nor is the empty name", "a1 7f ff" + ctext("x"), cwBlobs{}},
		{"untagged name is the Go name", "a1" + ctext("Plain") + ctext("x"), cwBlobs{Plain: "x"}},
		{"unknown members are skipped", "a2" + ctext("Other") + "bf 61 78 9f 01 c1 02 5f 41 00 ff ff ff" + ctext("Flag") + "f5", cwBlobs{Flag: true}},
		{"other tags are looked through", "a1" + ctext("Plain") + "d8 20" + ctext("x"), cwBlobs{Plain: "x"}},
	}
	for _, tt := range blobs {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeCBORInto[cwBlobs](t, pc, hexBytes(t, tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("got %+v, want %+v", *got, tt.want)
			}
		})
	}

	times := []struct {
		name string
		body string
		want time.Time
	}{
		{"tag 1 int", "c1 1a 695735a5", t0},
		{"tag 1 double", "c1 fb " + hex.EncodeToString(f64bytes(1767323045.25)), t0.Add(250 * time.Millisecond)},
		{"tag 1 single", "c1 fa " + hex.EncodeToString(f32bytes(1.5)), time.Unix(1, 500e6).UTC()},
		{"tag 1 negative", "c1 20", time.Unix(-1, 0).UTC()},
		{"untagged number", "1a 695735a5", t0},
	}
	for _, tt := range times {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeCBORInto[cwGetMetricDataInput](t, pc, hexBytes(t, "a2"+ctext("StartTime")+tt.body+ctext("Unused")+tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if !got.StartTime.Equal(tt.want) || got.Unused == nil || !got.Unused.Equal(tt.want) {
				t.Errorf("got %v / %v, want %v", got.StartTime, got.Unused, tt.want)
			}
		})
	}

	// A whole CloudWatch-like request with nested lists and structures.
	q := "a3" + ctext("MetricDataQueries") + "9f" +
		"a2" + ctext("Id") + ctext("m1") + ctext("MetricStat") +
		"a2" + ctext("Metric") + "a2" + ctext("MetricName") + ctext("N") + ctext("Dimensions") + "81 a2" + ctext("Name") + ctext("Q") + ctext("Value") + ctext("jobs") +
		ctext("Period") + "18 3c" +
		"ff" + ctext("EndTime") + "c1 1a 695735a5" + ctext("MaxDatapoints") + "19 0100"
	got, err := decodeCBORInto[cwGetMetricDataInput](t, pc, hexBytes(t, q))
	if err != nil {
		t.Fatal(err)
	}
	want := cwGetMetricDataInput{
		MetricDataQueries: []cwQuery{{Id: "m1", MetricStat: &cwMetricStat{
			Metric: cwMetric{MetricName: "N", Dimensions: []cwDimension{{Name: "Q", Value: "jobs"}}}, Period: 60,
		}}},
		EndTime: t0, MaxDatapoints: ptr(int32(256)),
	}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("got %+v\nwant %+v", *got, want)
	}
}

func f64bytes(f float64) []byte {
	var e cborEncoder
	e.float(f)
	return e.b[1:]
}

func f32bytes(f float32) []byte {
	b := math.Float32bits(f)
	return []byte{byte(b >> 24), byte(b >> 16), byte(b >> 8), byte(b)}
}

func TestCBORDecodeErrors(t *testing.T) {
	t.Parallel()
	pc := &planCache{}
	deep := strings.Repeat("81", 100) + "00"
	for _, tt := range []struct {
		name, body, msg string
	}{
		{"top level not a map", "80", "START_ARRAY can not be converted to a Structure"},
		{"truncated head", "a1 78", "ends in the middle"},
		{"truncated string", "a1" + ctext("Plain") + "65 6162", "ends in the middle"},
		{"huge array length", "a1" + ctext("Other") + "9b ffffffffffffffff", "ends in the middle"},
		{"huge map length", "bb 7fffffffffffffff", "ends in the middle"},
		{"huge list length", "a1" + ctext("MetricDataQueries") + "9a ffffffff", "ends in the middle"},
		{"huge string length", "a1" + ctext("Plain") + "7b 7fffffffffffffff", "ends in the middle"},
		{"missing break", "bf" + ctext("Plain") + ctext("x"), "ends in the middle"},
		{"trailing bytes", "a0 00", "1 bytes after"},
		{"stray break", "ff", "unexpected break"},
		{"reserved info", "a1" + ctext("Plain") + "7c", "reserved additional information 28"},
		{"indefinite int", "a1" + ctext("I64") + "1f", "reserved additional information 31"},
		{"key not text", "a1 01 02", "map key that is not a text string"},
		{"nested too deep", "a1" + ctext("Other") + deep, "nests deeper than 64"},
		{"tags nest too deep", "a1" + ctext("Other") + strings.Repeat("c6", 100) + "00", "nests deeper than 64"},
		{"invalid UTF-8", "a1" + ctext("Plain") + "62 c328", "not valid UTF-8"},
		// What JSON refuses in checkJSONText, CBOR refuses too: text that
		// is not UTF-8 is never handed on changed.
		{"invalid bytes", "a1" + ctext("Plain") + "64 6f6bfffe", "not valid UTF-8"},
		{"truncated sequence", "a1" + ctext("Plain") + "62 e282", "not valid UTF-8"},
		{"overlong encoding", "a1" + ctext("Plain") + "62 c0af", "not valid UTF-8"},
		{"surrogate in UTF-8", "a1" + ctext("Plain") + "63 eda080", "not valid UTF-8"},
		{"invalid map key", "a1" + ctext("Tags") + "a1 61ff 6176", "not valid UTF-8"},
		{"invalid chunk", "a1" + ctext("Plain") + "7f 61ff ff", "not valid UTF-8"},
		{"mixed chunks", "a1" + ctext("Plain") + "7f 41 61 ff", "chunk of an indefinite-length string"},
		{"nested indefinite chunk", "a1" + ctext("Plain") + "7f 7f ff ff", "chunk of an indefinite-length string"},
		{"string for an int", "a1" + ctext("I64") + ctext("1"), "STRING_VALUE can not be converted to a Long"},
		{"float for an int", "a1" + ctext("I64") + "f9 3c00", "NUMBER_VALUE can not be converted to a Long"},
		{"int out of range", "a1" + ctext("I64") + "1b 8000000000000000", "out of range"},
		{"int32 out of range", "a1" + ctext("MaxDatapoints") + "1a 80000000", "out of range"},
		{"text for bytes", "a1" + ctext("Data") + ctext("AAEC"), "STRING_VALUE can not be converted to a Blob"},
		{"int for bool", "a1" + ctext("Flag") + "01", "NUMBER_VALUE can not be converted to a Boolean"},
		{"array for a map", "a1" + ctext("Tags") + "80", "START_ARRAY can not be converted to a Map"},
		{"map for a list", "a1" + ctext("MetricDataQueries") + "a0", "START_MAP can not be converted to a List"},
		{"wrong tag for a time", "a1" + ctext("StartTime") + "c0" + ctext("2026-01-02T03:04:05Z"), "tag 0"},
		{"text for a time", "a1" + ctext("StartTime") + ctext("2026"), "STRING_VALUE can not be converted to a Timestamp"},
		{"time out of range", "a1" + ctext("StartTime") + "c1 fb 7ff0000000000000", "not a valid timestamp"},
		{"bool for a double", "a1" + ctext("F32") + "f4", "BOOLEAN_VALUE can not be converted to a Double"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := hexBytes(t, tt.body)
			var err error
			switch {
			case strings.Contains(tt.body, ctext("MetricDataQueries")) || strings.Contains(tt.body, ctext("StartTime")) || strings.Contains(tt.body, ctext("MaxDatapoints")):
				_, err = decodeCBORInto[cwGetMetricDataInput](t, pc, body)
			default:
				_, err = decodeCBORInto[cwBlobs](t, pc, body)
			}
			e, ok := err.(*Error)
			if !ok || e.Shape != "SerializationException" || e.status() != 400 || !strings.Contains(e.Message, tt.msg) {
				t.Fatalf("got %v, want a SerializationException saying %q", err, tt.msg)
			}
		})
	}
}

func TestCBOREncode(t *testing.T) {
	t.Parallel()
	pc := &planCache{}
	for _, tt := range []struct {
		name string
		v    any
		want string
	}{
		{"struct", &cwDimension{Name: "a", Value: "b"}, "a2" + ctext("Name") + ctext("a") + ctext("Value") + ctext("b")},
		{"absent members left out", &cwBlobs{}, "a2" + ctext("Flag") + "f4" + ctext("Plain") + ctext("")},
		{"kinds", &cwBlobs{Data: []byte{1}, Tags: map[string]string{"z": "1", "a": "2"}, I64: ptr(int64(-500)), F32: 0.5, Flag: true, Skip: "x", Plain: "p"},
			"a6" + ctext("Data") + "41 01" + ctext("Tags") + "a2" + ctext("a") + ctext("2") + ctext("z") + ctext("1") +
				ctext("I64") + "39 01f3" + ctext("F32") + "fb 3fe0000000000000" + ctext("Flag") + "f5" + ctext("Plain") + ctext("p")},
		{"empty but set list", &cwDescribeAlarmsInput{AlarmNames: []string{}}, "a0"},
		{"time", &cwGetMetricDataInput{StartTime: time.Unix(1767323045, 123e6)},
			"a2" + ctext("StartTime") + "c1 fb" + hex.EncodeToString(f64bytes(1767323045.123)) + ctext("EndTime") + "c1 fb c22cef23ee000000"},
		{"empty list", &cwGetMetricDataOutput{MetricDataResults: []cwResult{}}, "a1" + ctext("MetricDataResults") + "80"},
		{"int heads", &cwMetricStat{Period: 65536, Stat: strings.Repeat("s", 24)},
			"a3" + ctext("Metric") + "a0" + ctext("Period") + "1a 00010000" + ctext("Stat") + "78 18" + hex.EncodeToString([]byte(strings.Repeat("s", 24)))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := hex.EncodeToString(encodeCBORValue(t, pc, tt.v)); got != strings.ReplaceAll(tt.want, " ", "") {
				t.Errorf("got  %s\nwant %s", got, strings.ReplaceAll(tt.want, " ", ""))
			}
		})
	}
}

// TestCBORRoundTrip: what Ferry writes, Ferry reads back the same.
func TestCBORRoundTrip(t *testing.T) {
	t.Parallel()
	pc := &planCache{}
	alarms := &cwDescribeAlarmsOutput{MetricAlarms: cwAlarms, NextToken: ptr("n")}
	got, err := decodeCBORInto[cwDescribeAlarmsOutput](t, pc, encodeCBORValue(t, pc, alarms))
	if err != nil || !reflect.DeepEqual(got, alarms) {
		t.Errorf("alarms: %v\n%+v", err, got)
	}
	md := &cwGetMetricDataOutput{MetricDataResults: []cwResult{{
		Id: "m", Timestamps: []time.Time{cwT1, cwT2}, Values: []float64{math.MaxFloat64, -0.0, math.SmallestNonzeroFloat64, math.Inf(-1)},
		Messages: []cwMessage{{Code: "c", Value: "v"}},
	}}}
	gotMD, err := decodeCBORInto[cwGetMetricDataOutput](t, pc, encodeCBORValue(t, pc, md))
	if err != nil || !reflect.DeepEqual(gotMD, md) {
		t.Errorf("metric data: %v\n%+v", err, gotMD)
	}
	b := &cwBlobs{Data: []byte("x"), Tags: map[string]string{"k": "v"}, I64: ptr(int64(math.MinInt64)), F32: 3.25, Flag: true, Plain: "p"}
	gotB, err := decodeCBORInto[cwBlobs](t, pc, encodeCBORValue(t, pc, b))
	if err != nil || !reflect.DeepEqual(gotB, b) {
		t.Errorf("blobs: %v\n%+v", err, gotB)
	}
}

// benchPutMetricData is a PutMetricData of 20 datums, each with a
// dimension, a timestamp, and a value or 10 values and counts.
func benchPutMetricData() *cwPutMetricDataInput {
	in := &cwPutMetricDataInput{Namespace: "Ferry/Bench"}
	for i := range 20 {
		d := cwDatum{MetricName: "Latency", Dimensions: []cwDimension{{Name: "QueueName", Value: "jobs"}}, Timestamp: &cwT1, Unit: "Milliseconds"}
		if i%2 == 0 {
			d.Value = ptr(float64(i) + 0.5)
		} else {
			for j := range 10 {
				d.Values = append(d.Values, float64(j)*1.5)
				d.Counts = append(d.Counts, float64(j+1))
			}
		}
		in.MetricData = append(in.MetricData, d)
	}
	return in
}

func BenchmarkCBORDecodePutMetricData(b *testing.B) {
	pc := &planCache{}
	body := encodeCBORValue(b, pc, benchPutMetricData())
	c, _ := pc.plan(reflect.TypeFor[cwPutMetricDataInput]())
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var in cwPutMetricDataInput
		if err := decodeCBOR(c, body, reflect.ValueOf(&in).Elem()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSONPlanDecodePutMetricData(b *testing.B) {
	h := &Handler{}
	var buf bytes.Buffer
	if err := h.encodeJSONOutput(&buf, Action{}, benchPutMetricData()); err != nil {
		b.Fatal(err)
	}
	body := buf.Bytes()
	typ := reflect.TypeFor[cwPutMetricDataInput]()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var in cwPutMetricDataInput
		if err := h.decodeJSONInput(typ, body, &in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCBOREncodeDescribeAlarms(b *testing.B) {
	pc := &planCache{}
	out := &cwDescribeAlarmsOutput{}
	for range 50 {
		out.MetricAlarms = append(out.MetricAlarms, cwAlarms...)
	}
	c, _ := pc.plan(reflect.TypeFor[cwDescribeAlarmsOutput]())
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		encodeCBOR(&buf, c, reflect.ValueOf(out).Elem())
	}
	b.SetBytes(int64(buf.Len()))
}
