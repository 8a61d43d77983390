package protocol

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
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
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, typ := range fuzzTypes {
			checkClientError(t, decodeJSON(body, reflect.New(typ).Interface()))
		}
	})
}

func FuzzQueryDecode(f *testing.F) {
	for _, s := range []string{
		"", "QueueUrl=q&SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageAttribute.1.Name=n" +
			"&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringListValue.1=x",
		"AttributeName.1=All&AttributeName=&MaxNumberOfMessages=10", "Attribute.1.Name=a&Attribute.1.Value=b&Tags.2.Key=k",
		"S=1&I32=2&Raw=AA%3D%3D&Sub.X=1&Sub=2", "Tags.member.1.Key=k&Attributes.entry.1.key=a&Attributes.entry.1.value=b",
		"PublishBatchRequestEntries.member.1.MessageAttributes.entry.1.Name=a&PublishBatchRequestEntries.member.1.MessageAttributes.entry.1.Value.DataType=S",
		"Attribute.0.Name=x", "Tag.1.Value=v", "a..b.=c&.=d",
	} {
		f.Add(s)
	}
	pc := &planCache{}
	f.Fuzz(func(t *testing.T, params string) {
		vals, err := url.ParseQuery(params)
		if err != nil {
			return
		}
		for _, typ := range fuzzTypes {
			c, err := pc.plan(typ)
			if err != nil {
				t.Fatal(err)
			}
			checkClientError(t, decodeQuery(c, vals, reflect.New(typ).Elem()))
		}
	})
}

// FuzzHandler drives whole requests: whatever the body, the answer is never
// a server error.
func FuzzHandler(f *testing.F) {
	f.Add(true, "SendMessageBatch", `{"QueueUrl":"q","Entries":[{"Id":"a"}]}`)
	f.Add(true, "Nope", `{`)
	f.Add(false, "", "Action=SendMessageBatch&SendMessageBatchRequestEntry.1.Id=a")
	f.Add(false, "", "Action=CreateTopic&Version=2010-03-31&Tags.member.1.Key=k")
	f.Add(false, "", "Action=Scalars&Raw=%FF&I64=x")
	h, _, _ := newTestHandler(f)
	f.Fuzz(func(t *testing.T, isJSON bool, action, body string) {
		req := formReq(body)
		if isJSON {
			req = jsonReq(action, body)
		}
		res, out := req.do(t, h)
		if res.StatusCode >= 500 {
			t.Fatalf("status %d for %q: %s", res.StatusCode, body, out)
		}
		if res.Header.Get("x-amzn-RequestId") == "" {
			t.Fatal("no request id")
		}
	})
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
