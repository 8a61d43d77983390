package main

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/ferrymq/ferry/internal/engine/postgres/pgtest"
	"github.com/ferrymq/ferry/internal/testwait"
)

// TestMoveTaskSurvivesKill starts a move task through one of two nodes on
// one PostgreSQL schema, SIGKILLs that node while the task runs, and checks
// that the other node finishes it once the dead node's lease has run out,
// with every message moved exactly once.
func TestMoveTaskSurvivesKill(t *testing.T) {
	url, schema := pgtest.Schema(t)
	// Most of its time is a lease running out: let the rest run meanwhile.
	t.Parallel()
	env := nodeEnv(url, schema)
	runner, baseA := startNode(t, env)
	_, baseB := startNode(t, env)
	a, b := sqsClient(baseA), sqsClient(baseB)
	// The dead node's lease (30 s) must run out, and the other node look
	// for orphaned tasks (every 10 s), before it takes the task over.
	const takeover = 40 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const (
		messages = 120
		rate     = 20 // per second: the task runs for seconds, long enough to be killed
	)
	mustQueue := func(name string, attrs map[string]string) (string, string) {
		t.Helper()
		out, err := a.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
		got, err := a.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl,
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.QueueUrl), got.Attributes["QueueArn"]
	}
	dlqURL, dlqARN := mustQueue("orders-dlq", nil)
	ordersURL, ordersARN := mustQueue("orders", map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"1"}`, dlqARN)})
	for i := 0; i < messages; i += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for j := i; j < i+10; j++ {
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(j)), MessageBody: aws.String(fmt.Sprintf("m%03d", j))})
		}
		out, err := a.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(dlqURL), Entries: entries})
		if err != nil || len(out.Failed) > 0 {
			t.Fatalf("send: %v %+v", err, out)
		}
	}

	// The node a task is started through holds its lease.
	_, err := a.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqARN),
		DestinationArn: aws.String(ordersARN), MaxNumberOfMessagesPerSecond: aws.Int32(rate)})
	if err != nil {
		t.Fatal(err)
	}
	task := func() types.ListMessageMoveTasksResultEntry {
		out, err := b.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlqARN)})
		if err != nil || len(out.Results) == 0 {
			return types.ListMessageMoveTasksResultEntry{}
		}
		return out.Results[0]
	}
	testwait.Eventually(t, "the task to move some messages", func() bool { return task().ApproximateNumberOfMessagesMoved >= 10 })
	if err := runner.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = runner.Wait()
	movedAtKill := task().ApproximateNumberOfMessagesMoved
	if movedAtKill >= messages {
		t.Fatalf("the task finished (%d moved) before its node was killed: nothing was taken over", movedAtKill)
	}

	var last types.ListMessageMoveTasksResultEntry
	defer func() {
		if t.Failed() {
			t.Logf("the task as last listed: %s, %d moved of %d, %s", aws.ToString(last.Status),
				last.ApproximateNumberOfMessagesMoved, aws.ToInt64(last.ApproximateNumberOfMessagesToMove), aws.ToString(last.FailureReason))
		}
	}()
	testwait.EventuallyWithin(t, "the task to complete on the other node", takeover+messages/rate*time.Second, func() bool {
		last = task()
		return aws.ToString(last.Status) == "COMPLETED"
	})
	// The task completed is the one started: the source has no other.
	list, err := b.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlqARN)})
	if err != nil || len(list.Results) != 1 {
		t.Fatalf("the source lists %v tasks (%v), want the one started", len(list.Results), err)
	}
	if final := list.Results[0]; final.ApproximateNumberOfMessagesMoved != messages {
		t.Errorf("moved %d, want %d", final.ApproximateNumberOfMessagesMoved, messages)
	}

	// Every message is in the destination exactly once, none in the source.
	seen := map[string]int{}
	for {
		out, err := b.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(ordersURL), MaxNumberOfMessages: 10,
			VisibilityTimeout: 600})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			seen[aws.ToString(m.Body)]++
		}
	}
	for i := range messages {
		if body := fmt.Sprintf("m%03d", i); seen[body] != 1 {
			t.Errorf("%s is in the destination %d times", body, seen[body])
		}
	}
	if len(seen) != messages {
		t.Errorf("the destination holds %d distinct messages, want %d", len(seen), messages)
	}
	attrs, err := b.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(dlqURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"} {
		if attrs.Attributes[name] != "0" {
			t.Errorf("the source's %s is %s after the task", name, attrs.Attributes[name])
		}
	}
	t.Logf("%d moved before the kill, %d after, by the other node", movedAtKill, messages-movedAtKill)
}
