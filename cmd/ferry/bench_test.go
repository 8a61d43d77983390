package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestBenchFlags(t *testing.T) {
	noEnv := func(string) string { return "" }
	cases := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"bench"}, 2, "--endpoint is required"},
		{[]string{"bench", "-h"}, 0, "Scenarios: send, send-batch"},
		{[]string{"bench", "-h"}, 0, "produce-consume, produce-consume-batch,"},
		{[]string{"bench", "-h"}, 0, "sns-fanout, sns-fanout-batch, sns-fanout-50, sns-fanout-50-batch\n"},
		{[]string{"bench", "--endpoint", "http://127.0.0.1:1", "--scenarios", "send,warp"}, 2, `unknown scenario "warp"`},
		{[]string{"bench", "--endpoint", "127.0.0.1:1"}, 2, "not an http(s) URL"},
		{[]string{"bench", "--endpoint", "http://127.0.0.1:1", "--duration", "0s"}, 2, "must be positive"},
		{[]string{"bench", "--endpoint", "http://127.0.0.1:1", "extra"}, 2, "unexpected argument"},
		{[]string{"bench", "--endpoint", "http://127.0.0.1:1,127.0.0.1:2"}, 2, `endpoint "127.0.0.1:2" is not an http(s) URL`},
		{[]string{"bench", "--endpoint", "http://127.0.0.1:1", "--endpoint", "ftp://127.0.0.1:2"}, 2, `endpoint "ftp://127.0.0.1:2" is not`},
		{[]string{"bench", "--endpoint", ",", "--duration", "50ms"}, 2, "--endpoint is required"},
		{[]string{"bench", "--endpoint", "http://127.0.0.1:1", "--db-pid", "postgres"}, 2, `--db-pid "postgres" is not a process id`},
		{[]string{"bench", "--endpoint", "http://127.0.0.1:1", "--db-pid", "0"}, 2, `--db-pid "0" is not a process id`},
		{[]string{"bench", "--endpoint", "http://127.0.0.1:1", "--server-pid", "ferry"}, 2, `--server-pid "ferry" is not a process id`},
		{[]string{"bench", "-h"}, 0, "-server-pid PID"},
		{[]string{"bench", "-h"}, 0, "-endpoint URL"},
		{[]string{"ceiling"}, 2, "--listen is required"},
		{[]string{"ceiling", "--listen", "127.0.0.1:0", "extra"}, 2, "unexpected argument"},
		{[]string{"ceiling", "--listen", "no-port"}, 1, "ceiling: listen tcp"},
		{[]string{"ceiling", "-h"}, 0, "a measuring fixture, not a broker"},
		{[]string{"help"}, 0, "ferry ceiling --listen HOST:PORT"},
		{[]string{"bench", "-h"}, 0, "serves it with --auth off"},
		{[]string{"bench", "--endpoint", "http://127.0.0.1:1", "--client", "turbo"}, 2, `unknown client "turbo" (known: sdk, fast)`},
		{[]string{"bench", "--endpoint", "https://127.0.0.1:1", "--client", "fast"}, 2, "the fast client speaks plain HTTP, not https"},
		{[]string{"bench", "--endpoint", "http://127.0.0.1:1", "--client", "fast", "--duration", "50ms", "--scenarios", "send,dlq-move"}, 1,
			"dlq-move              unsupported --client fast"},
		{[]string{"help"}, 0, "ferry bench"},
		// Nothing listens there: every scenario reports an error, and the exit code says so.
		{[]string{"bench", "--endpoint", "http://127.0.0.1:1", "--duration", "50ms", "--scenarios", "send,sns-fanout"}, 1, "sns-fanout            error"},
		{[]string{"bench", "--endpoint", "http://127.0.0.1:1,http://127.0.0.1:2", "--duration", "50ms", "--scenarios", "send"}, 1, "send                  error"},
	}
	for _, tc := range cases {
		var out, errOut bytes.Buffer
		code := run(context.Background(), tc.args, noEnv, &out, &errOut)
		if code != tc.code || !strings.Contains(out.String()+errOut.String(), tc.out) {
			t.Errorf("%v: code %d, output %q%q", tc.args, code, out.String(), errOut.String())
		}
	}
}
