package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// debianCLI is the AWS CLI 2.9 from Debian's awscli package, which speaks
// the query protocol to SQS. CI installs it and requires the test to run;
// elsewhere a missing CLI skips it.
const debianCLI = "/usr/bin/aws"

// awsCLIRequired tells whether the CLI test must run rather than skip: in
// CI (which sets CI=true) or with FERRY_REQUIRE_AWS_CLI=1. A value that
// reads as false (CI=false, 0) does not require it.
func awsCLIRequired(getenv func(string) string) bool {
	set := func(name string) bool {
		v := getenv(name)
		b, err := strconv.ParseBool(v)
		return v != "" && (err != nil || b)
	}
	return set("CI") || set("FERRY_REQUIRE_AWS_CLI")
}

// awsCLIProblem says why the CLI at path cannot drive the test, or "" when
// it answers --version as the AWS CLI does.
func awsCLIProblem(ctx context.Context, path string) string {
	if _, err := os.Stat(path); err != nil {
		return fmt.Sprintf("no AWS CLI at %s: %v", path, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "aws-cli/") {
		return fmt.Sprintf("the AWS CLI at %s does not run: %v: %q", path, err, out)
	}
	return ""
}

func TestAWSCLIGate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	working := script("aws", `echo "aws-cli/2.9.19 Python/3.11.2 Linux/6.1 source/x86_64.debian.12 prompt/off"`)
	broken := script("aws-broken", `echo "ModuleNotFoundError: No module named 'awscli'" >&2; exit 1`)
	impostor := script("aws-other", `echo "usage: aws [options]"`)
	missing := filepath.Join(dir, "absent")
	for _, tc := range []struct {
		env      map[string]string
		required bool
	}{
		{nil, false},
		{map[string]string{"CI": "true"}, true},
		{map[string]string{"CI": "1"}, true},
		{map[string]string{"CI": "false"}, false},
		{map[string]string{"FERRY_REQUIRE_AWS_CLI": "1"}, true},
		{map[string]string{"FERRY_REQUIRE_AWS_CLI": "0"}, false},
		{map[string]string{"CI": "false", "FERRY_REQUIRE_AWS_CLI": "true"}, true},
	} {
		if got := awsCLIRequired(func(k string) string { return tc.env[k] }); got != tc.required {
			t.Errorf("env %v: required %v, want %v", tc.env, got, tc.required)
		}
	}
	for _, tc := range []struct {
		path, problem string
	}{
		{working, ""},
		{missing, "no AWS CLI at"},
		{broken, "does not run"},
		{impostor, "does not run"},
	} {
		got := awsCLIProblem(context.Background(), tc.path)
		if (tc.problem == "") != (got == "") || !strings.Contains(got, tc.problem) {
			t.Errorf("%s: problem %q, want one containing %q", filepath.Base(tc.path), got, tc.problem)
		}
	}
}

func awsCLI(t *testing.T, f *ferry, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(debianCLI, append([]string{"--endpoint-url", f.srv.URL(), "--output", "json"}, args...)...)
	home := t.TempDir()
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"AWS_DEFAULT_REGION=us-east-1", "AWS_PAGER=", "AWS_CONFIG_FILE=" + home + "/none", "AWS_SHARED_CREDENTIALS_FILE=" + home + "/none"}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

func TestDebianAWSCLI(t *testing.T) {
	t.Parallel()
	if problem := awsCLIProblem(context.Background(), debianCLI); problem != "" {
		if awsCLIRequired(os.Getenv) {
			t.Fatalf("%s; CI=true or FERRY_REQUIRE_AWS_CLI=1 require this test: install Debian's awscli (apt-get install awscli)", problem)
		}
		t.Skipf("%s; install Debian's awscli (apt-get install awscli) to run it (another aws on PATH is not used)", problem)
	}
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
