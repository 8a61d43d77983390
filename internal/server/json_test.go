package server_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	sqsv1 "github.com/aws/aws-sdk-go/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/ferrymq/ferry/internal/testwait"
)

// wantAPIError checks an SDK error for its query-compatible code (what
// aws-sdk-go-v2 reports from x-amzn-query-error) and its HTTP status.
func wantAPIError(t testing.TB, err error, code string, status int) {
	t.Helper()
	if err == nil {
		t.Fatalf("want error %s, got success", code)
	}
	var api smithy.APIError
	if !errors.As(err, &api) {
		t.Fatalf("want API error %s, got %v", code, err)
	}
	if api.ErrorCode() != code {
		t.Errorf("error code = %q (%s), want %q", api.ErrorCode(), api.ErrorMessage(), code)
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() != status {
		t.Errorf("%s: HTTP status = %d, want %d", code, re.HTTPStatusCode(), status)
	}
}

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestJSONQueueLifecycle(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	url := f.createQueue(t, "orders", nil)
	if want := f.srv.URL() + "/000000000000/orders"; url != want {
		t.Fatalf("QueueUrl = %q, want %q", url, want)
	}
	// Idempotent with the same attributes (defaults spelled out count as equal).
	again := f.createQueue(t, "orders", map[string]string{"VisibilityTimeout": "30"})
	if again != url {
		t.Fatalf("second CreateQueue = %q, want %q", again, url)
	}
	_, err := f.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders"),
		Attributes: map[string]string{"VisibilityTimeout": "31"}})
	wantAPIError(t, err, "QueueAlreadyExists", 400)
	var exists *types.QueueNameExists
	if !errors.As(err, &exists) {
		t.Errorf("want *types.QueueNameExists, got %T", err)
	}

	got, err := f.json.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("orders")})
	if err != nil || aws.ToString(got.QueueUrl) != url {
		t.Fatalf("GetQueueUrl = %v, %v", got, err)
	}
	_, err = f.json.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("nope")})
	wantAPIError(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)
	var dne *types.QueueDoesNotExist
	if !errors.As(err, &dne) {
		t.Errorf("want *types.QueueDoesNotExist, got %T", err)
	}

	for _, n := range []string{"orders-eu", "orders-us", "payments"} {
		f.createQueue(t, n, nil)
	}
	list, err := f.json.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String("orders")})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.QueueUrls) != 3 || list.NextToken != nil {
		t.Fatalf("ListQueues prefix = %v (next %v)", list.QueueUrls, list.NextToken)
	}
	// Paging with MaxResults: NextToken only while more remain.
	var pages [][]string
	var token *string
	for {
		out, err := f.json.ListQueues(ctx, &sqs.ListQueuesInput{MaxResults: aws.Int32(3), NextToken: token})
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, out.QueueUrls)
		if out.NextToken == nil {
			break
		}
		token = out.NextToken
	}
	if len(pages) != 2 || len(pages[0]) != 3 || len(pages[1]) != 1 {
		t.Fatalf("pages = %v", pages)
	}

	if _, err := f.json.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatal(err)
	}
	_, err = f.json.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("orders")})
	wantAPIError(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)
	_, err = f.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")})
	wantAPIError(t, err, "AWS.SimpleQueueService.QueueDeletedRecently", 400)
	f.clk.Advance(61 * time.Second)
	f.createQueue(t, "orders", nil)
}

func TestJSONQueueAttributes(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	url := f.createQueue(t, "attrs", nil)
	out, err := f.json.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	created := strconv.FormatInt(epoch.Unix(), 10)
	want := map[string]string{
		"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesNotVisible": "0", "ApproximateNumberOfMessagesDelayed": "0",
		"CreatedTimestamp": created, "LastModifiedTimestamp": created, "DelaySeconds": "0", "MaximumMessageSize": "1048576",
		"MessageRetentionPeriod": "345600", "QueueArn": "arn:aws:sqs:us-east-1:000000000000:attrs",
		"ReceiveMessageWaitTimeSeconds": "0", "SqsManagedSseEnabled": "true", "VisibilityTimeout": "30",
	}
	if fmt.Sprint(out.Attributes) != fmt.Sprint(want) {
		t.Errorf("attributes:\n got %v\nwant %v", out.Attributes, want)
	}
	// Nothing asked, nothing answered.
	none, err := f.json.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url)})
	if err != nil || len(none.Attributes) != 0 {
		t.Errorf("no names: %v, %v", none.Attributes, err)
	}

	f.clk.Advance(time.Minute)
	if _, err := f.json.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url),
		Attributes: map[string]string{"VisibilityTimeout": "45", "DelaySeconds": "5"}}); err != nil {
		t.Fatal(err)
	}
	out, err = f.json.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{"VisibilityTimeout", "DelaySeconds", "LastModifiedTimestamp"}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Attributes["VisibilityTimeout"] != "45" || out.Attributes["DelaySeconds"] != "5" ||
		out.Attributes["LastModifiedTimestamp"] != strconv.FormatInt(epoch.Add(time.Minute).Unix(), 10) || len(out.Attributes) != 3 {
		t.Errorf("after set: %v", out.Attributes)
	}

	bad := []struct {
		name  string
		attrs map[string]string
		code  string
	}{
		{"visibility too long", map[string]string{"VisibilityTimeout": "43201"}, "InvalidAttributeValue"},
		{"visibility not a number", map[string]string{"VisibilityTimeout": "soon"}, "InvalidAttributeValue"},
		{"delay too long", map[string]string{"DelaySeconds": "901"}, "InvalidAttributeValue"},
		{"retention too short", map[string]string{"MessageRetentionPeriod": "59"}, "InvalidAttributeValue"},
		{"size too small", map[string]string{"MaximumMessageSize": "1023"}, "InvalidAttributeValue"},
		{"wait too long", map[string]string{"ReceiveMessageWaitTimeSeconds": "21"}, "InvalidAttributeValue"},
		{"unknown", map[string]string{"Colour": "blue"}, "InvalidAttributeName"},
		{"read-only", map[string]string{"QueueArn": "arn:aws:sqs:us-east-1:000000000000:x"}, "InvalidAttributeName"},
		{"fifo on standard", map[string]string{"FifoQueue": "false"}, "InvalidAttributeName"},
		{"content dedup on standard", map[string]string{"ContentBasedDeduplication": "true"}, "InvalidAttributeName"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.json.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: tc.attrs})
			wantAPIError(t, err, tc.code, 400)
			_, err = f.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("bad-" + strings.ReplaceAll(tc.name, " ", "-")), Attributes: tc.attrs})
			wantAPIError(t, err, tc.code, 400)
		})
	}
	_, err = f.json.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{"Colour"}})
	wantAPIError(t, err, "InvalidAttributeName", 400)

	for _, name := range []string{"", "has space", strings.Repeat("x", 81), "dot.fifo"} {
		_, err := f.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
		if name == "" {
			wantAPIError(t, err, "MissingParameter", 400)
			continue
		}
		wantAPIError(t, err, "InvalidParameterValue", 400)
	}
}

func TestJSONSendReceiveDelete(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	url := f.createQueue(t, "work", nil)
	attrs := map[string]types.MessageAttributeValue{
		"Foo": {DataType: aws.String("String"), StringValue: aws.String("Bar")},
	}
	sent, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("msg"),
		MessageAttributes: attrs,
		MessageSystemAttributes: map[string]types.MessageSystemAttributeValue{
			"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String("Root=1-5759e988-bd862e3fe1be46a994272793")},
		}})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(sent.MD5OfMessageBody) != "6e2baaf3b97dbeef01c0043275f9a0e7" {
		t.Errorf("MD5OfMessageBody = %s", aws.ToString(sent.MD5OfMessageBody))
	}
	if aws.ToString(sent.MD5OfMessageAttributes) != "ae7155c6026991b6d54b11589678bf9c" {
		t.Errorf("MD5OfMessageAttributes = %s", aws.ToString(sent.MD5OfMessageAttributes))
	}
	if sent.MD5OfMessageSystemAttributes == nil || len(*sent.MD5OfMessageSystemAttributes) != 32 {
		t.Errorf("MD5OfMessageSystemAttributes = %v", sent.MD5OfMessageSystemAttributes)
	}
	if len(aws.ToString(sent.MessageId)) != 36 {
		t.Errorf("MessageId = %q", aws.ToString(sent.MessageId))
	}

	f.clk.Advance(time.Second)
	recv, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url),
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	if len(recv.Messages) != 1 {
		t.Fatalf("got %d messages", len(recv.Messages))
	}
	m := recv.Messages[0]
	if aws.ToString(m.MessageId) != aws.ToString(sent.MessageId) || aws.ToString(m.Body) != "msg" ||
		aws.ToString(m.MD5OfBody) != md5hex("msg") || aws.ToString(m.MD5OfMessageAttributes) != "ae7155c6026991b6d54b11589678bf9c" {
		t.Errorf("message = %+v", m)
	}
	if aws.ToString(m.MessageAttributes["Foo"].StringValue) != "Bar" {
		t.Errorf("attributes = %v", m.MessageAttributes)
	}
	wantSys := map[string]string{
		"SenderId": "AKIDFERRYTEST", "ApproximateReceiveCount": "1",
		"SentTimestamp":                    strconv.FormatInt(epoch.UnixMilli(), 10),
		"ApproximateFirstReceiveTimestamp": strconv.FormatInt(epoch.Add(time.Second).UnixMilli(), 10),
		"AWSTraceHeader":                   "Root=1-5759e988-bd862e3fe1be46a994272793",
	}
	if fmt.Sprint(m.Attributes) != fmt.Sprint(wantSys) {
		t.Errorf("system attributes:\n got %v\nwant %v", m.Attributes, wantSys)
	}

	// In flight: nothing more to receive, and the counts say so.
	empty, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)})
	if err != nil || len(empty.Messages) != 0 {
		t.Fatalf("second receive = %v, %v", empty.Messages, err)
	}
	wantCounts(t, f, url, 0, 1, 0)

	if _, err := f.json.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, f, url, 0, 0, 0)
	// Deleting again with the same genuine handle succeeds.
	if _, err := f.json.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Errorf("second delete: %v", err)
	}
	_, err = f.json.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String("forged-handle")})
	wantAPIError(t, err, "ReceiptHandleIsInvalid", 404)
}

func wantCounts(t testing.TB, f *ferry, url string, visible, notVisible, delayed int) {
	t.Helper()
	out, err := f.json.GetQueueAttributes(ctxT(t), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"}})
	if err != nil {
		t.Fatal(err)
	}
	got := [3]string{out.Attributes["ApproximateNumberOfMessages"], out.Attributes["ApproximateNumberOfMessagesNotVisible"], out.Attributes["ApproximateNumberOfMessagesDelayed"]}
	want := [3]string{strconv.Itoa(visible), strconv.Itoa(notVisible), strconv.Itoa(delayed)}
	if got != want {
		t.Errorf("counts (visible, not visible, delayed) = %v, want %v", got, want)
	}
}

func TestJSONMessageAttributeSelection(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	url := f.createQueue(t, "sel", nil)
	_, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("b"),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"attr1":           {DataType: aws.String("Number"), StringValue: aws.String("99.12")},
			"attr2":           {DataType: aws.String("Number"), StringValue: aws.String("109.12")},
			"other":           {DataType: aws.String("String"), StringValue: aws.String("x")},
			"binaryAttribute": {DataType: aws.String("Binary"), BinaryValue: []byte("Hello binary world!")},
		}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		names   []string
		want    []string
		wantMD5 string
	}{
		{[]string{"attr.*"}, []string{"attr1", "attr2"}, "9b720b3af309c1c4b0d395c53b08c502"},
		{[]string{"attr1"}, []string{"attr1"}, "d302007e9aa062660afc85fd0a482472"},
		{[]string{"binaryAttribute"}, []string{"binaryAttribute"}, "31a92b15d92f8db860eda32aceb656c3"},
		{[]string{"nothing"}, nil, ""},
		{nil, nil, ""},
		{[]string{".*"}, []string{"attr1", "attr2", "binaryAttribute", "other"}, ""},
	}
	for _, tc := range cases {
		out, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MessageAttributeNames: tc.names})
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("%v: %v, %v", tc.names, out, err)
		}
		m := out.Messages[0]
		var got []string
		for k := range m.MessageAttributes {
			got = append(got, k)
		}
		sort.Strings(got)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%v: attributes %v, want %v", tc.names, got, tc.want)
		}
		if tc.wantMD5 != "" && aws.ToString(m.MD5OfMessageAttributes) != tc.wantMD5 {
			t.Errorf("%v: MD5OfMessageAttributes %s, want %s", tc.names, aws.ToString(m.MD5OfMessageAttributes), tc.wantMD5)
		}
		if tc.want == nil && m.MD5OfMessageAttributes != nil {
			t.Errorf("%v: MD5OfMessageAttributes present without attributes", tc.names)
		}
		if _, err := f.json.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestJSONSendValidation(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	url := f.createQueue(t, "v", map[string]string{"MaximumMessageSize": "1024"})
	big := f.createQueue(t, "big", nil)
	str := func(s string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(s)}
	}
	tooMany := map[string]types.MessageAttributeValue{}
	for i := 0; i < 11; i++ {
		tooMany[fmt.Sprintf("a%d", i)] = str("v")
	}
	cases := []struct {
		name  string
		queue string
		in    sqs.SendMessageInput
		code  string
	}{
		{"empty body", url, sqs.SendMessageInput{MessageBody: aws.String("")}, "MissingParameter"},
		{"bad characters", url, sqs.SendMessageInput{MessageBody: aws.String("a\x01b")}, "InvalidMessageContents"},
		{"over queue maximum", url, sqs.SendMessageInput{MessageBody: aws.String(strings.Repeat("x", 1025))}, "InvalidParameterValue"},
		{"over 1 MiB", big, sqs.SendMessageInput{MessageBody: aws.String(strings.Repeat("x", 1<<20+1))}, "InvalidParameterValue"},
		{"attributes count toward size", url, sqs.SendMessageInput{MessageBody: aws.String(strings.Repeat("x", 1000)),
			MessageAttributes: map[string]types.MessageAttributeValue{"name": str(strings.Repeat("v", 30))}}, "InvalidParameterValue"},
		{"delay too long", url, sqs.SendMessageInput{MessageBody: aws.String("x"), DelaySeconds: 901}, "InvalidParameterValue"},
		{"eleven attributes", url, sqs.SendMessageInput{MessageBody: aws.String("x"), MessageAttributes: tooMany}, "InvalidParameterValue"},
		{"empty attribute value", url, sqs.SendMessageInput{MessageBody: aws.String("x"), MessageAttributes: map[string]types.MessageAttributeValue{"a": str("")}}, "InvalidParameterValue"},
		{"reserved attribute name", url, sqs.SendMessageInput{MessageBody: aws.String("x"), MessageAttributes: map[string]types.MessageAttributeValue{"AWS.x": str("v")}}, "InvalidParameterValue"},
		{"bad data type", url, sqs.SendMessageInput{MessageBody: aws.String("x"), MessageAttributes: map[string]types.MessageAttributeValue{"a": {DataType: aws.String("Text"), StringValue: aws.String("v")}}}, "InvalidParameterValue"},
		{"bad number", url, sqs.SendMessageInput{MessageBody: aws.String("x"), MessageAttributes: map[string]types.MessageAttributeValue{"a": {DataType: aws.String("Number"), StringValue: aws.String("twelve")}}}, "InvalidParameterValue"},
		{"dedup id on standard", url, sqs.SendMessageInput{MessageBody: aws.String("x"), MessageDeduplicationId: aws.String("d")}, "InvalidParameterValue"},
		{"bad group id", url, sqs.SendMessageInput{MessageBody: aws.String("x"), MessageGroupId: aws.String("has space")}, "InvalidParameterValue"},
		{"unknown queue", f.srv.URL() + "/000000000000/missing", sqs.SendMessageInput{MessageBody: aws.String("x")}, "AWS.SimpleQueueService.NonExistentQueue"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.QueueUrl = aws.String(tc.queue)
			_, err := f.json.SendMessage(ctx, &in)
			wantAPIError(t, err, tc.code, 400)
		})
	}
	// A full 1 MiB message is accepted and read back whole.
	body := strings.Repeat("y", 1<<20)
	if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(big), MessageBody: aws.String(body)}); err != nil {
		t.Fatalf("1 MiB message: %v", err)
	}
	out, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(big)})
	if err != nil || len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != body {
		t.Fatalf("1 MiB message back: %v", err)
	}
	// Fair queues: a group id on a standard queue is kept and shown.
	if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("t"), MessageGroupId: aws.String("tenant-1")}); err != nil {
		t.Fatal(err)
	}
	out, err = f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{"MessageGroupId"}})
	if err != nil || len(out.Messages) != 1 || out.Messages[0].Attributes["MessageGroupId"] != "tenant-1" {
		t.Fatalf("fair queue group id: %+v, %v", out, err)
	}
}

// TestAttributeNameOutsideASCII: AWS documents A-Z, a-z, 0-9, '_', '-'
// and '.' for message attribute names; a name with an umlaut, which
// travels as UTF-8 in both protocols, is refused whole in SendMessage and
// fails its own entry in SendMessageBatch.
func TestAttributeNameOutsideASCII(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	url := f.createQueue(t, "names", nil)
	const name = "\u00f6ther_encodings"
	const want = "Message (user) attributes name can only contain upper and lower score characters, digits, periods, hyphens and underscores. "
	attrs := map[string]types.MessageAttributeValue{name: {DataType: aws.String("String"), StringValue: aws.String("str")}}
	_, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("derp"), MessageAttributes: attrs})
	wantAPIError(t, err, "InvalidParameterValue", 400)
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorMessage() != want {
		t.Errorf("message = %q", api.ErrorMessage())
	}
	_, err = f.query.SendMessage(&sqsv1.SendMessageInput{QueueUrl: awsv1.String(url), MessageBody: awsv1.String("derp"),
		MessageAttributes: map[string]*sqsv1.MessageAttributeValue{name: {DataType: awsv1.String("String"), StringValue: awsv1.String("str")}}})
	wantV1Error(t, err, "InvalidParameterValue", 400)
	out, err := f.json.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("bad"), MessageBody: aws.String("derp"), MessageAttributes: attrs},
		{Id: aws.String("good"), MessageBody: aws.String("fine")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Successful) != 1 || aws.ToString(out.Successful[0].Id) != "good" || len(out.Failed) != 1 {
		t.Fatalf("batch = %+v", out)
	}
	if fe := out.Failed[0]; aws.ToString(fe.Id) != "bad" || aws.ToString(fe.Code) != "InvalidParameterValue" || aws.ToString(fe.Message) != want || !fe.SenderFault {
		t.Errorf("failed entry = %+v", fe)
	}
	got, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
	if err != nil || len(got.Messages) != 1 || aws.ToString(got.Messages[0].Body) != "fine" {
		t.Fatalf("queue holds %+v, %v; want the good entry alone", got, err)
	}
}

func TestJSONReceiveValidation(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	url := f.createQueue(t, "r", nil)
	for _, in := range []sqs.ReceiveMessageInput{
		{MaxNumberOfMessages: 11}, {MaxNumberOfMessages: -1}, {WaitTimeSeconds: 21}, {VisibilityTimeout: 43201},
	} {
		in.QueueUrl = aws.String(url)
		_, err := f.json.ReceiveMessage(ctx, &in)
		wantAPIError(t, err, "InvalidParameterValue", 400)
	}
}

func TestJSONBatches(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	url := f.createQueue(t, "batch", map[string]string{"MaximumMessageSize": "1024"})
	var entries []types.SendMessageBatchRequestEntry
	for i := 0; i < 10; i++ {
		entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprintf("m%d", i)), MessageBody: aws.String(fmt.Sprintf("body %d", i))})
	}
	entries[3].MessageBody = aws.String(strings.Repeat("z", 2000)) // over this queue's maximum
	out, err := f.json.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Successful) != 9 || len(out.Failed) != 1 {
		t.Fatalf("successful %d failed %d", len(out.Successful), len(out.Failed))
	}
	if fl := out.Failed[0]; aws.ToString(fl.Id) != "m3" || aws.ToString(fl.Code) != "InvalidParameterValue" || !fl.SenderFault {
		t.Errorf("failed entry = %+v", fl)
	}
	for _, s := range out.Successful {
		if aws.ToString(s.MD5OfMessageBody) != md5hex("body "+strings.TrimPrefix(aws.ToString(s.Id), "m")) {
			t.Errorf("entry %s MD5 %s", aws.ToString(s.Id), aws.ToString(s.MD5OfMessageBody))
		}
	}
	wantCounts(t, f, url, 9, 0, 0)

	recv, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
	if err != nil || len(recv.Messages) != 9 {
		t.Fatalf("receive 10: %d, %v", len(recv.Messages), err)
	}
	var vis []types.ChangeMessageVisibilityBatchRequestEntry
	var del []types.DeleteMessageBatchRequestEntry
	for i, m := range recv.Messages {
		if i < 4 {
			vis = append(vis, types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(fmt.Sprint("v", i)), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
		} else {
			del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint("d", i)), ReceiptHandle: m.ReceiptHandle})
		}
	}
	vis = append(vis, types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String("bogus"), ReceiptHandle: aws.String("garbage"), VisibilityTimeout: 0})
	del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String("bogus"), ReceiptHandle: aws.String("garbage")})
	vout, err := f.json.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: vis})
	if err != nil || len(vout.Successful) != 4 || len(vout.Failed) != 1 || aws.ToString(vout.Failed[0].Code) != "ReceiptHandleIsInvalid" {
		t.Fatalf("visibility batch: %+v, %v", vout, err)
	}
	dout, err := f.json.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del})
	if err != nil || len(dout.Successful) != 5 || len(dout.Failed) != 1 || aws.ToString(dout.Failed[0].Code) != "ReceiptHandleIsInvalid" {
		t.Fatalf("delete batch: %+v, %v", dout, err)
	}
	wantCounts(t, f, url, 4, 0, 0)

	// Whole-request batch errors.
	eleven := make([]types.SendMessageBatchRequestEntry, 11)
	for i := range eleven {
		eleven[i] = types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint("e", i)), MessageBody: aws.String("x")}
	}
	dupes := []types.SendMessageBatchRequestEntry{{Id: aws.String("a"), MessageBody: aws.String("x")}, {Id: aws.String("a"), MessageBody: aws.String("y")}}
	badID := []types.SendMessageBatchRequestEntry{{Id: aws.String("no spaces"), MessageBody: aws.String("x")}}
	bigQ := f.createQueue(t, "batch-big", nil)
	tooLong := []types.SendMessageBatchRequestEntry{
		{Id: aws.String("a"), MessageBody: aws.String(strings.Repeat("x", 600_000))},
		{Id: aws.String("b"), MessageBody: aws.String(strings.Repeat("x", 600_000))},
	}
	for _, tc := range []struct {
		name    string
		queue   string
		entries []types.SendMessageBatchRequestEntry
		code    string
	}{
		{"empty", url, []types.SendMessageBatchRequestEntry{}, "AWS.SimpleQueueService.EmptyBatchRequest"},
		{"eleven", url, eleven, "AWS.SimpleQueueService.TooManyEntriesInBatchRequest"},
		{"duplicate ids", url, dupes, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct"},
		{"bad id", url, badID, "AWS.SimpleQueueService.InvalidBatchEntryId"},
		{"too long", bigQ, tooLong, "AWS.SimpleQueueService.BatchRequestTooLong"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.json.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(tc.queue), Entries: tc.entries})
			wantAPIError(t, err, tc.code, 400)
		})
	}
	_, err = f.json.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.DeleteMessageBatchRequestEntry{}})
	wantAPIError(t, err, "AWS.SimpleQueueService.EmptyBatchRequest", 400)
	wantCounts(t, f, bigQ, 0, 0, 0)
}

func TestJSONVisibilityAndDelays(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	url := f.createQueue(t, "vis", map[string]string{"VisibilityTimeout": "10"})
	if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("a")}); err != nil {
		t.Fatal(err)
	}
	recv := func() []types.Message {
		t.Helper()
		out, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url),
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{"ApproximateReceiveCount"}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Messages
	}
	first := recv()
	if len(first) != 1 {
		t.Fatal("no message")
	}
	f.clk.Advance(9 * time.Second)
	if len(recv()) != 0 {
		t.Fatal("visible before its timeout")
	}
	f.clk.Advance(time.Second)
	second := testwait.Some(t, "nothing arrived", recv)
	if second[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Errorf("receive count = %s", second[0].Attributes["ApproximateReceiveCount"])
	}
	// The first handle is stale now: a visibility change is refused, a
	// delete succeeds but deletes nothing.
	_, err := f.json.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: first[0].ReceiptHandle, VisibilityTimeout: 100})
	wantAPIError(t, err, "InvalidParameterValue", 400)
	if _, err := f.json.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: first[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, f, url, 0, 1, 0)

	// Extend the current receipt; then beyond 12 hours from the receive is refused.
	if _, err := f.json.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: second[0].ReceiptHandle, VisibilityTimeout: 3600}); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(3599 * time.Second)
	if len(recv()) != 0 {
		t.Fatal("visible before its extended timeout")
	}
	_, err = f.json.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: second[0].ReceiptHandle, VisibilityTimeout: 43200})
	wantAPIError(t, err, "InvalidParameterValue", 400)
	if _, err := f.json.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: second[0].ReceiptHandle, VisibilityTimeout: 0}); err != nil {
		t.Fatal(err)
	}
	third := recv()
	if len(third) != 1 || third[0].Attributes["ApproximateReceiveCount"] != "3" {
		t.Fatalf("after visibility 0: %v", third)
	}
	if _, err := f.json.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: third[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}

	// Delays: per message over the queue's.
	if _, err := f.json.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"DelaySeconds": "20"}}); err != nil {
		t.Fatal(err)
	}
	f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("queue delay")})
	f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("own delay"), DelaySeconds: 5})
	wantCounts(t, f, url, 0, 0, 2)
	f.clk.Advance(5 * time.Second)
	got := testwait.Some(t, "nothing arrived", recv)
	if aws.ToString(got[0].Body) != "own delay" {
		t.Errorf("first out = %q", aws.ToString(got[0].Body))
	}
	wantCounts(t, f, url, 0, 1, 1)
	if _, err := f.json.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: got[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(15 * time.Second)
	got = testwait.Some(t, "nothing arrived", recv)
	if aws.ToString(got[0].Body) != "queue delay" {
		t.Errorf("second out = %q", aws.ToString(got[0].Body))
	}
}

func TestJSONRetention(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	url := f.createQueue(t, "ret", map[string]string{"MessageRetentionPeriod": "120"})
	f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("old")})
	f.clk.Advance(60 * time.Second)
	f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("new")})
	f.clk.Advance(60 * time.Second)
	waitCounts(t, f, url, 1)
	out, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
	if err != nil || len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != "new" {
		t.Fatalf("after expiry: %v, %v", out, err)
	}
	// Lowering retention expires what is already older than the new period.
	if _, err := f.json.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"MessageRetentionPeriod": "60"}}); err != nil {
		t.Fatal(err)
	}
	waitCounts(t, f, url, 0)
}

// waitCounts waits until visible + in flight + delayed is n.
func waitCounts(t testing.TB, f *ferry, url string, n int) {
	t.Helper()
	testwait.Eventually(t, fmt.Sprintf("%d messages in all", n), func() bool {
		st, err := f.srv.Engine().Stats(context.Background(), "000000000000", url[strings.LastIndex(url, "/")+1:])
		return err == nil && int(st.Visible+st.NotVisible+st.Delayed) == n
	})
}

func TestJSONLongPolling(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	url := f.createQueue(t, "lp", nil)

	// A waiting receiver gets a message the moment it is sent.
	type result struct {
		msgs []types.Message
		err  error
	}
	done := make(chan result, 1)
	go func() {
		out, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 20})
		if err != nil {
			done <- result{err: err}
			return
		}
		done <- result{msgs: out.Messages}
	}()
	f.waitPending(t, 1)
	if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("wake")}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || len(r.msgs) != 1 || aws.ToString(r.msgs[0].Body) != "wake" {
		t.Fatalf("long poll: %+v", r)
	}
	inFlight := r.msgs[0]

	// With nothing to take it answers empty when the wait is over; the
	// queue's ReceiveMessageWaitTimeSeconds is the default wait.
	if _, err := f.json.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"ReceiveMessageWaitTimeSeconds": "5"}}); err != nil {
		t.Fatal(err)
	}
	// The embedded store keeps a timer for the in-flight message, due
	// after this wait; PostgreSQL only for what is due within the wait.
	before := f.clk.Pending()
	go func() {
		out, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)})
		if err != nil {
			done <- result{err: err}
			return
		}
		done <- result{msgs: out.Messages}
	}()
	testwait.Pending(t, f.clk, before+1) // this wait
	fired := f.clk.Fired()
	// Advance fires every due timer before it returns: a wait that ended at
	// 4 s has had its timer fired by the time the check runs.
	testwait.Never(t, "the long poll answered before the wait was over",
		func() { f.clk.Advance(4 * time.Second) },
		func() bool {
			select {
			case r := <-done:
				t.Logf("answered: %+v", r)
				return true
			default:
				return f.clk.Fired() != fired
			}
		})
	f.clk.Advance(time.Second)
	if r := <-done; r.err != nil || len(r.msgs) != 0 {
		t.Fatalf("empty long poll: %+v", r)
	}

	// A message whose visibility runs out wakes a waiter too.
	if _, err := f.json.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: inFlight.ReceiptHandle, VisibilityTimeout: 10}); err != nil {
		t.Fatal(err)
	}
	go func() {
		out, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 20})
		if err != nil {
			done <- result{err: err}
			return
		}
		done <- result{msgs: out.Messages}
	}()
	f.waitPending(t, 2)
	f.clk.Advance(10 * time.Second) // the visibility ends; the 20 s wait does not

	if r := <-done; r.err != nil || len(r.msgs) != 1 || aws.ToString(r.msgs[0].Body) != "wake" {
		t.Fatalf("woken by visibility expiry: %+v", r)
	}
}

func TestJSONConcurrentConsumers(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	// The clock does not move: no message comes back between its receive
	// and its delete.
	url := f.createQueue(t, "conc", nil)
	cctx, stopConsumers := context.WithCancel(ctx)
	defer stopConsumers()
	const producers, perProducer, consumers = 4, 50, 4
	var seen sync.Map
	var wg sync.WaitGroup
	received := make(chan string, producers*perProducer)
	for c := 0; c < consumers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				out, err := f.json.ReceiveMessage(cctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
				if err != nil {
					if cctx.Err() == nil {
						t.Error(err)
					}
					return
				}
				for _, m := range out.Messages {
					if _, dup := seen.LoadOrStore(aws.ToString(m.Body), true); dup {
						t.Errorf("%s handed out twice", aws.ToString(m.Body))
					}
					if _, err := f.json.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
						t.Error(err)
					}
					select {
					case received <- aws.ToString(m.Body):
					case <-cctx.Done(): // more than were sent: the error above says so
						return
					}
				}
				if len(received) == cap(received) {
					return
				}
			}
		}()
	}
	var pw sync.WaitGroup
	for p := 0; p < producers; p++ {
		pw.Add(1)
		go func() {
			defer pw.Done()
			for i := 0; i < perProducer; i++ {
				if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(fmt.Sprintf("p%d-%d", p, i))}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	pw.Wait()
	// A send hands its message to a waiting receive at once, and a receive
	// takes what is visible: every message arrives without the clock moving.
	testwait.Eventually(t, "every message to be received", func() bool { return len(received) == cap(received) })
	stopConsumers()
	wg.Wait()
	if len(received) != producers*perProducer {
		t.Fatalf("received %d of %d", len(received), producers*perProducer)
	}
}

func TestJSONPurgeAndTags(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	url := f.createQueue(t, "p", nil)
	for i := 0; i < 3; i++ {
		f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")})
	}
	f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)})
	if _, err := f.json.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, f, url, 0, 0, 0)
	_, err := f.json.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)})
	wantAPIError(t, err, "AWS.SimpleQueueService.PurgeQueueInProgress", 403)
	f.clk.Advance(60 * time.Second)
	if _, err := f.json.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatalf("purge after 60 s: %v", err)
	}

	tagged, err := f.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("tagged"), Tags: map[string]string{"team": "core"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.json.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: tagged.QueueUrl, Tags: map[string]string{"env": "ci", "team": "edge"}}); err != nil {
		t.Fatal(err)
	}
	tags, err := f.json.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: tagged.QueueUrl})
	if err != nil || fmt.Sprint(tags.Tags) != fmt.Sprint(map[string]string{"env": "ci", "team": "edge"}) {
		t.Fatalf("tags = %v, %v", tags, err)
	}
	if _, err := f.json.UntagQueue(ctx, &sqs.UntagQueueInput{QueueUrl: tagged.QueueUrl, TagKeys: []string{"env"}}); err != nil {
		t.Fatal(err)
	}
	tags, err = f.json.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: tagged.QueueUrl})
	if err != nil || fmt.Sprint(tags.Tags) != fmt.Sprint(map[string]string{"team": "edge"}) {
		t.Fatalf("tags after untag = %v, %v", tags, err)
	}
}

// TestJSONTextAsSent: over JSON, text that is not UTF-8 and escapes of lone
// surrogates are refused with AWS's answers, and nothing of such a request
// is stored; a surrogate pair is one character and keeps its MD5.
func TestJSONTextAsSent(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	url := f.createQueue(t, "text", nil)
	const (
		serialization = "com.amazon.coral.service#SerializationException"
		contents      = "com.amazonaws.sqs#InvalidMessageContents"
		notUTF8       = "not UTF-8" // the message names the first bad byte
		contentsMsg   = "Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF"
	)
	q := `{"QueueUrl":"` + url + `",`
	for _, tc := range []struct {
		name, action, body string
		typ, header, msg   string
	}{
		{"invalid bytes in a body", "SendMessage", q + "\"MessageBody\":\"ok\xff\xfe\"}", serialization, "SerializationException;Sender",
			notUTF8},
		{"truncated sequence in a body", "SendMessage", q + "\"MessageBody\":\"\xe2\x82\"}", serialization, "SerializationException;Sender",
			notUTF8},
		{"invalid bytes in an attribute", "SendMessage",
			q + "\"MessageBody\":\"ok\",\"MessageAttributes\":{\"a\":{\"DataType\":\"String\",\"StringValue\":\"\xc0\xaf\"}}}",
			serialization, "SerializationException;Sender", notUTF8},
		{"lone high surrogate in a body", "SendMessage", q + `"MessageBody":"ok\ud800"}`, contents, "InvalidMessageContents;Sender", contentsMsg},
		{"lone low surrogate in an attribute", "SendMessage",
			q + `"MessageBody":"ok","MessageAttributes":{"a":{"DataType":"String","StringValue":"\udc00"}}}`,
			contents, "InvalidMessageContents;Sender", contentsMsg},
		{"lone surrogate in a batch", "SendMessageBatch", q + `"Entries":[{"Id":"1","MessageBody":"fine"},{"Id":"2","MessageBody":"\ud83d"}]}`,
			contents, "InvalidMessageContents;Sender", contentsMsg},
		{"invalid bytes in a queue name", "CreateQueue", "{\"QueueName\":\"q\xff\"}", serialization, "SerializationException;Sender",
			notUTF8},
		{"lone surrogate in a tag", "TagQueue", q + `"Tags":{"k":"\ud800"}}`, contents, "InvalidMessageContents;Sender", contentsMsg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.postJSON(t, tc.action, tc.body)
			var e struct {
				Type    string `json:"__type"`
				Message string `json:"message"`
			}
			if err := json.Unmarshal([]byte(r.Body), &e); err != nil {
				t.Fatalf("%d %q: %v", r.Status, r.Body, err)
			}
			msg := tc.msg
			if msg == notUTF8 {
				// The bodies are ASCII up to their first bad byte.
				at := strings.IndexFunc(tc.body, func(r rune) bool { return r >= 0x80 })
				msg = fmt.Sprintf("The request body is not valid UTF-8 (at byte %d).", at)
			}
			if r.Status != 400 || e.Type != tc.typ || e.Message != msg || r.Header.Get("x-amzn-query-error") != tc.header {
				t.Fatalf("%d %s %q, want 400 %s %q %q", r.Status, r.Header.Get("x-amzn-query-error"), r.Body, tc.typ, msg, tc.header)
			}
		})
	}

	// Nothing of those requests is stored: no queue, no tag, no message but
	// the one sent below.
	list, err := f.json.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil || len(list.QueueUrls) != 1 {
		t.Fatalf("ListQueues %v: %v", list.QueueUrls, err)
	}
	tags, err := f.json.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(url)})
	if err != nil || len(tags.Tags) != 0 {
		t.Fatalf("ListQueueTags %v: %v", tags.Tags, err)
	}
	r := f.postJSON(t, "SendMessage", q+`"MessageBody":"a\ud83d\ude00b","MessageAttributes":{"e":{"DataType":"String","StringValue":"\uD83D\uDE00"}}}`)
	if r.Status != 200 {
		t.Fatalf("surrogate pair: %d %s", r.Status, r.Body)
	}
	var sent struct{ MD5OfMessageBody, MD5OfMessageAttributes string }
	if err := json.Unmarshal([]byte(r.Body), &sent); err != nil {
		t.Fatal(err)
	}
	if sum := md5.Sum([]byte("a😀b")); sent.MD5OfMessageBody != hex.EncodeToString(sum[:]) {
		t.Fatalf("MD5OfMessageBody %s, want the MD5 of a😀b", sent.MD5OfMessageBody)
	}
	out, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
		MessageAttributeNames: []string{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 {
		t.Fatalf("received %d messages, want the one with a surrogate pair", len(out.Messages))
	}
	m := out.Messages[0]
	if aws.ToString(m.Body) != "a😀b" || aws.ToString(m.MessageAttributes["e"].StringValue) != "😀" ||
		aws.ToString(m.MD5OfMessageAttributes) != sent.MD5OfMessageAttributes {
		t.Fatalf("received %q %q %s, want a😀b 😀 %s", aws.ToString(m.Body), aws.ToString(m.MessageAttributes["e"].StringValue),
			aws.ToString(m.MD5OfMessageAttributes), sent.MD5OfMessageAttributes)
	}
}
