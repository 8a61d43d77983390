package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"github.com/ferrymq/ferry/internal/bench"
)

// benchCmd drives an SQS/SNS endpoint (Ferry or any other) with the
// benchmark scenarios. With --json the document goes to stdout and the
// per-scenario lines to stderr, so that the JSON can be redirected alone.
func benchCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := newFlagSet("ferry bench", fmt.Sprintf("Usage: ferry bench --endpoint URL[,URL...] [flags]\n\nScenarios: %s\n\n", strings.Join(bench.Scenarios(), ", ")), stderr)
	var endpoints, dbPIDs, serverPIDs listFlag
	fs.Var(&endpoints, "endpoint", "base `URL` of the SQS/SNS endpoint, e.g. http://127.0.0.1:4566 (required); repeated or\n"+
		"comma-separated, the nodes of one broker: each client is given the next node in turn, as a load balancer would")
	fs.Var(&dbPIDs, "db-pid", "`PID` of the database's server on this machine (PostgreSQL's postmaster; repeatable): its CPU and\n"+
		"its children's per message is reported beside the nodes'")
	fs.Var(&serverPIDs, "server-pid", "`PID` of the broker on this machine (repeatable): its CPU and its children's, read from\n"+
		"/proc, is the server's figure, instead of the nodes' process_cpu_seconds_total (which only Ferry publishes)")
	scenarios := fs.String("scenarios", "all", "comma-separated scenarios to run, or all")
	duration := fs.Duration("duration", bench.DefaultDuration, "measured time of each scenario")
	concurrency := fs.Int("concurrency", bench.DefaultConcurrency, "concurrent clients")
	prefill := fs.Int("prefill", bench.DefaultPrefill, "most messages in a pre-filled queue (fewer if filling outlasts --duration)")
	maxMessages := fs.Int("max-messages", bench.DefaultMaxMessages, "most messages one scenario sends")
	client := fs.String("client", bench.ClientSDK, "what drives the traffic: sdk, the AWS SDK for Go v2 as applications use it; or fast, a load\n"+
		"generator that costs the machine little (SQS JSON from prebuilt requests on keep-alive connections, still checking\n"+
		"every message) and runs send, send-batch, receive-delete and produce-consume only. fast sends no signature: Ferry\n"+
		"serves it with --auth off (the default); a broker that requires SigV4 rejects it")
	asJSON := fs.Bool("json", false, "print a JSON document on stdout (lines go to stderr)")
	profile := fs.String("cpuprofile", "", "write a pprof CPU profile of the load generator to this file")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if len(endpoints) == 0 {
		fmt.Fprintln(stderr, "ferry bench: --endpoint is required")
		return 2
	}
	pids, ok := processIDs(stderr, "--db-pid", dbPIDs)
	if !ok {
		return 2
	}
	srvPIDs, ok := processIDs(stderr, "--server-pid", serverPIDs)
	if !ok {
		return 2
	}
	if *duration <= 0 || *concurrency <= 0 || *prefill <= 0 || *maxMessages <= 0 {
		fmt.Fprintln(stderr, "ferry bench: --duration, --concurrency, --prefill and --max-messages must be positive")
		return 2
	}
	cfg := bench.Config{Endpoints: endpoints, DBPIDs: pids, ServerPIDs: srvPIDs, Duration: *duration, Concurrency: *concurrency, Prefill: *prefill, MaxMessages: *maxMessages, Client: *client}
	if *scenarios != "all" {
		for _, s := range strings.Split(*scenarios, ",") {
			if s = strings.TrimSpace(s); s != "" {
				cfg.Scenarios = append(cfg.Scenarios, s)
			}
		}
	}
	lines := stdout
	if *asJSON {
		lines = stderr
	}
	cfg.Progress = func(r bench.Result) { fmt.Fprintln(lines, r.Line()) }

	if pct, ok := gcPercent(getenv, benchGCPercent); ok {
		debug.SetGCPercent(pct)
	}
	stopProfile, err := cpuProfile(*profile)
	if err != nil {
		fmt.Fprintf(stderr, "ferry bench: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := bench.Run(ctx, cfg)
	if perr := stopProfile(); perr != nil {
		fmt.Fprintf(stderr, "ferry bench: %v\n", perr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ferry %v\n", err)
		return 2
	}
	if *asJSON {
		if err := rep.WriteJSON(stdout); err != nil {
			fmt.Fprintf(stderr, "ferry bench: %v\n", err)
			return 1
		}
	}
	if rep.Failed() {
		return 1
	}
	return 0
}

// processIDs parses the values of flag as process ids; false, having said
// why, if one is not.
func processIDs(stderr io.Writer, flag string, values []string) ([]int, bool) {
	pids := make([]int, len(values))
	for i, p := range values {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 {
			fmt.Fprintf(stderr, "ferry bench: %s %q is not a process id\n", flag, p)
			return nil, false
		}
		pids[i] = n
	}
	return pids, true
}

// listFlag is a flag given several times, or once with comma-separated
// values, or both.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}
