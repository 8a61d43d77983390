package protocol

import (
	"bytes"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"testing/quick"
)

// planTypes are decoded and encoded both ways by the differential tests.
var planTypes = append([]reflect.Type{
	reflect.TypeFor[sendBatchOutput](),
	reflect.TypeFor[receiveOutput](),
	reflect.TypeFor[listQueuesInput](),
	reflect.TypeFor[listQueuesOutput](),
	reflect.TypeFor[permissionInput](),
	reflect.TypeFor[getTopicAttributesOutput](),
	reflect.TypeFor[listTopicsOutput](),
	reflect.TypeFor[emptyOutput](),
	reflect.TypeFor[nested](),
}, fuzzTypes...)

// nested has what the SQS shapes lack: deeper nesting, named types, odd
// widths.
type nested struct {
	Name   label                    `json:"name"`
	Plain  string                   // no tag: the Go name
	Small  int8                     `json:",omitempty"`
	List   []*nested                `json:"List,omitempty"`
	ByName map[label]*nested        `json:"ByName,omitempty"`
	Flags  map[string]bool          `json:"Flags"`
	Deep   [][]string               `json:"Deep"`
	Lists  map[string][]int16       `json:"Lists,omitempty"`
	Opts   map[string]*msgAttrValue `json:"Opts,omitempty"`
}

type label string

// checkDecodeSame decodes body into a fresh typ with both paths and fails
// unless they agree on the value and the error.
func checkDecodeSame(t *testing.T, plans *jsonPlans, typ reflect.Type, body []byte) {
	t.Helper()
	want := reflect.New(typ)
	wantErr := decodeJSON(body, want.Interface())
	got := reflect.New(typ)
	gotErr := decodeJSONPlan(plans, body, got.Interface())
	if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
		t.Fatalf("%s %q: error %v, encoding/json says %v", typ, body, gotErr, wantErr)
	}
	if wantErr == nil && !reflect.DeepEqual(got.Interface(), want.Interface()) {
		t.Fatalf("%s %q:\n got %#v\nwant %#v", typ, body, got.Elem().Interface(), want.Elem().Interface())
	}
}

var planDecodeCases = []string{
	``, ` `, "\v", `{}`, ` { } `, `null`, `[]`, `"x"`, `{`, `{}x`, `{} {}`, `{"QueueUrl":"q"}`,
	`{"QueueUrl":"q","Entries":[{"Id":"a","MessageBody":"b\n\"\\\/\t\r\b\f","DelaySeconds":5}]}`,
	`{"QueueUrl":"q","Entries":[]}`, `{"QueueUrl":"q","Entries":null}`, `{"QueueUrl":null}`,
	`{"queueurl":"q"}`, `{"QueueUrl":"a","QueueUrl":"b"}`, `{"QueueUrl":"a","queueURL":"b"}`,
	`{"QueueUrl":"\u00e9"}`, `{"QueueUrl":"é"}`, "{\"QueueUrl\":\"\xff\"}", "{\"QueueUrl\":\"a\x01\"}",
	`{"Entries":[{"Id":"a","MessageAttributes":{"x":{"DataType":"String","StringValue":"v"},"x":{"DataType":"N"}}}]}`,
	`{"Entries":[{"Id":"a","MessageAttributes":{"x":{"DataType":"Binary","BinaryValue":"AAEC"}}}]}`,
	`{"Entries":[{"DelaySeconds":2147483648}]}`, `{"Entries":[{"DelaySeconds":-2147483648}]}`,
	`{"Entries":[{"DelaySeconds":1.0}]}`, `{"Entries":[{"DelaySeconds":1e2}]}`, `{"Entries":[{"DelaySeconds":01}]}`,
	`{"Entries":[{"DelaySeconds":-0}]}`, `{"Entries":[{"DelaySeconds":"1"}]}`, `{"Entries":[{"DelaySeconds":-}]}`,
	`{"Entries":{}}`, `{"Entries":[1]}`, `{"Entries":[{}],}`, `{"Entries":[{},]}`, `{"Entries":[{}] `,
	`{"Unknown":{"a":[1,2.5e-3,true,false,null,"s\u0041",{}]},"QueueUrl":"q"}`, `{"Unknown":[1,]}`,
	`{"Unknown":01}`, `{"Unknown":1.}`, `{"Unknown":"\x"}`, `{"Unknown":"\u12"}`, `{"Unknown":tru}`,
	`{"Unknown":-1E+5}`, `{"Unknown":nul}`, `{"Unknown" "x"}`, `{"Unknown":"x" "y":1}`,
	`{"MaxNumberOfMessages":10,"WaitTimeSeconds":20,"AttributeNames":["All"],"MessageSystemAttributeNames":[]}`,
	`{"MaxNumberOfMessages":"1"}`, `{"MaxNumberOfMessages":true}`, `{"MaxNumberOfMessages":{}}`,
	`{"S":"s","PS":"p","I32":-5,"I64":9223372036854775807,"PI":1,"B":true,"PB":false,"Sub":{"X":"y"}}`,
	`{"I64":9223372036854775808}`, `{"B":"true"}`, `{"PB":null}`, `{"Sub":null}`, `{"Sub":[]}`, `{"Skip":"x"}`,
	`{"Raw":"AAEC"}`, `{"Raw":null}`, `{"Tags":[{"Key":1}]}`, `{"tags":{"a":"b"}}`, `{"Tags":{"a":"b"}}`,
	`{"Name":"t","Attributes":{"a":"b","a":"c","\n":""},"Tags":[{"Key":"k","Value":"v"}]}`,
	`{"name":"n","Plain":"p","Small":127,"List":[{"name":"x","Deep":[["a"],[]]}],"ByName":{"k":{"Small":-128}},` +
		`"Flags":{"t":true,"f":false},"Lists":{"l":[1,-2]},"Opts":{"o":{"DataType":"String"}}}`,
	`{"Small":128}`, `{"inner":"x"}`, `{"ByName":{"k":null}}`, `{"Deep":[[1]]}`,
	`{"QueueUrl":"q"` + strings.Repeat(`,"Unknown":[`, 80) + strings.Repeat(`]`, 80) + `}`,
	`{"List":` + strings.Repeat(`[{"List":`, 40) + `[]` + strings.Repeat(`}]`, 40) + `}`,
}

func TestJSONPlanDecodesAsEncodingJSON(t *testing.T) {
	t.Parallel()
	plans := &jsonPlans{}
	for _, typ := range planTypes {
		for _, body := range planDecodeCases {
			checkDecodeSame(t, plans, typ, []byte(body))
		}
	}
}

// TestJSONPlanCoversHotShapes guards the speed: the plain requests the
// SDKs send must not fall back to encoding/json.
func TestJSONPlanCoversHotShapes(t *testing.T) {
	t.Parallel()
	plans := &jsonPlans{}
	for _, tc := range []struct {
		typ  reflect.Type
		body string
	}{
		{reflect.TypeFor[sendBatchInput](), `{"QueueUrl":"http://h/1/q","Entries":[{"Id":"0","MessageBody":"x\n",` +
			`"MessageAttributes":{"a":{"DataType":"String","StringValue":"v"}},"MessageGroupId":"g"}]}`},
		{reflect.TypeFor[receiveInput](), `{"QueueUrl":"http://h/1/q","MaxNumberOfMessages":10,"WaitTimeSeconds":20,"AttributeNames":["All"]}`},
		{reflect.TypeFor[createQueueInput](), `{"QueueName":"q","Attributes":{"VisibilityTimeout":"30"},"tags":{"k":"v"}}`},
		{reflect.TypeFor[nested](), `{"name":"n","List":[{"Flags":{}}],"Deep":[[]]}`},
	} {
		c := plans.plan(tc.typ)
		if c == nil {
			t.Fatalf("%s has no JSON plan", tc.typ)
		}
		if !planDecode(c, []byte(tc.body), reflect.New(tc.typ).Elem()) {
			t.Errorf("%s: %s fell back to encoding/json", tc.typ, tc.body)
		}
		checkDecodeSame(t, plans, tc.typ, []byte(tc.body))
	}
	// Types whose JSON encoding/json customises keep to encoding/json.
	type custom struct {
		Raw rawJSON `json:"Raw"`
	}
	type tagged struct {
		N int `json:"N,string"`
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[custom](), reflect.TypeFor[tagged](), reflect.TypeFor[struct{ scalars }]()} {
		if plans.plan(typ) != nil {
			t.Errorf("%s has a JSON plan", typ)
		}
	}
}

type rawJSON []byte

func (r *rawJSON) UnmarshalJSON(b []byte) error { *r = append((*r)[:0], b...); return nil }

// FuzzJSONPlanDecode holds the plan decoder equal to its fallbacks:
// encoding/json for the SQS/SNS types, the document decoder for the types
// with timestamps and doubles.
func FuzzJSONPlanDecode(f *testing.F) {
	for _, s := range append(planDecodeCases, smithyDecodeCases...) {
		f.Add([]byte(s))
	}
	plans := &jsonPlans{}
	h := &Handler{}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, typ := range planTypes {
			checkDecodeSame(t, plans, typ, body)
		}
		for _, typ := range cwFuzzTypes {
			checkSmithyDecodeSame(t, h, typ, body)
		}
	})
}

// checkEncodeSame encodes v (a pointer) with both paths.
func checkEncodeSame(t *testing.T, plans *jsonPlans, v any) {
	t.Helper()
	var want, got bytes.Buffer
	wantErr := encodeJSON(&want, v)
	gotErr := encodeJSONPlan(plans, &got, v)
	if wantErr != nil || gotErr != nil {
		t.Fatalf("%T: errors %v / %v", v, gotErr, wantErr)
	}
	if got.String() != want.String() {
		t.Fatalf("%T:\n got %s\nwant %s", v, got.String(), want.String())
	}
}

func TestJSONPlanEncodesAsEncodingJSON(t *testing.T) {
	t.Parallel()
	plans := &jsonPlans{}
	rnd := rand.New(rand.NewSource(1))
	for _, typ := range planTypes {
		if plans.plan(typ) == nil {
			t.Fatalf("%s has no JSON plan", typ)
		}
		for range 200 {
			v, ok := quick.Value(reflect.PointerTo(typ), rnd)
			if !ok {
				t.Fatalf("no random %s", typ)
			}
			checkEncodeSame(t, plans, v.Interface())
		}
		checkEncodeSame(t, plans, reflect.New(typ).Interface())
	}
	checkEncodeSame(t, plans, nil)
	checkEncodeSame(t, plans, (*sendBatchOutput)(nil))
	checkEncodeSame(t, plans, &sendBatchOutput{Successful: []sendBatchResultEntry{}, Failed: nil})
}

func FuzzJSONPlanEncode(f *testing.F) {
	for _, s := range []string{"", "a\"b\\c", "\x00\x01\x1f\x7f\b\f\n\r\t", "\xff", "\u2028\u2029", "<&>", "é😀", "\xed\xa0\x80"} {
		f.Add(s)
	}
	plans := &jsonPlans{}
	f.Fuzz(func(t *testing.T, s string) {
		checkEncodeSame(t, plans, &receiveOutput{Messages: []message{{MessageId: s, Body: s, MD5OfMessageAttributes: &s,
			Attributes: map[string]string{s: s, "": s + s}, MessageAttributes: map[string]msgAttrValue{s: {DataType: s, BinaryValue: []byte(s)}}}}})
		checkEncodeSame(t, plans, &scalars{S: s, PS: &s, Raw: []byte(s)})
	})
}
