package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	awsv1 "github.com/aws/aws-sdk-go/aws"
	"github.com/aws/aws-sdk-go/aws/awserr"
	sqsv1 "github.com/aws/aws-sdk-go/service/sqs"
)

// wantV1Error checks an aws-sdk-go v1 (query protocol) error.
func wantV1Error(t testing.TB, err error, code string, status int) {
	t.Helper()
	if err == nil {
		t.Fatalf("want %s, got success", code)
	}
	rf, ok := err.(awserr.RequestFailure)
	if !ok {
		t.Fatalf("want request failure %s, got %v", code, err)
	}
	if rf.Code() != code || rf.StatusCode() != status {
		t.Errorf("error = %s/%d (%s), want %s/%d", rf.Code(), rf.StatusCode(), rf.Message(), code, status)
	}
	if rf.RequestID() == "" {
		t.Errorf("%s: no request id", code)
	}
}

func TestQueryEndToEnd(t *testing.T) {
	t.Parallel()
	f := start(t)
	q := f.query
	created, err := q.CreateQueue(&sqsv1.CreateQueueInput{QueueName: awsv1.String("legacy"),
		Attributes: map[string]*string{"VisibilityTimeout": awsv1.String("60")},
		Tags:       map[string]*string{"team": awsv1.String("core")}})
	if err != nil {
		t.Fatal(err)
	}
	url := awsv1.StringValue(created.QueueUrl)
	if url != f.srv.URL()+"/000000000000/legacy" {
		t.Fatalf("QueueUrl = %s", url)
	}
	attrs, err := q.GetQueueAttributes(&sqsv1.GetQueueAttributesInput{QueueUrl: created.QueueUrl, AttributeNames: awsv1.StringSlice([]string{"All"})})
	if err != nil || awsv1.StringValue(attrs.Attributes["VisibilityTimeout"]) != "60" || awsv1.StringValue(attrs.Attributes["QueueArn"]) != "arn:aws:sqs:us-east-1:000000000000:legacy" {
		t.Fatalf("attributes = %v, %v", attrs, err)
	}
	tags, err := q.ListQueueTags(&sqsv1.ListQueueTagsInput{QueueUrl: created.QueueUrl})
	if err != nil || awsv1.StringValue(tags.Tags["team"]) != "core" {
		t.Fatalf("tags = %v, %v", tags, err)
	}

	// aws-sdk-go v1 checks MD5OfMessageBody and MD5OfMessageAttributes on
	// send and receive: a wrong digest fails these calls.
	body := `quotes " and <xml> & a CR` + "\r" + ` and ünïcode ✓`
	sent, err := q.SendMessage(&sqsv1.SendMessageInput{QueueUrl: created.QueueUrl, MessageBody: awsv1.String(body),
		MessageAttributes: map[string]*sqsv1.MessageAttributeValue{
			"customNumberTypeAttrib": {DataType: awsv1.String("Number.float"), StringValue: awsv1.String("4563442423554324324264524243.32543234")},
			"bin":                    {DataType: awsv1.String("Binary"), BinaryValue: []byte{0, 1, 2, 0xff}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := q.SendMessageBatch(&sqsv1.SendMessageBatchInput{QueueUrl: created.QueueUrl, Entries: []*sqsv1.SendMessageBatchRequestEntry{
		{Id: awsv1.String("a"), MessageBody: awsv1.String("one"), MessageAttributes: map[string]*sqsv1.MessageAttributeValue{"attr1": {DataType: awsv1.String("Number"), StringValue: awsv1.String("99.12")}}},
		{Id: awsv1.String("b"), MessageBody: awsv1.String("two"), DelaySeconds: awsv1.Int64(0)},
	}})
	if err != nil || len(batch.Successful) != 2 || len(batch.Failed) != 0 {
		t.Fatalf("batch = %v, %v", batch, err)
	}
	recv, err := q.ReceiveMessage(&sqsv1.ReceiveMessageInput{QueueUrl: created.QueueUrl, MaxNumberOfMessages: awsv1.Int64(10),
		MessageAttributeNames: awsv1.StringSlice([]string{"All"}), AttributeNames: awsv1.StringSlice([]string{"All"})})
	if err != nil {
		t.Fatal(err)
	}
	if len(recv.Messages) != 3 {
		t.Fatalf("received %d", len(recv.Messages))
	}
	byID := map[string]*sqsv1.Message{}
	for _, m := range recv.Messages {
		byID[awsv1.StringValue(m.MessageId)] = m
	}
	m := byID[awsv1.StringValue(sent.MessageId)]
	if m == nil || awsv1.StringValue(m.Body) != body || string(m.MessageAttributes["bin"].BinaryValue) != "\x00\x01\x02\xff" ||
		awsv1.StringValue(m.Attributes["ApproximateReceiveCount"]) != "1" {
		t.Fatalf("message = %v", m)
	}
	var del []*sqsv1.DeleteMessageBatchRequestEntry
	for i, m := range recv.Messages[1:] {
		del = append(del, &sqsv1.DeleteMessageBatchRequestEntry{Id: awsv1.String(fmt.Sprint("d", i)), ReceiptHandle: m.ReceiptHandle})
	}
	dout, err := q.DeleteMessageBatch(&sqsv1.DeleteMessageBatchInput{QueueUrl: created.QueueUrl, Entries: del})
	if err != nil || len(dout.Successful) != 2 {
		t.Fatalf("delete batch = %v, %v", dout, err)
	}
	if _, err := q.ChangeMessageVisibility(&sqsv1.ChangeMessageVisibilityInput{QueueUrl: created.QueueUrl, ReceiptHandle: recv.Messages[0].ReceiptHandle, VisibilityTimeout: awsv1.Int64(0)}); err != nil {
		t.Fatal(err)
	}
	again, err := q.ReceiveMessage(&sqsv1.ReceiveMessageInput{QueueUrl: created.QueueUrl})
	if err != nil || len(again.Messages) != 1 {
		t.Fatalf("receive again = %v, %v", again, err)
	}
	if _, err := q.DeleteMessage(&sqsv1.DeleteMessageInput{QueueUrl: created.QueueUrl, ReceiptHandle: again.Messages[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	list, err := q.ListQueues(&sqsv1.ListQueuesInput{QueueNamePrefix: awsv1.String("leg")})
	if err != nil || len(list.QueueUrls) != 1 {
		t.Fatalf("list = %v, %v", list, err)
	}
	if _, err := q.PurgeQueue(&sqsv1.PurgeQueueInput{QueueUrl: created.QueueUrl}); err != nil {
		t.Fatal(err)
	}
	_, err = q.PurgeQueue(&sqsv1.PurgeQueueInput{QueueUrl: created.QueueUrl})
	wantV1Error(t, err, "AWS.SimpleQueueService.PurgeQueueInProgress", 403)
	if _, err := q.DeleteQueue(&sqsv1.DeleteQueueInput{QueueUrl: created.QueueUrl}); err != nil {
		t.Fatal(err)
	}
}

func TestQueryErrors(t *testing.T) {
	t.Parallel()
	f := start(t)
	q := f.query
	url := f.createQueue(t, "qe", map[string]string{"MaximumMessageSize": "1024"})
	_, err := q.GetQueueUrl(&sqsv1.GetQueueUrlInput{QueueName: awsv1.String("missing")})
	wantV1Error(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)
	_, err = q.SendMessage(&sqsv1.SendMessageInput{QueueUrl: awsv1.String(url), MessageBody: awsv1.String(strings.Repeat("x", 1025))})
	wantV1Error(t, err, "InvalidParameterValue", 400)
	_, err = q.SetQueueAttributes(&sqsv1.SetQueueAttributesInput{QueueUrl: awsv1.String(url), Attributes: map[string]*string{"VisibilityTimeout": awsv1.String("-1")}})
	wantV1Error(t, err, "InvalidAttributeValue", 400)
	_, err = q.DeleteMessage(&sqsv1.DeleteMessageInput{QueueUrl: awsv1.String(url), ReceiptHandle: awsv1.String("nonsense")})
	wantV1Error(t, err, "ReceiptHandleIsInvalid", 404)
	_, err = q.SendMessageBatch(&sqsv1.SendMessageBatchInput{QueueUrl: awsv1.String(url), Entries: []*sqsv1.SendMessageBatchRequestEntry{
		{Id: awsv1.String("same"), MessageBody: awsv1.String("x")}, {Id: awsv1.String("same"), MessageBody: awsv1.String("y")}}})
	wantV1Error(t, err, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", 400)
	_, err = q.ReceiveMessage(&sqsv1.ReceiveMessageInput{QueueUrl: awsv1.String(url), MaxNumberOfMessages: awsv1.Int64(11)})
	wantV1Error(t, err, "InvalidParameterValue", 400)
}

var requestIDPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// TestWireErrorEnvelopes checks the bytes of error answers in both
// protocols, as the SDKs of every language read them.
func TestWireErrorEnvelopes(t *testing.T) {
	t.Parallel()
	f := start(t)
	missing := f.srv.URL() + "/000000000000/missing"

	r := f.postJSON(t, "SendMessage", `{"QueueUrl":"`+missing+`","MessageBody":"x"}`)
	if r.Status != 400 || r.Header.Get("x-amzn-query-error") != "AWS.SimpleQueueService.NonExistentQueue;Sender" ||
		r.Header.Get("Content-Type") != "application/x-amz-json-1.0" || !requestIDPattern.MatchString(r.Header.Get("x-amzn-RequestId")) {
		t.Errorf("JSON error head: %d %v", r.Status, r.Header)
	}
	var env map[string]string
	if err := json.Unmarshal([]byte(r.Body), &env); err != nil {
		t.Fatalf("JSON error body %q: %v", r.Body, err)
	}
	if env["__type"] != "com.amazonaws.sqs#QueueDoesNotExist" || env["message"] != "The specified queue does not exist." {
		t.Errorf("JSON error body = %s", r.Body)
	}

	r = f.postQuery(t, url.Values{"Action": {"SendMessage"}, "Version": {"2012-11-05"}, "QueueUrl": {missing}, "MessageBody": {"x"}}.Encode())
	want := regexp.MustCompile(`^<\?xml version="1.0"\?><ErrorResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><Error><Type>Sender</Type><Code>AWS.SimpleQueueService.NonExistentQueue</Code><Message>The specified queue does not exist for this wsdl version.</Message><Detail/></Error><RequestId>[0-9a-f-]{36}</RequestId></ErrorResponse>\s*$`)
	if r.Status != 400 || !want.MatchString(r.Body) || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/xml") {
		t.Errorf("query error = %d %s", r.Status, r.Body)
	}

	bad := []struct {
		name   string
		resp   func() rawResponse
		status int
		code   string
	}{
		{"malformed JSON", func() rawResponse { return f.postJSON(t, "SendMessage", `{"QueueUrl":`) }, 400, ""},
		{"string for a number", func() rawResponse {
			return f.postJSON(t, "ReceiveMessage", `{"QueueUrl":"`+missing+`","MaxNumberOfMessages":"ten"}`)
		}, 400, ""},
		{"unknown JSON action", func() rawResponse { return f.postJSON(t, "FlyToTheMoon", `{}`) }, 400, ""},
		{"missing parameter", func() rawResponse { return f.postJSON(t, "GetQueueUrl", `{}`) }, 400, "MissingParameter;Sender"},
		{"unknown query action", func() rawResponse {
			return f.postQuery(t, "Action=FlyToTheMoon&Version=2012-11-05")
		}, 400, ""},
		{"no action", func() rawResponse { return f.postQuery(t, "Version=2012-11-05") }, 400, ""},
		{"query number not a number", func() rawResponse {
			return f.postQuery(t, url.Values{"Action": {"ReceiveMessage"}, "Version": {"2012-11-05"}, "QueueUrl": {missing}, "MaxNumberOfMessages": {"ten"}}.Encode())
		}, 400, ""},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.resp()
			if r.Status != tc.status {
				t.Errorf("status = %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			if tc.code != "" && r.Header.Get("x-amzn-query-error") != tc.code {
				t.Errorf("x-amzn-query-error = %q, want %q", r.Header.Get("x-amzn-query-error"), tc.code)
			}
			if r.Body == "" {
				t.Error("empty error body")
			}
		})
	}
}

// TestQueueFromPath: Java SDK v1 and others send the queue URL as the
// request path instead of a QueueUrl parameter.
func TestQueueFromPath(t *testing.T) {
	t.Parallel()
	f := start(t)
	f.createQueue(t, "bypath", nil)
	req, _ := http.NewRequest("POST", f.srv.URL()+"/000000000000/bypath",
		strings.NewReader("Action=SendMessage&Version=2012-11-05&MessageBody=hello"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r := do(t, req)
	if r.Status != 200 || !strings.Contains(r.Body, "<MD5OfMessageBody>5d41402abc4b2a76b9719d911017c592</MD5OfMessageBody>") {
		t.Fatalf("send by path = %d %s", r.Status, r.Body)
	}
	r = f.postJSON(t, "GetQueueAttributes", `{"QueueUrl":"bypath","AttributeNames":["ApproximateNumberOfMessages"]}`)
	if r.Status != 200 || !strings.Contains(r.Body, `"ApproximateNumberOfMessages":"1"`) {
		t.Fatalf("queue by bare name = %d %s", r.Status, r.Body)
	}
	// GET works for the query protocol too.
	r = do(t, mustRequest(t, "GET", f.srv.URL()+"/?Action=GetQueueUrl&Version=2012-11-05&QueueName=bypath"))
	if r.Status != 200 || !strings.Contains(r.Body, "<QueueUrl>"+f.srv.URL()+"/000000000000/bypath</QueueUrl>") {
		t.Fatalf("GET GetQueueUrl = %d %s", r.Status, r.Body)
	}
}

func mustRequest(t testing.TB, method, u string) *http.Request {
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestHealth(t *testing.T) {
	t.Parallel()
	f := start(t)
	r := do(t, mustRequest(t, "GET", f.srv.URL()+"/_ferry/health"))
	if r.Status != 200 || !strings.Contains(r.Body, `"running"`) {
		t.Fatalf("health = %d %s", r.Status, r.Body)
	}
}
