package main

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/ferrymq/ferry/internal/bench"
	"github.com/ferrymq/ferry/internal/engine/postgres/pgtest"
)

// TestServeOnPostgres runs two Ferry nodes on one PostgreSQL schema and
// drives them with aws-sdk-go-v2: what is sent through one is received
// through the other, a long poll on one is woken by a send on the other,
// a FIFO queue deduplicates across them, and a node started again finds
// what was left.
func TestServeOnPostgres(t *testing.T) {
	url, schema := pgtest.Schema(t)
	env := map[string]string{"FERRY_LISTEN": "127.0.0.1:0", "FERRY_POSTGRES_URL": url, "FERRY_POSTGRES_SCHEMA": schema}
	baseA, logsA, stopA := serveFromEnv(t, env)
	baseB, logsB, stopB := serveFromEnv(t, env)
	if !strings.Contains(logsA.String(), `store="postgres schema `+schema+`"`) {
		t.Errorf("the startup line does not name the store: %q", logsA.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := sqsClient(baseA), sqsClient(baseB)

	created, err := a.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("jobs")})
	if err != nil || aws.ToString(got.QueueUrl) == "" {
		t.Fatalf("GetQueueUrl on b: %v, %v", got, err)
	}
	urlB := aws.ToString(got.QueueUrl)

	// A long poll on b, woken by a send on a.
	out, _ := wakeLongPoll(ctx, t, b, aws.String(urlB), a, created.QueueUrl)
	// b's handle deletes on a.
	if _, err := a.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: created.QueueUrl, ReceiptHandle: out.Messages[0].ReceiptHandle}); err != nil {
		t.Fatalf("delete on a with b's handle: %v", err)
	}

	// FIFO: a duplicate sent through b of a message sent through a is
	// the same message; b receives the group in order.
	fifo, err := a.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders.fifo"),
		Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i, c := range []*sqs.Client{a, a, b} {
		body := []string{"first", "second", "first"}[i]
		r, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: fifo.QueueUrl, MessageBody: aws.String(body), MessageGroupId: aws.String("g")})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, aws.ToString(r.MessageId))
	}
	if ids[2] != ids[0] {
		t.Errorf("the duplicate sent through b is %s, the original %s", ids[2], ids[0])
	}
	rf, err := b.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: fifo.QueueUrl, MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, m := range rf.Messages {
		bodies = append(bodies, aws.ToString(m.Body))
	}
	if !slices.Equal(bodies, []string{"first", "second"}) {
		t.Errorf("b received %v from the FIFO queue", bodies)
	}

	// Left in the queue when a stops: a new node finds it.
	if _, err := b.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(urlB), MessageBody: aws.String("kept")}); err != nil {
		t.Fatal(err)
	}
	for name, stop := range map[string]func() int{"a": stopA, "b": stopB} {
		if code := stop(); code != 0 {
			t.Fatalf("%s exited with %d: %s %s", name, code, logsA.String(), logsB.String())
		}
	}
	baseC, logsC, stopC := serveFromEnv(t, env)
	c := sqsClient(baseC)
	var left []string
	for {
		r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(urlB), MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) == 0 {
			break
		}
		for _, m := range r.Messages {
			left = append(left, aws.ToString(m.Body))
		}
	}
	if !slices.Contains(left, "kept") {
		t.Errorf("after the restart the queue holds %v, want kept among them", left)
	}
	if code := stopC(); code != 0 {
		t.Fatalf("exit code %d: %s", code, logsC.String())
	}
}

func sqsClient(base string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(base),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDFERRYTEST", "secret", ""),
		RetryMaxAttempts: 1,
		HTTPClient:       &http.Client{Transport: bench.PlainBodies{Next: http.DefaultTransport}},
	})
}

// wakeLongPoll starts a 20 s long poll on pollURL through poller and sends
// to sendURL (the same queue) through sender until the poll answers: a
// send before the poll started would be taken by its first look, after it
// by its wake-up; either will do, and the test drains what is left over.
// It returns the poll's answer, one of the messages sent, and how long the
// poll took.
func wakeLongPoll(ctx context.Context, t *testing.T, poller *sqs.Client, pollURL *string, sender *sqs.Client, sendURL *string) (*sqs.ReceiveMessageOutput, time.Duration) {
	t.Helper()
	type answer struct {
		out  *sqs.ReceiveMessageOutput
		took time.Duration
	}
	polled := make(chan answer, 1)
	go func() {
		asked := time.Now()
		out, err := poller.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: pollURL, WaitTimeSeconds: 20})
		if err != nil {
			t.Errorf("long poll: %v", err)
		}
		polled <- answer{out, time.Since(asked)}
	}()
	sentIDs := map[string]bool{}
	var (
		got      answer
		answered bool
	)
	for !answered {
		sent, err := sender.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: sendURL, MessageBody: aws.String("hello")})
		if err != nil {
			t.Fatal(err)
		}
		sentIDs[aws.ToString(sent.MessageId)] = true
		select {
		case got = <-polled:
			answered = true
		case <-time.After(100 * time.Millisecond):
		}
	}
	if got.out == nil || len(got.out.Messages) != 1 || !sentIDs[aws.ToString(got.out.Messages[0].MessageId)] {
		t.Fatalf("the long poll answered %+v", got.out)
	}
	return got.out, got.took
}
