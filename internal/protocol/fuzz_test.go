package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// fuzzTypes are the inputs the fuzzers decode into.
var fuzzTypes = []reflect.Type{
	reflect.TypeFor[sendBatchInput](),
	reflect.TypeFor[receiveInput](),
	reflect.TypeFor[createQueueInput](),
	reflect.TypeFor[scalars](),
	reflect.TypeFor[createTopicInput](),
	reflect.TypeFor[publishBatchInput](),
}

// checkClientError fails unless err is nil or a 4xx *Error.
func checkClientError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("not an *Error: %v", err)
	}
	if e.Status < 400 || e.Status > 499 {
		t.Fatalf("status %d for %v", e.Status, e)
	}
}

func FuzzJSONDecode(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `{"QueueUrl":"q","Entries":[{"Id":"a","MessageAttributes":{"x":{"DataType":"String","StringValue":"v"}}}]}`,
		`{"MaxNumberOfMessages":"1"}`, `{"Raw":"AAEC","Sub":{"X":"y"},"PB":true}`, `{"Tags":[{"Key":1}]}`, `{"tags":{"a":"b"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"StartTime":1767323045.5,"EndTime":"2026-01-02T03:04:05Z","MetricDataQueries":[{"Id":"m","MetricStat":{"Period":60}}]}`))
	f.Add([]byte(`{"Data":"AAEC","Tags":{"a":"b"},"I64":-1,"F32":"NaN","Flag":true}`))
	h := &Handler{}
	a := Action{Name: "Echo"}
	f.Add([]byte(`{"QueueUrl":"\ud83d\ude00","Entries":[{"Id":"\ud800","MessageBody":"ok\ufffd"}]}`))
	f.Add([]byte("{\"QueueUrl\":\"ok\xff\xfe\",\"Tags\":{\"\xed\xa0\x80\":\"\\udc00\"}}"))
	f.Add([]byte(`{"Namespace":"\uD800\u0041","Tags":{"\\ud800":"\u00e9"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, typ := range fuzzTypes {
			v := reflect.New(typ)
			err := decodeJSON(body, v.Interface())
			checkClientError(t, err)
			if err == nil {
				checkSentText(t, body, v)
			}
			v = reflect.New(typ)
			if err := h.decodeJSONInput(typ, body, v.Interface()); err == nil {
				checkSentText(t, body, v)
			}
		}
		// Types with timestamps and doubles: along their plans, and what
		// decodes writes back out and decodes to the same.
		for _, typ := range cwFuzzTypes {
			v := reflect.New(typ)
			err := h.decodeJSONInput(typ, body, v.Interface())
			checkClientError(t, err)
			if err != nil {
				continue
			}
			checkSentText(t, body, v)
			var b bytes.Buffer
			if err := h.encodeJSONOutput(&b, a, v.Interface()); err != nil {
				t.Fatal(err)
			}
			again := reflect.New(typ)
			if err := h.decodeJSONInput(typ, b.Bytes(), again.Interface()); err != nil {
				t.Fatalf("%s: %s does not decode: %v", typ, b.Bytes(), err)
			}
			if !cborEqual(v.Interface(), again.Interface()) {
				t.Fatalf("%s: round trip through %s changed\n%+v\ninto\n%+v", typ, b.Bytes(), v.Interface(), again.Interface())
			}
		}
	})
}

// checkSentText fails unless every string decoded from body (members, list
// elements, map keys) is valid UTF-8 and carries a U+FFFD only when the
// body does, raw or escaped: a decoder never stands in for what it could
// not read.
func checkSentText(t *testing.T, body []byte, v reflect.Value) {
	t.Helper()
	sent := bytes.Contains(body, []byte("\uFFFD")) || bytes.Contains(bytes.ToLower(body), []byte(`\ufffd`))
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			s := v.String()
			if !utf8.ValidString(s) {
				t.Fatalf("%q decoded to invalid UTF-8 %q", body, s)
			}
			if !sent && strings.ContainsRune(s, utf8.RuneError) {
				t.Fatalf("%q decoded to %q, with a U+FFFD the client did not send", body, s)
			}
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		case reflect.Slice:
			if v.Type().Elem().Kind() != reflect.Uint8 {
				for i := range v.Len() {
					walk(v.Index(i))
				}
			}
		case reflect.Map:
			for _, k := range v.MapKeys() {
				walk(k)
				walk(v.MapIndex(k))
			}
		}
	}
	walk(v)
}

// FuzzJSONString puts arbitrary bytes between the quotes of a string
// member: the decoders either hand on exactly the string RFC 8259 reads
// there or refuse the body.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"ok", "ok\xff\xfe", `\ud83d\ude00`, `\ud800`, `\udc00x`, `\ud800\u0041`, "\xe2\x82",
		"\xc0\xaf", "\xed\xa0\x80", `\\ud800`, `\ufffd`, `\"\n\u00e9`, `a\`, `\u12`} {
		f.Add([]byte(s))
	}
	h := &Handler{}
	f.Fuzz(func(t *testing.T, content []byte) {
		want, verdict := readJSONString(content)
		if verdict == stringEndsEarly {
			return // the body is some other document
		}
		for _, tc := range []struct {
			typ  reflect.Type
			body string
			get  func(v any) string
		}{
			{reflect.TypeFor[scalars](), `{"S":"%s"}`, func(v any) string { return v.(*scalars).S }},
			{reflect.TypeFor[cwBlobs](), `{"Flag":true,"Plain":"%s"}`, func(v any) string { return v.(*cwBlobs).Plain }},
		} {
			body := []byte(strings.Replace(tc.body, "%s", string(content), 1))
			v := reflect.New(tc.typ).Interface()
			err := h.decodeJSONInput(tc.typ, body, v)
			switch {
			case verdict == stringRefused && err == nil:
				t.Fatalf("%q accepted as %q", body, tc.get(v))
			case verdict == stringRead && err != nil:
				t.Fatalf("%q refused: %v", body, err)
			case verdict == stringRead && tc.get(v) != want:
				t.Fatalf("%q decoded to %q, want %q", body, tc.get(v), want)
			}
			checkClientError(t, err)
		}
	})
}

const (
	stringRead = iota
	stringRefused
	stringEndsEarly
)

// readJSONString reads b as the content of a JSON string by RFC 8259,
// refusing what is not UTF-8 and escapes that denote no Unicode scalar (a
// lone surrogate); stringEndsEarly: an unescaped quote ends it before b
// does.
func readJSONString(b []byte) (string, int) {
	var out []rune
	var units []uint16 // pending \u escapes
	flush := func() bool {
		for i := 0; i < len(units); i++ {
			u := rune(units[i])
			switch {
			case !utf16.IsSurrogate(u):
				out = append(out, u)
			case u < 0xDC00 && i+1 < len(units) && units[i+1] >= 0xDC00 && units[i+1] <= 0xDFFF:
				out = append(out, utf16.DecodeRune(u, rune(units[i+1])))
				i++
			default:
				return false
			}
		}
		units = units[:0]
		return true
	}
	for i := 0; i < len(b); {
		c := b[i]
		if c == '\\' && i+1 < len(b) && b[i+1] == 'u' {
			if i+6 > len(b) {
				return "", stringRefused
			}
			n, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
			if err != nil || strings.ContainsAny(string(b[i+2:i+6]), "+-") {
				return "", stringRefused
			}
			units = append(units, uint16(n))
			i += 6
			continue
		}
		if !flush() {
			return "", stringRefused
		}
		switch {
		case c == '"':
			return "", stringEndsEarly
		case c == '\\':
			if i+1 >= len(b) {
				return "", stringRefused
			}
			r, ok := map[byte]rune{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}[b[i+1]]
			if !ok {
				return "", stringRefused
			}
			out = append(out, r)
			i += 2
		case c < 0x20:
			return "", stringRefused
		default:
			r, w := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && w == 1 {
				return "", stringRefused
			}
			out = append(out, r)
			i += w
		}
	}
	if !flush() {
		return "", stringRefused
	}
	return string(out), stringRead
}

// cwFuzzTypes are CloudWatch-like inputs, which have timestamps and doubles.
var cwFuzzTypes = []reflect.Type{
	reflect.TypeFor[cwGetMetricDataInput](), reflect.TypeFor[cwPutMetricDataInput](),
	reflect.TypeFor[cwDescribeAlarmsOutput](), reflect.TypeFor[cwBlobs](),
}

func FuzzQueryDecode(f *testing.F) {
	for _, s := range []string{
		"", "QueueUrl=q&SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageAttribute.1.Name=n" +
			"&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringListValue.1=x",
		"AttributeName.1=All&AttributeName=&MaxNumberOfMessages=10", "Attribute.1.Name=a&Attribute.1.Value=b&Tags.2.Key=k",
		"S=1&I32=2&Raw=AA%3D%3D&Sub.X=1&Sub=2", "Tags.member.1.Key=k&Attributes.entry.1.key=a&Attributes.entry.1.value=b",
		"PublishBatchRequestEntries.member.1.MessageAttributes.entry.1.Name=a&PublishBatchRequestEntries.member.1.MessageAttributes.entry.1.Value.DataType=S",
		"Attribute.0.Name=x", "Tag.1.Value=v", "a..b.=c&.=d",
		"StartTime=2026-01-02T03:04:05.123Z&EndTime=2026-01-02&MetricDataQueries.member.1.MetricStat.Period=60",
		"MetricData.member.1.Value=1.0E-5&MetricData.member.1.Values.member.1=NaN&MetricData.member.1.Timestamp=x",
	} {
		f.Add(s)
	}
	pc := &planCache{}
	f.Fuzz(func(t *testing.T, params string) {
		vals, err := url.ParseQuery(params)
		if err != nil {
			return
		}
		for _, typ := range append(slices.Clone(fuzzTypes), cwFuzzTypes...) {
			c, err := pc.plan(typ)
			if err != nil {
				t.Fatal(err)
			}
			checkClientError(t, decodeQuery(c, vals, reflect.New(typ).Elem()))
		}
	})
}

// FuzzHandler drives whole requests: whatever the body, the answer is never
// a server error. wire picks the protocol: 0 query, 1 JSON, 2 RPC v2 CBOR
// (the body as given), 3 RPC v2 CBOR gzipped.
func FuzzHandler(f *testing.F) {
	f.Add(uint8(1), "SendMessageBatch", []byte(`{"QueueUrl":"q","Entries":[{"Id":"a"}]}`))
	f.Add(uint8(1), "Nope", []byte(`{`))
	f.Add(uint8(0), "", []byte("Action=SendMessageBatch&SendMessageBatchRequestEntry.1.Id=a"))
	f.Add(uint8(0), "", []byte("Action=CreateTopic&Version=2010-03-31&Tags.member.1.Key=k"))
	f.Add(uint8(0), "", []byte("Action=Scalars&Raw=%FF&I64=x"))
	f.Add(uint8(0), "", []byte("Action=GetMetricData&Version=2010-08-01&StartTime=2026-01-02T03:04:05Z&MetricDataQueries.member.1.Id=m"))
	pc := &planCache{}
	for _, v := range []any{
		&cwGetMetricDataInput{MetricDataQueries: []cwQuery{{Id: "m", MetricStat: &cwMetricStat{Period: 60}}}, StartTime: cwT1},
		&cwPutMetricDataInput{Namespace: "n", MetricData: []cwDatum{{MetricName: "m", Values: []float64{1, 2}, Timestamp: &cwT2}}},
		&cwMetricAlarm{Threshold: ptr(-1.0)},
	} {
		op := strings.TrimPrefix(reflect.TypeOf(v).Elem().Name(), "cw")
		op = strings.TrimSuffix(op, "Input")
		if op == "MetricAlarm" {
			op = "PutMetricAlarm"
		}
		f.Add(uint8(2), op, encodeCBORValue(f, pc, v))
	}
	f.Add(uint8(2), "Blobs", []byte{0xbf, 0x64, 'D', 'a', 't', 'a', 0x5f, 0x41, 0x01, 0xff, 0xff})
	f.Add(uint8(3), "DescribeAlarms", []byte{0xa0})
	h, _, _ := newCWHandler(f)
	f.Fuzz(func(t *testing.T, wire uint8, action string, body []byte) {
		var req request
		switch wire % 4 {
		case 0:
			req = formReq(string(body))
		case 1:
			req = jsonReq(action, string(body))
		case 2:
			req = cborReq(action, body)
		case 3:
			req = cborReq(action, nil).with("Content-Encoding", "gzip")
			req.body = gzipped(t, body)
		}
		res, out := req.do(t, h)
		if res.StatusCode >= 500 {
			t.Fatalf("status %d for %q: %q", res.StatusCode, body, out)
		}
		if res.Header.Get("x-amzn-RequestId") == "" {
			t.Fatal("no request id")
		}
	})
}

// FuzzCBORDecode decodes arbitrary bytes into every input type: never a
// panic, only client errors; whatever decodes re-encodes and decodes to
// the same value.
func FuzzCBORDecode(f *testing.F) {
	pc := &planCache{}
	for _, v := range []any{
		&cwGetMetricDataInput{MetricDataQueries: []cwQuery{{Id: "m", Label: ptr("l"), MetricStat: &cwMetricStat{Period: 60, Stat: "Sum"}}}, StartTime: cwT1, EndTime: cwT2},
		&cwPutMetricDataInput{Namespace: "n", MetricData: []cwDatum{{MetricName: "m", Values: []float64{1, 0.5}, Counts: []float64{2, 3},
			Timestamp: &cwT2, StatisticValues: &cwStatisticSet{Sum: ptr(1.0)}, Dimensions: []cwDimension{{Name: "a", Value: "b"}}}}},
		&cwDescribeAlarmsOutput{MetricAlarms: cwAlarms},
		&cwBlobs{Data: []byte{1}, Tags: map[string]string{"k": "v"}, I64: ptr(int64(-7)), F32: 0.5, Flag: true},
	} {
		f.Add(encodeCBORValue(f, pc, v))
	}
	for _, s := range []string{"", "a0", "bf ff", "a1 7f 62 4461 62 7461 ff 41 09", "a1 64 4461 7461 5f 41 01 42 0203 ff",
		"a1 69 5374 6172 7454 696d 65 c1 f9 3c00", "9f 9f 9f ff ff ff", "bb 7fffffffffffffff", "c6 c6 c6 a0"} {
		f.Add(hexBytes(f, s))
	}
	types := append(slices.Clone(cwFuzzTypes), fuzzTypes...)
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, typ := range types {
			c, err := pc.plan(typ)
			if err != nil {
				t.Fatal(err)
			}
			v := reflect.New(typ)
			err = decodeCBOR(c, body, v.Elem())
			checkClientError(t, err)
			if err != nil {
				continue
			}
			var b bytes.Buffer
			encodeCBOR(&b, c, v.Elem())
			again := reflect.New(typ)
			if err := decodeCBOR(c, b.Bytes(), again.Elem()); err != nil {
				t.Fatalf("%s: re-encoded value does not decode: %v", typ, err)
			}
			if !cborEqual(v.Interface(), again.Interface()) {
				t.Fatalf("%s: round trip changed\n%+v\ninto\n%+v", typ, v.Interface(), again.Interface())
			}
		}
	})
}

// cborEqual compares decoded values, where NaN equals NaN and an empty
// non-nil slice or map equals another.
func cborEqual(a, b any) bool {
	return reflect.DeepEqual(normalise(reflect.ValueOf(a)), normalise(reflect.ValueOf(b)))
}

func normalise(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return []any{normalise(v.Elem())}
	case reflect.Struct:
		if v.Type() == timeType {
			return v.Interface().(time.Time).UnixMilli()
		}
		var out []any
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out = append(out, normalise(v.Field(i)))
			}
		}
		return out
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return string(v.Bytes())
		}
		var out []any
		for i := range v.Len() {
			out = append(out, normalise(v.Index(i)))
		}
		return out
	case reflect.Map:
		out := map[string]any{}
		for _, k := range v.MapKeys() {
			out[k.String()] = normalise(v.MapIndex(k))
		}
		return out
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); f != f {
			return "NaN"
		}
		return v.Float()
	}
	return v.Interface()
}

// FuzzXMLRoundTrip writes arbitrary text into an XML response and reads it
// back with a conforming parser.
func FuzzXMLRoundTrip(f *testing.F) {
	for _, s := range []string{"", "a\r\nb", "<&>\"'", "\x00\x1f\x7f", "\xff\xfe", "\uFFFE", "😀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := xmlRoundTrip(t, s), xmlSafe(s); got != want {
			t.Fatalf("round trip of %q gave %q, want %q", s, got, want)
		}
	})
}

// xmlSafe is s with every character XML cannot carry replaced by U+FFFD.
func xmlSafe(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && w == 1) || (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0xFFFE || r == 0xFFFF {
			r = utf8.RuneError
		}
		b.WriteRune(r)
		i += w
	}
	return b.String()
}

func BenchmarkDecodeSendMessageBatch(b *testing.B) {
	var js strings.Builder
	form := url.Values{"Action": {"SendMessageBatch"}, "Version": {"2012-11-05"}, "QueueUrl": {"http://localhost:4566/000000000000/bench"}}
	js.WriteString(`{"QueueUrl":"http://localhost:4566/000000000000/bench","Entries":[`)
	for i := 1; i <= 10; i++ {
		if i > 1 {
			js.WriteString(",")
		}
		fmt.Fprintf(&js, `{"Id":"id-%d","MessageBody":"message body number %d with some text","DelaySeconds":0,`+
			`"MessageAttributes":{"trace":{"DataType":"String","StringValue":"abc-%d"},"n":{"DataType":"Number","StringValue":"%d"}}}`, i, i, i, i)
		p := fmt.Sprintf("SendMessageBatchRequestEntry.%d.", i)
		form.Set(p+"Id", fmt.Sprintf("id-%d", i))
		form.Set(p+"MessageBody", fmt.Sprintf("message body number %d with some text", i))
		form.Set(p+"DelaySeconds", "0")
		form.Set(p+"MessageAttribute.1.Name", "trace")
		form.Set(p+"MessageAttribute.1.Value.DataType", "String")
		form.Set(p+"MessageAttribute.1.Value.StringValue", fmt.Sprintf("abc-%d", i))
		form.Set(p+"MessageAttribute.2.Name", "n")
		form.Set(p+"MessageAttribute.2.Value.DataType", "Number")
		form.Set(p+"MessageAttribute.2.Value.StringValue", fmt.Sprint(i))
	}
	js.WriteString("]}")
	jsonBody := []byte(js.String())
	formBody := form.Encode()

	b.Run("json", func(b *testing.B) {
		b.SetBytes(int64(len(jsonBody)))
		b.ReportAllocs()
		for b.Loop() {
			var in sendBatchInput
			if err := decodeJSON(jsonBody, &in); err != nil || len(in.Entries) != 10 {
				b.Fatal(err, len(in.Entries))
			}
		}
	})
	b.Run("json-plan", func(b *testing.B) {
		plans := &jsonPlans{}
		b.SetBytes(int64(len(jsonBody)))
		b.ReportAllocs()
		for b.Loop() {
			var in sendBatchInput
			if err := decodeJSONPlan(plans, jsonBody, &in); err != nil || len(in.Entries) != 10 {
				b.Fatal(err, len(in.Entries))
			}
		}
	})
	b.Run("query", func(b *testing.B) {
		pc := &planCache{}
		c, err := pc.plan(reflect.TypeFor[sendBatchInput]())
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(formBody)))
		b.ReportAllocs()
		for b.Loop() {
			vals, err := url.ParseQuery(formBody)
			if err != nil {
				b.Fatal(err)
			}
			var in sendBatchInput
			if err := decodeQuery(c, vals, reflect.ValueOf(&in).Elem()); err != nil || len(in.Entries) != 10 {
				b.Fatal(err, len(in.Entries))
			}
		}
	})
	b.Run("handler-json", func(b *testing.B) {
		h, _, _ := newTestHandler(b)
		req := jsonReq("SendMessageBatch", string(jsonBody))
		b.ReportAllocs()
		for b.Loop() {
			if res, body := req.do(b, h); res.StatusCode != http.StatusOK {
				b.Fatal(body)
			}
		}
	})
	b.Run("handler-query", func(b *testing.B) {
		h, _, _ := newTestHandler(b)
		req := formReq(formBody)
		b.ReportAllocs()
		for b.Loop() {
			if res, body := req.do(b, h); res.StatusCode != http.StatusOK {
				b.Fatal(body)
			}
		}
	})
}
