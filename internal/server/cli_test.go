package server_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

func awsCLI(t *testing.T, f *ferry, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(debianCLI, append([]string{"--endpoint-url", f.srv.URL(), "--output", "json"}, args...)...)
	cmd.Env = toolEnv(t, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_DEFAULT_REGION=us-east-1", "AWS_PAGER=")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

func TestDebianAWSCLI(t *testing.T) {
	t.Parallel()
	awsCLITool.need(t)
	f := start(t)
	out, stderr, err := awsCLI(t, f, "sqs", "create-queue", "--queue-name", "cli", "--attributes", "VisibilityTimeout=40")
	if err != nil {
		t.Fatalf("create-queue: %v\n%s", err, stderr)
	}
	var created struct{ QueueUrl string }
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.QueueUrl != f.srv.URL()+"/000000000000/cli" {
		t.Fatalf("create-queue said %q (%v)", out, err)
	}
	if _, stderr, err := awsCLI(t, f, "sqs", "send-message", "--queue-url", created.QueueUrl, "--message-body", "from the cli",
		"--message-attributes", `{"kind":{"DataType":"String","StringValue":"test"}}`); err != nil {
		t.Fatalf("send-message: %v\n%s", err, stderr)
	}
	out, stderr, err = awsCLI(t, f, "sqs", "receive-message", "--queue-url", created.QueueUrl, "--attribute-names", "All", "--message-attribute-names", "All")
	if err != nil {
		t.Fatalf("receive-message: %v\n%s", err, stderr)
	}
	var recv struct {
		Messages []struct {
			Body              string
			ReceiptHandle     string
			Attributes        map[string]string
			MessageAttributes map[string]struct{ StringValue string }
		}
	}
	if err := json.Unmarshal([]byte(out), &recv); err != nil || len(recv.Messages) != 1 {
		t.Fatalf("receive-message said %q (%v)", out, err)
	}
	m := recv.Messages[0]
	if m.Body != "from the cli" || m.MessageAttributes["kind"].StringValue != "test" || m.Attributes["ApproximateReceiveCount"] != "1" {
		t.Errorf("message = %+v", m)
	}
	if _, stderr, err := awsCLI(t, f, "sqs", "delete-message", "--queue-url", created.QueueUrl, "--receipt-handle", m.ReceiptHandle); err != nil {
		t.Fatalf("delete-message: %v\n%s", err, stderr)
	}
	out, _, err = awsCLI(t, f, "sqs", "get-queue-attributes", "--queue-url", created.QueueUrl, "--attribute-names", "All")
	if err != nil || !strings.Contains(out, `"VisibilityTimeout": "40"`) || !strings.Contains(out, `"ApproximateNumberOfMessagesNotVisible": "0"`) {
		t.Errorf("get-queue-attributes said %q (%v)", out, err)
	}
	_, stderr, err = awsCLI(t, f, "sqs", "get-queue-url", "--queue-name", "absent")
	if err == nil || !strings.Contains(stderr, "AWS.SimpleQueueService.NonExistentQueue") {
		t.Errorf("get-queue-url of a missing queue: %v, %q", err, stderr)
	}
}
