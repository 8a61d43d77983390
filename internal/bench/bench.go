// Package bench drives any SQS/SNS endpoint through the AWS SDK for Go v2
// and measures how fast it goes while checking that it is right: every
// scenario sends unique bodies and accounts for each of them, so a fast
// wrong answer shows as a failure, never as a good figure.
package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
)

// Defaults of Config.
const (
	DefaultDuration    = 10 * time.Second
	DefaultConcurrency = 16
	DefaultPrefill     = 100_000
	DefaultMaxMessages = 1_000_000
	Region             = "us-east-1"
)

// Config says what to run against which endpoint.
type Config struct {
	// Endpoint is the broker's base URL, e.g. http://127.0.0.1:4566. Every
	// request goes there and nowhere else, unless Endpoints names more.
	Endpoint string
	// Endpoints, when set, are the nodes of one broker (Endpoint becomes
	// the first): each client of a scenario is given the next node in turn
	// and sends every request there, as behind a load balancer, while the
	// calls that set up, count and tear down go to the first.
	Endpoints []string
	// DBPIDs are processes on this machine, with their children, whose CPU
	// is the database's (PostgreSQL's postmaster), for Result.DBCPU.
	DBPIDs []int
	// ServerPIDs, when set, are the broker's processes on this machine:
	// their CPU and their children's, from /proc, is the server's figure
	// (Result.ServerCPU), instead of the nodes' process_cpu_seconds_total,
	// which only Ferry publishes. Given for every broker of a comparison,
	// it measures them all the same way.
	ServerPIDs []int
	// Scenarios to run, in this order; empty means all (see Scenarios).
	Scenarios []string
	// Duration is how long each scenario's measured phase runs; filling a
	// queue beforehand and draining it afterwards are bounded separately.
	Duration time.Duration
	// Concurrency is the number of clients sending (and receiving) at once.
	Concurrency int
	// Prefill is the most messages a pre-filled queue gets (it gets fewer
	// if filling takes longer than Duration).
	Prefill int
	// MaxMessages caps what one scenario sends, whatever the duration.
	MaxMessages int
	// Progress, when set, is told each result as soon as it is known.
	Progress func(Result)
	// HTTPClient overrides the client built for Endpoint (tests).
	HTTPClient *http.Client
	// Client is what drives the traffic: ClientSDK (the default) or
	// ClientFast, which runs only some scenarios (the rest read
	// unsupported) and speaks plain HTTP without signatures.
	Client string

	nodes []url.URL // Endpoints, parsed by fill
}

// Report is the outcome of a run.
type Report struct {
	Endpoint string `json:"endpoint"`
	// Endpoints lists every node driven, when there were several.
	Endpoints   []string  `json:"endpoints,omitempty"`
	Started     time.Time `json:"started"`
	Duration    string    `json:"duration"`
	Concurrency int       `json:"concurrency"`
	Client      string    `json:"client"`
	Results     []Result  `json:"results"`
}

// Statuses of a Result.
const (
	StatusOK          = "ok"
	StatusFail        = "FAIL"        // a wrong answer: lost, duplicated, reordered, or an error
	StatusUnsupported = "unsupported" // the endpoint lacks a feature the scenario needs
	StatusError       = "error"       // the scenario could not be set up
	// StatusCeiling is every result against the ceiling (package ceiling),
	// which holds nothing: its messages are counted, not verified.
	StatusCeiling = "ceiling"
)

// ceilingNote is what a result against the ceiling says of itself.
const ceilingNote = "holds nothing; not verified"

// ceilingScenarios run against the ceiling; the others need a broker that
// holds messages (a long poll woken by a send, redrives, move tasks) and
// read unsupported there.
var ceilingScenarios = []string{"send", "send-batch", "receive-delete", "produce-consume", "produce-consume-batch",
	"fifo-1-group", "fifo-100-groups", "sns-fanout", "sns-fanout-batch"}

// Result is one scenario's figures and counters.
type Result struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	// Rate is Messages per second over Seconds, in Unit.
	Rate     float64 `json:"rate"`
	Unit     string  `json:"unit"`
	Messages int64   `json:"messages"`
	Seconds  float64 `json:"seconds"`
	// Latency names what P50 and P99 measure; empty when nothing is.
	Latency string   `json:"latency,omitempty"`
	P50ms   *float64 `json:"p50_ms,omitempty"`
	P99ms   *float64 `json:"p99_ms,omitempty"`
	// Correctness counters: any of them above zero makes the result FAIL.
	Lost       int64 `json:"lost"`
	Duplicated int64 `json:"duplicated"`
	OutOfOrder int64 `json:"out_of_order"`
	Errors     int64 `json:"errors"`
	// Unverified messages never arrived before the drain's time ran out but
	// were, by the broker's count, still queued: slow, not lost.
	Unverified int64 `json:"unverified,omitempty"`
	// Verified counts the distinct copies that arrived and were checked,
	// in the measured window or after it (Messages counts only the window).
	Verified int64 `json:"verified"`
	// ServerCPU is the CPU, in microseconds, that the broker's processes
	// (Config.ServerPIDs', or every node's process_cpu_seconds_total)
	// spent per verified message, from the scenario's start to its end
	// (the teardown excepted): each message's whole life, sent, received
	// and deleted. sns-fanout-50 and its batch form divide by the
	// messages published instead: a publish's cost with all of its copies.
	// Absent when there is no figure to read.
	ServerCPU *float64 `json:"server_cpu_us_per_msg,omitempty"`
	// ServerCPUPerRequest is the same CPU per HTTP request (Requests).
	ServerCPUPerRequest *float64 `json:"server_cpu_us_per_request,omitempty"`
	// DBCPU is the same per message for the processes of Config.DBPIDs.
	DBCPU *float64 `json:"db_cpu_us_per_msg,omitempty"`
	// ClientCPU is the CPU, in microseconds per verified message, that this
	// process (the benchmark: its SDK clients and checks) spent over the
	// same span.
	ClientCPU *float64 `json:"client_cpu_us_per_msg,omitempty"`
	// Requests counts the HTTP requests the scenario sent over the same
	// span, failed ones included.
	Requests int64 `json:"requests"`
	// PerReceive is the messages each ReceiveMessage call answered with,
	// empty answers included: what a message pays in receive (and batch
	// delete) round trips. Absent when the scenario received nothing.
	PerReceive *float64 `json:"msgs_per_receive,omitempty"`
	// CommitsPerSync is the commits each WAL sync of an embedded store
	// covered during the scenario (group commit): absent for stores that
	// publish no such figures, or made no sync.
	CommitsPerSync *float64 `json:"commits_per_sync,omitempty"`
	Note           string   `json:"note,omitempty"`
}

// Failed reports whether r counts against the endpoint.
func (r Result) Failed() bool { return r.Status == StatusFail || r.Status == StatusError }

// scenario is one entry of the catalogue.
type scenario struct {
	name  string
	unit  string
	about string // what it does, for readers of the results
	run   func(ctx context.Context, e *env) error
}

// catalogue lists the scenarios in the order they run.
var catalogue = []scenario{
	{"send", "msgs/s", "SendMessage of one 256-byte body per request from every client; then the queue is drained " +
		"and each acknowledged message must be there exactly once.", runSends(false)},
	{"send-batch", "msgs/s", "SendMessageBatch of 10 × 256 bytes from every client; drained and checked the same way.", runSends(true)},
	{"receive-delete", "msgs/s", "A queue pre-filled with up to --prefill messages (fewer if filling outlasts --duration), " +
		"drained by every client with ReceiveMessage of 10 (long polling) and DeleteMessageBatch; each body seen exactly once.", runReceiveDelete},
	{"produce-consume", "msgs/s", "Half the clients send single messages while the other half receive (10, long polling) " +
		"and delete in batches; the rate is what arrived while the producers ran, the latency runs from the start of " +
		"the send to the return of the receive.", runProduceConsume(false)},
	{"produce-consume-batch", "msgs/s", "As produce-consume, but the producers send SendMessageBatch of 10 × 256 bytes; " +
		"the latency runs from the start of the batch request to the return of the receive.", runProduceConsume(true)},
	{"long-poll-wakeup", "msgs/s", "One client waits (WaitTimeSeconds 20) on an empty queue while a message is sent every " +
		"50 ms; the latency runs from the send's acknowledgement to the return of the receive (zero if the receive " +
		"returned first).", runLongPollWakeup},
	{"dlq-move", "msgs/s", "A pre-filled queue with VisibilityTimeout 0 and maxReceiveCount 2, received by clients that " +
		"never delete; the rate is arrivals in the dead-letter queue, where each must arrive exactly once, and none may " +
		"be delivered from the source more than twice.", runDLQMove},
	{"move-task", "msgs/s", "A pre-filled dead-letter queue moved back with StartMessageMoveTask (no rate), timed until " +
		"ListMessageMoveTasks says COMPLETED; then each message must be in the destination exactly once.", runMoveTask},
	{"fifo-1-group", "msgs/s", "FIFO: one producer sends batches of 10 to one message group while half the clients receive " +
		"and delete; order within the group checked; rate and latency as in produce-consume.", runFIFO(1)},
	{"fifo-100-groups", "msgs/s", "FIFO: the same with 100 groups, spread over producers that are half the clients.", runFIFO(100)},
	{"sns-fanout", "publishes/s", "A topic with 4 SQS subscriptions (raw delivery): half the clients publish while a quarter " +
		"per queue receive and delete; each copy seen exactly once; the latency runs from the start of a publish to " +
		"the receive of its fourth copy.", runFanout(false)},
	{"sns-fanout-batch", "msgs/s", "As sns-fanout, but the publishers send PublishBatch of 10 × 256 bytes; the rate is " +
		"messages published (10 per request), the latency runs from the start of the PublishBatch to the receive of " +
		"each message's fourth copy; a broker without PublishBatch reads unsupported.", runFanout(true)},
	{"sns-fanout-50", "publishes/s", "A topic with 50 SQS subscriptions (raw delivery), 20 of them with a filter policy on a " +
		"message attribute that every other publish matches (50 copies, or 30): half the clients publish while the rest " +
		"receive and delete; each copy seen exactly once where its filter lets it through and never where not; the " +
		"latency runs from the start of a publish to the receive of its last copy; the server's CPU is per publish.",
		runFanoutOf(fanoutSpec{queues: manyQueues, filtered: manyFiltered, perPublish: true})},
	{"sns-fanout-50-batch", "msgs/s", "As sns-fanout-50, but the publishers send PublishBatch of 10 × 256 bytes; the rate " +
		"and the server's CPU are per message published (10 per request).",
		runFanoutOf(fanoutSpec{queues: manyQueues, filtered: manyFiltered, batch: true, perPublish: true})},
}

// About says what a scenario does; empty for an unknown name.
func About(name string) string {
	for _, s := range catalogue {
		if s.name == name {
			return s.about
		}
	}
	return ""
}

// Scenarios lists every scenario name, in the order Run runs them.
func Scenarios() []string {
	names := make([]string, len(catalogue))
	for i, s := range catalogue {
		names[i] = s.name
	}
	return names
}

func (c *Config) fill() error {
	if len(c.Endpoints) == 0 {
		c.Endpoints = []string{c.Endpoint}
	}
	c.Endpoint = c.Endpoints[0]
	c.nodes = c.nodes[:0]
	for _, ep := range c.Endpoints {
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("bench: endpoint %q is not an http(s) URL", ep)
		}
		c.nodes = append(c.nodes, *u)
	}
	if c.Duration <= 0 {
		c.Duration = DefaultDuration
	}
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Prefill <= 0 {
		c.Prefill = DefaultPrefill
	}
	if c.MaxMessages <= 0 {
		c.MaxMessages = DefaultMaxMessages
	}
	if len(c.Scenarios) == 0 {
		c.Scenarios = Scenarios()
	}
	if c.Client == "" {
		c.Client = ClientSDK
	}
	if !slices.Contains(Clients(), c.Client) {
		return fmt.Errorf("bench: unknown client %q (known: %s)", c.Client, strings.Join(Clients(), ", "))
	}
	for _, n := range c.nodes {
		if c.Client == ClientFast && n.Scheme != "http" {
			return fmt.Errorf("bench: the fast client speaks plain HTTP, not %s", n.Scheme)
		}
	}
	known := Scenarios()
	for _, s := range c.Scenarios {
		if !slices.Contains(known, s) {
			return fmt.Errorf("bench: unknown scenario %q (known: %s)", s, strings.Join(known, ", "))
		}
	}
	if c.HTTPClient == nil {
		c.HTTPClient = NewHTTPClient(c.Concurrency)
	}
	return nil
}

// NewHTTPClient is the HTTP client of concurrency SDK workers: it keeps
// enough idle connections for every worker and long poll, so that a run
// measures the broker rather than TCP handshakes (http.DefaultTransport
// keeps two per host and closes the rest after each request), and ignores
// proxy settings: requests go to the endpoint only.
func NewHTTPClient(concurrency int) *http.Client {
	conns := 8*concurrency + 32
	return &http.Client{Transport: PlainBodies{&http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
	}}}
}

// PlainBodies is an http.RoundTripper that hides the io.WriterTo of request
// bodies; every aws-sdk-go-v2 client of a Ferry on the same machine wants it
// (the benchmark, the integration tests). The SDK closes a
// request's body as soon as the response headers arrive, and its body's
// WriteTo then returns io.EOF; net/http, still finishing the request on
// another goroutine, takes that EOF from its check for excess bytes as a
// failed write and closes the connection under the response being read.
// Against a broker on the same machine, which answers the moment it has
// the body, that race drops whole ReceiveMessage answers. A plain Read
// returns EOF the ordinary way.
type PlainBodies struct{ Next http.RoundTripper }

// RoundTrip passes req on with a body that only reads.
func (p PlainBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		r := *req
		r.Body = readCloser{req.Body}
		req = &r
	}
	return p.Next.RoundTrip(req)
}

type readCloser struct{ io.ReadCloser }

// Run runs the configured scenarios one after the other. It returns an
// error only for a bad Config; a scenario that fails says so in its Result.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	tr := newTraffic(cfg.HTTPClient)
	sqsClient, snsClient := clients(cfg.Endpoint, tr.client, cfg.nodes...)
	ceiling := tr.isCeiling(ctx, sqsClient)
	rep := &Report{Endpoint: cfg.Endpoint, Started: time.Now().UTC(), Duration: cfg.Duration.String(), Concurrency: cfg.Concurrency, Client: cfg.Client}
	if len(cfg.Endpoints) > 1 {
		rep.Endpoints = cfg.Endpoints
	}
	for _, name := range cfg.Scenarios {
		i := slices.IndexFunc(catalogue, func(s scenario) bool { return s.name == name })
		if ctx.Err() != nil {
			break
		}
		e := &env{cfg: cfg, sqs: sqsClient, sns: snsClient, traffic: tr, ceiling: ceiling, run: newRunID(),
			res: Result{Name: name, Unit: catalogue[i].unit}}
		e.via = clientOf(cfg, e)
		run := catalogue[i].run
		if ceiling && !slices.Contains(ceilingScenarios, name) {
			run = func(context.Context, *env) error {
				return &unsupportedError{"the ceiling", errors.New("it holds nothing, and the scenario needs messages held")}
			}
		}
		if err := clientRefusal(cfg, name, ceiling); err != nil {
			run = func(context.Context, *env) error { return err }
		}
		res := e.execute(ctx, run)
		rep.Results = append(rep.Results, res)
		if cfg.Progress != nil {
			cfg.Progress(res)
		}
	}
	return rep, nil
}

// clients are the SQS and SNS clients of a run against endpoint, or,
// given several nodes, against the node of each request's client (see
// env.client). No retries: a retried send could turn one error into a
// silent duplicate, and every error must be counted.
func clients(endpoint string, hc *http.Client, nodes ...url.URL) (*sqs.Client, *sns.Client) {
	creds := credentials.NewStaticCredentialsProvider("ferrybench", "ferrybench", "")
	sqsOpts := sqs.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  creds,
		HTTPClient:   hc,
		Retryer:      aws.NopRetryer{},
	}
	snsOpts := sns.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  creds,
		HTTPClient:   hc,
		Retryer:      aws.NopRetryer{},
	}
	if len(nodes) > 1 {
		sqsOpts.EndpointResolverV2 = spread[sqs.EndpointParameters](nodes)
		snsOpts.EndpointResolverV2 = spread[sns.EndpointParameters](nodes)
	}
	return sqs.New(sqsOpts), sns.New(snsOpts)
}

func newRunID() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// env is one scenario's run: its clients, names, counters and cleanup.
type env struct {
	cfg Config
	sqs *sqs.Client
	sns *sns.Client
	run string // unique per scenario run; in every name and body
	// traffic counts the run's requests; ceiling says the endpoint is the
	// ceiling, which holds nothing: see Ledger, arrive and receive.
	traffic *traffic
	ceiling bool
	// via moves the messages of the scenarios both clients run.
	via client

	res  Result
	turn atomic.Int64 // clients given a node so far
	errs atomic.Int64
	// receives and received count the ReceiveMessage calls answered, and
	// the messages in their answers (Result.PerReceive).
	receives, received atomic.Int64
	mu                 sync.Mutex
	firstErr           string
	notes              []string
	cleanup            []func(context.Context) error

	// cpuPer, when above zero, is what the CPU figures are per instead of
	// the verified copies: the messages published, for sns-fanout-50.
	cpuPer int64
}

// execute runs fn under a hard time limit (the longest scenario sets up,
// fills a queue, runs a phase bounded by the drain limit and drains),
// cleans up whatever it created and settles the status.
func (e *env) execute(ctx context.Context, fn func(context.Context, *env) error) Result {
	ctx, cancel := context.WithTimeout(ctx, 2*setupLimit+2*e.cfg.Duration+2*e.drainLimit())
	cpu := e.cpuFrom(ctx)
	err := fn(ctx, e)
	cpu.record(ctx)
	cancel()
	e.teardown()
	return e.settleStatus(err)
}

// teardown removes what the run created, newest first.
func (e *env) teardown() {
	cctx, ccancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer ccancel()
	for i := len(e.cleanup) - 1; i >= 0; i-- {
		if cerr := e.cleanup[i](cctx); cerr != nil {
			e.note("cleanup: %v", cerr)
		}
	}
	e.cleanup = nil
}

// settleStatus is the result with its status: err is what stopped the
// run, if anything did.
func (e *env) settleStatus(err error) Result {
	r := e.res
	r.Errors += e.errs.Load()
	if n := e.receives.Load(); n > 0 {
		per := float64(e.received.Load()) / float64(n)
		r.PerReceive = &per
	}
	var uerr *unsupportedError
	switch {
	case errors.As(err, &uerr):
		r.Status = StatusUnsupported
		e.notes = append([]string{uerr.Error()}, e.notes...)
	case err != nil:
		r.Status = StatusError
		e.notes = append([]string{err.Error()}, e.notes...)
	case r.Lost > 0 || r.Duplicated > 0 || r.OutOfOrder > 0 || r.Errors > 0:
		r.Status = StatusFail
	case e.ceiling:
		r.Status = StatusCeiling
		e.notes = append([]string{ceilingNote}, e.notes...)
	default:
		r.Status = StatusOK
	}
	if e.firstErr != "" {
		e.notes = append(e.notes, "first error: "+e.firstErr)
	}
	r.Note = strings.Join(e.notes, "; ")
	return r
}

// setupLimit bounds the setup and the teardown of a scenario.
const setupLimit = 30 * time.Second

// drainLimit bounds the receiving that follows a measured phase (or is
// one): generous, so that a slow but correct broker is not called lossy.
func (e *env) drainLimit() time.Duration { return 3*e.cfg.Duration + 10*time.Second }

// fail counts an error of the measured phase; the first one is quoted.
func (e *env) fail(err error) {
	e.errs.Add(1)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.firstErr == "" {
		e.firstErr = shorten(err.Error(), 300)
	}
}

func (e *env) note(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.notes = append(e.notes, fmt.Sprintf(format, args...))
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// unsupportedError is a feature the endpoint rejected: the scenario is
// skipped, not failed.
type unsupportedError struct {
	op  string
	err error
}

func (u *unsupportedError) Error() string { return u.op + ": " + shorten(u.err.Error(), 300) }
func (u *unsupportedError) Unwrap() error { return u.err }

// feature wraps the error of a call that only a broker with the feature
// answers: an answer that rejects it (any 4xx or modelled API error) means
// "unsupported"; anything else (no answer, a 5xx) is an error.
func feature(op string, err error) error {
	if err == nil {
		return nil
	}
	var status interface{ HTTPStatusCode() int }
	var api smithy.APIError
	switch {
	case errors.As(err, &status):
		if code := status.HTTPStatusCode(); code >= 400 && code < 500 {
			return &unsupportedError{op, err}
		}
	case errors.As(err, &api):
		return &unsupportedError{op, err}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// name is a unique queue or topic name for this run.
func (e *env) name(suffix string) string {
	return "fb" + e.run + "-" + suffix
}
