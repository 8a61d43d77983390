package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sdkReport is what testdata/jssdk/calls.mjs and testdata/boto3/calls.py
// print: the answers to the calls each SDK signed, and to those signed
// with a wrong secret or an unknown key.
type sdkReport struct {
	SDK string `json:"sdk"`
	SQS struct {
		QueueURL             string `json:"queueUrl"`
		SentMessageID        string `json:"sentMessageId"`
		SentMD5OfMessageBody string `json:"sentMD5OfMessageBody"`
		Received             struct {
			MessageID    string `json:"messageId"`
			Body         string `json:"body"`
			SenderID     string `json:"senderId"`
			ReceiveCount string `json:"receiveCount"`
			Kind         string `json:"kind"`
			Count        string `json:"count"`
			Raw          string `json:"raw"`
		} `json:"received"`
		BatchSuccessful []string          `json:"batchSuccessful"`
		BatchFailed     []string          `json:"batchFailed"`
		Attributes      map[string]string `json:"attributes"`
	} `json:"sqs"`
	SNS struct {
		TopicArn           string   `json:"topicArn"`
		SubscriptionArn    string   `json:"subscriptionArn"`
		PublishedMessageID string   `json:"publishedMessageId"`
		Topics             []string `json:"topics"`
		Delivered          string   `json:"delivered"`
	} `json:"sns"`
	CloudWatch struct {
		Metrics []string `json:"metrics"`
		Label   string   `json:"label"`
		Sum     float64  `json:"sum"`
	} `json:"cloudwatch"`
	// Refused maps wrongSecret and unknownKey to each service's error.
	Refused map[string]map[string]struct {
		Code    string `json:"code"`
		Status  int    `json:"status"`
		Message string `json:"message"`
	} `json:"refused"`
	// Protocols maps each service to the wire protocols its requests used.
	Protocols map[string][]string `json:"protocols"`
}

// runSDK runs the program of an SDK (its arguments, then the endpoint,
// region, key and secret) against f, whose harness key it signs with, and
// decodes what it reports.
func runSDK(t *testing.T, f *ferry, env []string, prog string, args ...string) sdkReport {
	t.Helper()
	// Starting an SDK takes a second or two; the bound is for a machine
	// busy with the race detector.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, append(args, f.srv.URL(), "us-east-1", harnessKey, harnessSecret)...)
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", prog, strings.Join(args, " "), err, stderr.String())
	}
	var r sdkReport
	dec := json.NewDecoder(&stdout)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("%s printed %q: %v\n%s", prog, stdout.String(), err, stderr.String())
	}
	t.Logf("%s: wire protocols %v", r.SDK, r.Protocols)
	return r
}

// checkSDKReport checks the answers an SDK reported against what f must
// have answered, and the protocols it spoke against want.
func checkSDKReport(t *testing.T, f *ferry, r sdkReport, want map[string][]string) {
	t.Helper()
	if !reflect.DeepEqual(r.Protocols, want) {
		t.Errorf("%s spoke %v, want %v", r.SDK, r.Protocols, want)
	}

	const body = "signed by the SDK: ünïcode & symbols +=/"
	q := r.SQS
	if q.QueueURL != f.srv.URL()+"/000000000000/signed" {
		t.Errorf("CreateQueue: QueueUrl %q", q.QueueURL)
	}
	if q.SentMessageID == "" || q.SentMD5OfMessageBody != md5hex(body) {
		t.Errorf("SendMessage: MessageId %q, MD5OfMessageBody %q", q.SentMessageID, q.SentMD5OfMessageBody)
	}
	m := q.Received
	if m.MessageID != q.SentMessageID || m.Body != body || m.SenderID != harnessKey || m.ReceiveCount != "1" ||
		m.Kind != "test" || m.Count != "7" || m.Raw != "AAEC/w==" {
		t.Errorf("ReceiveMessage: %+v", m)
	}
	if !slices.Equal(q.BatchSuccessful, []string{"first", "second"}) || len(q.BatchFailed) != 0 {
		t.Errorf("SendMessageBatch: successful %v, failed %v", q.BatchSuccessful, q.BatchFailed)
	}
	// The first message was deleted; the batch's two wait.
	if a := q.Attributes; a["VisibilityTimeout"] != "45" || a["ApproximateNumberOfMessages"] != "2" ||
		a["ApproximateNumberOfMessagesNotVisible"] != "0" || a["QueueArn"] != "arn:aws:sqs:us-east-1:000000000000:signed" {
		t.Errorf("GetQueueAttributes: %v", a)
	}

	s := r.SNS
	const topic = "arn:aws:sns:us-east-1:000000000000:signed-events"
	if s.TopicArn != topic || !strings.HasPrefix(s.SubscriptionArn, topic+":") || !slices.Contains(s.Topics, topic) {
		t.Errorf("CreateTopic, Subscribe, ListTopics: %+v", s)
	}
	var env struct{ Type, MessageId, TopicArn, Subject, Message string }
	if err := json.Unmarshal([]byte(s.Delivered), &env); err != nil || env.Type != "Notification" || env.MessageId != s.PublishedMessageID ||
		env.TopicArn != topic || env.Subject != "signed" || env.Message != "published by the SDK" {
		t.Errorf("Publish delivered %q (%v), want the notification of message %s", s.Delivered, err, s.PublishedMessageID)
	}

	c := r.CloudWatch
	for _, metric := range []string{"NumberOfMessagesSent", "NumberOfMessagesReceived", "NumberOfMessagesDeleted"} {
		if !slices.Contains(c.Metrics, metric) {
			t.Errorf("ListMetrics: %v lacks %s", c.Metrics, metric)
		}
	}
	if c.Label != "NumberOfMessagesSent" || c.Sum != 3 {
		t.Errorf("GetMetricStatistics: label %q, sum %v; want NumberOfMessagesSent, 3", c.Label, c.Sum)
	}

	// The same messages, codes and statuses as aws-sdk-go-v2 gets
	// (TestAuthRefusals).
	for _, refusal := range []struct{ name, code, message string }{
		{"wrongSecret", "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided."},
		{"unknownKey", "InvalidClientTokenId", "The security token included in the request is invalid."},
	} {
		for _, service := range []string{"sqs", "sns", "cloudwatch"} {
			got := r.Refused[refusal.name][service]
			if got.Code != refusal.code || got.Status != 403 || !strings.Contains(got.Message, refusal.message) {
				t.Errorf("%s, %s: %+v, want %s (403) %q", refusal.name, service, got, refusal.code, refusal.message)
			}
		}
	}
}

// TestJSSDKSignatures drives a verifying Ferry with the AWS SDK for
// JavaScript v3 as testdata/jssdk pins it: AWS JSON 1.0 to SQS and
// CloudWatch, the query protocol to SNS.
func TestJSSDKSignatures(t *testing.T) {
	t.Parallel()
	jsSDKTool.need(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	f := start(t, verifyingHarness(t))
	env := toolEnv(t, "PATH="+filepath.Dir(node)+":/usr/bin:/bin")
	r := runSDK(t, f, env, node, filepath.Join(jsSDKDir, "calls.mjs"))
	checkSDKReport(t, f, r, map[string][]string{"sqs": {"json"}, "sns": {"query"}, "cloudwatch": {"json"}})
}

// TestBoto3Signatures drives a verifying Ferry with Debian's boto3, which
// speaks the protocols of its botocore's version (botocoreProtocols).
func TestBoto3Signatures(t *testing.T) {
	t.Parallel()
	boto3Tool.need(t)
	f := start(t, verifyingHarness(t))
	r := runSDK(t, f, toolEnv(t, "PYTHONDONTWRITEBYTECODE=1"), debianPython, filepath.Join("testdata", "boto3", "calls.py"))
	_, botocore, _ := strings.Cut(r.SDK, " botocore/")
	want, err := botocoreProtocols(botocore)
	if err != nil {
		t.Fatalf("%s: %v", r.SDK, err)
	}
	checkSDKReport(t, f, r, want)
}

// botocoreProtocols are the protocols a botocore version speaks to each
// service: to SQS AWS JSON 1.0 from 1.34.90, and in the two short spells
// before it when it did (1.29.127; 1.31.81 up to 1.32.6, which rolled
// back), the query protocol otherwise; to CloudWatch AWS JSON 1.0 from
// 1.42.7, the query protocol before; to SNS the query protocol.
func botocoreProtocols(version string) (map[string][]string, error) {
	parts := strings.Split(version, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("botocore version %q is not major.minor.patch", version)
	}
	v := make([]int, 3)
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("botocore version %q: %w", version, err)
		}
		v[i] = n
	}
	at := func(w ...int) int { return slices.Compare(v, w) }
	out := map[string][]string{"sqs": {"query"}, "sns": {"query"}, "cloudwatch": {"query"}}
	if at(1, 34, 90) >= 0 || at(1, 29, 127) == 0 || at(1, 31, 81) >= 0 && at(1, 32, 6) < 0 {
		out["sqs"] = []string{"json"}
	}
	if at(1, 42, 7) >= 0 {
		out["cloudwatch"] = []string{"json"}
	}
	return out, nil
}

func TestBotocoreProtocols(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ version, sqs, cloudwatch string }{
		{"1.29.27", "query", "query"}, // Debian 12's python3-botocore
		{"1.29.126", "query", "query"},
		{"1.29.127", "json", "query"},
		{"1.29.128", "query", "query"},
		{"1.31.80", "query", "query"},
		{"1.31.81", "json", "query"},
		{"1.32.5", "json", "query"},
		{"1.32.6", "query", "query"},
		{"1.34.89", "query", "query"},
		{"1.34.90", "json", "query"},
		{"1.42.6", "json", "query"},
		{"1.42.7", "json", "json"},
		{"1.43.11", "json", "json"},
		{"2.0.0", "json", "json"},
	} {
		want := map[string][]string{"sqs": {tc.sqs}, "sns": {"query"}, "cloudwatch": {tc.cloudwatch}}
		if got, err := botocoreProtocols(tc.version); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v (%v), want %v", tc.version, got, err, want)
		}
	}
	for _, bad := range []string{"", "1.34", "1.x.0", "1.34.90.1"} {
		if got, err := botocoreProtocols(bad); err == nil {
			t.Errorf("%q: %v, want an error", bad, got)
		}
	}
}
