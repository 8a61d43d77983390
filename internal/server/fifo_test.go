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

func fifoAttrs(extra ...string) map[string]string {
	m := map[string]string{"FifoQueue": "true"}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

func (f *ferry) sendFIFO(t testing.TB, url, body, group, dedup string) *sqs.SendMessageOutput {
	t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageGroupId: aws.String(group)}
	if dedup != "" {
		in.MessageDeduplicationId = aws.String(dedup)
	}
	out, err := f.json.SendMessage(ctxT(t), in)
	if err != nil {
		t.Fatalf("send %s: %v", body, err)
	}
	return out
}

func bodies(ms []types.Message) string {
	var b []string
	for _, m := range ms {
		b = append(b, aws.ToString(m.Body))
	}
	return strings.Join(b, ",")
}

func TestFIFOAttributesAndValidation(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	url := f.createQueue(t, "jobs.fifo", fifoAttrs())
	out, err := f.json.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "false", "DeduplicationScope": "queue", "FifoThroughputLimit": "perQueue",
		"QueueArn": arnPrefix + "jobs.fifo"} {
		if out.Attributes[k] != v {
			t.Errorf("%s = %q, want %q", k, out.Attributes[k], v)
		}
	}
	// High-throughput mode, and its rule.
	f.createQueue(t, "fast.fifo", fifoAttrs("DeduplicationScope", "messageGroup", "FifoThroughputLimit", "perMessageGroupId"))
	f.createQueue(t, "std-dlq", nil)

	for _, tc := range []struct {
		name  string
		queue string
		attrs map[string]string
		code  string
	}{
		{"fifo name without FifoQueue", "plain.fifo", nil, "InvalidParameterValue"},
		{"FifoQueue without .fifo", "plain", fifoAttrs(), "InvalidParameterValue"},
		{"perMessageGroupId needs messageGroup scope", "ht.fifo", fifoAttrs("FifoThroughputLimit", "perMessageGroupId"), "InvalidAttributeValue"},
		{"bad scope", "sc.fifo", fifoAttrs("DeduplicationScope", "everywhere"), "InvalidAttributeValue"},
		{"standard dead-letter queue for a FIFO source", "src.fifo", fifoAttrs("RedrivePolicy", redrivePolicy("std-dlq", 3)), "InvalidParameterValue"},
		{"FIFO dead-letter queue for a standard source", "src", map[string]string{"RedrivePolicy": redrivePolicy("jobs.fifo", 3)}, "InvalidParameterValue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(tc.queue), Attributes: tc.attrs})
			wantAPIError(t, err, tc.code, 400)
		})
	}
	_, err = f.json.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"FifoQueue": "false"}})
	wantAPIError(t, err, "InvalidAttributeValue", 400)

	for _, tc := range []struct {
		name string
		in   sqs.SendMessageInput
		code string
	}{
		{"no group id", sqs.SendMessageInput{MessageBody: aws.String("x"), MessageDeduplicationId: aws.String("d")}, "MissingParameter"},
		{"no dedup id", sqs.SendMessageInput{MessageBody: aws.String("x"), MessageGroupId: aws.String("g")}, "InvalidParameterValue"},
		{"bad group id", sqs.SendMessageInput{MessageBody: aws.String("x"), MessageGroupId: aws.String("g g"), MessageDeduplicationId: aws.String("d")}, "InvalidParameterValue"},
		{"group id too long", sqs.SendMessageInput{MessageBody: aws.String("x"), MessageGroupId: aws.String(strings.Repeat("g", 129)), MessageDeduplicationId: aws.String("d")}, "InvalidParameterValue"},
		{"bad dedup id", sqs.SendMessageInput{MessageBody: aws.String("x"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("é")}, "InvalidParameterValue"},
		{"per-message delay", sqs.SendMessageInput{MessageBody: aws.String("x"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d"), DelaySeconds: 5}, "InvalidParameterValue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.QueueUrl = aws.String(url)
			_, err := f.json.SendMessage(ctx, &in)
			wantAPIError(t, err, tc.code, 400)
		})
	}
}

func TestFIFODeduplicationWindow(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	url := f.createQueue(t, "dedup.fifo", fifoAttrs())
	first := f.sendFIFO(t, url, "a", "g", "same")
	dup := f.sendFIFO(t, url, "a", "g", "same")
	if aws.ToString(dup.MessageId) != aws.ToString(first.MessageId) || aws.ToString(dup.SequenceNumber) != aws.ToString(first.SequenceNumber) ||
		len(aws.ToString(first.SequenceNumber)) < 20 {
		t.Fatalf("duplicate answered %+v, original %+v", dup, first)
	}
	wantCounts(t, f, url, 1, 0, 0)
	// Received and deleted, the id still deduplicates inside 5 minutes.
	got := f.receiveAll(t, url, 10)
	if len(got) != 1 || got[0].Attributes["MessageDeduplicationId"] != "same" || got[0].Attributes["MessageGroupId"] != "g" ||
		got[0].Attributes["SequenceNumber"] != aws.ToString(first.SequenceNumber) {
		t.Fatalf("received %+v", got)
	}
	if _, err := f.json.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: got[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(4*time.Minute + 59*time.Second)
	if again := f.sendFIFO(t, url, "a", "g", "same"); aws.ToString(again.MessageId) != aws.ToString(first.MessageId) {
		t.Fatal("deduplicated only against messages still queued")
	}
	wantCounts(t, f, url, 0, 0, 0)
	f.clk.Advance(time.Second)
	if later := f.sendFIFO(t, url, "a", "g", "same"); aws.ToString(later.MessageId) == aws.ToString(first.MessageId) {
		t.Fatal("still deduplicated after 5 minutes")
	}
	wantCounts(t, f, url, 1, 0, 0)

	// Content-based: the SHA-256 of the body is the id; an explicit id wins.
	cb := f.createQueue(t, "content.fifo", fifoAttrs("ContentBasedDeduplication", "true"))
	one := f.sendFIFO(t, cb, "body", "g", "")
	two := f.sendFIFO(t, cb, "body", "h", "")
	three := f.sendFIFO(t, cb, "body", "g", "explicit")
	if aws.ToString(one.MessageId) != aws.ToString(two.MessageId) || aws.ToString(three.MessageId) == aws.ToString(one.MessageId) {
		t.Fatalf("content-based dedup: %s %s %s", aws.ToString(one.MessageId), aws.ToString(two.MessageId), aws.ToString(three.MessageId))
	}
	// Scope messageGroup: the same id in another group is another message.
	sc := f.createQueue(t, "scoped.fifo", fifoAttrs("DeduplicationScope", "messageGroup"))
	x := f.sendFIFO(t, sc, "x", "g1", "d")
	y := f.sendFIFO(t, sc, "x", "g2", "d")
	if aws.ToString(x.MessageId) == aws.ToString(y.MessageId) {
		t.Fatal("messageGroup scope deduplicated across groups")
	}
}

func TestFIFOOrderAndGroups(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	url := f.createQueue(t, "order.fifo", fifoAttrs("VisibilityTimeout", "10"))
	entries := []types.SendMessageBatchRequestEntry{}
	for i, b := range []string{"a1", "b1", "a2", "a3", "b2"} {
		entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint("e", i)), MessageBody: aws.String(b),
			MessageGroupId: aws.String(b[:1]), MessageDeduplicationId: aws.String(b)})
	}
	out, err := f.json.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil || len(out.Successful) != 5 {
		t.Fatalf("batch: %+v, %v", out, err)
	}
	seqs := map[string]uint64{}
	for _, s := range out.Successful {
		n, err := strconv.ParseUint(aws.ToString(s.SequenceNumber)[:18], 10, 64)
		if err != nil {
			t.Fatalf("sequence number %q", aws.ToString(s.SequenceNumber))
		}
		seqs[aws.ToString(s.Id)] = n
	}
	if !(seqs["e0"] <= seqs["e2"] && seqs["e2"] <= seqs["e3"]) {
		t.Errorf("sequence numbers not increasing in group a: %v", seqs)
	}
	// One group first: a's three, then b's two fill the batch.
	got := f.receiveAll(t, url, 3)
	if bodies(got) != "a1,a2,a3" {
		t.Fatalf("first batch %s", bodies(got))
	}
	// Group a is in flight: only b is available.
	got2 := f.receiveAll(t, url, 10)
	if bodies(got2) != "b1,b2" {
		t.Fatalf("second batch %s", bodies(got2))
	}
	if rest := f.receiveAll(t, url, 10); len(rest) != 0 {
		t.Fatalf("blocked groups handed out %s", bodies(rest))
	}
	// a1 and a2 done; a3's visibility runs out: it comes back before anything behind it.
	for _, m := range got[:2] {
		if _, err := f.json.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
	}
	f.sendFIFO(t, url, "a4", "a", "a4")
	f.clk.Advance(10 * time.Second)
	waitVisible(t, f, "order.fifo", 4)
	again := f.receiveAll(t, url, 10)
	if b := bodies(again); b != "b1,b2,a3,a4" && b != "a3,a4,b1,b2" {
		t.Fatalf("after expiry got %s", b)
	}
	// The expired handle of a3 can no longer delete it.
	_, err = f.json.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: got[2].ReceiptHandle})
	wantAPIError(t, err, "InvalidParameterValue", 400)
}

func TestFIFOReceiveRequestAttemptID(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	url := f.createQueue(t, "attempt.fifo", fifoAttrs())
	f.sendFIFO(t, url, "m1", "g", "1")
	f.sendFIFO(t, url, "m2", "g", "2")
	recv := func(id string) []types.Message {
		out, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 1, ReceiveRequestAttemptId: aws.String(id)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Messages
	}
	first := recv("attempt-1")
	retry := recv("attempt-1")
	if len(first) != 1 || len(retry) != 1 || aws.ToString(first[0].ReceiptHandle) != aws.ToString(retry[0].ReceiptHandle) {
		t.Fatalf("retried receive: %+v vs %+v", first, retry)
	}
	_, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), ReceiveRequestAttemptId: aws.String("bad id")})
	wantAPIError(t, err, "InvalidParameterValue", 400)
}

func TestFIFODeadLetterAndRedrive(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	dlq := f.createQueue(t, "dl.fifo", fifoAttrs())
	src := f.createQueue(t, "work.fifo", fifoAttrs("RedrivePolicy", redrivePolicy("dl.fifo", 1), "VisibilityTimeout", "5"))
	sent := f.sendFIFO(t, src, "head", "g", "h")
	f.sendFIFO(t, src, "next", "g", "n")
	if got := f.receiveAll(t, src, 1); bodies(got) != "head" {
		t.Fatalf("first receive %s", bodies(got))
	}
	f.clk.Advance(5 * time.Second)
	moveAt := f.clk.Now().UnixMilli()
	// The head moves to the dead-letter queue, which unblocks the group.
	got := testwait.Some(t, "nothing arrived", func() []types.Message { return f.receiveAll(t, src, 1) })
	if bodies(got) != "next" {
		t.Fatalf("after the move got %s", bodies(got))
	}
	dead := f.receiveAll(t, dlq, 10)
	if len(dead) != 1 {
		t.Fatalf("dead-letter queue holds %d", len(dead))
	}
	a := dead[0].Attributes
	if aws.ToString(dead[0].MessageId) != aws.ToString(sent.MessageId) || a["MessageGroupId"] != "g" ||
		a["MessageDeduplicationId"] != aws.ToString(sent.MessageId) || a["DeadLetterQueueSourceArn"] != arnPrefix+"work.fifo" {
		t.Errorf("dead letter = %+v", dead[0])
	}
	if sentAt, _ := strconv.ParseInt(a["SentTimestamp"], 10, 64); sentAt < moveAt {
		t.Errorf("SentTimestamp %d not reset to the move (%d)", sentAt, moveAt)
	}
	if _, err := f.json.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(dlq), ReceiptHandle: dead[0].ReceiptHandle, VisibilityTimeout: 0}); err != nil {
		t.Fatal(err)
	}
	// Redrive back: group kept.
	if _, err := f.json.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "dl.fifo")}); err != nil {
		t.Fatal(err)
	}
	f.waitTask(t, arnPrefix+"dl.fifo", "COMPLETED")
	f.createQueue(t, "std-dest", nil)
	_, err := f.json.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "dl.fifo"), DestinationArn: aws.String(arnPrefix + "std-dest")})
	wantAPIError(t, err, "InvalidParameterValue", 400)
	waitCounts(t, f, src, 2)
}

func TestFIFOOverQuery(t *testing.T) {
	t.Parallel()
	f := start(t)
	q := f.query
	created, err := q.CreateQueue(&sqsv1.CreateQueueInput{QueueName: awsv1.String("legacy.fifo"),
		Attributes: map[string]*string{"FifoQueue": awsv1.String("true"), "ContentBasedDeduplication": awsv1.String("true")}})
	if err != nil {
		t.Fatal(err)
	}
	sent, err := q.SendMessage(&sqsv1.SendMessageInput{QueueUrl: created.QueueUrl, MessageBody: awsv1.String("q"), MessageGroupId: awsv1.String("g")})
	if err != nil || awsv1.StringValue(sent.SequenceNumber) == "" {
		t.Fatalf("send: %v, %v", sent, err)
	}
	batch, err := q.SendMessageBatch(&sqsv1.SendMessageBatchInput{QueueUrl: created.QueueUrl, Entries: []*sqsv1.SendMessageBatchRequestEntry{
		{Id: awsv1.String("a"), MessageBody: awsv1.String("q"), MessageGroupId: awsv1.String("g")},
		{Id: awsv1.String("b"), MessageBody: awsv1.String("r"), MessageGroupId: awsv1.String("g")},
	}})
	if err != nil || len(batch.Successful) != 2 || awsv1.StringValue(batch.Successful[0].MessageId) != awsv1.StringValue(sent.MessageId) {
		t.Fatalf("batch: %v, %v", batch, err)
	}
	out, err := q.ReceiveMessage(&sqsv1.ReceiveMessageInput{QueueUrl: created.QueueUrl, MaxNumberOfMessages: awsv1.Int64(10),
		AttributeNames: awsv1.StringSlice([]string{"All"}), ReceiveRequestAttemptId: awsv1.String("try-1")})
	if err != nil || len(out.Messages) != 2 || awsv1.StringValue(out.Messages[0].Body) != "q" || awsv1.StringValue(out.Messages[1].Body) != "r" ||
		awsv1.StringValue(out.Messages[0].Attributes["SequenceNumber"]) != awsv1.StringValue(sent.SequenceNumber) {
		t.Fatalf("receive: %v, %v", out, err)
	}
	_, err = q.SendMessage(&sqsv1.SendMessageInput{QueueUrl: created.QueueUrl, MessageBody: awsv1.String("no group")})
	wantV1Error(t, err, "MissingParameter", 400)
}

// waitVisible waits until queue has n visible messages.
func waitVisible(t testing.TB, f *ferry, queue string, n int64) {
	t.Helper()
	ctx := ctxT(t)
	testwait.Eventually(t, fmt.Sprintf("%d visible in %s", n, queue), func() bool {
		st, err := f.srv.Engine().Stats(ctx, "000000000000", queue)
		return err == nil && st.Visible == n
	})
}
