package ferrytest_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/ferrymq/ferry/ferrytest"
)

// A message that its consumer keeps failing goes to the dead-letter queue
// after maxReceiveCount receives, carries the story of why, and a move
// task takes it back to its queue: minutes of visibility timeouts walked
// through in milliseconds. In a test, ferrytest.Start(t) replaces New and
// Close.
func Example() {
	ctx := context.Background()
	f, err := ferrytest.New(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	client := sqs.NewFromConfig(f.Config())

	dlq := must(client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders-dlq")}))
	dlqArn := must(client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})).Attributes["QueueArn"]
	orders := must(client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders"), Attributes: map[string]string{
		"VisibilityTimeout": "30",
		"RedrivePolicy":     `{"deadLetterTargetArn":"` + dlqArn + `","maxReceiveCount":"2"}`,
	}}))
	must(client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: orders.QueueUrl, MessageBody: aws.String("order 1")}))

	// The consumer receives the message twice and fails each time: it
	// never deletes it, and its visibility timeout runs out.
	var id string
	for range 2 {
		out := must(client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: orders.QueueUrl}))
		id = aws.ToString(out.Messages[0].MessageId)
		f.Advance(30 * time.Second)
	}
	// The third receive finds it over its maxReceiveCount: it moves to the
	// dead-letter queue.
	out := must(client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: orders.QueueUrl}))
	fmt.Println("orders hands out:", len(out.Messages))

	story, err := f.History(ctx, aws.ToString(dlq.QueueUrl), id)
	if err != nil {
		log.Fatal(err)
	}
	var kinds []string
	for _, e := range story.Events {
		kinds = append(kinds, e.Kind)
	}
	fmt.Println("why it is in orders-dlq:", strings.Join(kinds, ", "))

	// Redrive: a move task takes it back to orders.
	must(client.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqArn)}))
	for {
		tasks := must(client.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlqArn)}))
		if aws.ToString(tasks.Results[0].Status) == "COMPLETED" {
			break
		}
		f.Advance(time.Second)
	}
	back := must(client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: orders.QueueUrl}))
	fmt.Println("back in orders:", aws.ToString(back.Messages[0].Body))
	// Output:
	// orders hands out: 0
	// why it is in orders-dlq: receive, expiry, receive, expiry, move
	// back in orders: order 1
}

func must[T any](v T, err error) T {
	if err != nil {
		log.Fatal(err)
	}
	return v
}
