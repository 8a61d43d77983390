package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestFaultCommand drives a running Ferry's fault rules through the CLI:
// a rule added makes the next receive fail with AWS's throttling error,
// the listing shows its counts and the seed, and clear removes it.
func TestFaultCommand(t *testing.T) {
	base, logs, stop := serveFromEnv(t, map[string]string{"FERRY_LISTEN": "127.0.0.1:0", "FERRY_MEMORY": "true",
		"FERRY_FAULT_INJECTION": "true", "FERRY_FAULT_SEED": "1234"})
	defer func() {
		if code := stop(); code != 0 {
			t.Errorf("serve exit code %d: %s", code, logs.String())
		}
	}()
	query := func(form url.Values) (int, string) {
		t.Helper()
		resp, err := http.PostForm(base+"/", form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := query(url.Values{"Action": {"CreateQueue"}, "QueueName": {"jobs"}}); code != 200 {
		t.Fatalf("CreateQueue = %d %s", code, body)
	}
	env := func(string) string { return "" }
	cli := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"fault"}, args...), env, &out, &errOut)
		return code, out.String() + errOut.String()
	}

	cases := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"add", "--endpoint", base, "--queue", "jobs", "--action", "ReceiveMessage", "--error", "RequestThrottled", "--count", "1"}, 0, `"id": "f1"`},
		{[]string{"add", "--endpoint", base, "--queue", "jobs", "--error", "Nope"}, 1, `400 Bad Request: error "Nope" is not an SQS error code`},
		{[]string{"add", "--endpoint", base, "--queue", "jobs", "--error", "RequestThrottled", "--fraction", "2"}, 1, "fraction 2: want a probability from 0 to 1"},
		{[]string{"add", "--endpoint", base, "--fraction", "half"}, 2, "want a number from 0 to 1"},
		{[]string{"add", "--endpoint", base, "--protocol", "http", "--status", "500", "--drop"}, 1, "an SNS rule needs one effect"},
		{[]string{"add", "--endpoint", base, "--sns-endpoint", "http://127.0.0.1:9/hook", "--succeed-after", "2"}, 0, `"succeedAfter": 2`},
	}
	for _, tc := range cases {
		if code, out := cli(tc.args...); code != tc.code || !strings.Contains(out, tc.out) {
			t.Errorf("%v: code %d, output %q", tc.args, code, out)
		}
	}

	code, body := query(url.Values{"Action": {"ReceiveMessage"}, "QueueUrl": {base + "/000000000000/jobs"}})
	if code != 403 || !strings.Contains(body, "<Code>RequestThrottled</Code>") {
		t.Errorf("receive under the rule: %d %s", code, body)
	}
	if code, body := query(url.Values{"Action": {"ReceiveMessage"}, "QueueUrl": {base + "/000000000000/jobs"}}); code != 200 {
		t.Errorf("receive after the rule: %d %s", code, body)
	}
	for _, want := range []string{`"seed": 1234`, `"matched": 2`, `"injected": 1`, `"remaining": 0`, `"id": "f2"`} {
		if code, out := cli("list", "--endpoint", base); code != 0 || !strings.Contains(out, want) {
			t.Errorf("list: code %d, output %q lacks %s", code, out, want)
		}
	}
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"clear", "--endpoint", base, "f1"}, 0, `"removed": 1`},
		{[]string{"clear", "--endpoint", base, "f1"}, 1, `404 Not Found: no fault rule "f1"`},
		{[]string{"clear", "--endpoint", base}, 0, `"removed": 1`},
		{[]string{"clear", "--endpoint", base, "a", "b"}, 2, `unexpected argument "b"`},
		{[]string{"sideways"}, 2, `unknown subcommand "sideways"`},
		{[]string{}, 2, "Usage:"},
	} {
		if code, out := cli(tc.args...); code != tc.code || !strings.Contains(out, tc.out) {
			t.Errorf("%v: code %d, output %q", tc.args, code, out)
		}
	}
}

// TestFaultCommandOff: a Ferry without --fault-injection says how to turn
// it on.
func TestFaultCommandOff(t *testing.T) {
	base, logs, stop := serveFromEnv(t, map[string]string{"FERRY_LISTEN": "127.0.0.1:0", "FERRY_MEMORY": "true"})
	defer func() {
		if code := stop(); code != 0 {
			t.Errorf("serve exit code %d: %s", code, logs.String())
		}
	}()
	var out bytes.Buffer
	code := run(context.Background(), []string{"fault", "list", "--endpoint", base}, func(string) string { return "" }, &out, &out)
	if code != 1 || !strings.Contains(out.String(), "404 Not Found: fault injection is off; start Ferry with --fault-injection (FERRY_FAULT_INJECTION)") {
		t.Errorf("code %d, output %q", code, out.String())
	}
}

// TestFaultSeedFlag: a seed that is not a number stops serve.
func TestFaultSeedFlag(t *testing.T) {
	var out bytes.Buffer
	code := run(context.Background(), []string{"serve", "--memory", "--listen", "127.0.0.1:0", "--fault-seed", "-1"}, func(string) string { return "" }, &out, &out)
	if code != 2 || !strings.Contains(out.String(), `bad fault seed "-1"`) {
		t.Errorf("code %d, output %q", code, out.String())
	}
}
