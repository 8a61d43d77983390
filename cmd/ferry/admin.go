package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ferrymq/ferry/internal/server"
)

// adminClient calls the admin endpoints (/_ferry/...) of a running Ferry;
// the subcommands that drive one (reset and those beside it) share it, so
// that each reads --endpoint and --admin-token the same way.
type adminClient struct {
	endpoint string
	token    string
	http     *http.Client
}

// adminFlags registers --endpoint and --admin-token on fs; the returned
// client is ready once fs has been parsed.
func adminFlags(fs *flag.FlagSet, getenv func(string) string) *adminClient {
	c := &adminClient{http: &http.Client{Timeout: 5 * time.Minute}}
	def := getenv("FERRY_ENDPOINT")
	if def == "" {
		def = "http://" + server.DefaultListen
	}
	fs.StringVar(&c.endpoint, "endpoint", def, "base `URL` of the Ferry to act on, or of its --admin-listen address (FERRY_ENDPOINT)")
	fs.StringVar(&c.token, "admin-token", getenv("FERRY_ADMIN_TOKEN"), "the Ferry's admin token, when it has one (FERRY_ADMIN_TOKEN; prefer the variable: arguments are visible to other users)")
	return c
}

// call sends method path?query with body, when not nil, as JSON, and
// decodes a JSON answer into out, when not nil; a *[]byte out takes the
// answer as it is (a file the endpoint writes). An answer other than 2xx
// is an error carrying the server's message.
func (c *adminClient) call(ctx context.Context, method, path string, query url.Values, body, out any) error {
	u := strings.TrimSuffix(c.endpoint, "/") + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return fmt.Errorf("bad endpoint %q: %w", c.endpoint, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("read answer of %s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct{ Error string }
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, e.Error)
		}
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(data)))
	}
	if raw, ok := out.(*[]byte); ok {
		*raw = data
		return nil
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("decode answer of %s %s: %w", method, path, err)
		}
	}
	return nil
}

// resetCmd clears a running Ferry's state, all of it or one account's or
// one service's, through POST /_ferry/reset, and prints what it removed.
func resetCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := newFlagSet("ferry reset", "Usage: ferry reset [--endpoint URL] [--account ID] [--service sqs|sns|cloudwatch]\n\n"+
		"Removes the queues and their messages, topics, subscriptions, alarms and datapoints of a\n"+
		"running Ferry, as a test suite does between tests; secrets stay.\n\n", stderr)
	c := adminFlags(fs, getenv)
	account := fs.String("account", "", "reset only this account (12 digits); default: every account")
	service := fs.String("service", "", "reset only this service: sqs, sns or cloudwatch; default: all three")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	q := url.Values{}
	if *account != "" {
		q.Set("account", *account)
	}
	if *service != "" {
		q.Set("service", *service)
	}
	var res json.RawMessage
	if err := c.call(ctx, http.MethodPost, "/_ferry/reset", q, nil, &res); err != nil {
		fmt.Fprintf(stderr, "ferry reset: %v\n", err)
		return 1
	}
	printJSON(stdout, res)
	return 0
}

// printJSON prints an admin endpoint's JSON answer indented, for people.
func printJSON(w io.Writer, res json.RawMessage) {
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, res, "", "  "); err != nil {
		pretty.Write(res)
	}
	fmt.Fprintln(w, pretty.String())
}

// clockCmd reads or moves a running Ferry's clock through /_ferry/clock.
// Unlike the other subcommands it takes its action as an operand: ferry
// clock advance 14d.
func clockCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := newFlagSet("ferry clock", "Usage: ferry clock [status|freeze|resume|set TIME|advance DURATION] [--endpoint URL]\n\n"+
		"Reads or moves the clock of a Ferry started with --clock-control. advance and set move it\n"+
		"forward only, and every timeout, delay, retention and retry due on the way happens, in order.\n"+
		"TIME is RFC 3339 (2026-01-02T15:04:05Z); DURATION a Go duration with days as d (14d, 1d12h, 90s).\n\n", stderr)
	c := adminFlags(fs, getenv)
	// The action and its operand come first; flags may follow them.
	verb, operands := "status", []string(nil)
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		operands = append(operands, args[0])
		args = args[1:]
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if len(operands) > 0 {
		verb, operands = operands[0], operands[1:]
	}
	var (
		method = http.MethodPost
		path   = "/_ferry/clock/" + verb
		body   any
		want   = 0 // operands the verb takes
	)
	switch verb {
	case "status":
		method, path = http.MethodGet, "/_ferry/clock"
	case "freeze", "resume":
	case "set":
		want = 1
		if len(operands) == 1 {
			body = map[string]string{"time": operands[0]}
		}
	case "advance":
		want = 1
		if len(operands) == 1 {
			body = map[string]string{"duration": operands[0]}
		}
	default:
		fmt.Fprintf(stderr, "ferry clock: unknown action %q: want status, freeze, resume, set TIME or advance DURATION\n", verb)
		return 2
	}
	if len(operands) != want {
		fmt.Fprintf(stderr, "ferry clock %s: takes %d operand(s), got %d\n", verb, want, len(operands))
		return 2
	}
	var st struct {
		Now    string `json:"now"`
		Frozen bool   `json:"frozen"`
		Offset string `json:"offset"`
	}
	if err := c.call(ctx, method, path, nil, body, &st); err != nil {
		fmt.Fprintf(stderr, "ferry clock: %v\n", err)
		return 1
	}
	state := "running"
	if st.Frozen {
		state = "frozen"
	}
	fmt.Fprintf(stdout, "%s %s, offset %s\n", st.Now, state, st.Offset)
	return 0
}

// exportCmd writes a running Ferry's topology (queues, topics,
// subscriptions, alarms; not messages) from GET /_ferry/export, in the
// format ferry serve --init reads.
func exportCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := newFlagSet("ferry export", "Usage: ferry export [--endpoint URL] [--format yaml|json] [--account ID] [--region NAME]\n\n"+
		"Writes the queues, topics, subscriptions and alarms of a running Ferry (not their messages)\n"+
		"to standard output, as a file that ferry serve --init applies.\n\n", stderr)
	c := adminFlags(fs, getenv)
	format := fs.String("format", "yaml", "yaml or json")
	account := fs.String("account", "", "the account to export (12 digits); default: the Ferry's --account")
	region := fs.String("region", "", "the region to export; default: the Ferry's --region")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	q := url.Values{"format": {*format}}
	if *account != "" {
		q.Set("account", *account)
	}
	if *region != "" {
		q.Set("region", *region)
	}
	var body []byte
	if err := c.call(ctx, http.MethodGet, "/_ferry/export", q, nil, &body); err != nil {
		fmt.Fprintf(stderr, "ferry export: %v\n", err)
		return 1
	}
	stdout.Write(body)
	return 0
}
