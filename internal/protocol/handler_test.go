package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var emptyType = reflect.TypeFor[emptyOutput]()

const (
	authSQS = "AWS4-HMAC-SHA256 Credential=AKIDSQS/20250101/eu-west-1/sqs/aws4_request, SignedHeaders=host;x-amz-date, Signature=00"
	authSNS = "AWS4-HMAC-SHA256 Credential=AKIDSNS/20250101/us-east-2/sns/aws4_request,SignedHeaders=host,Signature=00"
)

type request struct {
	method string
	path   string // may carry a query string
	header map[string]string
	body   string
}

func (rq request) do(t testing.TB, h http.Handler) (*http.Response, string) {
	t.Helper()
	method := rq.method
	if method == "" {
		method = http.MethodPost
	}
	path := rq.path
	if path == "" {
		path = "/"
	}
	req := httptest.NewRequest(method, path, strings.NewReader(rq.body))
	for k, v := range rq.header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	res := w.Result()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func jsonReq(action, body string) request {
	return request{header: map[string]string{"X-Amz-Target": "AmazonSQS." + action, "Content-Type": jsonContentType}, body: body}
}

func formReq(body string) request {
	return request{header: map[string]string{"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}, body: body}
}

func (rq request) with(k, v string) request {
	h := map[string]string{}
	for a, b := range rq.header {
		h[a] = b
	}
	h[k] = v
	rq.header = h
	return rq
}

func newTestHandler(t testing.TB, extra ...Action) (*Handler, *recorder, *bytes.Buffer) {
	t.Helper()
	rec := &recorder{}
	sqs, sns := testServices(rec, extra...)
	logs := &bytes.Buffer{}
	h := &Handler{Services: []*Service{sqs, sns}, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	if err := h.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	return h, rec, logs
}

func TestDetection(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		req       request
		status    int
		ctype     string
		action    string // the action that ran; "" when none
		service   string // "sqs" or "sns" (by the XML namespace or protocol)
		protocol  string
		code      string // error code expected in the body
		region    string
		accessKey string
		path      string
	}{
		{name: "json", req: jsonReq("SendMessageBatch", `{"QueueUrl":"q"}`).with("Authorization", authSQS),
			status: 200, ctype: jsonContentType, action: "SendMessageBatch", protocol: "json", region: "eu-west-1", accessKey: "AKIDSQS", path: "/"},
		{name: "json on a queue path", req: func() request { r := jsonReq("ReceiveMessage", `{}`); r.path = "/000000000000/q1"; return r }(),
			status: 200, ctype: jsonContentType, action: "ReceiveMessage", protocol: "json", path: "/000000000000/q1"},
		{name: "json empty body", req: jsonReq("ListQueues", ``), status: 200, ctype: jsonContentType, action: "ListQueues", protocol: "json"},
		{name: "query form sqs", req: formReq("Action=CreateQueue&Version=2012-11-05&QueueName=q"),
			status: 200, ctype: "text/xml", action: "CreateQueue", service: "sqs", protocol: "query"},
		{name: "query GET without version", req: request{method: "GET", path: "/?Action=ListQueues"},
			status: 200, ctype: "text/xml", action: "ListQueues", service: "sqs", protocol: "query"},
		{name: "query sns by version", req: formReq("Action=CreateTopic&Version=2010-03-31&Name=t"),
			status: 200, ctype: "text/xml", action: "CreateTopic", service: "sns", protocol: "query"},
		{name: "query sns action without version", req: formReq("Action=CreateTopic&Name=t"),
			status: 200, ctype: "text/xml", action: "CreateTopic", service: "sns", protocol: "query"},
		{name: "shared action picked by credential scope sns", req: formReq("Action=AddPermission&Label=l").with("Authorization", authSNS),
			status: 200, ctype: "text/xml", action: "AddPermission", service: "sns", protocol: "query", region: "us-east-2", accessKey: "AKIDSNS"},
		{name: "shared action picked by credential scope sqs", req: formReq("Action=AddPermission&Label=l").with("Authorization", authSQS),
			status: 200, ctype: "text/xml", action: "AddPermission", service: "sqs", protocol: "query", region: "eu-west-1", accessKey: "AKIDSQS"},
		{name: "shared action picked by version over scope", req: formReq("Action=AddPermission&Version=2012-11-05").with("Authorization", authSNS),
			status: 200, ctype: "text/xml", action: "AddPermission", service: "sqs", protocol: "query", region: "us-east-2", accessKey: "AKIDSNS"},
		{name: "presigned credential", req: request{method: "GET", path: "/?Action=ListQueues&X-Amz-Credential=AKIDP%2F20250101%2Fap-south-1%2Fsqs%2Faws4_request"},
			status: 200, ctype: "text/xml", action: "ListQueues", service: "sqs", protocol: "query", region: "ap-south-1", accessKey: "AKIDP"},
		{name: "url and body parameters merge", req: func() request { r := formReq("QueueName=q"); r.path = "/?Action=CreateQueue"; return r }(),
			status: 200, ctype: "text/xml", action: "CreateQueue", service: "sqs", protocol: "query"},
		{name: "unknown target prefix", req: request{header: map[string]string{"X-Amz-Target": "DynamoDB_20120810.ListTables"}, body: `{}`},
			status: 400, ctype: jsonContentType, code: "UnknownOperationException"},
		{name: "unknown json action", req: jsonReq("Frobnicate", `{}`), status: 400, ctype: jsonContentType, code: "UnknownOperationException"},
		{name: "query action name through json", req: jsonReq("CreateTopic", `{}`), status: 400, ctype: jsonContentType, code: "UnknownOperationException"},
		{name: "json content type without target", req: request{header: map[string]string{"Content-Type": jsonContentType}, body: `{}`},
			status: 400, ctype: jsonContentType, code: "UnknownOperationException"},
		{name: "json content type in capitals", req: request{header: map[string]string{"Content-Type": "Application/X-Amz-JSON-1.0"}, body: `{}`},
			status: 400, ctype: jsonContentType, code: "UnknownOperationException"},
		{name: "missing action", req: formReq("Version=2012-11-05&QueueName=q"), status: 400, ctype: "text/xml", service: "sqs", code: "MissingAction"},
		{name: "missing action sns namespace", req: formReq("Version=2010-03-31"), status: 400, ctype: "text/xml", service: "sns", code: "MissingAction"},
		{name: "unknown query action", req: formReq("Action=Frobnicate&Version=2012-11-05"), status: 400, ctype: "text/xml", service: "sqs", code: "InvalidAction"},
		{name: "sns action with sqs version", req: formReq("Action=CreateTopic&Version=2012-11-05"), status: 400, ctype: "text/xml", service: "sqs", code: "InvalidAction"},
		{name: "PUT", req: request{method: "PUT", body: "Action=ListQueues"}, status: 405, ctype: "text/xml", code: "MethodNotAllowed"},
		{name: "GET json", req: func() request { r := jsonReq("ListQueues", ""); r.method = "GET"; return r }(), status: 405, ctype: jsonContentType, code: "MethodNotAllowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, rec, _ := newTestHandler(t)
			res, body := tt.req.do(t, h)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d; body %s", res.StatusCode, tt.status, body)
			}
			if got := res.Header.Get("Content-Type"); got != tt.ctype {
				t.Errorf("Content-Type %q, want %q", got, tt.ctype)
			}
			if got := res.Header.Get("Content-Length"); got != strconv.Itoa(len(body)) {
				t.Errorf("Content-Length %q for a body of %d bytes", got, len(body))
			}
			id := res.Header.Get("x-amzn-RequestId")
			if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(id) {
				t.Errorf("x-amzn-RequestId %q is not a UUID", id)
			}
			if tt.ctype == "text/xml" && !strings.Contains(body, "<RequestId>"+id+"</RequestId>") {
				t.Errorf("XML body lacks the request id %s: %s", id, body)
			}
			switch tt.service {
			case "sqs":
				if !strings.Contains(body, `xmlns="`+sqsNS+`"`) {
					t.Errorf("want the SQS namespace: %s", body)
				}
			case "sns":
				if !strings.Contains(body, `xmlns="`+snsNS+`"`) {
					t.Errorf("want the SNS namespace: %s", body)
				}
			}
			if tt.code != "" && !strings.Contains(body, tt.code) {
				t.Errorf("body lacks %s: %s", tt.code, body)
			}
			action, _, info := rec.last()
			if action != tt.action {
				t.Fatalf("ran %q, want %q", action, tt.action)
			}
			if tt.action == "" {
				return
			}
			if info.RequestID != id {
				t.Errorf("Info.RequestID %q, header %q", info.RequestID, id)
			}
			if info.Protocol != tt.protocol {
				t.Errorf("Info.Protocol %q, want %q", info.Protocol, tt.protocol)
			}
			if info.Region != tt.region || info.AccessKey != tt.accessKey {
				t.Errorf("Info region/key %q/%q, want %q/%q", info.Region, info.AccessKey, tt.region, tt.accessKey)
			}
			if tt.path != "" && info.Path != tt.path {
				t.Errorf("Info.Path %q, want %q", info.Path, tt.path)
			}
			if info.Host != "example.com" {
				t.Errorf("Info.Host %q", info.Host)
			}
		})
	}
}

func TestErrorEnvelopes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		req    request
		status int
		header string // x-amzn-query-error
		body   string // with REQID for the request id
	}{
		{name: "json modeled error", req: jsonReq("GetQueueUrl", `{}`), status: 400,
			header: "AWS.SimpleQueueService.NonExistentQueue;Sender",
			body:   `{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"The specified queue does not exist."}` + "\n"},
		{name: "query modeled error", req: formReq("Action=GetQueueUrl&Version=2012-11-05"), status: 400,
			body: `<?xml version="1.0"?><ErrorResponse xmlns="` + sqsNS + `"><Error><Type>Sender</Type><Code>AWS.SimpleQueueService.NonExistentQueue</Code>` +
				`<Message>The specified queue does not exist for this wsdl version.</Message><Detail/></Error><RequestId>REQID</RequestId></ErrorResponse>`},
		{name: "sns error has no detail", req: formReq("Action=GetTopicAttributes&Version=2010-03-31"), status: 404,
			body: `<?xml version="1.0"?><ErrorResponse xmlns="` + snsNS + `"><Error><Type>Sender</Type><Code>NotFound</Code>` +
				`<Message>Topic does not exist</Message></Error><RequestId>REQID</RequestId></ErrorResponse>`},
		{name: "json unknown operation", req: jsonReq("Nope", `{}`), status: 400,
			header: "UnknownOperationException;Sender",
			body:   `{"__type":"com.amazon.coral.service#UnknownOperationException"}` + "\n"},
		{name: "query invalid action", req: formReq("Action=Nope&Version=2012-11-05"), status: 400,
			body: `<?xml version="1.0"?><ErrorResponse xmlns="` + sqsNS + `"><Error><Type>Sender</Type><Code>InvalidAction</Code>` +
				`<Message>The action Nope is not valid for this web service.</Message><Detail/></Error><RequestId>REQID</RequestId></ErrorResponse>`},
		{name: "query missing action", req: formReq(""), status: 400,
			body: `<?xml version="1.0"?><ErrorResponse xmlns="` + sqsNS + `"><Error><Type>Sender</Type><Code>MissingAction</Code>` +
				`<Message>The request must contain the parameter Action.</Message><Detail/></Error><RequestId>REQID</RequestId></ErrorResponse>`},
		{name: "json wrong type", req: jsonReq("ReceiveMessage", `{"MaxNumberOfMessages":"5"}`), status: 400,
			header: "SerializationException;Sender",
			body:   `{"__type":"com.amazon.coral.service#SerializationException","message":"STRING_VALUE can not be converted to an Integer"}` + "\n"},
		{name: "query bad integer", req: formReq("Action=ReceiveMessage&MaxNumberOfMessages=ten"), status: 400,
			body: `<?xml version="1.0"?><ErrorResponse xmlns="` + sqsNS + `"><Error><Type>Sender</Type><Code>InvalidParameterValue</Code>` +
				`<Message>Value ten for parameter MaxNumberOfMessages is invalid.</Message><Detail/></Error><RequestId>REQID</RequestId></ErrorResponse>`},
		{name: "escaped message", req: formReq("Action=Ab%3C%26%22cd"), status: 400,
			body: `<?xml version="1.0"?><ErrorResponse xmlns="` + sqsNS + `"><Error><Type>Sender</Type><Code>InvalidAction</Code>` +
				`<Message>The action Ab&lt;&amp;&quot;cd is not valid for this web service.</Message><Detail/></Error><RequestId>REQID</RequestId></ErrorResponse>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _, _ := newTestHandler(t)
			res, body := tt.req.do(t, h)
			if res.StatusCode != tt.status {
				t.Errorf("status %d, want %d", res.StatusCode, tt.status)
			}
			if got := res.Header.Get("x-amzn-query-error"); got != tt.header {
				t.Errorf("x-amzn-query-error %q, want %q", got, tt.header)
			}
			want := strings.ReplaceAll(tt.body, "REQID", res.Header.Get("x-amzn-RequestId"))
			if body != want {
				t.Errorf("body\n got %s\nwant %s", body, want)
			}
		})
	}
}

func TestInternalFailures(t *testing.T) {
	t.Parallel()
	boom := Define("Boom", func(context.Context, *emptyOutput) (*emptyOutput, error) {
		return nil, errors.New("disk on fire")
	})
	wrapped := Define("Wrapped", func(context.Context, *emptyOutput) (*emptyOutput, error) {
		return nil, errors.Join(errors.New("context"), errQueueDoesNotExist)
	})
	panics := Define("Panics", func(context.Context, *emptyOutput) (*emptyOutput, error) {
		var m map[string]int
		m["x"] = 1
		return nil, nil
	})
	badOutput := Action{Name: "BadOutput", InputType: emptyType, OutputType: emptyType,
		Handle: func(context.Context, any) (any, error) { return "not a struct", nil }}
	tests := []struct {
		name   string
		req    request
		status int
		code   string
		log    string // expected in the log; "" for nothing at error level
	}{
		{name: "json plain error", req: jsonReq("Boom", `{}`), status: 500, code: "InternalFailure", log: "disk on fire"},
		{name: "query plain error", req: formReq("Action=Boom"), status: 500, code: "<Code>InternalFailure</Code>", log: "disk on fire"},
		{name: "wrapped aws error", req: jsonReq("Wrapped", `{}`), status: 400, code: "QueueDoesNotExist"},
		{name: "json panic", req: jsonReq("Panics", `{}`), status: 500, code: "InternalFailure", log: "assignment to entry in nil map"},
		{name: "query panic", req: formReq("Action=Panics"), status: 500, code: "<Type>Receiver</Type>", log: "panic"},
		{name: "query bad output", req: formReq("Action=BadOutput"), status: 500, code: "InternalFailure", log: "not a pointer to a struct"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _, logs := newTestHandler(t, boom, wrapped, panics, badOutput)
			res, body := tt.req.do(t, h)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tt.status, body)
			}
			if !strings.Contains(body, tt.code) {
				t.Errorf("body lacks %q: %s", tt.code, body)
			}
			if strings.Contains(body, "fire") || strings.Contains(body, "nil map") || strings.Contains(body, "goroutine") {
				t.Errorf("body leaks the cause: %s", body)
			}
			if tt.log == "" {
				if strings.Contains(logs.String(), "level=ERROR") {
					t.Errorf("unexpected error log: %s", logs)
				}
				return
			}
			if !strings.Contains(logs.String(), tt.log) || !strings.Contains(logs.String(), res.Header.Get("x-amzn-RequestId")) {
				t.Errorf("log lacks %q and the request id: %s", tt.log, logs)
			}
			if res.Header.Get("Content-Type") == jsonContentType && res.Header.Get("x-amzn-query-error") != "InternalFailure;Receiver" {
				t.Errorf("x-amzn-query-error %q", res.Header.Get("x-amzn-query-error"))
			}
		})
	}
}

func TestBadInputNeverServerError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		req    request
		status int
		code   string
	}{
		{"malformed json", jsonReq("SendMessageBatch", `{"QueueUrl":`), 400, "SerializationException"},
		{"json trailing garbage", jsonReq("SendMessageBatch", `{} x`), 400, "SerializationException"},
		{"json top-level list", jsonReq("SendMessageBatch", `[]`), 400, "SerializationException"},
		{"json number for string", jsonReq("SendMessageBatch", `{"QueueUrl":5}`), 400, "SerializationException"},
		{"json object for list", jsonReq("SendMessageBatch", `{"Entries":{}}`), 400, "SerializationException"},
		{"json fraction for integer", jsonReq("ReceiveMessage", `{"WaitTimeSeconds":1.5}`), 400, "SerializationException"},
		{"json integer overflow", jsonReq("ReceiveMessage", `{"WaitTimeSeconds":99999999999}`), 400, "SerializationException"},
		{"json bad base64", jsonReq("Scalars", `{"Raw":"!!!"}`), 400, "SerializationException"},
		{"query bad index", formReq("Action=CreateQueue&Attribute.x.Name=a"), 400, "MalformedQueryString"},
		{"query zero index", formReq("Action=CreateQueue&Attribute.0.Name=a"), 400, "MalformedQueryString"},
		{"query negative index", formReq("Action=SendMessageBatch&SendMessageBatchRequestEntry.-1.Id=a"), 400, "MalformedQueryString"},
		{"query map entry without key", formReq("Action=CreateQueue&Attribute.1.Value=a"), 400, "MissingParameter"},
		{"query bad bool", formReq("Action=Scalars&B=yes"), 400, "InvalidParameterValue"},
		{"query int overflow", formReq("Action=Scalars&I32=2147483648"), 400, "InvalidParameterValue"},
		{"query bad base64", formReq("Action=Scalars&Raw=%21%21"), 400, "InvalidParameterValue"},
		{"query bad escape", formReq("Action=ListQueues&x=%zz"), 400, "MalformedQueryString"},
		{"query semicolon", request{method: "GET", path: "/?Action=ListQueues;x=1"}, 400, "MalformedQueryString"},
		{"huge json body", jsonReq("SendMessageBatch", `{"QueueUrl":"`+strings.Repeat("a", 2048)+`"}`), 413, "RequestEntityTooLarge"},
		{"huge form body", formReq("Action=ListQueues&x=" + strings.Repeat("a", 2048)), 413, "RequestEntityTooLarge"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, rec, logs := newTestHandler(t)
			h.MaxBodyBytes = 1024
			res, body := tt.req.do(t, h)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tt.status, body)
			}
			if !strings.Contains(body, tt.code) {
				t.Errorf("body lacks %s: %s", tt.code, body)
			}
			if a, _, _ := rec.last(); a != "" {
				t.Errorf("action %s ran on bad input", a)
			}
			if strings.Contains(logs.String(), "level=ERROR") {
				t.Errorf("bad input logged as an error: %s", logs)
			}
		})
	}
}

func TestSuccessBodies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  request
		body string
	}{
		{"json output", jsonReq("SendMessageBatch", `{}`),
			`{"Successful":[{"Id":"a","MessageId":"m1","MD5OfMessageBody":"x"}],"Failed":[]}` + "\n"},
		{"json empty output", jsonReq("AddPermission", `{}`), `{}` + "\n"},
		{"query sqs empty output", formReq("Action=AddPermission&Version=2012-11-05"),
			`<?xml version="1.0"?><AddPermissionResponse xmlns="` + sqsNS + `"><ResponseMetadata><RequestId>REQID</RequestId></ResponseMetadata></AddPermissionResponse>`},
		{"query sns empty output", formReq("Action=PublishBatch&Version=2010-03-31"),
			`<?xml version="1.0"?><PublishBatchResponse xmlns="` + snsNS + `"><PublishBatchResult/><ResponseMetadata><RequestId>REQID</RequestId></ResponseMetadata></PublishBatchResponse>`},
		{"query sns empty wrapped list", formReq("Action=ListTopics&Version=2010-03-31"),
			`<?xml version="1.0"?><ListTopicsResponse xmlns="` + snsNS + `"><ListTopicsResult><Topics/></ListTopicsResult><ResponseMetadata><RequestId>REQID</RequestId></ResponseMetadata></ListTopicsResponse>`},
		{"query flat list", formReq("Action=ListQueues"),
			`<?xml version="1.0"?><ListQueuesResponse xmlns="` + sqsNS + `"><ListQueuesResult><QueueUrl>u1</QueueUrl><QueueUrl>u2</QueueUrl></ListQueuesResult><ResponseMetadata><RequestId>REQID</RequestId></ResponseMetadata></ListQueuesResponse>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _, _ := newTestHandler(t)
			res, body := tt.req.do(t, h)
			if res.StatusCode != 200 {
				t.Fatalf("status %d: %s", res.StatusCode, body)
			}
			if res.Header.Get("x-amzn-query-error") != "" {
				t.Errorf("success carries x-amzn-query-error")
			}
			want := strings.ReplaceAll(tt.body, "REQID", res.Header.Get("x-amzn-RequestId"))
			if body != want {
				t.Errorf("body\n got %s\nwant %s", body, want)
			}
			if res.Header.Get("Content-Type") == "text/xml" {
				if err := xml.Unmarshal([]byte(body), new(struct{})); err != nil {
					t.Errorf("not well-formed XML: %v", err)
				}
			} else if !json.Valid([]byte(body)) {
				t.Errorf("not valid JSON")
			}
		})
	}
}

func TestHandlerCheck(t *testing.T) {
	t.Parallel()
	type noLayout struct {
		L []string `query:"L"`
	}
	type badOption struct {
		S string `query:"S,flatt"`
	}
	type badMap struct {
		M map[int]string `query:"M,flat"`
	}
	type nested struct {
		L [][]string `query:"L,flat"`
	}
	type unsigned struct {
		U uint32
	}
	for _, tt := range []struct {
		name string
		a    Action
	}{
		{"list without layout", Define("A", func(context.Context, *noLayout) (*emptyOutput, error) { return nil, nil })},
		{"unknown tag option", Define("A", func(context.Context, *badOption) (*emptyOutput, error) { return nil, nil })},
		{"map with int keys", Define("A", func(context.Context, *badMap) (*emptyOutput, error) { return nil, nil })},
		{"list of lists", Define("A", func(context.Context, *nested) (*emptyOutput, error) { return nil, nil })},
		{"unsigned", Define("A", func(context.Context, *emptyOutput) (*unsigned, error) { return nil, nil })},
		{"input not a struct", Define("A", func(context.Context, *string) (*emptyOutput, error) { return nil, nil })},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := &Handler{Services: []*Service{{Actions: map[string]Action{"A": tt.a}}}}
			if err := h.Check(); err == nil {
				t.Fatal("Check accepted a bad type")
			}
		})
	}
	h := &Handler{Services: []*Service{{Actions: map[string]Action{"B": Define("A", func(context.Context, *emptyOutput) (*emptyOutput, error) { return nil, nil })}}}}
	if err := h.Check(); err == nil {
		t.Error("Check accepted an action registered under another name")
	}
}

func TestInfo(t *testing.T) {
	t.Parallel()
	if Info(context.Background()) == nil {
		t.Fatal("Info of a bare context is nil")
	}
	want := &RequestInfo{RequestID: "r", Region: "x"}
	if got := Info(WithInfo(context.Background(), want)); got != want {
		t.Errorf("Info = %+v, want %+v", got, want)
	}
}

// TestActionContext: the context an action runs in is the request's (its
// values and its cancellation) carrying the request's info.
func TestActionContext(t *testing.T) {
	t.Parallel()
	type key struct{}
	var (
		gotValue any
		gotErr   error
		gotInfo  RequestInfo
	)
	probe := Define("Probe", func(ctx context.Context, _ *emptyOutput) (*emptyOutput, error) {
		gotValue, gotErr, gotInfo = ctx.Value(key{}), ctx.Err(), *Info(ctx)
		return &emptyOutput{}, nil
	})
	h, _, _ := newTestHandler(t, probe)
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/", strings.NewReader("{}"))
	req.Header.Set("X-Amz-Target", "AmazonSQS.Probe")
	req.Header.Set("Content-Type", jsonContentType)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if gotValue != "v" || !errors.Is(gotErr, context.Canceled) {
		t.Errorf("action saw value %v and err %v, want the request's", gotValue, gotErr)
	}
	if id := w.Header().Get("X-Amzn-Requestid"); gotInfo.RequestID != id || gotInfo.Protocol != "json" {
		t.Errorf("action saw info %+v, response id %q", gotInfo, id)
	}
}

// TestBodyLimitWithoutLength: a body of unknown length (chunked) is held
// to the limit as it is read.
func TestBodyLimitWithoutLength(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		size   int
		status int
	}{
		{"under", 1000, 200},
		{"at", 1024, 200},
		{"over", 1025, 413},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, _, _ := newTestHandler(t)
			h.MaxBodyBytes = 1024
			form := "Action=ListQueues&x="
			body := form + strings.Repeat("a", tt.size-len(form))
			req := httptest.NewRequest(http.MethodPost, "/", io.MultiReader(strings.NewReader(body)))
			req.ContentLength = -1
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tt.status {
				t.Errorf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
		})
	}
}

func TestNoServices(t *testing.T) {
	t.Parallel()
	h := &Handler{}
	for _, rq := range []request{formReq("Action=ListQueues"), jsonReq("ListQueues", "{}"), {method: "GET"}} {
		res, body := rq.do(t, h)
		if res.StatusCode != 400 {
			t.Errorf("status %d: %s", res.StatusCode, body)
		}
	}
}
