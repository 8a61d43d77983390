package server_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	"github.com/aws/aws-sdk-go/aws/awserr"
	sqsv1 "github.com/aws/aws-sdk-go/service/sqs"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ferrymq/ferry/internal/engine/embedded"
)

// freeFS is the real filesystem with a free space the test sets.
type freeFS struct {
	vfs.FS
	free atomic.Uint64
}

func (f *freeFS) GetDiskUsage(path string) (vfs.DiskUsage, error) {
	du, err := f.FS.GetDiskUsage(path)
	du.AvailBytes = f.free.Load()
	return du, err
}

func (f *freeFS) Unwrap() vfs.FS { return f.FS }

// TestDiskFull fills the data volume under a running Ferry: writes answer
// the AWS-shaped 503 ServiceUnavailable on both SQS wires and on SNS,
// reads and receives go on, health reports the condition, and once space
// is freed writes are accepted again.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	embeddedOnly(t, "the embedded store's own disk filling up")
	fs := &freeFS{FS: vfs.Default}
	fs.free.Store(1 << 30)
	f := start(t, storeWith(t, t.TempDir(), func(o *embedded.Options) { o.FS = fs; o.DiskReserve = 8 << 20 }))
	checker, ok := f.srv.Engine().(interface {
		CheckDiskSpace()
		DiskFull() bool
	})
	if !ok {
		t.Fatal("the engine has no disk space guard")
	}
	ctx := ctxT(t)
	url := f.createQueue(t, "jobs", nil)
	if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("before")}); err != nil {
		t.Fatal(err)
	}
	health := func() rawResponse { return do(t, mustRequest(t, "GET", f.srv.URL()+"/_ferry/health")) }
	if h := health(); h.Status != 200 || !strings.Contains(h.Body, `"status":"running"`) {
		t.Fatalf("health before = %d %s", h.Status, h.Body)
	}

	fs.free.Store(1 << 20)
	checker.CheckDiskSpace()

	_, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("refused")})
	wantAPIError(t, err, "ServiceUnavailable", 503)
	_, err = f.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("other")})
	wantAPIError(t, err, "ServiceUnavailable", 503)
	_, err = f.query.SendMessage(&sqsv1.SendMessageInput{QueueUrl: &url, MessageBody: awsv1.String("refused")})
	if rf, ok := err.(awserr.RequestFailure); !ok || rf.Code() != "ServiceUnavailable" || rf.StatusCode() != 503 {
		t.Errorf("query SendMessage on a full disk: %v", err)
	}
	_, err = f.sns.CreateTopic(ctx, &snssdk.CreateTopicInput{Name: aws.String("events")})
	wantAPIError(t, err, "ServiceUnavailable", 503)

	if _, err := f.json.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url}); err != nil {
		t.Errorf("GetQueueAttributes on a full disk: %v", err)
	}
	if out, err := f.json.ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil || len(out.QueueUrls) != 1 {
		t.Errorf("ListQueues on a full disk: %v %v", out, err)
	}
	got, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url})
	if err != nil || len(got.Messages) != 1 || aws.ToString(got.Messages[0].Body) != "before" {
		t.Fatalf("ReceiveMessage on a full disk: %v %v", got, err)
	}
	_, err = f.json.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: got.Messages[0].ReceiptHandle})
	wantAPIError(t, err, "ServiceUnavailable", 503)
	if h := health(); h.Status != 200 || !strings.Contains(h.Body, `"status":"degraded"`) ||
		!strings.Contains(h.Body, `"store":"read-only: disk full"`) || !strings.Contains(h.Body, `"services":{"sqs":"running"`) {
		t.Errorf("health on a full disk = %d %s", h.Status, h.Body)
	}

	fs.free.Store(1 << 30)
	checker.CheckDiskSpace()
	if checker.DiskFull() {
		t.Fatal("still full after space was freed")
	}
	if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("after")}); err != nil {
		t.Fatalf("SendMessage after space was freed: %v", err)
	}
	if _, err := f.json.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: got.Messages[0].ReceiptHandle}); err != nil {
		t.Fatalf("DeleteMessage after space was freed: %v", err)
	}
	if h := health(); h.Status != 200 || !strings.Contains(h.Body, `"status":"running"`) {
		t.Errorf("health after = %d %s", h.Status, h.Body)
	}
}
