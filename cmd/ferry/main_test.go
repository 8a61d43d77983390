package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"

	"github.com/ferrymq/ferry/internal/testwait"
)

// syncBuffer is a bytes.Buffer safe for the server's logger and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestCommands(t *testing.T) {
	cases := []struct {
		args []string
		code int
		out  string
		env  map[string]string
	}{
		{[]string{"version"}, 0, "ferry dev", nil},
		{[]string{"help"}, 0, "ferry serve", nil},
		{[]string{"launch"}, 2, `unknown command "launch"`, nil},
		{[]string{"serve", "--no-such-flag"}, 2, "flag provided but not defined", nil},
		{[]string{"serve", "--log-level", "loud"}, 2, "bad log level", nil},
		{[]string{"serve", "extra"}, 2, "unexpected argument", nil},
		// The delivery status log is opened at start: a bad path stops it.
		{[]string{"serve", "--memory", "--listen", "127.0.0.1:0", "--sns-delivery-log", "/nonexistent/ferry/delivery.log"}, 1,
			"open delivery status log", nil},
		{[]string{"serve", "--read-timeout", "soon"}, 2, "invalid value", nil},
		{[]string{"serve"}, 2, `FERRY_IDLE_TIMEOUT="2 min" is not a duration`, map[string]string{"FERRY_IDLE_TIMEOUT": "2 min"}},
		{[]string{"serve"}, 2, `FERRY_MAX_CONNECTIONS="many" is not a number`, map[string]string{"FERRY_MAX_CONNECTIONS": "many"}},
		{[]string{"serve", "--memory", "--listen", "127.0.0.1:0", "--tls-cert", "/nonexistent/cert.pem"}, 1, "needs both a certificate", nil},
		{[]string{"serve", "--memory", "--listen", "127.0.0.1:0", "--allowed-hosts", "ev*il"}, 1, "want a host name, an address", nil},
		{[]string{"serve", "--memory", "--listen", "127.0.0.1:0", "--sns-allowed-endpoints", "10.0.0.0/33"}, 1, "allow-list entry", nil},
	}
	for _, tc := range cases {
		var out, errOut bytes.Buffer
		code := run(context.Background(), tc.args, func(k string) string { return tc.env[k] }, &out, &errOut)
		if code != tc.code || !strings.Contains(out.String()+errOut.String(), tc.out) {
			t.Errorf("%v: code %d, output %q%q", tc.args, code, out.String(), errOut.String())
		}
	}
}

// TestUsage checks that every way of asking for help prints the top-level
// usage, listing each command on a line of its own, and that a missing or
// unknown command is an error that prints it too.
func TestUsage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args   []string
		code   int
		stdout bool   // the usage goes to stdout, not stderr
		also   string // and the output says this too
	}{
		{[]string{"help"}, 0, true, ""},
		{[]string{"-h"}, 0, true, ""},
		{[]string{"-help"}, 0, true, ""},
		{[]string{"--help"}, 0, true, ""},
		{[]string{"launch"}, 2, false, `unknown command "launch"`},
		{[]string{"help", "launch"}, 2, false, `unknown command "launch"`},
	}
	for _, tc := range cases {
		var out, errOut bytes.Buffer
		code := run(context.Background(), tc.args, func(string) string { return "" }, &out, &errOut)
		got, other := errOut.String(), out.String()
		if tc.stdout {
			got, other = other, got
		}
		if code != tc.code || !strings.Contains(got, topUsage()) || other != "" || !strings.Contains(got, tc.also) {
			t.Errorf("%q: code %d (want %d), stdout %q, stderr %q", tc.args, code, tc.code, out.String(), errOut.String())
			continue
		}
		for _, name := range []string{"serve", "bench", "soak", "version", "help"} {
			if n := len(regexp.MustCompile(`(?m)^  ferry `+name+` .*\S$`).FindAllString(got, -1)); n != 1 {
				t.Errorf("%q: %d usage lines for %s in %q, want 1", tc.args, n, name, got)
			}
		}
	}
	// Flags without a command are serve's: serve is the default command.
	var serveOut, serveErr bytes.Buffer
	if code := run(context.Background(), []string{"--no-such-flag"}, func(string) string { return "" }, &serveOut, &serveErr); code != 2 ||
		!strings.Contains(serveErr.String(), "Usage: ferry serve") || strings.Contains(serveErr.String(), topUsage()) {
		t.Errorf("--no-such-flag: code %d, stdout %q, stderr %q", code, serveOut.String(), serveErr.String())
	}
	// help with a command prints that command's own flags.
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"help", "serve"}, func(string) string { return "" }, &out, &errOut); code != 0 ||
		!strings.Contains(errOut.String(), "-listen") || strings.Contains(errOut.String(), topUsage()) {
		t.Errorf("help serve: code %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}

// serveFromEnv runs serve configured by env alone until it listens, and
// returns its base URL, its logs and a stop that returns its exit code.
func serveFromEnv(t *testing.T, env map[string]string) (string, *syncBuffer, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	logs := &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve"}, func(k string) string { return env[k] }, logs, logs) }()

	addr := regexp.MustCompile(`addr=(\S+)`)
	var m []string
	testwait.Eventually(t, "serve's listening line", func() bool { m = addr.FindStringSubmatch(logs.String()); return m != nil })
	stop := func() int {
		cancel()
		return testwait.Receive(t, "serve to stop", done)
	}
	return "http://" + m[1], logs, stop
}

// TestServeFromEnvironment starts the broker configured only by environment
// variables, checks it answers, and stops it by cancelling its context.
func TestServeFromEnvironment(t *testing.T) {
	base, logs, stop := serveFromEnv(t, map[string]string{"FERRY_LISTEN": "127.0.0.1:0", "FERRY_MEMORY": "true",
		"FERRY_LOG_FORMAT": "text", "FERRY_ACCOUNT": "123456789012",
		"FERRY_READ_TIMEOUT": "7s", "FERRY_IDLE_TIMEOUT": "45s", "FERRY_MAX_CONNECTIONS": "99"})
	for _, want := range []string{"account=123456789012", "store=memory", "read_timeout=7s", "idle_timeout=45s", "max_connections=99"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("environment not applied: no %s in %q", want, logs.String())
		}
	}
	resp, err := http.Get(base + "/_ferry/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("health = %d", resp.StatusCode)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit code %d: %s", code, logs.String())
	}
}

func TestGCPercent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		env map[string]string
		pct int
		set bool
	}{
		{nil, 321, true},
		{map[string]string{"GOGC": "100"}, 0, false},
		{map[string]string{"GOGC": "off"}, 0, false},
		{map[string]string{"GOGC": "50", "GOMEMLIMIT": "1GiB"}, 0, false},
		// The limit alone leaves the percentage ours; the runtime enforces the limit.
		{map[string]string{"GOMEMLIMIT": "64MiB"}, 321, true},
	}
	for _, tc := range cases {
		pct, set := gcPercent(func(k string) string { return tc.env[k] }, 321)
		if pct != tc.pct || set != tc.set {
			t.Errorf("%v: %d %v, want %d %v", tc.env, pct, set, tc.pct, tc.set)
		}
	}
}

// TestServeSetsGCPercent checks that serve applies the rule: its own GC
// percentage without GOGC in the environment, the runtime's with it.
func TestServeSetsGCPercent(t *testing.T) {
	gogc := func() int {
		s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(s)
		return int(s[0].Value.Uint64())
	}
	// 137 stands for whatever the runtime made of the environment's GOGC.
	defer debug.SetGCPercent(debug.SetGCPercent(137))
	env := map[string]string{"FERRY_LISTEN": "127.0.0.1:0", "FERRY_MEMORY": "true", "GOGC": "100"}
	_, _, stop := serveFromEnv(t, env)
	stop()
	if got := gogc(); got != 137 {
		t.Errorf("with GOGC in the environment: GC percent %d, want the runtime's 137 untouched", got)
	}
	delete(env, "GOGC")
	_, _, stop = serveFromEnv(t, env)
	stop()
	if got := gogc(); got != serveGCPercent {
		t.Errorf("without GOGC: GC percent %d, want %d", got, serveGCPercent)
	}
}

func TestParseSize(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"4096", 4096, true},
		{"128MiB", 128 << 20, true},
		{"1KiB", 1024, true},
		{"2GiB", 2 << 30, true},
		{"3TiB", 3 << 40, true},
		{"", 0, false},
		{"-1", 0, false},
		{"1.5GiB", 0, false},
		{"10MB", 0, false},
		{"9000000TiB", 0, false},
	}
	for _, tc := range cases {
		got, err := parseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestServeDiskReserve checks that FERRY_DISK_RESERVE reaches the store: a
// reserve larger than any disk starts Ferry read-only, and health says so.
func TestServeDiskReserve(t *testing.T) {
	base, logs, stop := serveFromEnv(t, map[string]string{"FERRY_LISTEN": "127.0.0.1:0", "FERRY_DATA": t.TempDir(),
		"FERRY_DISK_RESERVE": "4000000TiB"})
	resp, err := http.Get(base + "/_ferry/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"status":"degraded"`) {
		t.Fatalf("health = %d %s", resp.StatusCode, body)
	}
	if !strings.Contains(logs.String(), "writes are refused") {
		t.Errorf("no log line about the full disk: %q", logs.String())
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit code %d: %s", code, logs.String())
	}
}

// TestServeAuthFlags: --auth verify refuses to start without credentials
// or with a bad file, and starts with a good one (from the environment).
func TestServeAuthFlags(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.ini")
	bad := filepath.Join(dir, "bad.ini")
	if err := os.WriteFile(good, []byte("[a]\naws_access_key_id = AKIAA\naws_secret_access_key = s\naws_account_id = 111111111111\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("[a]\naws_access_key_id = AKIAA\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--memory", "--auth", "verify"}, "--auth verify needs --credentials FILE"},
		{[]string{"--memory", "--auth", "maybe"}, `bad --auth "maybe": want off or verify`},
		{[]string{"--memory", "--auth", "verify", "--credentials", bad}, "has aws_access_key_id but no aws_secret_access_key"},
		{[]string{"--memory", "--credentials", filepath.Join(dir, "absent")}, "no such file"},
	} {
		var stderr bytes.Buffer
		if code := run(context.Background(), append([]string{"serve", "--listen", "127.0.0.1:0"}, tt.args...), func(string) string { return "" },
			io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tt.args, code, stderr.String(), tt.want)
		}
	}
	_, logs, stop := serveFromEnv(t, map[string]string{"FERRY_LISTEN": "127.0.0.1:0", "FERRY_MEMORY": "true",
		"FERRY_AUTH": "verify", "FERRY_CREDENTIALS": good})
	for _, want := range []string{"auth=verify", "credentials=1"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no %s in %q", want, logs.String())
		}
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit code %d: %s", code, logs.String())
	}
}
