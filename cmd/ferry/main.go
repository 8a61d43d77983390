// Command ferry runs the Ferry message broker.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/embedded"
	"github.com/ferrymq/ferry/internal/engine/postgres"
	"github.com/ferrymq/ferry/internal/server"
	"github.com/ferrymq/ferry/internal/sigv4"
	"github.com/ferrymq/ferry/internal/topology"
)

// defaultDataDir is where ferry serve keeps its store without --data.
const defaultDataDir = "ferry-data"

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// command is one of ferry's subcommands.
type command struct {
	name, args, summary string
	run                 func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int
}

// commands lists ferry's subcommands in the order the usage shows them; the
// usage and the dispatch both read it, so neither can miss one.
func commands() []command {
	return []command{
		{"serve", "[flags]", "run the broker (the default command)", func(ctx context.Context, args []string, getenv func(string) string, _, stderr io.Writer) int {
			return serve(ctx, args, getenv, stderr)
		}},
		{"bench", "[flags]", "measure an SQS/SNS endpoint, checking every answer", benchCmd},
		{"soak", "[flags]", "a long steady load, watching the broker's memory", soakCmd},
		{"ceiling", "--listen HOST:PORT", "a measuring fixture for bench: valid answers, nothing held", ceilingCmd},
		{"scale", "[flags]", "measure a fresh broker as its queues, backlog, long polls and subscriptions grow", scaleCmd},
		{"reset", "[flags]", "clear a running Ferry's queues, topics, alarms and datapoints", resetCmd},
		{"fault", "add|list|clear [flags]", "make a running Ferry's SQS actions or SNS deliveries fail on purpose (--fault-injection)", faultCmd},
		{"clock", "[status|freeze|resume|set TIME|advance DURATION] [flags]", "read or move a running Ferry's clock (ferry serve --clock-control)", clockCmd},
		{"export", "[flags]", "write a running Ferry's queues, topics, subscriptions and alarms as a topology file", exportCmd},
		{"version", "", "print the version", func(_ context.Context, _ []string, _ func(string) string, stdout, _ io.Writer) int {
			fmt.Fprintln(stdout, "ferry", version)
			return 0
		}},
		{"help", "[command]", "print this usage, or a command's flags", help},
	}
}

// topUsage is what ferry, ferry help and ferry --help print.
func topUsage() string {
	var b strings.Builder
	b.WriteString("Ferry: an SQS- and SNS-compatible message broker.\n\nUsage: ferry <command> [flags]\n\nCommands:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 3, ' ', 0)
	for _, c := range commands() {
		fmt.Fprintf(tw, "  ferry %s %s\t%s\n", c.name, c.args, c.summary)
	}
	tw.Flush()
	b.WriteString("\nRun \"ferry help <command>\" or \"ferry <command> -h\" for its flags. Every flag also\n" +
		"reads an environment variable, named in its help; a flag given on the command line wins.\n")
	return b.String()
}

func lookup(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	// serve is the default command: a bare ferry, or ferry with serve's
	// flags, runs the broker, as it always has.
	if len(args) == 0 {
		return serve(ctx, nil, getenv, stderr)
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, topUsage())
		return 0
	}
	if strings.HasPrefix(name, "-") {
		return serve(ctx, args, getenv, stderr)
	}
	c, ok := lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "ferry: unknown command %q\n\n%s", name, topUsage())
		return 2
	}
	return c.run(ctx, args[1:], getenv, stdout, stderr)
}

// help prints the usage, or with a command's name that command's flags.
func help(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" {
		fmt.Fprint(stdout, topUsage())
		return 0
	}
	c, ok := lookup(args[0])
	if !ok {
		fmt.Fprintf(stderr, "ferry: unknown command %q\n\n%s", args[0], topUsage())
		return 2
	}
	return c.run(ctx, []string{"-h"}, getenv, stdout, stderr)
}

func serve(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	fs := newFlagSet("ferry serve", "Usage: ferry serve [flags]\n\n", stderr)
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	envBool := func(name string) bool {
		b, _ := strconv.ParseBool(getenv(name))
		return b
	}
	// A malformed number in the environment stops serve as a malformed
	// flag does.
	var envErrs []string
	envDuration := func(name string, def time.Duration) time.Duration {
		v := getenv(name)
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			envErrs = append(envErrs, fmt.Sprintf("%s=%q is not a duration", name, v))
		}
		return d
	}
	envInt := func(name string, def int) int {
		v := getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			envErrs = append(envErrs, fmt.Sprintf("%s=%q is not a number", name, v))
		}
		return n
	}
	// A switch reads Ferry's variable, else LocalStack's of the same
	// meaning, so that a LocalStack setup carries over.
	envSwitch := func(name, localstack string, def bool) bool {
		for _, n := range []string{name, localstack} {
			if v := getenv(n); v != "" {
				b, err := strconv.ParseBool(v)
				if err != nil {
					envErrs = append(envErrs, fmt.Sprintf("%s=%q is not a boolean", n, v))
				}
				return b
			}
		}
		return def
	}
	var cfg server.Config
	var sopts embedded.Options
	fs.StringVar(&cfg.Listen, "listen", env("FERRY_LISTEN", server.DefaultListen), "address to listen on (FERRY_LISTEN)")
	fs.StringVar(&sopts.Dir, "data", env("FERRY_DATA", defaultDataDir), "directory of the embedded store (FERRY_DATA)")
	fs.BoolVar(&sopts.InMemory, "memory", envBool("FERRY_MEMORY"), "keep everything in memory; nothing survives a stop (FERRY_MEMORY)")
	fs.BoolVar(&sopts.NoSync, "no-fsync", envBool("FERRY_NO_FSYNC"), "acknowledge writes before they are fsynced (FERRY_NO_FSYNC)")
	fs.DurationVar(&sopts.Gather, "receive-gather", envDuration("FERRY_RECEIVE_GATHER", embedded.DefaultGather), "while messages flow, how long a long poll woken by one waits for the next before it answers, so that the flow fills receives; 0: answer at once (FERRY_RECEIVE_GATHER)")
	fs.BoolVar(&sopts.StrictRecovery, "strict-recovery", envBool("FERRY_STRICT_RECOVERY"), "refuse to start when recovering the store's log would drop records, instead of warning (FERRY_STRICT_RECOVERY)")
	var popts postgres.Options
	fs.StringVar(&popts.URL, "postgres", env("FERRY_POSTGRES_URL", ""), "keep everything in this PostgreSQL database (a postgres:// URL) instead of the embedded store; several Ferry nodes may share it (FERRY_POSTGRES_URL)")
	fs.StringVar(&popts.Schema, "postgres-schema", env("FERRY_POSTGRES_SCHEMA", postgres.DefaultSchema), "the schema Ferry's tables live in, created and migrated by Ferry (FERRY_POSTGRES_SCHEMA)")
	fs.StringVar(&cfg.Account, "account", env("FERRY_ACCOUNT", server.DefaultAccount), "AWS account id in queue URLs and ARNs (FERRY_ACCOUNT)")
	fs.StringVar(&cfg.Region, "region", env("FERRY_REGION", server.DefaultRegion), "AWS region in ARNs (FERRY_REGION)")
	fs.StringVar(&cfg.QueueURLBase, "queue-url-base", env("FERRY_QUEUE_URL_BASE", ""), "scheme://host:port of queue URLs and SNS links; default: the Host each client sent (FERRY_QUEUE_URL_BASE)")
	fs.StringVar(&cfg.SMTPAddr, "smtp-addr", env("FERRY_SMTP_ADDR", ""), "host:port of the SMTP server for SNS email subscriptions; default: record emails only (FERRY_SMTP_ADDR)")
	fs.StringVar(&cfg.SMTPFrom, "smtp-from", env("FERRY_SMTP_FROM", ""), "sender address of SNS emails (FERRY_SMTP_FROM)")
	fs.StringVar(&cfg.CABundle, "sns-ca-bundle", env("FERRY_SNS_CA_BUNDLE", ""), "PEM file of extra CA certificates SNS trusts for https endpoints (FERRY_SNS_CA_BUNDLE)")
	fs.StringVar(&cfg.SNSDeliveryLog, "sns-delivery-log", env("FERRY_SNS_DELIVERY_LOG", ""), "file that SNS delivery status logs are appended to, or - for stdout; default: memory only (FERRY_SNS_DELIVERY_LOG)")
	fs.StringVar(&cfg.TLSCert, "tls-cert", env("FERRY_TLS_CERT", ""), "PEM file of the server certificate (and its chain); with --tls-key, Ferry serves HTTPS, HTTP/2 included (FERRY_TLS_CERT)")
	fs.StringVar(&cfg.TLSKey, "tls-key", env("FERRY_TLS_KEY", ""), "PEM file of the certificate's private key (FERRY_TLS_KEY)")
	allowedHosts := fs.String("allowed-hosts", env("FERRY_ALLOWED_HOSTS", ""), "comma-separated Host names accepted besides localhost, the listen addresses and this machine's name: name, *.domain, or * for any (FERRY_ALLOWED_HOSTS)")
	fs.StringVar(&cfg.AdminToken, "admin-token", env("FERRY_ADMIN_TOKEN", ""), "bearer token Ferry's admin endpoints require; with --auth verify they are closed without one (FERRY_ADMIN_TOKEN; prefer the variable: arguments are visible to other users)")
	consoleOn := fs.Bool("console", envSwitch("FERRY_CONSOLE", "", true), "serve the dead-letter console at /console/ (on --console-listen, else --admin-listen, else --listen); false turns it off (FERRY_CONSOLE)")
	fs.StringVar(&cfg.ConsoleListen, "console-listen", env("FERRY_CONSOLE_LISTEN", ""), "serve the console alone on this address (FERRY_CONSOLE_LISTEN)")
	fs.StringVar(&cfg.AdminListen, "admin-listen", env("FERRY_ADMIN_LISTEN", ""), "serve Ferry's admin endpoints on this address instead of --listen (FERRY_ADMIN_LISTEN)")
	snsAllowed := fs.String("sns-allowed-endpoints", env("FERRY_SNS_ALLOWED_ENDPOINTS", ""), "comma-separated CIDRs, addresses or host names that SNS HTTP/S deliveries may reach although loopback, link-local or private; applies with --auth verify (FERRY_SNS_ALLOWED_ENDPOINTS)")
	fs.DurationVar(&cfg.ReadTimeout, "read-timeout", envDuration("FERRY_READ_TIMEOUT", server.DefaultReadTimeout), "longest a request's headers and body may take to arrive, not counting a long poll's wait; negative: no bound (FERRY_READ_TIMEOUT)")
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", envDuration("FERRY_IDLE_TIMEOUT", server.DefaultIdleTimeout), "close a keep-alive connection idle for this long; negative: never (FERRY_IDLE_TIMEOUT)")
	fs.IntVar(&cfg.MaxConnections, "max-connections", envInt("FERRY_MAX_CONNECTIONS", server.DefaultMaxConnections), "most connections served at once; more are answered 503 ServiceUnavailable; negative: no cap (FERRY_MAX_CONNECTIONS)")
	fs.StringVar(&cfg.HTTPServer, "http-server", env("FERRY_HTTP_SERVER", server.HTTPServerFast), "what serves HTTP/1.x on a plain-TCP --listen: fast, a lean loop that hands any request outside its common subset to Go's net/http; or net, net/http alone (TLS is always net/http's) (FERRY_HTTP_SERVER)")
	authMode := fs.String("auth", env("FERRY_AUTH", "off"), "off: serve requests whether signed or not, in the account their access key names (12 digits) or --account; verify: every request must carry a valid AWS SigV4 signature by a key of --credentials (FERRY_AUTH)")
	credentials := fs.String("credentials", env("FERRY_CREDENTIALS", ""), "AWS shared-credentials file of the callers: sections with aws_access_key_id, aws_secret_access_key and aws_account_id (FERRY_CREDENTIALS)")
	reserve := fs.String("disk-reserve", env("FERRY_DISK_RESERVE", "128MiB"), "room kept free on the data volume (bytes, or with KiB, MiB, GiB, TiB); with less, writes answer ServiceUnavailable until space is freed; 0 turns this off (FERRY_DISK_RESERVE)")
	delayDeleted := fs.Bool("sqs-delay-recently-deleted", envSwitch("FERRY_SQS_DELAY_RECENTLY_DELETED", "SQS_DELAY_RECENTLY_DELETED", true), "refuse, as AWS does, to create a queue under a name deleted less than 60 seconds ago (QueueDeletedRecently); false allows it at once (FERRY_SQS_DELAY_RECENTLY_DELETED, or LocalStack's SQS_DELAY_RECENTLY_DELETED)")
	failureHistory := fs.Bool("failure-history", envSwitch("FERRY_FAILURE_HISTORY", "", true), "record each message's receives (with the consumer's address, user agent and access key) and moves, shown at GET /_ferry/history; false records nothing (FERRY_FAILURE_HISTORY)")
	delayPurge := fs.Bool("sqs-delay-purge-retry", envSwitch("FERRY_SQS_DELAY_PURGE_RETRY", "SQS_DELAY_PURGE_RETRY", true), "refuse, as AWS does, a purge less than 60 seconds after the queue's last (PurgeQueueInProgress); false allows it at once (FERRY_SQS_DELAY_PURGE_RETRY, or LocalStack's SQS_DELAY_PURGE_RETRY)")
	fs.BoolVar(&cfg.FaultInjection, "fault-injection", envBool("FERRY_FAULT_INJECTION"), "serve /_ferry/faults: rules that make SQS actions and SNS deliveries fail on purpose, for tests (FERRY_FAULT_INJECTION)")
	faultSeed := fs.String("fault-seed", env("FERRY_FAULT_SEED", ""), "seed of the fault rules' decisions (a number from 0 to 2^64-1), so that a failing test can be replayed; default: random, shown by ferry fault list (FERRY_FAULT_SEED)")
	fs.BoolVar(&cfg.ClockControl, "clock-control", envBool("FERRY_CLOCK_CONTROL"), "let the admin API and ferry clock freeze, move forward and resume this Ferry's clock, for tests of timeouts, retention and retries (FERRY_CLOCK_CONTROL)")
	initFile := fs.String("init", env("FERRY_INIT", ""), "topology file (YAML or JSON) of queues, topics, subscriptions and alarms to create or update at start, before Ferry answers; see ferry export (FERRY_INIT)")
	level := fs.String("log-level", env("FERRY_LOG_LEVEL", "info"), "debug, info, warn or error (FERRY_LOG_LEVEL)")
	format := fs.String("log-format", env("FERRY_LOG_FORMAT", "text"), "text or json (FERRY_LOG_FORMAT)")
	grace := fs.Duration("shutdown-grace", 30*time.Second, "how long a shutdown waits for requests in flight")
	profile := fs.String("cpuprofile", "", "write a pprof CPU profile of the whole run to this file")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if popts.URL != "" && sopts.InMemory {
		fmt.Fprintln(stderr, "ferry serve: --postgres and --memory exclude each other")
		return 2
	}
	if len(envErrs) > 0 {
		fmt.Fprintf(stderr, "ferry serve: %s\n", strings.Join(envErrs, "; "))
		return 2
	}
	switch *authMode {
	case "off":
	case "verify":
		if *credentials == "" {
			fmt.Fprintln(stderr, "ferry serve: --auth verify needs --credentials FILE (or FERRY_CREDENTIALS): the access keys, secrets and accounts of those who may call")
			return 2
		}
		cfg.AuthVerify = true
	default:
		fmt.Fprintf(stderr, "ferry serve: bad --auth %q: want off or verify\n", *authMode)
		return 2
	}
	if *credentials != "" {
		creds, err := sigv4.LoadCredentials(*credentials, cfg.Account)
		if err != nil {
			fmt.Fprintf(stderr, "ferry serve: %v\n", err)
			return 2
		}
		cfg.Credentials = creds
	}
	if *faultSeed != "" {
		seed, err := strconv.ParseUint(*faultSeed, 10, 64)
		if err != nil {
			fmt.Fprintf(stderr, "ferry serve: bad fault seed %q: want a number from 0 to 2^64-1\n", *faultSeed)
			return 2
		}
		cfg.FaultSeed = &seed
	}
	if cfg.ClockControl {
		cfg.Clock = clock.NewControlled()
	}
	waits := engine.Waits{NoRecreateDelay: !*delayDeleted, NoPurgeInterval: !*delayPurge}
	cfg.NoFailureHistory = !*failureHistory
	cfg.NoConsole = !*consoleOn
	cfg.Version = version
	sopts.Waits, popts.Waits = waits, waits
	cfg.AllowedHosts = splitList(*allowedHosts)
	cfg.SNSAllowedEndpoints = splitList(*snsAllowed)
	if n, err := parseSize(*reserve); err != nil {
		fmt.Fprintf(stderr, "ferry serve: bad disk reserve %q: %v\n", *reserve, err)
		return 2
	} else if n == 0 {
		sopts.DiskReserve = -1 // off
	} else {
		sopts.DiskReserve = n
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintf(stderr, "ferry serve: bad log level %q\n", *level)
		return 2
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch *format {
	case "text":
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, opts))
	case "json":
		cfg.Logger = slog.New(slog.NewJSONHandler(stderr, opts))
	default:
		fmt.Fprintf(stderr, "ferry serve: bad log format %q\n", *format)
		return 2
	}

	if *initFile != "" {
		// A file with a mistake stops Ferry before it opens its store.
		t, err := topology.LoadFile(*initFile)
		if err != nil {
			fmt.Fprintf(stderr, "ferry serve: %v\n", err)
			return 1
		}
		cfg.Init = t
	}

	if pct, ok := gcPercent(getenv, serveGCPercent); ok {
		debug.SetGCPercent(pct)
	}

	stopProfile, err := cpuProfile(*profile)
	if err != nil {
		fmt.Fprintf(stderr, "ferry serve: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = serveStore(ctx, cfg, sopts, popts, *grace)
	if perr := stopProfile(); perr != nil && err == nil {
		err = perr
	}
	if err != nil {
		cfg.Logger.Error("ferry failed", "err", err)
		return 1
	}
	return 0
}

// serveStore opens the store, PostgreSQL when popts has a URL and the
// embedded store otherwise, and serves from it until ctx ends; the server
// closes the store. Either store holds its move tasks until the server has
// started, so that the server counts the moves of resumed tasks.
func serveStore(ctx context.Context, cfg server.Config, sopts embedded.Options, popts postgres.Options, grace time.Duration) error {
	var (
		store engine.Store
		err   error
	)
	if popts.URL != "" {
		// The server's own files (the SNS signing key) stay in memory: the
		// node keeps nothing on its disk.
		cfg.StoreName, cfg.DataDir = "postgres schema "+popts.Schema, ""
		popts.Clock, popts.Logger, popts.HoldMoveTasks = cfg.Clock, cfg.Logger, true
		store, err = postgres.Open(ctx, popts)
	} else {
		cfg.StoreName, cfg.DataDir = sopts.Dir, sopts.Dir
		if sopts.InMemory {
			cfg.StoreName, cfg.DataDir = "memory", ""
		}
		sopts.Clock, sopts.Logger, sopts.HoldMoveTasks = cfg.Clock, cfg.Logger, true
		store, err = embedded.Open(ctx, sopts)
	}
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	cfg.Store = store
	return server.Run(ctx, cfg, grace)
}

// splitList reads a comma-separated list, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// parseSize reads a size in bytes: a whole number with an optional binary
// suffix (KiB, MiB, GiB, TiB).
func parseSize(s string) (int64, error) {
	num, mult := s, int64(1)
	for i, suf := range []string{"KiB", "MiB", "GiB", "TiB"} {
		if n, ok := strings.CutSuffix(s, suf); ok {
			num, mult = n, 1<<(10*(i+1))
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n < 0 {
		return 0, errors.New("want a whole number of bytes, optionally with KiB, MiB, GiB or TiB")
	}
	if n > math.MaxInt64/mult {
		return 0, errors.New("too large")
	}
	return n * mult, nil
}

// serveGCPercent is the GOGC of ferry serve. Most of what a broker
// allocates is garbage of a request, so collecting half as often cut the
// CPU per message of the batch send and receive benchmarks by about a
// fifth (GOGC 100 → 200; 400 gained no more), for a heap under load that
// may reach three times the live set instead of two. An idle broker's RSS
// does not change.
const serveGCPercent = 200

// benchGCPercent is the GOGC of ferry bench. The SDK clients allocate far
// more per request than the broker does; collecting a quarter as often
// cut the load generator's CPU per message by about a fifth, which leaves
// that much more of a shared machine to the broker being measured. Its
// live set is the ledger of bodies in flight, a few hundred bytes each.
const benchGCPercent = 400

// gcPercent is the GC percentage a command sets, if any: def, unless GOGC
// in the environment already chose one for the runtime. A GOMEMLIMIT is
// left to the runtime either way and still caps the heap.
func gcPercent(getenv func(string) string, def int) (int, bool) {
	if getenv("GOGC") != "" {
		return 0, false
	}
	return def, true
}

// newFlagSet is a subcommand's flag set: errors and -h go to stderr, the
// latter as usage followed by the flags.
func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses a subcommand's arguments, which take no operands: it
// answers ok, or the exit code (0 after --help, 2 for bad usage, which fs
// has already explained on its output).
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return 2, false
	}
	return 0, true
}
