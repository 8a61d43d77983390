package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestResetCommand resets a running Ferry through the CLI: the queue it
// had is gone, and the server's refusals come back as the command's error.
func TestResetCommand(t *testing.T) {
	base, logs, stop := serveFromEnv(t, map[string]string{"FERRY_LISTEN": "127.0.0.1:0", "FERRY_MEMORY": "true"})
	defer func() {
		if code := stop(); code != 0 {
			t.Errorf("serve exit code %d: %s", code, logs.String())
		}
	}()
	resp, err := http.PostForm(base+"/", url.Values{"Action": {"CreateQueue"}, "QueueName": {"gone-after-reset"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("CreateQueue = %d", resp.StatusCode)
	}

	cases := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"reset", "--endpoint", base, "--service", "sqs"}, 0, `"queues": 1`},
		{[]string{"reset", "--endpoint", base, "--service", "sqs"}, 0, `"queues": 0`},
		{[]string{"reset", "--endpoint", base, "--account", "12"}, 1, `400 Bad Request: account "12" is not an account id`},
		{[]string{"reset", "--endpoint", base, "--service", "s3"}, 1, `service "s3": want sqs, sns or cloudwatch`},
		{[]string{"reset", "--endpoint", "http://127.0.0.1:1"}, 1, "ferry reset: "},
		{[]string{"reset", "extra"}, 2, "unexpected argument"},
	}
	for _, tc := range cases {
		var out, errOut bytes.Buffer
		code := run(context.Background(), tc.args, func(string) string { return "" }, &out, &errOut)
		if code != tc.code || !strings.Contains(out.String()+errOut.String(), tc.out) {
			t.Errorf("%v: code %d, output %q%q", tc.args, code, out.String(), errOut.String())
		}
		if code == 0 && !json.Valid(out.Bytes()) {
			t.Errorf("%v: output is not JSON: %q", tc.args, out.String())
		}
	}
}

// TestAdminTokenFromEnvironment: the admin client sends FERRY_ADMIN_TOKEN
// as a bearer token, and a Ferry that wants another answers 401.
func TestAdminTokenFromEnvironment(t *testing.T) {
	base, logs, stop := serveFromEnv(t, map[string]string{"FERRY_LISTEN": "127.0.0.1:0", "FERRY_MEMORY": "true", "FERRY_ADMIN_TOKEN": "s3cret"})
	defer func() {
		if code := stop(); code != 0 {
			t.Errorf("serve exit code %d: %s", code, logs.String())
		}
	}()
	for _, tc := range []struct {
		token string
		code  int
	}{{"s3cret", 0}, {"wrong", 1}, {"", 1}} {
		var out, errOut bytes.Buffer
		env := map[string]string{"FERRY_ENDPOINT": base, "FERRY_ADMIN_TOKEN": tc.token}
		code := run(context.Background(), []string{"reset"}, func(k string) string { return env[k] }, &out, &errOut)
		if code != tc.code {
			t.Errorf("token %q: code %d, output %q%q", tc.token, code, out.String(), errOut.String())
		}
		if tc.code != 0 && !strings.Contains(errOut.String(), "401") {
			t.Errorf("token %q: want a 401 refusal, got %q", tc.token, errOut.String())
		}
	}
}

// TestInitAndExport starts ferry serve with a topology file from
// FERRY_INIT, exports it with ferry export in both formats, and starts
// serve with files it refuses: exit code 1 and the place of the mistake.
func TestInitAndExport(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "topology.yaml")
	text := "queues:\n  - name: dlq\n  - name: work\n    attributes:\n      VisibilityTimeout: 40\n      RedrivePolicy: {deadLetterTargetArn: dlq, maxReceiveCount: 2}\n"
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	base, logs, stop := serveFromEnv(t, map[string]string{"FERRY_LISTEN": "127.0.0.1:0", "FERRY_MEMORY": "true", "FERRY_INIT": file})
	defer func() {
		if code := stop(); code != 0 {
			t.Errorf("serve exit code %d: %s", code, logs.String())
		}
	}()
	want := "account: \"000000000000\"\nregion: us-east-1\nqueues:\n  - name: dlq\n  - name: work\n    attributes:\n" +
		"      RedrivePolicy:\n        deadLetterTargetArn: dlq\n        maxReceiveCount: 2\n      VisibilityTimeout: 40\n"
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"export", "--endpoint", base}, 0, want},
		{[]string{"export", "--endpoint", base, "--format", "json"}, 0, "{\n  \"account\": \"000000000000\",\n  \"region\": \"us-east-1\",\n  \"queues\": [\n    {\n      \"name\": \"dlq\"\n    },"},
		{[]string{"export", "--endpoint", base, "--account", "111111111111"}, 0, "account: \"111111111111\"\nregion: us-east-1\n"},
		{[]string{"export", "--endpoint", base, "--format", "xml"}, 1, `400 Bad Request: format "xml": want yaml or json`},
		{[]string{"export", "extra"}, 2, "unexpected argument"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), tc.args, func(string) string { return "" }, &out, &errOut)
		if code != tc.code || !strings.HasPrefix(out.String(), tc.out) && !strings.Contains(errOut.String(), tc.out) {
			t.Errorf("%v: code %d, output %q%q", tc.args, code, out.String(), errOut.String())
		}
	}

	for _, tc := range []struct{ name, text, out string }{
		{"bad.yaml", "queues:\n  - name: a\n    atributes: {}\n", `bad.yaml:3:5: queues[0]: unknown key "atributes"`},
		{"refused.yaml", "queues:\n  - name: a\n    attributes:\n      DelaySeconds: 901\n", "refused.yaml:4:21: queue a: CreateQueue: InvalidAttributeValue"},
		{"missing.yaml", "", "read topology"},
	} {
		path := filepath.Join(dir, tc.name)
		if tc.text != "" {
			if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"serve", "--memory", "--listen", "127.0.0.1:0", "--init", path}, func(string) string { return "" }, &out, &errOut)
		if code != 1 || !strings.Contains(errOut.String(), tc.out) {
			t.Errorf("serve --init %s: code %d, output %q", tc.name, code, errOut.String())
		}
	}
}

// TestClockCommand drives a Ferry's clock through the CLI: off without
// --clock-control, then status, freeze, advance, set and resume, with the
// server's refusals as the command's error.
func TestClockCommand(t *testing.T) {
	run1 := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), args, func(string) string { return "" }, &out, &errOut)
		return code, out.String() + errOut.String()
	}

	offBase, offLogs, stopOff := serveFromEnv(t, map[string]string{"FERRY_LISTEN": "127.0.0.1:0", "FERRY_MEMORY": "true"})
	if code, out := run1("clock", "--endpoint", offBase); code != 1 || !strings.Contains(out, "404 Not Found: clock control is off; start Ferry with --clock-control (FERRY_CLOCK_CONTROL)") {
		t.Errorf("clock without the flag: code %d, %q", code, out)
	}
	if code := stopOff(); code != 0 {
		t.Errorf("serve exit code %d: %s", code, offLogs.String())
	}

	base, logs, stop := serveFromEnv(t, map[string]string{"FERRY_LISTEN": "127.0.0.1:0", "FERRY_MEMORY": "true", "FERRY_CLOCK_CONTROL": "true"})
	defer func() {
		if code := stop(); code != 0 {
			t.Errorf("serve exit code %d: %s", code, logs.String())
		}
	}()
	code, out := run1("clock", "freeze", "--endpoint", base)
	if code != 0 || !strings.Contains(out, " frozen, offset ") {
		t.Fatalf("freeze: code %d, %q", code, out)
	}
	frozen, err := time.Parse(time.RFC3339Nano, strings.Fields(out)[0])
	if err != nil {
		t.Fatalf("freeze printed %q: %v", out, err)
	}
	later := frozen.Add(36 * time.Hour).UTC().Format(time.RFC3339Nano)
	cases := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"clock", "--endpoint", base}, 0, frozen.UTC().Format(time.RFC3339Nano) + " frozen"},
		{[]string{"clock", "status", "--endpoint", base}, 0, frozen.UTC().Format(time.RFC3339Nano) + " frozen"},
		{[]string{"clock", "advance", "1d12h", "--endpoint", base}, 0, later + " frozen"},
		{[]string{"clock", "set", frozen.UTC().Format(time.RFC3339), "--endpoint", base}, 1, "409 Conflict: set to"},
		{[]string{"clock", "advance", "soon", "--endpoint", base}, 1, `400 Bad Request: duration "soon"`},
		{[]string{"clock", "set", frozen.Add(48 * time.Hour).UTC().Format(time.RFC3339Nano), "--endpoint", base}, 0,
			frozen.Add(48*time.Hour).UTC().Format(time.RFC3339Nano) + " frozen"},
		{[]string{"clock", "resume", "--endpoint", base}, 0, " running, offset "},
		{[]string{"clock", "advance", "--endpoint", base}, 2, "takes 1 operand(s), got 0"},
		{[]string{"clock", "freeze", "now", "--endpoint", base}, 2, "takes 0 operand(s), got 1"},
		{[]string{"clock", "rewind"}, 2, `unknown action "rewind"`},
	}
	for _, tc := range cases {
		if code, out := run1(tc.args...); code != tc.code || !strings.Contains(out, tc.out) {
			t.Errorf("%v: code %d, output %q; want %d with %q", tc.args, code, out, tc.code, tc.out)
		}
	}
}
