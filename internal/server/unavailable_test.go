package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	"github.com/aws/aws-sdk-go/aws/awserr"
	cwv1 "github.com/aws/aws-sdk-go/service/cloudwatch"
	sqsv1 "github.com/aws/aws-sdk-go/service/sqs"

	"github.com/ferrymq/ferry/internal/engine/postgres"
	"github.com/ferrymq/ferry/internal/engine/postgres/pgtest"
	"github.com/ferrymq/ferry/internal/server"
	"github.com/ferrymq/ferry/internal/testwait"
)

// lockedBuffer is a log the server writes from many goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDatabaseLost stops the PostgreSQL server under a Ferry node: SQS on
// both wires, SNS and CloudWatch answer AWS's 503 ServiceUnavailable (with
// x-amzn-query-error over JSON), health says the store is unreachable, the
// outage is one line of the log rather than one per request, and once the
// database is back the node serves again and nothing acknowledged is gone.
func TestDatabaseLost(t *testing.T) {
	t.Parallel()
	if onPostgres(t) {
		t.Skip("starts a PostgreSQL server of its own: the run on the embedded store runs it")
	}
	db := pgtest.StartServer(t)
	logs := &lockedBuffer{}
	f := start(t, func(c *server.Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
		st, err := postgres.Open(context.Background(), postgres.Options{URL: db.URL, Clock: c.Clock, Logger: c.Logger, HoldMoveTasks: true})
		if err != nil {
			t.Fatalf("open store: %v", err)
		}
		c.Store = st
	})
	ctx := ctxT(t)
	url := f.createQueue(t, "jobs", nil)
	topic := f.createTopic(t, "news", nil)
	f.subscribe(t, topic, "sqs", arnPrefix+"jobs", map[string]string{"RawMessageDelivery": "true"})
	if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("before")}); err != nil {
		t.Fatal(err)
	}
	health := func() rawResponse { return do(t, mustRequest(t, "GET", f.srv.URL()+"/_ferry/health")) }
	if h := health(); h.Status != 200 || !strings.Contains(h.Body, `"status":"running"`) {
		t.Fatalf("health before = %d %s", h.Status, h.Body)
	}

	db.Kill()
	_, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("refused")})
	wantAPIError(t, err, "ServiceUnavailable", 503)
	_, err = f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url})
	wantAPIError(t, err, "ServiceUnavailable", 503)
	_, err = f.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("other")})
	wantAPIError(t, err, "ServiceUnavailable", 503)
	if r := f.postJSON(t, "SendMessage", `{"QueueUrl":"`+url+`","MessageBody":"raw"}`); r.Status != 503 ||
		r.Header.Get("x-amzn-query-error") != "ServiceUnavailable;Receiver" {
		t.Errorf("JSON SendMessage = %d, x-amzn-query-error %q: %s", r.Status, r.Header.Get("x-amzn-query-error"), r.Body)
	}
	_, err = f.query.SendMessage(&sqsv1.SendMessageInput{QueueUrl: &url, MessageBody: awsv1.String("refused")})
	if rf, ok := err.(awserr.RequestFailure); !ok || rf.Code() != "ServiceUnavailable" || rf.StatusCode() != 503 {
		t.Errorf("query SendMessage with the database down: %v", err)
	}
	_, err = f.sns.CreateTopic(ctx, &snssdk.CreateTopicInput{Name: aws.String("events")})
	wantAPIError(t, err, "ServiceUnavailable", 503)
	_, err = f.sns.Publish(ctx, &snssdk.PublishInput{TopicArn: &topic, Message: aws.String("refused")})
	wantAPIError(t, err, "ServiceUnavailable", 503)
	_, err = f.sns.PublishBatch(ctx, &snssdk.PublishBatchInput{TopicArn: &topic,
		PublishBatchRequestEntries: []snstypes.PublishBatchRequestEntry{{Id: aws.String("1"), Message: aws.String("refused")}}})
	wantAPIError(t, err, "ServiceUnavailable", 503)
	_, err = cwClient(f.srv.URL()).PutMetricAlarmWithContext(ctx, &cwv1.PutMetricAlarmInput{
		AlarmName: awsv1.String("a"), Namespace: awsv1.String("AWS/SQS"), MetricName: awsv1.String("NumberOfMessagesSent"),
		Statistic: awsv1.String("Sum"), Period: awsv1.Int64(60), EvaluationPeriods: awsv1.Int64(1), Threshold: awsv1.Float64(1),
		ComparisonOperator: awsv1.String("GreaterThanThreshold")})
	if rf, ok := err.(awserr.RequestFailure); !ok || rf.Code() != "ServiceUnavailable" || rf.StatusCode() != 503 {
		t.Errorf("PutMetricAlarm with the database down: %v", err)
	}
	if h := health(); h.Status != 200 || !strings.Contains(h.Body, `"status":"degraded"`) ||
		!strings.Contains(h.Body, `"store":"unreachable: `) || !strings.Contains(h.Body, `"services":{"sqs":"error"`) {
		t.Errorf("health with the database down = %d %s", h.Status, h.Body)
	}
	if n := strings.Count(logs.String(), "level=ERROR"); n != 1 {
		t.Errorf("%d error lines for one outage, want 1:\n%s", n, logs.String())
	}

	db.Restart()
	testwait.Eventually(t, "a send to succeed once the database is back", func() bool {
		_, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("after")})
		return err == nil
	})
	testwait.Eventually(t, "health to say the store is back", func() bool {
		h := health()
		return h.Status == 200 && strings.Contains(h.Body, `"status":"running"`)
	})
	got := map[string]bool{}
	for range 2 {
		out, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			got[aws.ToString(m.Body)] = true
		}
	}
	if !got["before"] || !got["after"] || got["refused"] || got["raw"] {
		t.Errorf("after the outage the queue held %v, want before and after", got)
	}
}
