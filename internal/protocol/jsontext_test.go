package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// jsonTextCases are JSON string contents (as they sit between the quotes)
// and what they must decode to, or where the body must be refused: at is
// the offset in the content of the first bad byte or of the lone escape.
var jsonTextCases = []struct {
	name, content, want string
	at                  int
	surrogate           bool // refused as a lone surrogate, else as bad UTF-8
}{
	{name: "ascii", content: "ok", want: "ok"},
	{name: "raw multi-byte", content: "é€😀", want: "é€😀"},
	{name: "escaped BMP", content: `\u00e9\u20AC`, want: "é€"},
	{name: "surrogate pair", content: `\ud83d\ude00`, want: "😀"},
	{name: "surrogate pair upper case", content: `a\uD83D\uDE00b`, want: "a😀b"},
	{name: "replacement character sent raw", content: "\xef\xbf\xbd", want: "\uFFFD"},
	{name: "replacement character escaped", content: `\ufffd`, want: "\uFFFD"},
	{name: "escaped backslash then u", content: `\\ud800`, want: `\ud800`},
	{name: "short escapes", content: `\"\\\/\n`, want: "\"\\/\n"},

	{name: "invalid bytes", content: "ok\xff\xfe", at: 2, want: "-"},
	{name: "continuation byte alone", content: "a\x80", at: 1, want: "-"},
	{name: "truncated two-byte", content: "a\xc3", at: 1, want: "-"},
	{name: "truncated three-byte", content: "\xe2\x82", at: 0, want: "-"},
	{name: "truncated four-byte", content: "x\xf0\x9f\x98", at: 1, want: "-"},
	{name: "overlong slash", content: "\xc0\xaf", at: 0, want: "-"},
	{name: "overlong three-byte", content: "ab\xe0\x80\xaf", at: 2, want: "-"},
	{name: "surrogate encoded in UTF-8", content: "\xed\xa0\x80", at: 0, want: "-"},
	{name: "beyond U+10FFFF", content: "\xf4\x90\x80\x80", at: 0, want: "-"},

	{name: "lone high surrogate", content: `\ud800`, at: 0, surrogate: true, want: "-"},
	{name: "lone high surrogate before text", content: `ab\uD800cd`, at: 2, surrogate: true, want: "-"},
	{name: "lone low surrogate", content: `\udc00`, at: 0, surrogate: true, want: "-"},
	{name: "high before a non-surrogate", content: `\ud800\u0041`, at: 0, surrogate: true, want: "-"},
	{name: "two high surrogates", content: `\ud83d\ud83d`, at: 0, surrogate: true, want: "-"},
	{name: "pair reversed", content: `\ude00\ud83d`, at: 0, surrogate: true, want: "-"},
	{name: "pair then lone", content: `\ud83d\ude00\udfff`, at: 12, surrogate: true, want: "-"},
}

// jsonTextPlaces put a string's content where the decoders keep it, and
// read it back.
var jsonTextPlaces = []struct {
	name string
	typ  reflect.Type
	body string // %s: the content
	get  func(v any) string
}{
	{"message body", reflect.TypeFor[sendBatchInput](), `{"QueueUrl":"q","Entries":[{"Id":"a","MessageBody":"%s"}]}`,
		func(v any) string { return v.(*sendBatchInput).Entries[0].MessageBody }},
	{"attribute value", reflect.TypeFor[sendBatchInput](),
		`{"Entries":[{"Id":"a","MessageAttributes":{"n":{"DataType":"String","StringValue":"%s"}}}]}`,
		func(v any) string { return *v.(*sendBatchInput).Entries[0].MessageAttributes["n"].StringValue }},
	{"attribute name", reflect.TypeFor[sendBatchInput](), `{"Entries":[{"Id":"a","MessageAttributes":{"%s":{"DataType":"String"}}}]}`,
		func(v any) string {
			for k := range v.(*sendBatchInput).Entries[0].MessageAttributes {
				return k
			}
			return "<none>"
		}},
	{"list element", reflect.TypeFor[receiveInput](), `{"QueueUrl":"q","AttributeNames":["All","%s"]}`,
		func(v any) string { return v.(*receiveInput).AttributeNames[1] }},
	// A member Ferry does not read: what is not JSON text is refused there
	// too, and what is kept is untouched.
	{"unknown member", reflect.TypeFor[createQueueInput](), `{"QueueName":"q","Unknown":{"x":"%s"}}`,
		func(v any) string { return "" }},
	// Types with timestamps and doubles go along the Smithy plan and the
	// document decoder.
	{"smithy string", reflect.TypeFor[cwBlobs](), `{"Flag":true,"Plain":"%s"}`,
		func(v any) string { return v.(*cwBlobs).Plain }},
	{"smithy map key", reflect.TypeFor[cwBlobs](), `{"Tags":{"%s":"v"}}`,
		func(v any) string {
			for k := range v.(*cwBlobs).Tags {
				return k
			}
			return "<none>"
		}},
}

// TestJSONTextKeptOrRefused: every decoder hands on a string exactly as the
// client sent it, or refuses the body; none replaces what it cannot hold
// with U+FFFD.
func TestJSONTextKeptOrRefused(t *testing.T) {
	t.Parallel()
	h := &Handler{}
	for _, p := range jsonTextPlaces {
		for _, tc := range jsonTextCases {
			t.Run(p.name+"/"+tc.name, func(t *testing.T) {
				body := fmt.Sprintf(p.body, tc.content)
				at := strings.Index(p.body, "%s") + tc.at
				decoders := map[string]func(any) error{
					"plan": func(v any) error { return h.decodeJSONInput(p.typ, []byte(body), v) },
				}
				if smithyJSON(mustPlan(t, p.typ)) == nil {
					decoders["encoding/json"] = func(v any) error { return decodeJSON([]byte(body), v) }
				} else {
					decoders["document"] = func(v any) error {
						return decodeJSONDocument(mustPlan(t, p.typ), []byte(body), reflect.ValueOf(v).Elem())
					}
				}
				for name, decode := range decoders {
					v := reflect.New(p.typ).Interface()
					err := decode(v)
					if tc.want != "-" {
						if err != nil {
							t.Fatalf("%s: %q refused: %v", name, body, err)
						}
						if p.name == "unknown member" {
							continue
						}
						if got := p.get(v); got != tc.want {
							t.Fatalf("%s: %q decoded to %q (% x), want %q", name, body, got, got, tc.want)
						}
						continue
					}
					want := fmt.Sprintf("The request body is not valid UTF-8 (at byte %d).", at)
					if tc.surrogate {
						want = fmt.Sprintf("The request body escapes a lone surrogate, which is not a Unicode character (at byte %d).", at)
					}
					var e *Error
					if !errors.As(err, &e) || e.Shape != "SerializationException" || e.Status != http.StatusBadRequest || e.Message != want {
						t.Fatalf("%s: %q: error %v, want a SerializationException %q", name, body, err, want)
					}
					var ls *loneSurrogateError
					if errors.As(err, &ls) != tc.surrogate {
						t.Fatalf("%s: %q: lone surrogate %v, want %v", name, body, !tc.surrogate, tc.surrogate)
					}
				}
			})
		}
	}
}

func mustPlan(t *testing.T, typ reflect.Type) *codec {
	t.Helper()
	c, err := (&planCache{}).plan(typ)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestJSONLoneSurrogateAnswer: the handler answers a lone surrogate with
// the service's InvalidCharacters error when it has one, and invalid UTF-8
// always as a SerializationException; neither reaches the action.
func TestJSONLoneSurrogateAnswer(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	sqs, sns := testServices(rec)
	sqs.InvalidCharacters = &Error{Shape: "InvalidMessageContents", Code: "InvalidMessageContents", Status: http.StatusBadRequest,
		Message: "Invalid characters found."}
	cw := cwService(rec)
	h := &Handler{Services: []*Service{sqs, sns, cw}}
	if err := h.Check(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, target, body  string
		status              int
		typ, msg, queryCode string
	}{
		{"sqs lone surrogate", "AmazonSQS.SendMessageBatch", `{"QueueUrl":"q","Entries":[{"Id":"a","MessageBody":"\ud800"}]}`,
			400, "com.amazonaws.sqs#InvalidMessageContents", "Invalid characters found.", "InvalidMessageContents;Sender"},
		{"sqs invalid UTF-8", "AmazonSQS.SendMessageBatch", "{\"QueueUrl\":\"q\",\"Entries\":[{\"Id\":\"a\",\"MessageBody\":\"ok\xff\xfe\"}]}",
			400, "com.amazon.coral.service#SerializationException", "The request body is not valid UTF-8 (at byte 54).", "SerializationException;Sender"},
		{"service without InvalidCharacters", cwRPCService + ".PutMetricData", `{"Namespace":"\udc00"}`,
			400, "com.amazon.coral.service#SerializationException",
			"The request body escapes a lone surrogate, which is not a Unicode character (at byte 14).", "SerializationException;Sender"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec.mu.Lock()
			rec.action = ""
			rec.mu.Unlock()
			req := request{header: map[string]string{"X-Amz-Target": tc.target, "Content-Type": jsonContentType}, body: tc.body}
			res, out := req.do(t, h)
			var got jsonError
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("%q: %v", out, err)
			}
			if res.StatusCode != tc.status || got.Type != tc.typ || got.Message != tc.msg || res.Header.Get("x-amzn-query-error") != tc.queryCode {
				t.Fatalf("%d %s %q, want %d %s %q %q", res.StatusCode, res.Header.Get("x-amzn-query-error"), out, tc.status, tc.typ, tc.msg, tc.queryCode)
			}
			if a, _, _ := rec.last(); a != "" {
				t.Fatalf("action %s ran", a)
			}
		})
	}
}
