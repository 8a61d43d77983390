package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestSoakFlags(t *testing.T) {
	noEnv := func(string) string { return "" }
	cases := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"soak"}, 2, "--endpoint is required"},
		{[]string{"soak", "-h"}, 0, "judged for a plateau"},
		{[]string{"soak", "--endpoint", "http://127.0.0.1:1", "--rate", "0"}, 2, "must be positive"},
		{[]string{"soak", "--endpoint", "http://127.0.0.1:1", "--sample", "0s"}, 2, "must be positive"},
		{[]string{"soak", "--endpoint", "127.0.0.1:1"}, 2, "not an http(s) URL"},
		{[]string{"soak", "--endpoint", "http://127.0.0.1:1", "extra"}, 2, "unexpected argument"},
		{[]string{"soak", "--endpoint", "http://127.0.0.1:1", "--hold-snapshot"}, 2, "--hold-snapshot needs --postgres"},
		{[]string{"soak", "-h"}, 0, "-postgres-schema string"},
		{[]string{"soak", "--endpoint", "http://127.0.0.1:1", "--backlog", "-1"}, 2, "--backlog must not be negative"},
		{[]string{"help"}, 0, "ferry soak"},
		// The broker is asked first: without one, the database is not.
		{[]string{"soak", "--endpoint", "http://127.0.0.1:1", "--duration", "50ms", "--postgres", "postgres://127.0.0.1:1/x"}, 2, "soak setup"},
		// Nothing listens there: the setup fails, and says so.
		{[]string{"soak", "--endpoint", "http://127.0.0.1:1", "--duration", "50ms"}, 2, "soak setup"},
	}
	for _, tc := range cases {
		var out, errOut bytes.Buffer
		code := run(context.Background(), tc.args, noEnv, &out, &errOut)
		if code != tc.code || !strings.Contains(out.String()+errOut.String(), tc.out) {
			t.Errorf("%v: code %d, output %q%q", tc.args, code, out.String(), errOut.String())
		}
	}
}
