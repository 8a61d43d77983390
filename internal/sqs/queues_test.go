package sqs

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/protocol"
)

func TestCreateQueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("orders", nil)
	if url != testBase+"/"+testAccount+"/orders" {
		t.Errorf("url = %q", url)
	}
	tests := []struct {
		name    string
		in      CreateQueueInput
		code    string
		message string
	}{
		{"missing name", CreateQueueInput{}, "MissingParameter", "The request must contain the parameter QueueName."},
		{"bad name", CreateQueueInput{QueueName: "invalid/name"}, "InvalidParameterValue", "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length"},
		{"long name", CreateQueueInput{QueueName: strings.Repeat("q", 81)}, "InvalidParameterValue", "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length"},
		{"fifo suffix on standard", CreateQueueInput{QueueName: "q.fifo"}, "InvalidParameterValue", "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length"},
		{"fifo without suffix", CreateQueueInput{QueueName: "q", Attributes: map[string]string{"FifoQueue": "true"}}, "InvalidParameterValue",
			"The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length"},
		{"fifo name too long", CreateQueueInput{QueueName: strings.Repeat("q", 76) + ".fifo", Attributes: map[string]string{"FifoQueue": "true"}}, "InvalidParameterValue",
			"The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length"},
		{"fifo name with a bad character", CreateQueueInput{QueueName: "a.b.fifo", Attributes: map[string]string{"FifoQueue": "true"}}, "InvalidParameterValue",
			"The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length"},
		{"fifo suffix with FifoQueue false", CreateQueueInput{QueueName: "q.fifo", Attributes: map[string]string{"FifoQueue": "false"}}, "InvalidParameterValue",
			"Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length"},
		{"fifo: per-group limit without group scope", CreateQueueInput{QueueName: "q.fifo", Attributes: map[string]string{"FifoQueue": "true", "FifoThroughputLimit": "perMessageGroupId"}}, "InvalidAttributeValue",
			"Invalid value for the parameter FifoThroughputLimit. Reason: To set FifoThroughputLimit to perMessageGroupId, the DeduplicationScope must be messageGroup."},
		{"fifo: bad scope", CreateQueueInput{QueueName: "q.fifo", Attributes: map[string]string{"FifoQueue": "true", "DeduplicationScope": "group"}}, "InvalidAttributeValue",
			"Invalid value for the parameter DeduplicationScope."},
		{"scope on standard", CreateQueueInput{QueueName: "q", Attributes: map[string]string{"DeduplicationScope": "messageGroup"}}, "InvalidAttributeName",
			"You can specify the DeduplicationScope only when FifoQueue is set to true."},
		{"limit on standard", CreateQueueInput{QueueName: "q", Attributes: map[string]string{"FifoThroughputLimit": "perQueue"}}, "InvalidAttributeName",
			"You can specify the FifoThroughputLimit only when FifoQueue is set to true."},
		{"FifoQueue false", CreateQueueInput{QueueName: "q", Attributes: map[string]string{"FifoQueue": "false"}}, "InvalidAttributeName", "Unknown Attribute FifoQueue."},
		{"FifoQueue garbage", CreateQueueInput{QueueName: "q", Attributes: map[string]string{"FifoQueue": "maybe"}}, "InvalidAttributeValue", "Invalid value for the parameter FifoQueue."},
		{"content dedup on standard", CreateQueueInput{QueueName: "q", Attributes: map[string]string{"ContentBasedDeduplication": "true"}}, "InvalidAttributeName", "Unknown Attribute ContentBasedDeduplication."},
		{"bad attribute", CreateQueueInput{QueueName: "q", Attributes: map[string]string{"DelaySeconds": "901"}}, "InvalidAttributeValue", "Invalid value for the parameter DelaySeconds."},
		{"bad redrive policy", CreateQueueInput{QueueName: "q", Attributes: map[string]string{"RedrivePolicy": `{"maxReceiveCount":1}`}}, "InvalidParameterValue",
			`Value {"maxReceiveCount":1} for parameter RedrivePolicy is invalid. Reason: Redrive policy does not contain mandatory attribute: deadLetterTargetArn.`},
		{"bad tag", CreateQueueInput{QueueName: "q", Tags: map[string]string{"": "v"}}, "InvalidParameterValue", "Tag keys must be between 1 and 128 characters in length."},
		{"same name, other value", CreateQueueInput{QueueName: "orders", Attributes: map[string]string{"DelaySeconds": "1"}}, "QueueAlreadyExists",
			"A queue already exists with the same name and a different value for attribute DelaySeconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := fails(h, "CreateQueue", &tt.in, tt.code, tt.message)
			if err.Status != http.StatusBadRequest {
				t.Errorf("status = %d", err.Status)
			}
		})
	}
	if err := fails(h, "CreateQueue", &CreateQueueInput{QueueName: "orders", Attributes: map[string]string{"DelaySeconds": "1"}}, "QueueAlreadyExists", ""); err.Shape != "QueueNameExists" {
		t.Errorf("shape = %q", err.Shape)
	}
	// Nothing was created by the refused requests.
	if got := must[ListQueuesOutput](h, "ListQueues", &ListQueuesInput{}).QueueUrls; !slices.Equal(got, []string{url}) {
		t.Errorf("queues = %v", got)
	}
}

func TestCreateQueueIsIdempotent(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("q", map[string]string{"VisibilityTimeout": "60"})
	// The same values, spelled differently, name the same queue.
	if again := h.createQueue("q", map[string]string{"VisibilityTimeout": "060", "DelaySeconds": "0", "SqsManagedSseEnabled": "TRUE"}); again != url {
		t.Errorf("second create = %q", again)
	}
	// Omitting an attribute means its default, which differs here.
	fails(h, "CreateQueue", &CreateQueueInput{QueueName: "q"}, "QueueAlreadyExists",
		"A queue already exists with the same name and a different value for attribute VisibilityTimeout")
	// Tags are not compared.
	must[CreateQueueOutput](h, "CreateQueue", &CreateQueueInput{QueueName: "q", Attributes: map[string]string{"VisibilityTimeout": "60"}, Tags: map[string]string{"a": "b"}})
}

func TestQueueURLFromRequestHost(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	svc := NewService(Config{Backend: h.eng, Clock: h.clk})
	h.svc = svc
	ctx := protocol.WithInfo(h.ctx, &protocol.RequestInfo{Host: "broker:9324"})
	out, err := callCtx[CreateQueueOutput](h, ctx, "CreateQueue", &CreateQueueInput{QueueName: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "http://broker:9324/" + DefaultAccount + "/q"; out.QueueUrl != want {
		t.Errorf("url = %q, want %q", out.QueueUrl, want)
	}
	if got := h.attributes(out.QueueUrl, "QueueArn")["QueueArn"]; got != "arn:aws:sqs:us-east-1:000000000000:q" {
		t.Errorf("arn = %q", got)
	}
	if out, _ := call[CreateQueueOutput](h, "CreateQueue", &CreateQueueInput{QueueName: "q"}); out.QueueUrl != "http://localhost/"+DefaultAccount+"/q" {
		t.Errorf("url without a host = %q", out.QueueUrl)
	}
}

func TestGetQueueURL(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("q", nil)
	if got := must[GetQueueUrlOutput](h, "GetQueueUrl", &GetQueueUrlInput{QueueName: "q"}).QueueUrl; got != url {
		t.Errorf("url = %q", got)
	}
	if got := must[GetQueueUrlOutput](h, "GetQueueUrl", &GetQueueUrlInput{QueueName: "q", QueueOwnerAWSAccountId: testAccount}).QueueUrl; got != url {
		t.Errorf("url with owner = %q", got)
	}
	fails(h, "GetQueueUrl", &GetQueueUrlInput{}, "MissingParameter", "The request must contain the parameter QueueName.")
	// Another account's queue needs its policy's grant.
	fails(h, "GetQueueUrl", &GetQueueUrlInput{QueueName: "q", QueueOwnerAWSAccountId: "999999999999"}, "AccessDenied",
		"User: arn:aws:iam::"+testAccount+":root is not authorized to perform: sqs:getqueueurl on resource: arn:aws:sqs:"+testRegion+":999999999999:q because no resource-based policy allows the sqs:getqueueurl action")
	for _, in := range []GetQueueUrlInput{{QueueName: "nope"}, {QueueName: "bad name"}} {
		err := fails(h, "GetQueueUrl", &in, "AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist.")
		if err.Shape != "QueueDoesNotExist" || err.QueryMessage != "The specified queue does not exist for this wsdl version." {
			t.Errorf("error = %+v", err)
		}
	}
}

func TestListQueues(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var all []string
	for i := range 5 {
		all = append(all, h.createQueue("q"+strconv.Itoa(i), nil))
	}
	other := h.createQueue("other", nil)

	out := must[ListQueuesOutput](h, "ListQueues", &ListQueuesInput{QueueNamePrefix: "q"})
	if !slices.Equal(out.QueueUrls, all) || out.NextToken != "" {
		t.Errorf("prefix q: %+v", out)
	}
	if out := must[ListQueuesOutput](h, "ListQueues", &ListQueuesInput{QueueNamePrefix: "Q"}); out.QueueUrls != nil {
		t.Errorf("prefixes are case-sensitive: %v", out.QueueUrls)
	}

	// Pages of two, with a token only while more remain.
	var paged []string
	token := ""
	for range 10 {
		out := must[ListQueuesOutput](h, "ListQueues", &ListQueuesInput{QueueNamePrefix: "q", MaxResults: ptr(2), NextToken: token})
		paged = append(paged, out.QueueUrls...)
		if token = out.NextToken; token == "" {
			break
		}
	}
	if !slices.Equal(paged, all) {
		t.Errorf("paged = %v", paged)
	}
	if out := must[ListQueuesOutput](h, "ListQueues", &ListQueuesInput{MaxResults: ptr(6)}); len(out.QueueUrls) != 6 || out.NextToken != "" || out.QueueUrls[0] != other {
		t.Errorf("exactly all: %+v", out)
	}
	fails(h, "ListQueues", &ListQueuesInput{MaxResults: ptr(0)}, "InvalidParameterValue", "")
	fails(h, "ListQueues", &ListQueuesInput{MaxResults: ptr(1001)}, "InvalidParameterValue", "")
	fails(h, "ListQueues", &ListQueuesInput{NextToken: "!!!"}, "InvalidParameterValue", "")
}

func TestListQueuesWithoutMaxResultsNeverPages(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for i := range 1001 {
		h.createQueue("q"+strconv.Itoa(i), nil)
	}
	out := must[ListQueuesOutput](h, "ListQueues", &ListQueuesInput{})
	if len(out.QueueUrls) != 1000 || out.NextToken != "" {
		t.Errorf("%d urls, token %q", len(out.QueueUrls), out.NextToken)
	}
	out = must[ListQueuesOutput](h, "ListQueues", &ListQueuesInput{MaxResults: ptr(1000)})
	if len(out.QueueUrls) != 1000 || out.NextToken == "" {
		t.Errorf("%d urls, token %q", len(out.QueueUrls), out.NextToken)
	}
	out = must[ListQueuesOutput](h, "ListQueues", &ListQueuesInput{MaxResults: ptr(1000), NextToken: out.NextToken})
	if len(out.QueueUrls) != 1 || out.NextToken != "" {
		t.Errorf("last page: %d urls, token %q", len(out.QueueUrls), out.NextToken)
	}
}

func TestDeleteQueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("q", nil)
	h.send(url, "m")
	must[EmptyOutput](h, "DeleteQueue", &QueueInput{QueueUrl: url})
	fails(h, "DeleteQueue", &QueueInput{QueueUrl: url}, "AWS.SimpleQueueService.NonExistentQueue", "")
	fails(h, "SendMessage", &SendMessageInput{QueueUrl: url, MessageBody: "m"}, "AWS.SimpleQueueService.NonExistentQueue", "")
	fails(h, "CreateQueue", &CreateQueueInput{QueueName: "q"}, "AWS.SimpleQueueService.QueueDeletedRecently",
		"You must wait 60 seconds after deleting a queue before you can create another with the same name.")
	h.clk.Advance(61 * time.Second)
	if again := h.createQueue("q", nil); again != url {
		t.Errorf("recreated = %q", again)
	}
	if got := h.attributes(url, "ApproximateNumberOfMessages")["ApproximateNumberOfMessages"]; got != "0" {
		t.Errorf("a recreated queue starts empty, has %s", got)
	}
}

func TestQueueResolution(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.createQueue("q", nil)
	ok := []string{
		testBase + "/" + testAccount + "/q",
		"https://sqs.eu-west-1.amazonaws.com/" + testAccount + "/q",
		"q",
	}
	for _, ref := range ok {
		if _, err := call[GetQueueAttributesOutput](h, "GetQueueAttributes", &GetQueueAttributesInput{QueueUrl: ref}); err != nil {
			t.Errorf("%s: %v", ref, err)
		}
	}
	fails(h, "GetQueueAttributes", &GetQueueAttributesInput{QueueUrl: testBase + "/999999999999/q"}, "AccessDenied", "")
	bad := []string{
		testBase + "/" + testAccount + "/nope",
		testBase + "/q",
		testBase + "/" + testAccount + "/bad%20name",
	}
	for _, ref := range bad {
		fails(h, "GetQueueAttributes", &GetQueueAttributesInput{QueueUrl: ref}, "AWS.SimpleQueueService.NonExistentQueue", "")
	}
	// Without QueueUrl, the request path names the queue.
	ctx := protocol.WithInfo(h.ctx, &protocol.RequestInfo{Path: "/" + testAccount + "/q"})
	if _, err := callCtx[EmptyOutput](h, ctx, "PurgeQueue", &QueueInput{}); err != nil {
		t.Errorf("queue from path: %v", err)
	}
	fails(h, "PurgeQueue", &QueueInput{}, "MissingParameter", "The request must contain the parameter QueueUrl.")
}

func TestGetQueueAttributes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	created := h.clk.Now().Unix()
	url := h.createQueue("q", nil)

	if got := h.attributes(url); got != nil {
		t.Errorf("no names: %v", got)
	}
	want := map[string]string{
		"ApproximateNumberOfMessages":           "0",
		"ApproximateNumberOfMessagesDelayed":    "0",
		"ApproximateNumberOfMessagesNotVisible": "0",
		"CreatedTimestamp":                      strconv.FormatInt(created, 10),
		"DelaySeconds":                          "0",
		"LastModifiedTimestamp":                 strconv.FormatInt(created, 10),
		"MaximumMessageSize":                    "1048576",
		"MessageRetentionPeriod":                "345600",
		"QueueArn":                              "arn:aws:sqs:eu-west-1:123456789012:q",
		"ReceiveMessageWaitTimeSeconds":         "0",
		"SqsManagedSseEnabled":                  "true",
		"VisibilityTimeout":                     "30",
	}
	if got := h.attributes(url, "All"); !maps.Equal(got, want) {
		t.Errorf("All = %v\nwant  %v", got, want)
	}
	// FIFO-only names are known but a standard queue has no value for them.
	if got := h.attributes(url, "VisibilityTimeout", "FifoQueue", "RedrivePolicy"); !maps.Equal(got, map[string]string{"VisibilityTimeout": "30"}) {
		t.Errorf("some = %v", got)
	}
	fails(h, "GetQueueAttributes", &GetQueueAttributesInput{QueueUrl: url, AttributeNames: []string{"Nope"}}, "InvalidAttributeName", "Unknown Attribute Nope.")

	h.send(url, "a")
	h.send(url, "b")
	must[SendMessageOutput](h, "SendMessage", &SendMessageInput{QueueUrl: url, MessageBody: "c", DelaySeconds: ptr(10)})
	h.receive(&ReceiveMessageInput{QueueUrl: url})
	counts := h.attributes(url, "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed")
	if !maps.Equal(counts, map[string]string{"ApproximateNumberOfMessages": "1", "ApproximateNumberOfMessagesNotVisible": "1", "ApproximateNumberOfMessagesDelayed": "1"}) {
		t.Errorf("counts = %v", counts)
	}
}

func TestSetQueueAttributes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("q", nil)
	h.clk.Advance(90 * time.Second)
	must[EmptyOutput](h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: url, Attributes: map[string]string{
		"VisibilityTimeout": "5", "KmsMasterKeyId": "testKeyId", "KmsDataKeyReusePeriodSeconds": "6000"}})
	got := h.attributes(url, "All")
	if got["VisibilityTimeout"] != "5" || got["KmsMasterKeyId"] != "testKeyId" || got["KmsDataKeyReusePeriodSeconds"] != "6000" ||
		got["SqsManagedSseEnabled"] != "false" || got["LastModifiedTimestamp"] != strconv.FormatInt(h.clk.Now().Unix(), 10) ||
		got["CreatedTimestamp"] == got["LastModifiedTimestamp"] {
		t.Errorf("after set: %v", got)
	}
	must[EmptyOutput](h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: url, Attributes: map[string]string{
		"KmsMasterKeyId": "", "KmsDataKeyReusePeriodSeconds": "300"}})
	got = h.attributes(url, "All")
	if _, ok := got["KmsMasterKeyId"]; ok || got["KmsDataKeyReusePeriodSeconds"] != "" || got["SqsManagedSseEnabled"] != "false" {
		t.Errorf("after removing the key: %v", got)
	}

	// The new visibility timeout applies to the next receive.
	h.send(url, "m")
	h.receive(&ReceiveMessageInput{QueueUrl: url})
	h.clk.Advance(5 * time.Second)
	if msgs := h.receive(&ReceiveMessageInput{QueueUrl: url}); len(msgs) != 1 {
		t.Errorf("visible again after 5 s: %d messages", len(msgs))
	}

	fails(h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: url}, "MissingParameter", "The request must contain the parameter Attributes.")
	fails(h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: url, Attributes: map[string]string{"FifoQueue": "true"}}, "InvalidAttributeName", "Unknown Attribute FifoQueue.")
	fails(h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: url, Attributes: map[string]string{"KmsMasterKeyId": "k", "SqsManagedSseEnabled": "true"}}, "InvalidAttributeName", sseConflictMessage)
	fails(h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: url, Attributes: map[string]string{"RedrivePolicy": "{}"}}, "InvalidParameterValue",
		"Value {} for parameter RedrivePolicy is invalid. Reason: Redrive policy does not contain mandatory attribute: maxReceiveCount.")
	fails(h, "SetQueueAttributes", &SetQueueAttributesInput{QueueUrl: testBase + "/" + testAccount + "/nope", Attributes: map[string]string{"DelaySeconds": "1"}}, "AWS.SimpleQueueService.NonExistentQueue", "")
	if got := h.attributes(url, "VisibilityTimeout")["VisibilityTimeout"]; got != "5" {
		t.Errorf("a refused set changed the queue: %s", got)
	}
}

func TestPurgeQueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue("q", nil)
	h.send(url, "a")
	h.send(url, "b")
	h.receive(&ReceiveMessageInput{QueueUrl: url})
	must[EmptyOutput](h, "PurgeQueue", &QueueInput{QueueUrl: url})
	if got := h.attributes(url, "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"); got["ApproximateNumberOfMessages"] != "0" || got["ApproximateNumberOfMessagesNotVisible"] != "0" {
		t.Errorf("after purge: %v", got)
	}
	err := fails(h, "PurgeQueue", &QueueInput{QueueUrl: url}, "AWS.SimpleQueueService.PurgeQueueInProgress",
		"Only one PurgeQueue operation on q is allowed every 60 seconds.")
	if err.Status != http.StatusForbidden || err.Shape != "PurgeQueueInProgress" {
		t.Errorf("error = %+v", err)
	}
	h.clk.Advance(60 * time.Second)
	must[EmptyOutput](h, "PurgeQueue", &QueueInput{QueueUrl: url})
	fails(h, "PurgeQueue", &QueueInput{QueueUrl: "nope"}, "AWS.SimpleQueueService.NonExistentQueue", "")
}
