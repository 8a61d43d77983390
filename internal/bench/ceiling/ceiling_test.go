package ceiling_test

import (
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/ferrymq/ferry/internal/bench"
	"github.com/ferrymq/ferry/internal/bench/ceiling"
)

// headerSeen records whether every answer carried the ceiling's header.
type headerSeen struct {
	next    http.RoundTripper
	missing int
}

func (h *headerSeen) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := h.next.RoundTrip(req)
	if err == nil && resp.Header.Get(ceiling.Header) != "1" {
		h.missing++
	}
	return resp, err
}

// TestCeiling checks that the SDK takes the ceiling's answers as it takes
// a broker's, digests and batch entries included, that every answer says
// it is the ceiling's, and that what it does not answer fails with AWS's
// error for it, so that a benchmark against it measures successful calls.
func TestCeiling(t *testing.T) {
	srv, err := ceiling.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	seen := &headerSeen{next: bench.NewHTTPClient(1).Transport}
	hc := &http.Client{Transport: seen}
	creds := credentials.NewStaticCredentialsProvider("AKID", "secret", "")
	queues := sqs.New(sqs.Options{Region: ceiling.Region, BaseEndpoint: aws.String(srv.URL()), Credentials: creds, HTTPClient: hc, RetryMaxAttempts: 1})
	topics := sns.New(sns.Options{Region: ceiling.Region, BaseEndpoint: aws.String(srv.URL()), Credentials: creds, HTTPClient: hc, RetryMaxAttempts: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	queue := aws.String(srv.URL() + "/000000000000/bench")
	topic := aws.String("arn:aws:sns:us-east-1:000000000000:bench")
	// Bodies that the JSON encoding escapes, and one that it does not.
	bodies := []string{`a body with "quotes" & <xml> \ and / and ü and \u00e9`, "plain", "tab\tand\nnewline"}
	ids := []string{"a", "b-2", "c_3"}

	tests := []struct {
		name string
		call func() (any, error)
		want any    // what the call got
		code string // or: the AWS error code it fails with
	}{
		{"CreateQueue", func() (any, error) {
			out, err := queues.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("bench")})
			if err != nil {
				return nil, err
			}
			return aws.ToString(out.QueueUrl), nil
		}, aws.ToString(queue), ""},
		{"GetQueueUrl", func() (any, error) {
			out, err := queues.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("bench")})
			if err != nil {
				return nil, err
			}
			return aws.ToString(out.QueueUrl), nil
		}, aws.ToString(queue), ""},
		{"GetQueueAttributes QueueArn", func() (any, error) {
			out, err := queues.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: queue,
				AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
			if err != nil {
				return nil, err
			}
			return fmt.Sprint(out.Attributes), nil
		}, "map[QueueArn:arn:aws:sqs:us-east-1:000000000000:bench]", ""},
		{"GetQueueAttributes All", func() (any, error) {
			out, err := queues.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: queue,
				AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
			if err != nil {
				return nil, err
			}
			return len(out.Attributes), nil
		}, 4, ""},
		{"SendMessage", func() (any, error) {
			var got []string
			for _, body := range bodies {
				out, err := queues.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: queue, MessageBody: aws.String(body)})
				if err != nil {
					return nil, err
				}
				got = append(got, aws.ToString(out.MD5OfMessageBody))
			}
			return fmt.Sprint(got), nil
		}, fmt.Sprint(digests(bodies)), ""},
		{"SendMessageBatch", func() (any, error) {
			var entries []types.SendMessageBatchRequestEntry
			for i, id := range ids {
				entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(id), MessageBody: aws.String(bodies[i])})
			}
			out, err := queues.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: queue, Entries: entries})
			if err != nil {
				return nil, err
			}
			got := map[string]string{}
			for _, e := range out.Successful {
				got[aws.ToString(e.Id)] = aws.ToString(e.MD5OfMessageBody)
			}
			return fmt.Sprint(got, len(out.Failed)), nil
		}, fmt.Sprint(map[string]string{"a": digests(bodies)[0], "b-2": digests(bodies)[1], "c_3": digests(bodies)[2]}, 0), ""},
		{"SendMessageBatch FIFO", func() (any, error) {
			out, err := queues.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(srv.URL() + "/000000000000/q.fifo"),
				Entries: []types.SendMessageBatchRequestEntry{{Id: aws.String("0"), MessageBody: aws.String("x"),
					MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d-0")}}})
			if err != nil {
				return nil, err
			}
			return len(out.Successful), nil
		}, 1, ""},
		{"ReceiveMessage", func() (any, error) {
			out, err := queues.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: queue, MaxNumberOfMessages: 10, WaitTimeSeconds: 20})
			if err != nil {
				return nil, err
			}
			handles := map[string]bool{}
			for _, m := range out.Messages {
				if len(aws.ToString(m.Body)) != bench.BodySize {
					return nil, fmt.Errorf("body of %d bytes", len(aws.ToString(m.Body)))
				}
				handles[aws.ToString(m.ReceiptHandle)] = true
			}
			return len(handles), nil
		}, 10, ""},
		{"DeleteMessageBatch", func() (any, error) {
			var entries []types.DeleteMessageBatchRequestEntry
			for _, id := range ids {
				entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(id), ReceiptHandle: aws.String("h")})
			}
			out, err := queues.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: queue, Entries: entries})
			if err != nil {
				return nil, err
			}
			got := make([]string, len(out.Successful))
			for i, e := range out.Successful {
				got[i] = aws.ToString(e.Id)
			}
			return fmt.Sprint(got, len(out.Failed)), nil
		}, fmt.Sprint(ids, 0), ""},
		{"DeleteQueue", func() (any, error) {
			_, err := queues.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: queue})
			return nil, err
		}, nil, ""},
		{"CreateTopic", func() (any, error) {
			out, err := topics.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("bench")})
			if err != nil {
				return nil, err
			}
			return aws.ToString(out.TopicArn), nil
		}, aws.ToString(topic), ""},
		{"Subscribe", func() (any, error) {
			out, err := topics.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic, Protocol: aws.String("sqs"),
				Endpoint: aws.String("arn:aws:sqs:us-east-1:000000000000:bench"), ReturnSubscriptionArn: true})
			if err != nil {
				return nil, err
			}
			return aws.ToString(out.SubscriptionArn) != "", nil
		}, true, ""},
		{"Publish", func() (any, error) {
			out, err := topics.Publish(ctx, &sns.PublishInput{TopicArn: topic, Message: aws.String(bodies[0])})
			if err != nil {
				return nil, err
			}
			return aws.ToString(out.MessageId) != "", nil
		}, true, ""},
		{"PublishBatch", func() (any, error) {
			var entries []snstypes.PublishBatchRequestEntry
			for i, id := range ids {
				entries = append(entries, snstypes.PublishBatchRequestEntry{Id: aws.String(id), Message: aws.String(bodies[i])})
			}
			out, err := topics.PublishBatch(ctx, &sns.PublishBatchInput{TopicArn: topic, PublishBatchRequestEntries: entries})
			if err != nil {
				return nil, err
			}
			got := make([]string, len(out.Successful))
			for i, e := range out.Successful {
				got[i] = aws.ToString(e.Id)
			}
			slices.Sort(got)
			return fmt.Sprint(got, len(out.Failed)), nil
		}, fmt.Sprint(ids, 0), ""},
		{"Unsubscribe and DeleteTopic", func() (any, error) {
			if _, err := topics.Unsubscribe(ctx, &sns.UnsubscribeInput{SubscriptionArn: aws.String(aws.ToString(topic) + ":x")}); err != nil {
				return nil, err
			}
			_, err := topics.DeleteTopic(ctx, &sns.DeleteTopicInput{TopicArn: topic})
			return nil, err
		}, nil, ""},
		{"an SQS call it does not answer", func() (any, error) {
			_, err := queues.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: queue, ReceiptHandle: aws.String("h")})
			return nil, err
		}, nil, "AWS.SimpleQueueService.UnsupportedOperation"}, // the code of x-amzn-query-error
		{"an SNS call it does not answer", func() (any, error) {
			_, err := topics.ListTopics(ctx, &sns.ListTopicsInput{})
			return nil, err
		}, nil, "InvalidAction"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.call()
			var api smithy.APIError
			switch {
			case tc.code != "" && (!errors.As(err, &api) || api.ErrorCode() != tc.code):
				t.Errorf("got %v, error %v, want error code %s", got, err, tc.code)
			case tc.code == "" && err != nil:
				t.Errorf("error %v", err)
			case tc.code == "" && got != tc.want:
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if seen.missing > 0 {
		t.Errorf("%d answers without %s", seen.missing, ceiling.Header)
	}
}

func digests(bodies []string) []string {
	out := make([]string, len(bodies))
	for i, b := range bodies {
		out[i] = fmt.Sprintf("%x", md5.Sum([]byte(b)))
	}
	return out
}
