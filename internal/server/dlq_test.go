package server_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	sqsv1 "github.com/aws/aws-sdk-go/service/sqs"
	"github.com/ferrymq/ferry/internal/testwait"
)

const arnPrefix = "arn:aws:sqs:us-east-1:000000000000:"

func redrivePolicy(target string, max int) string {
	return fmt.Sprintf(`{"deadLetterTargetArn":"%s%s","maxReceiveCount":%d}`, arnPrefix, target, max)
}

// receiveAll asks for every system and message attribute.
func (f *ferry) receiveAll(t testing.TB, url string, max int32) []types.Message {
	t.Helper()
	out, err := f.json.ReceiveMessage(ctxT(t), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: max,
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Messages
}

func TestDLQRedriveOnReceive(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	dlq := f.createQueue(t, "orders-dlq", nil)
	src := f.createQueue(t, "orders", map[string]string{"RedrivePolicy": redrivePolicy("orders-dlq", 2), "VisibilityTimeout": "10"})
	attrs, err := f.json.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(src), AttributeNames: []types.QueueAttributeName{"RedrivePolicy"}})
	if err != nil || attrs.Attributes["RedrivePolicy"] != redrivePolicy("orders-dlq", 2) {
		t.Fatalf("RedrivePolicy reads back %q (%v)", attrs.Attributes["RedrivePolicy"], err)
	}
	sent, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(src), MessageBody: aws.String("poison"),
		MessageAttributes: map[string]types.MessageAttributeValue{"kind": {DataType: aws.String("String"), StringValue: aws.String("order")}},
		MessageSystemAttributes: map[string]types.MessageSystemAttributeValue{
			"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String("Root=1-5759e988-bd862e3fe1be46a994272793")}}})
	if err != nil {
		t.Fatal(err)
	}
	var last types.Message
	for i := 1; i <= 2; i++ {
		got := testwait.Some(t, "nothing arrived", func() []types.Message { return f.receiveAll(t, src, 1) })
		if got[0].Attributes["ApproximateReceiveCount"] != strconv.Itoa(i) {
			t.Fatalf("receive %d: count %s", i, got[0].Attributes["ApproximateReceiveCount"])
		}
		last = got[0]
		f.clk.Advance(10 * time.Second)
	}
	// The third receive would exceed maxReceiveCount: the message moves.
	waitCounts(t, f, src, 1)
	if got := f.receiveAll(t, src, 10); len(got) != 0 {
		t.Fatalf("source still hands out %d messages", len(got))
	}
	wantCounts(t, f, src, 0, 0, 0)
	wantCounts(t, f, dlq, 1, 0, 0)
	_, err = f.json.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(src), ReceiptHandle: last.ReceiptHandle, VisibilityTimeout: 5})
	wantAPIError(t, err, "InvalidParameterValue", 400)

	got := f.receiveAll(t, dlq, 10)
	if len(got) != 1 {
		t.Fatalf("dead-letter queue has %d messages", len(got))
	}
	m := got[0]
	want := map[string]string{
		"DeadLetterQueueSourceArn": arnPrefix + "orders",
		"ApproximateReceiveCount":  "3",
		"SentTimestamp":            strconv.FormatInt(epoch.UnixMilli(), 10),
		"AWSTraceHeader":           "Root=1-5759e988-bd862e3fe1be46a994272793",
	}
	for k, v := range want {
		if m.Attributes[k] != v {
			t.Errorf("%s = %q, want %q", k, m.Attributes[k], v)
		}
	}
	if aws.ToString(m.MessageId) != aws.ToString(sent.MessageId) || aws.ToString(m.Body) != "poison" ||
		aws.ToString(m.MessageAttributes["kind"].StringValue) != "order" || aws.ToString(m.MD5OfMessageAttributes) != aws.ToString(sent.MD5OfMessageAttributes) {
		t.Errorf("moved message = %+v", m)
	}

	sources, err := f.json.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(dlq)})
	if err != nil || len(sources.QueueUrls) != 1 || sources.QueueUrls[0] != src {
		t.Fatalf("ListDeadLetterSourceQueues = %v, %v", sources, err)
	}
	// Removing the policy stops the moves.
	if _, err := f.json.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(src), Attributes: map[string]string{"RedrivePolicy": ""}}); err != nil {
		t.Fatal(err)
	}
	sources, err = f.json.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(dlq)})
	if err != nil || len(sources.QueueUrls) != 0 {
		t.Fatalf("after removal: %v, %v", sources, err)
	}
}

// TestDLQDeletedTargetKeepsMessages: with its dead-letter queue gone, a
// source keeps its over-limit messages and hands them out.
func TestDLQDeletedTargetKeepsMessages(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	dlq := f.createQueue(t, "gone-dlq", nil)
	src := f.createQueue(t, "keeps", map[string]string{"RedrivePolicy": redrivePolicy("gone-dlq", 1), "VisibilityTimeout": "5"})
	f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(src), MessageBody: aws.String("m")})
	if len(f.receiveAll(t, src, 1)) != 1 {
		t.Fatal("first receive")
	}
	if _, err := f.json.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(dlq)}); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(5 * time.Second)
	got := testwait.Some(t, "nothing arrived", func() []types.Message { return f.receiveAll(t, src, 1) })
	if got[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("count = %s", got[0].Attributes["ApproximateReceiveCount"])
	}
	attrs, err := f.json.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(src), AttributeNames: []types.QueueAttributeName{"RedrivePolicy"}})
	if err != nil || attrs.Attributes["RedrivePolicy"] != redrivePolicy("gone-dlq", 1) {
		t.Fatalf("policy after the target's deletion: %v, %v", attrs.Attributes, err)
	}
}

func TestDLQPolicyValidation(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	f.createQueue(t, "target", nil)
	f.createQueue(t, "closed", map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"denyAll"}`})
	f.createQueue(t, "picky", map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"byQueue","sourceQueueArns":["` + arnPrefix + `friend"]}`})
	var eleven []string
	for i := 0; i < 11; i++ {
		eleven = append(eleven, fmt.Sprintf(`"%sq%d"`, arnPrefix, i))
	}
	cases := []struct {
		name  string
		attrs map[string]string
		code  string
		msg   string
	}{
		{"maxReceiveCount 0", map[string]string{"RedrivePolicy": redrivePolicy("target", 0)}, "InvalidParameterValue", "valid values are from 1 to 1000 both inclusive"},
		{"maxReceiveCount 1001", map[string]string{"RedrivePolicy": redrivePolicy("target", 1001)}, "InvalidParameterValue", "valid values are from 1 to 1000 both inclusive"},
		{"malformed JSON", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":`}, "InvalidParameterValue", "Redrive policy is not a valid JSON map."},
		{"no maxReceiveCount", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + arnPrefix + `target"}`}, "InvalidParameterValue", "does not contain mandatory attribute: maxReceiveCount"},
		{"unknown target", map[string]string{"RedrivePolicy": redrivePolicy("nobody", 3)}, "InvalidParameterValue", "Dead letter target does not exist."},
		{"FIFO target for a standard source", map[string]string{"RedrivePolicy": redrivePolicy("target.fifo", 3)}, "InvalidParameterValue", ""},
		{"other account", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:111111111111:target","maxReceiveCount":3}`}, "InvalidParameterValue", ""},
		{"denied by denyAll", map[string]string{"RedrivePolicy": redrivePolicy("closed", 3)}, "InvalidParameterValue", ""},
		{"not in byQueue", map[string]string{"RedrivePolicy": redrivePolicy("picky", 3)}, "InvalidParameterValue", ""},
		{"eleven source ARNs", map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"byQueue","sourceQueueArns":[` + strings.Join(eleven, ",") + `]}`}, "InvalidParameterValue", "The maximum number of source queue ARNs you can specify is 10."},
		{"bad redrivePermission", map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"sometimes"}`}, "InvalidParameterValue", "unsupported format"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(fmt.Sprint("bad", i)), Attributes: tc.attrs})
			wantAPIError(t, err, tc.code, 400)
			if err != nil && !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("message %q lacks %q", err.Error(), tc.msg)
			}
		})
	}
	// The allowed source may name the picky queue.
	f.createQueue(t, "friend", map[string]string{"RedrivePolicy": redrivePolicy("picky", 3)})
}

// waitTask polls ListMessageMoveTasks until the newest task has status.
func (f *ferry) waitTask(t testing.TB, sourceArn, status string) types.ListMessageMoveTasksResultEntry {
	t.Helper()
	ctx := ctxT(t)
	return testwait.Some(t, "the task to reach "+status, func() []types.ListMessageMoveTasksResultEntry {
		out, err := f.json.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(sourceArn)})
		if err != nil || len(out.Results) == 0 || aws.ToString(out.Results[0].Status) != status {
			return nil
		}
		return out.Results[:1]
	})[0]
}

// runnerWaits reports that a move task's runner with a rate has moved its
// second's messages and waits on the clock for the next second: a timer is
// due one second from now, and no other timer is due that soon.
func (f *ferry) runnerWaits() bool {
	next, ok := f.clk.Next()
	return ok && next.Equal(f.clk.Now().Add(time.Second))
}

// deadLetter adds n messages to queue dlq, moved there from src by its
// redrive policy (maxReceiveCount 1, visibility 1 s).
func (f *ferry) deadLetter(t testing.TB, src, dlq string, n int) {
	t.Helper()
	entries := make([]types.SendMessageBatchRequestEntry, n)
	for j := range entries {
		entries[j] = types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint("e", j)), MessageBody: aws.String(fmt.Sprint("m", j))}
	}
	f.deadLetterEntries(t, src, dlq, entries, 1)
}

// deadLetterEntries is deadLetter for the messages entries sends (each
// with an Id unique among them), from a source whose redrive policy has
// maxReceiveCount receives: each message is received that many times
// before the receive that moves it.
func (f *ferry) deadLetterEntries(t testing.TB, src, dlq string, entries []types.SendMessageBatchRequestEntry, receives int) {
	t.Helper()
	ctx := ctxT(t)
	n := len(entries)
	name := dlq[strings.LastIndex(dlq, "/")+1:]
	before, err := f.srv.Engine().Stats(ctx, "000000000000", name)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 10 {
		if _, err := f.json.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(src), Entries: entries[i:min(i+10, n)]}); err != nil {
			t.Fatal(err)
		}
	}
	for range receives {
		for got := 0; got < n; {
			out, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src), MaxNumberOfMessages: 10, VisibilityTimeout: 1})
			if err != nil {
				t.Fatal(err)
			}
			got += len(out.Messages)
		}
		f.clk.Advance(time.Second)
	}
	// Each receive now moves what it finds; the visibility timers fire in
	// goroutines of their own, so keep asking until all have moved.
	testwait.Eventually(t, fmt.Sprintf("%d more messages in %s", n, name), func() bool {
		f.receiveAll(t, src, 10)
		st, err := f.srv.Engine().Stats(ctx, "000000000000", name)
		if err != nil {
			t.Fatal(err)
		}
		return st.Visible == before.Visible+int64(n)
	})
}

func TestMoveTaskBackToSources(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	dlq := f.createQueue(t, "mt-dlq", nil)
	a := f.createQueue(t, "mt-a", map[string]string{"RedrivePolicy": redrivePolicy("mt-dlq", 1)})
	b := f.createQueue(t, "mt-b", map[string]string{"RedrivePolicy": redrivePolicy("mt-dlq", 1)})
	f.deadLetter(t, a, dlq, 7)
	f.deadLetter(t, b, dlq, 5)
	before := f.receiveAll(t, dlq, 10)
	for _, m := range before {
		f.json.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(dlq), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
	}
	f.clk.Advance(time.Minute)
	startedAt := f.clk.Now().UnixMilli()
	started, err := f.json.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "mt-dlq")})
	if err != nil || aws.ToString(started.TaskHandle) == "" {
		t.Fatalf("start: %v, %v", started, err)
	}
	done := f.waitTask(t, arnPrefix+"mt-dlq", "COMPLETED")
	if done.ApproximateNumberOfMessagesMoved != 12 || aws.ToInt64(done.ApproximateNumberOfMessagesToMove) != 12 ||
		done.TaskHandle != nil || done.DestinationArn != nil || done.StartedTimestamp != startedAt {
		t.Errorf("completed task = %+v", done)
	}
	wantCounts(t, f, dlq, 0, 0, 0)
	for url, n := range map[string]int{a: 7, b: 5} {
		got := f.receiveAll(t, url, 10)
		if len(got) != n {
			t.Fatalf("%s got %d back, want %d", url, len(got), n)
		}
		for _, m := range got {
			for _, old := range before {
				if aws.ToString(old.MessageId) == aws.ToString(m.MessageId) {
					t.Errorf("redriven message kept its id %s", aws.ToString(m.MessageId))
				}
			}
			if m.Attributes["ApproximateReceiveCount"] != "1" || m.Attributes["SentTimestamp"] != strconv.FormatInt(startedAt, 10) ||
				m.Attributes["DeadLetterQueueSourceArn"] != "" {
				t.Errorf("redriven message attributes = %v", m.Attributes)
			}
		}
	}
	// A finished task cannot be cancelled; a second task may start.
	_, err = f.json.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: started.TaskHandle})
	wantAPIError(t, err, "ResourceNotFoundException", 404)
}

func TestMoveTaskVelocityCancelAndErrors(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	dlq := f.createQueue(t, "v-dlq", nil)
	src := f.createQueue(t, "v-src", map[string]string{"RedrivePolicy": redrivePolicy("v-dlq", 1)})
	dest := f.createQueue(t, "v-dest", nil)
	f.deadLetter(t, src, dlq, 60)

	started, err := f.json.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "v-dlq"),
		DestinationArn: aws.String(arnPrefix + "v-dest"), MaxNumberOfMessagesPerSecond: aws.Int32(10)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.json.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "v-dlq")})
	wantAPIError(t, err, "InvalidParameterValue", 400)

	// 10 messages a second of the (fake) clock, never more: the first ten
	// at once, then ten at each second.
	moved := func() int64 { return f.waitTask(t, arnPrefix+"v-dlq", "RUNNING").ApproximateNumberOfMessagesMoved }
	for sec := int64(0); sec <= 3; sec++ {
		if sec > 0 {
			f.clk.Advance(time.Second)
		}
		// Another timer may be due at the next second too (a node on
		// PostgreSQL saves its metric points every 10 s), so the runner's
		// wait is told by its moves as well.
		want := 10 * (sec + 1)
		testwait.Eventually(t, "the runner to move its ten and wait for the next second", func() bool {
			return moved() >= want && f.runnerWaits()
		})
		if m := moved(); m != want {
			t.Fatalf("after %d s moved %d at 10/s", sec, m)
		}
	}
	running := f.waitTask(t, arnPrefix+"v-dlq", "RUNNING")
	if aws.ToString(running.DestinationArn) != arnPrefix+"v-dest" || aws.ToInt32(running.MaxNumberOfMessagesPerSecond) != 10 ||
		aws.ToString(running.TaskHandle) != aws.ToString(started.TaskHandle) || aws.ToInt64(running.ApproximateNumberOfMessagesToMove) != 60 {
		t.Errorf("running task = %+v", running)
	}
	cancelled, err := f.json.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: started.TaskHandle})
	if err != nil {
		t.Fatal(err)
	}
	// A runner waiting for its next second finishes on the next tick at the latest.
	f.clk.Advance(time.Second)
	final := f.waitTask(t, arnPrefix+"v-dlq", "CANCELLED")
	f.clk.Advance(10 * time.Second)
	if after := f.waitTask(t, arnPrefix+"v-dlq", "CANCELLED"); after.ApproximateNumberOfMessagesMoved != final.ApproximateNumberOfMessagesMoved ||
		final.ApproximateNumberOfMessagesMoved < cancelled.ApproximateNumberOfMessagesMoved {
		t.Errorf("moved count not frozen: cancel said %d, then %d, then %d", cancelled.ApproximateNumberOfMessagesMoved, final.ApproximateNumberOfMessagesMoved, after.ApproximateNumberOfMessagesMoved)
	}
	waitCounts(t, f, dest, int(final.ApproximateNumberOfMessagesMoved))
	waitCounts(t, f, dlq, 60-int(final.ApproximateNumberOfMessagesMoved))

	// A destination deleted mid-task fails the task; nothing is lost.
	if _, err := f.json.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "v-dlq"),
		DestinationArn: aws.String(arnPrefix + "v-dest"), MaxNumberOfMessagesPerSecond: aws.Int32(5)}); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Second)
	if _, err := f.json.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(dest)}); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Second)
	failed := f.waitTask(t, arnPrefix+"v-dlq", "FAILED")
	if aws.ToString(failed.FailureReason) != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Errorf("failure reason = %q", aws.ToString(failed.FailureReason))
	}
	list, err := f.json.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(arnPrefix + "v-dlq"), MaxResults: aws.Int32(10)})
	if err != nil || len(list.Results) != 2 || aws.ToString(list.Results[1].Status) != "CANCELLED" {
		t.Fatalf("task list = %+v, %v", list, err)
	}

	for _, tc := range []struct {
		name string
		in   sqs.StartMessageMoveTaskInput
		code string
		http int
	}{
		{"not a dead-letter queue", sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "v-src")}, "InvalidParameterValue", 400},
		{"missing source", sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "nothing")}, "ResourceNotFoundException", 404},
		{"missing destination", sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "v-dlq"), DestinationArn: aws.String(arnPrefix + "nothing")}, "ResourceNotFoundException", 404},
		{"malformed ARN", sqs.StartMessageMoveTaskInput{SourceArn: aws.String("v-dlq")}, "InvalidParameterValue", 400},
		{"rate too high", sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "v-dlq"), MaxNumberOfMessagesPerSecond: aws.Int32(501)}, "InvalidParameterValue", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.json.StartMessageMoveTask(ctx, &tc.in)
			wantAPIError(t, err, tc.code, tc.http)
		})
	}
	_, err = f.json.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: aws.String("not-a-handle")})
	wantAPIError(t, err, "InvalidParameterValue", 400)
}

// TestDLQOverQuery drives the dead-letter lifecycle with the query protocol.
func TestDLQOverQuery(t *testing.T) {
	t.Parallel()
	f := start(t)
	q := f.query
	dlq, err := q.CreateQueue(&sqsv1.CreateQueueInput{QueueName: awsv1.String("q-dlq"),
		Attributes: map[string]*string{"RedriveAllowPolicy": awsv1.String(`{"redrivePermission":"byQueue","sourceQueueArns":["` + arnPrefix + `q-src"]}`)}})
	if err != nil {
		t.Fatal(err)
	}
	src, err := q.CreateQueue(&sqsv1.CreateQueueInput{QueueName: awsv1.String("q-src"),
		Attributes: map[string]*string{"RedrivePolicy": awsv1.String(redrivePolicy("q-dlq", 1)), "VisibilityTimeout": awsv1.String("3")}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = q.CreateQueue(&sqsv1.CreateQueueInput{QueueName: awsv1.String("q-other"),
		Attributes: map[string]*string{"RedrivePolicy": awsv1.String(redrivePolicy("q-dlq", 1))}})
	wantV1Error(t, err, "InvalidParameterValue", 400)

	if _, err := q.SendMessage(&sqsv1.SendMessageInput{QueueUrl: src.QueueUrl, MessageBody: awsv1.String("x")}); err != nil {
		t.Fatal(err)
	}
	if out, err := q.ReceiveMessage(&sqsv1.ReceiveMessageInput{QueueUrl: src.QueueUrl}); err != nil || len(out.Messages) != 1 {
		t.Fatalf("first receive: %v %v", out, err)
	}
	f.clk.Advance(3 * time.Second)
	waitCounts(t, f, aws.ToString(src.QueueUrl), 1)
	for {
		out, err := q.ReceiveMessage(&sqsv1.ReceiveMessageInput{QueueUrl: src.QueueUrl})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			break
		}
	}
	out, err := q.ReceiveMessage(&sqsv1.ReceiveMessageInput{QueueUrl: dlq.QueueUrl, AttributeNames: awsv1.StringSlice([]string{"DeadLetterQueueSourceArn"}),
		VisibilityTimeout: awsv1.Int64(0)})
	if err != nil || len(out.Messages) != 1 || awsv1.StringValue(out.Messages[0].Attributes["DeadLetterQueueSourceArn"]) != arnPrefix+"q-src" {
		t.Fatalf("dead-letter receive: %v, %v", out, err)
	}
	sources, err := q.ListDeadLetterSourceQueues(&sqsv1.ListDeadLetterSourceQueuesInput{QueueUrl: dlq.QueueUrl})
	if err != nil || len(sources.QueueUrls) != 1 || awsv1.StringValue(sources.QueueUrls[0]) != awsv1.StringValue(src.QueueUrl) {
		t.Fatalf("sources: %v, %v", sources, err)
	}
	task, err := q.StartMessageMoveTask(&sqsv1.StartMessageMoveTaskInput{SourceArn: awsv1.String(arnPrefix + "q-dlq")})
	if err != nil {
		t.Fatal(err)
	}
	f.waitTask(t, arnPrefix+"q-dlq", "COMPLETED")
	tasks, err := q.ListMessageMoveTasks(&sqsv1.ListMessageMoveTasksInput{SourceArn: awsv1.String(arnPrefix + "q-dlq")})
	if err != nil || len(tasks.Results) != 1 || awsv1.StringValue(tasks.Results[0].Status) != "COMPLETED" || awsv1.Int64Value(tasks.Results[0].ApproximateNumberOfMessagesMoved) != 1 {
		t.Fatalf("tasks: %v, %v", tasks, err)
	}
	_, err = q.CancelMessageMoveTask(&sqsv1.CancelMessageMoveTaskInput{TaskHandle: task.TaskHandle})
	wantV1Error(t, err, "ResourceNotFoundException", 404)
	_, err = q.StartMessageMoveTask(&sqsv1.StartMessageMoveTaskInput{SourceArn: awsv1.String(arnPrefix + "q-src")})
	wantV1Error(t, err, "InvalidParameterValue", 400)
}
