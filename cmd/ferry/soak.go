package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/ferrymq/ferry/internal/bench"
	"github.com/ferrymq/ferry/internal/engine/postgres"
)

// soakCmd offers a steady mixed load to an endpoint for a long time and
// samples the broker's memory from its /metrics, to show whether it levels
// off. With --json the document goes to stdout and the table to stderr.
func soakCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := newFlagSet("ferry soak", "Usage: ferry soak --endpoint URL [flags]\n\n"+
		"A bounded-rate mix of sends, batch sends, receives and deletes, long polls, a dead-letter\n"+
		"queue, a FIFO queue, an SNS fan-out to 4 queues and queue churn, with the broker's RSS, Go\n"+
		"heap and goroutines sampled from GET /metrics and judged for a plateau. With --postgres,\n"+
		"each sample also reads the broker's tables: live and dead tuples, size with indexes and\n"+
		"TOAST, autovacuum runs, and the age of the oldest snapshot in the database.\n\n", stderr)
	endpoint := fs.String("endpoint", "", "base URL of the broker, e.g. http://127.0.0.1:4566 (required)")
	duration := fs.Duration("duration", bench.DefaultSoakDuration, "how long the load runs")
	rate := fs.Int("rate", bench.DefaultSoakRate, "messages per second offered in total (never exceeded)")
	sample := fs.Duration("sample", bench.DefaultSoakSample, "time between two samples of /metrics")
	asJSON := fs.Bool("json", false, "print a JSON document on stdout (the table goes to stderr)")
	pgURL := fs.String("postgres", "", "also watch the broker's tables in this PostgreSQL database (a postgres:// URL): live and dead tuples, size, autovacuum")
	pgSchema := fs.String("postgres-schema", postgres.DefaultSchema, "the schema of the broker's tables (its --postgres-schema)")
	backlog := fs.Int("backlog", 0, "messages left waiting, for the whole run, in a queue nobody receives from (filled before the load starts)")
	hold := fs.Bool("hold-snapshot", false, "hold a REPEATABLE READ transaction open on its own connection for the whole run (needs --postgres)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *endpoint == "" {
		fmt.Fprintln(stderr, "ferry soak: --endpoint is required")
		return 2
	}
	if *backlog < 0 {
		fmt.Fprintln(stderr, "ferry soak: --backlog must not be negative")
		return 2
	}
	if *duration <= 0 || *rate <= 0 || *sample <= 0 {
		fmt.Fprintln(stderr, "ferry soak: --duration, --rate and --sample must be positive")
		return 2
	}
	if *hold && *pgURL == "" {
		fmt.Fprintln(stderr, "ferry soak: --hold-snapshot needs --postgres")
		return 2
	}
	var watch *bench.PostgresWatch
	if *pgURL != "" {
		watch = &bench.PostgresWatch{URL: *pgURL, Schema: *pgSchema, HoldSnapshot: *hold}
	}
	lines := stdout
	if *asJSON {
		lines = stderr
	}
	if pct, ok := gcPercent(getenv, benchGCPercent); ok {
		debug.SetGCPercent(pct)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := bench.Soak(ctx, bench.SoakConfig{Endpoint: *endpoint, Duration: *duration, Rate: *rate, Sample: *sample,
		Postgres: watch, Backlog: *backlog,
		Progress: func(s bench.SoakSample) { fmt.Fprintln(lines, s.Text()) }})
	if err != nil {
		fmt.Fprintf(stderr, "ferry soak: %v\n", err)
		return 2
	}
	fmt.Fprintln(lines, rep.Summary())
	if *asJSON {
		if err := rep.WriteJSON(stdout); err != nil {
			fmt.Fprintf(stderr, "ferry soak: %v\n", err)
			return 1
		}
	}
	if rep.Failed() {
		return 1
	}
	return 0
}
