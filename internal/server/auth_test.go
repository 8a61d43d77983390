package server_test

import (
	"context"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	cwsdk "github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	"github.com/aws/aws-sdk-go/aws/awserr"
	credv1 "github.com/aws/aws-sdk-go/aws/credentials"
	"github.com/aws/aws-sdk-go/aws/session"
	sqsv1 "github.com/aws/aws-sdk-go/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/server"
	"github.com/ferrymq/ferry/internal/sigv4"
)

// The callers of a Ferry that verifies signatures.
const (
	aliceKey, aliceSecret, aliceAccount = "AKIAALICE0000000001", "alice/secret", "111111111111"
	bobKey, bobSecret, bobAccount       = "AKIABOB00000000002", "bob/secret", "222222222222"
)

const authCredentials = `[alice]
aws_access_key_id = ` + aliceKey + `
aws_secret_access_key = ` + aliceSecret + `
aws_account_id = ` + aliceAccount + `

[bob]
aws_access_key_id = ` + bobKey + `
aws_secret_access_key = ` + bobSecret + `
aws_account_id = ` + bobAccount + `
`

// verifying starts the server with --auth verify and the callers above,
// on a fake clock set to the wall clock (the SDKs sign with the wall
// clock), moved by skew.
func verifying(t testing.TB, skew time.Duration) option {
	creds, err := sigv4.ParseCredentials(strings.NewReader(authCredentials), server.DefaultAccount)
	if err != nil {
		t.Fatal(err)
	}
	return func(c *server.Config) {
		c.AuthVerify, c.Credentials = true, creds
		c.Clock = clock.NewFake(time.Now().Add(skew))
	}
}

// verifyingHarness turns --auth verify on for the harness's own clients:
// their key, in the default account, on a fake clock set to the wall
// clock.
func verifyingHarness(t testing.TB) option {
	creds, err := sigv4.ParseCredentials(strings.NewReader("[harness]\naws_access_key_id = "+harnessKey+"\naws_secret_access_key = "+harnessSecret+"\n"), server.DefaultAccount)
	if err != nil {
		t.Fatal(err)
	}
	return func(c *server.Config) {
		c.AuthVerify, c.Credentials = true, creds
		c.Clock = clock.NewFake(time.Now())
	}
}

// authClients are the SDK clients of one caller.
type authClients struct {
	json  *sqs.Client
	query *sqsv1.SQS
	sns   *snssdk.Client
	cw    *cwsdk.Client
}

func clientsOf(url, key, secret, region string) authClients {
	creds := credentials.NewStaticCredentialsProvider(key, secret, "")
	return authClients{
		json: sqs.New(sqs.Options{Region: region, BaseEndpoint: aws.String(url), Credentials: creds, RetryMaxAttempts: 1, HTTPClient: sdkHTTP}),
		query: sqsv1.New(session.Must(session.NewSession(&awsv1.Config{Region: awsv1.String(region), Endpoint: awsv1.String(url),
			Credentials: credv1.NewStaticCredentials(key, secret, ""), MaxRetries: awsv1.Int(0), HTTPClient: &http.Client{}}))),
		sns: snssdk.New(snssdk.Options{Region: region, BaseEndpoint: aws.String(url), Credentials: creds, RetryMaxAttempts: 1, HTTPClient: sdkHTTP}),
		cw:  cwsdk.New(cwsdk.Options{Region: region, BaseEndpoint: aws.String(url), Credentials: creds, RetryMaxAttempts: 1, HTTPClient: sdkHTTP}),
	}
}

// TestAuthVerify: with signatures verified, each SDK's signed requests
// are served in the account of their key (SQS over JSON and query, SNS,
// CloudWatch over RPC v2 CBOR), and one account's queues are not
// another's.
func TestAuthVerify(t *testing.T) {
	t.Parallel()
	f := start(t, verifying(t, 0))
	alice := clientsOf(f.srv.URL(), aliceKey, aliceSecret, "us-east-1")
	bob := clientsOf(f.srv.URL(), bobKey, bobSecret, "us-east-1")
	ctx := ctxT(t)

	out, err := alice.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")})
	if err != nil {
		t.Fatalf("CreateQueue: %v", err)
	}
	url := aws.ToString(out.QueueUrl)
	if !strings.HasSuffix(url, "/"+aliceAccount+"/orders") {
		t.Errorf("queue URL %s is not in alice's account", url)
	}
	if _, err := alice.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("hi")}); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	got, err := alice.query.ReceiveMessage(&sqsv1.ReceiveMessageInput{QueueUrl: &url, AttributeNames: []*string{awsv1.String("SenderId")}})
	if err != nil || len(got.Messages) != 1 || awsv1.StringValue(got.Messages[0].Body) != "hi" {
		t.Fatalf("ReceiveMessage over query: %v %v", got, err)
	}
	if sender := awsv1.StringValue(got.Messages[0].Attributes["SenderId"]); sender != aliceKey {
		t.Errorf("SenderId %q, want alice's key", sender)
	}

	// Bob's account has no queue of that name, and alice's queue refuses
	// him without a grant of its policy.
	list, err := bob.json.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil || len(list.QueueUrls) != 0 {
		t.Errorf("bob lists %v (%v), want none", list.QueueUrls, err)
	}
	_, err = bob.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("x")})
	wantAPIError(t, err, "AccessDenied", http.StatusForbidden)
	if _, err := bob.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")}); err != nil {
		t.Fatalf("bob's CreateQueue: %v", err)
	}
	if got, _ := bob.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(strings.Replace(url, aliceAccount, bobAccount, 1))}); len(got.Messages) != 0 {
		t.Errorf("bob's orders queue holds alice's message")
	}

	topic, err := alice.sns.CreateTopic(ctx, &snssdk.CreateTopicInput{Name: aws.String("events")})
	if err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	if _, err := alice.sns.Publish(ctx, &snssdk.PublishInput{TopicArn: topic.TopicArn, Message: aws.String("m")}); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if _, err := alice.cw.DescribeAlarms(ctx, &cwsdk.DescribeAlarmsInput{StateValue: cwtypes.StateValueAlarm}); err != nil {
		t.Fatalf("DescribeAlarms: %v", err)
	}
	if _, err := alice.cw.ListMetrics(ctx, &cwsdk.ListMetricsInput{Namespace: aws.String("AWS/SQS")}); err != nil {
		t.Fatalf("ListMetrics: %v", err)
	}
}

// TestAuthRefusals: a wrong secret, an unknown key, a region that is none and a
// clock 20 minutes off are refused with AWS's codes, statuses and
// messages on every protocol.
func TestAuthRefusals(t *testing.T) {
	t.Parallel()
	f := start(t, verifying(t, 0))
	skewed := start(t, verifying(t, 20*time.Minute))
	const mismatch = "The request signature we calculated does not match the signature you provided."
	for _, tt := range []struct {
		name                string
		url                 string
		key, secret, region string
		code, message       string
		status              int
	}{
		{"wrong secret", f.srv.URL(), aliceKey, "guess", "us-east-1", "SignatureDoesNotMatch", mismatch, 403},
		{"unknown key", f.srv.URL(), "AKIANOBODY", aliceSecret, "us-east-1", "InvalidClientTokenId", "The security token included in the request is invalid.", 403},
		{"not a region", f.srv.URL(), aliceKey, aliceSecret, "moon-base", "SignatureDoesNotMatch", "Credential should be scoped to a valid region, not 'moon-base'.", 403},
		{"clock skew", skewed.srv.URL(), aliceKey, aliceSecret, "us-east-1", "SignatureDoesNotMatch", "Signature expired: ", 403},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := clientsOf(tt.url, tt.key, tt.secret, tt.region)
			ctx := ctxT(t)
			check := func(proto string, err error) {
				t.Helper()
				wantAPIError(t, err, tt.code, tt.status)
				var api smithy.APIError
				if errors.As(err, &api) && !strings.Contains(api.ErrorMessage(), tt.message) {
					t.Errorf("%s: message %q, want %q", proto, api.ErrorMessage(), tt.message)
				}
			}
			_, err := c.json.ListQueues(ctx, &sqs.ListQueuesInput{})
			check("sqs json", err)
			_, err = c.sns.ListTopics(ctx, &snssdk.ListTopicsInput{})
			check("sns", err)
			_, err = c.cw.ListMetrics(ctx, &cwsdk.ListMetricsInput{})
			check("cloudwatch cbor", err)
			_, err = c.query.ListQueues(&sqsv1.ListQueuesInput{})
			var rf awserr.RequestFailure
			if !errors.As(err, &rf) || rf.Code() != tt.code || rf.StatusCode() != tt.status || !strings.Contains(rf.Message(), tt.message) {
				t.Errorf("sqs query: %v, want %s (%d)", err, tt.code, tt.status)
			}
		})
	}
}

// TestAuthMissing: an unsigned request is refused on every wire, but SNS's
// confirmation and unsubscribe links, which AWS serves unsigned.
func TestAuthMissing(t *testing.T) {
	t.Parallel()
	f := start(t, verifying(t, 0))
	q := f.postQuery(t, "Action=ListQueues&Version=2012-11-05")
	if q.Status != 403 || !strings.Contains(q.Body, "<Code>MissingAuthenticationToken</Code>") ||
		!strings.Contains(q.Body, "<Message>Request is missing Authentication Token</Message>") {
		t.Errorf("query: %d %s", q.Status, q.Body)
	}
	j := f.postJSON(t, "ListQueues", "{}")
	if j.Status != 403 || j.Header.Get("X-Amzn-Query-Error") != "MissingAuthenticationToken;Sender" ||
		!strings.Contains(j.Body, `"com.amazon.coral.service#MissingAuthenticationTokenException"`) {
		t.Errorf("json: %d %v %s", j.Status, j.Header, j.Body)
	}
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL()+"/?Action=ConfirmSubscription&Version=2010-03-31"+
		"&TopicArn=arn:aws:sns:us-east-1:000000000000:nope&Token=0123", nil)
	if c := do(t, req); c.Status == 403 || !strings.Contains(c.Body, "<Code>") || strings.Contains(c.Body, "MissingAuthenticationToken") {
		t.Errorf("unsigned ConfirmSubscription: %d %s", c.Status, c.Body)
	}
	req, _ = http.NewRequest(http.MethodGet, f.srv.URL()+"/?Action=ListTopics&Version=2010-03-31", nil)
	if c := do(t, req); c.Status != 403 || !strings.Contains(c.Body, "MissingAuthenticationToken") {
		t.Errorf("unsigned ListTopics: %d %s", c.Status, c.Body)
	}
}

// TestAuthPresigned: a presigned URL (the query form of SigV4) is served in
// its signer's account until it expires; changed, it is refused.
func TestAuthPresigned(t *testing.T) {
	t.Parallel()
	f := start(t, verifying(t, 0))
	alice := clientsOf(f.srv.URL(), aliceKey, aliceSecret, "us-east-1")
	if _, err := alice.json.CreateQueue(ctxT(t), &sqs.CreateQueueInput{QueueName: aws.String("presigned")}); err != nil {
		t.Fatal(err)
	}
	presign := func(query string, at time.Time) string {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL()+"/?"+query, nil)
		url, _, err := v4.NewSigner().PresignHTTP(ctxT(t), aws.Credentials{AccessKeyID: aliceKey, SecretAccessKey: aliceSecret},
			req, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "sqs", "us-east-1", at)
		if err != nil {
			t.Fatal(err)
		}
		return url
	}
	get := func(url string) rawResponse {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		return do(t, req)
	}
	url := presign("Action=ListQueues&Version=2012-11-05&X-Amz-Expires=300", time.Now())
	if r := get(url); r.Status != 200 || !strings.Contains(r.Body, "/"+aliceAccount+"/presigned</QueueUrl>") {
		t.Errorf("presigned ListQueues: %d %s", r.Status, r.Body)
	}
	if r := get(strings.Replace(url, "ListQueues", "ListQueueS", 1)); r.Status != 403 || !strings.Contains(r.Body, "SignatureDoesNotMatch") {
		t.Errorf("changed presigned URL: %d %s", r.Status, r.Body)
	}
	old := presign("Action=ListQueues&Version=2012-11-05&X-Amz-Expires=60", time.Now().Add(-10*time.Minute))
	if r := get(old); r.Status != 403 || !strings.Contains(r.Body, "Signature expired: ") {
		t.Errorf("expired presigned URL: %d %s", r.Status, r.Body)
	}
}

// TestAuthOffAccounts: without verification, a 12-digit access key is the
// account it is served in, as LocalStack users expect; any other key is
// served in the configured account, as before.
func TestAuthOffAccounts(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	other := clientsOf(f.srv.URL(), "333333333333", "anything", "us-east-1")
	out, err := other.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("mine")})
	if err != nil {
		t.Fatal(err)
	}
	if url := aws.ToString(out.QueueUrl); !strings.Contains(url, "/333333333333/mine") {
		t.Errorf("queue URL %s, want account 333333333333", url)
	}
	if url := f.createQueue(t, "default", nil); !strings.Contains(url, "/"+server.DefaultAccount+"/default") {
		t.Errorf("queue URL %s, want the default account", url)
	}
	list, err := other.json.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil || len(list.QueueUrls) != 1 || !strings.HasSuffix(list.QueueUrls[0], "/mine") {
		t.Errorf("account 333333333333 lists %v (%v)", list.QueueUrls, err)
	}
	// A wrong secret does not matter when nothing is verified.
	if _, err := f.json.ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
		t.Errorf("unverified ListQueues: %v", err)
	}
}

// TestAuthCLI drives a verifying Ferry with the AWS CLI (botocore's
// signer), where it is installed: SQS, SNS and CloudWatch answer, and a
// wrong secret is refused.
func TestAuthCLI(t *testing.T) {
	t.Parallel()
	awsCLITool.need(t)
	f := start(t, verifying(t, 0))
	cli := func(secret string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, debianCLI, append([]string{"--endpoint-url", f.srv.URL(), "--region", "us-east-1", "--output", "json"}, args...)...)
		cmd.Env = toolEnv(t, "AWS_ACCESS_KEY_ID="+aliceKey, "AWS_SECRET_ACCESS_KEY="+secret)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := cli(aliceSecret, "sqs", "create-queue", "--queue-name", "cli"); err != nil || !strings.Contains(out, "/"+aliceAccount+"/cli") {
		t.Errorf("sqs create-queue: %v %s", err, out)
	}
	if out, err := cli(aliceSecret, "sns", "create-topic", "--name", "cli"); err != nil || !strings.Contains(out, "arn:aws:sns:") {
		t.Errorf("sns create-topic: %v %s", err, out)
	}
	if out, err := cli(aliceSecret, "cloudwatch", "list-metrics", "--namespace", "AWS/SQS"); err != nil {
		t.Errorf("cloudwatch list-metrics: %v %s", err, out)
	}
	if out, err := cli("wrong", "sqs", "list-queues"); err == nil || !strings.Contains(out, "SignatureDoesNotMatch") {
		t.Errorf("wrong secret: %v %s", err, out)
	}
}
