package server_test

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	"github.com/aws/aws-sdk-go/aws/awserr"
	sqsv1 "github.com/aws/aws-sdk-go/service/sqs"
	"github.com/aws/smithy-go"
)

// TestQueuePolicyCrossAccount: with signatures verified, alice's queue
// policy decides what bob may do with her queue, over JSON and query:
// allowed by a grant, refused without one, refused by an explicit Deny
// even where a grant exists, decided by aws:SourceIp (the clients connect
// from 127.0.0.1) and by action wildcards; and alice herself is refused
// what her policy denies her.
func TestQueuePolicyCrossAccount(t *testing.T) {
	t.Parallel()
	f := start(t, verifying(t, 0))
	alice := clientsOf(f.srv.URL(), aliceKey, aliceSecret, "us-east-1")
	bob := clientsOf(f.srv.URL(), bobKey, bobSecret, "us-east-1")
	ctx := ctxT(t)
	const queueARN = "arn:aws:sqs:us-east-1:" + aliceAccount + ":shared"
	bobRoot := `{"AWS":"arn:aws:iam::` + bobAccount + `:root"}`

	for i, tt := range []struct {
		name   string
		policy string // "" sets none
		action string // what bob does: send, receive, attributes, purge
		denied bool
	}{
		{"no policy: send", "", "send", true},
		{"no policy: receive", "", "receive", true},
		{"granted send", `{"Effect":"Allow","Principal":` + bobRoot + `,"Action":"SQS:SendMessage","Resource":"` + queueARN + `"}`, "send", false},
		{"send granted, receive not", `{"Effect":"Allow","Principal":` + bobRoot + `,"Action":"sqs:SendMessage","Resource":"` + queueARN + `"}`, "receive", true},
		{"action wildcard", `{"Effect":"Allow","Principal":{"AWS":"` + bobAccount + `"},"Action":"sqs:Receive*","Resource":"arn:aws:sqs:*:` + aliceAccount + `:sha*"}`, "receive", false},
		{"action wildcard misses", `{"Effect":"Allow","Principal":{"AWS":"` + bobAccount + `"},"Action":"sqs:Receive*","Resource":"*"}`, "send", true},
		{"everything to everyone", `{"Effect":"Allow","Principal":"*","Action":"sqs:*"}`, "attributes", false},
		{"another account's grant", `{"Effect":"Allow","Principal":{"AWS":"333333333333"},"Action":"sqs:*"}`, "send", true},
		{"another queue's grant", `{"Effect":"Allow","Principal":` + bobRoot + `,"Action":"sqs:*","Resource":"arn:aws:sqs:us-east-1:` + aliceAccount + `:other"}`, "send", true},
		{"explicit deny wins", `{"Effect":"Allow","Principal":"*","Action":"sqs:*"},{"Effect":"Deny","Principal":` + bobRoot + `,"Action":"sqs:SendMessage"}`, "send", true},
		{"deny of another action", `{"Effect":"Allow","Principal":"*","Action":"sqs:*"},{"Effect":"Deny","Principal":` + bobRoot + `,"Action":"sqs:PurgeQueue"}`, "send", false},
		{"purge granted", `{"Effect":"Allow","Principal":` + bobRoot + `,"Action":"sqs:PurgeQueue"}`, "purge", false},
		{"source ip matches", `{"Effect":"Allow","Principal":` + bobRoot + `,"Action":"sqs:SendMessage","Condition":{"IpAddress":{"aws:SourceIp":"127.0.0.0/8"}}}`, "send", false},
		{"source ip does not match", `{"Effect":"Allow","Principal":` + bobRoot + `,"Action":"sqs:SendMessage","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}`, "send", true},
		{"secure transport required", `{"Effect":"Allow","Principal":` + bobRoot + `,"Action":"sqs:*"},{"Effect":"Deny","Principal":` + bobRoot + `,"Action":"sqs:*","Condition":{"Bool":{"aws:SecureTransport":"false"}}}`, "send", true},
		{"principal account condition", `{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Condition":{"StringEquals":{"aws:PrincipalAccount":"` + bobAccount + `"}}}`, "send", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// A queue per case, its ARN put in the case's policy.
			name := fmt.Sprintf("shared%d", i)
			url := f.srv.URL() + "/" + aliceAccount + "/" + name
			attrs := map[string]string{}
			if tt.policy != "" {
				attrs["Policy"] = `{"Version":"2012-10-17","Statement":[` + strings.ReplaceAll(tt.policy, queueARN, queueARN+strconv.Itoa(i)) + `]}`
			}
			if _, err := alice.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: &name, Attributes: attrs}); err != nil {
				t.Fatalf("CreateQueue: %v", err)
			}
			if _, err := alice.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("from alice")}); err != nil {
				t.Fatalf("alice's SendMessage: %v", err)
			}
			var jsonErr, queryErr error
			switch tt.action {
			case "send":
				_, jsonErr = bob.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("from bob")})
				_, queryErr = bob.query.SendMessageBatch(&sqsv1.SendMessageBatchInput{QueueUrl: &url,
					Entries: []*sqsv1.SendMessageBatchRequestEntry{{Id: awsv1.String("a"), MessageBody: awsv1.String("from bob")}}})
			case "receive":
				var out *sqs.ReceiveMessageOutput
				out, jsonErr = bob.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, VisibilityTimeout: 0})
				if jsonErr == nil && (len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != "from alice") {
					t.Errorf("bob received %v", out.Messages)
				}
				if jsonErr == nil {
					_, err := bob.json.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: out.Messages[0].ReceiptHandle})
					wantAPIError(t, err, "AccessDenied", http.StatusForbidden) // receiving is not deleting
				}
				_, queryErr = bob.query.ReceiveMessage(&sqsv1.ReceiveMessageInput{QueueUrl: &url})
			case "attributes":
				_, jsonErr = bob.json.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []sqstypes.QueueAttributeName{"All"}})
				_, queryErr = bob.query.GetQueueUrl(&sqsv1.GetQueueUrlInput{QueueName: &name, QueueOwnerAWSAccountId: awsv1.String(aliceAccount)})
			case "purge":
				_, jsonErr = bob.json.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: &url})
				queryErr = jsonErr
			}
			if !tt.denied {
				if jsonErr != nil || queryErr != nil {
					t.Fatalf("refused: json %v, query %v", jsonErr, queryErr)
				}
				return
			}
			wantAPIError(t, jsonErr, "AccessDenied", http.StatusForbidden)
			var api smithy.APIError
			if errors.As(jsonErr, &api) && !strings.Contains(api.ErrorMessage(), "User: arn:aws:iam::"+bobAccount+":root is not authorized to perform: sqs:") {
				t.Errorf("message %q", api.ErrorMessage())
			}
			var rf awserr.RequestFailure
			if !errors.As(queryErr, &rf) || rf.Code() != "AccessDenied" || rf.StatusCode() != http.StatusForbidden {
				t.Errorf("query: %v, want AccessDenied (403)", queryErr)
			}
			// Alice's message is where she left it.
			got, err := alice.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url})
			if err != nil || len(got.Messages) != 1 || aws.ToString(got.Messages[0].Body) != "from alice" {
				t.Errorf("alice receives %v (%v)", got, err)
			}
		})
	}

	// What cannot be shared is refused to bob whatever the policy says.
	url := f.srv.URL() + "/" + aliceAccount + "/shared0"
	everything := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"sqs:*"},` +
		`{"Effect":"Deny","Principal":{"AWS":"` + aliceAccount + `"},"Action":"sqs:DeleteQueue"}]}`
	if _, err := alice.json.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &url, Attributes: map[string]string{"Policy": everything}}); err != nil {
		t.Fatalf("SetQueueAttributes: %v", err)
	}
	_, err := bob.json.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: &url})
	wantAPIError(t, err, "AccessDenied", http.StatusForbidden)
	_, err = bob.json.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &url, Attributes: map[string]string{"Policy": ""}})
	wantAPIError(t, err, "AccessDenied", http.StatusForbidden)
	_, err = bob.json.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(queueARN + "0")})
	wantAPIError(t, err, "AccessDenied", http.StatusForbidden)
	// Alice is refused what her own policy denies her.
	_, err = alice.json.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: &url})
	wantAPIError(t, err, "AccessDenied", http.StatusForbidden)
	if errors.As(err, new(smithy.APIError)) && !strings.Contains(err.Error(), "with an explicit deny in a resource-based policy") {
		t.Errorf("message %v", err)
	}
}

// TestPolicyValidation: an invalid policy document is refused when set,
// with each service's error, on create and on update; documents AWS
// accepts are kept.
func TestPolicyValidation(t *testing.T) {
	t.Parallel()
	f := start(t)
	c := clientsOf(f.srv.URL(), "AKIDFERRYTEST", "secret", "us-east-1")
	ctx := ctxT(t)
	const bad = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sqs:SendMessage"}]}`
	_, err := c.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("p"), Attributes: map[string]string{"Policy": bad}})
	wantAPIError(t, err, "InvalidAttributeValue", http.StatusBadRequest)
	if err != nil && !strings.Contains(err.Error(), "Invalid value for the parameter Policy.") {
		t.Errorf("message %v", err)
	}
	q, err := c.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("p")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.json.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: q.QueueUrl, Attributes: map[string]string{"Policy": "{"}})
	wantAPIError(t, err, "InvalidAttributeValue", http.StatusBadRequest)
	// AddPermission's documents are valid policies.
	if _, err := c.json.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: q.QueueUrl, Label: aws.String("l"),
		AWSAccountIds: []string{bobAccount}, Actions: []string{"SendMessage", "ReceiveMessage"}}); err != nil {
		t.Fatal(err)
	}
	attrs, err := c.json.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{"Policy"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.json.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: q.QueueUrl, Attributes: attrs.Attributes}); err != nil {
		t.Errorf("AddPermission's policy set back: %v", err)
	}

	topic, err := c.sns.CreateTopic(ctx, &snssdk.CreateTopicInput{Name: aws.String("t")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, doc, message string }{
		{"not json", "{", "Invalid parameter: Policy Error: null"},
		{"no principal", `{"Statement":[{"Effect":"Allow","Action":"sns:Publish"}]}`, "Invalid parameter: Policy Error: null"},
		{"action of another service", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + aws.ToString(topic.TopicArn) + `"}]}`,
			"Invalid parameter: Policy statement action out of service scope!"},
		{"two resources", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sns:Publish","Resource":["` + aws.ToString(topic.TopicArn) + `","arn:aws:sns:us-east-1:000000000000:u"]}]}`,
			"Invalid parameter: Policy statement must apply to a single resource!"},
	} {
		_, err := c.sns.SetTopicAttributes(ctx, &snssdk.SetTopicAttributesInput{TopicArn: topic.TopicArn, AttributeName: aws.String("Policy"), AttributeValue: aws.String(tt.doc)})
		wantAPIError(t, err, "InvalidParameter", http.StatusBadRequest)
		var api smithy.APIError
		if errors.As(err, &api) && api.ErrorMessage() != tt.message {
			t.Errorf("%s: message %q, want %q", tt.name, api.ErrorMessage(), tt.message)
		}
	}
	_, err = c.sns.CreateTopic(ctx, &snssdk.CreateTopicInput{Name: aws.String("t2"), Attributes: map[string]string{"Policy": "{"}})
	wantAPIError(t, err, "InvalidParameter", http.StatusBadRequest)
	// The default policy, read back and set again, is valid.
	got, err := c.sns.GetTopicAttributes(ctx, &snssdk.GetTopicAttributesInput{TopicArn: topic.TopicArn})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.sns.SetTopicAttributes(ctx, &snssdk.SetTopicAttributesInput{TopicArn: topic.TopicArn, AttributeName: aws.String("Policy"), AttributeValue: aws.String(got.Attributes["Policy"])}); err != nil {
		t.Errorf("default policy set back: %v", err)
	}
}
