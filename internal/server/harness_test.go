package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	credv1 "github.com/aws/aws-sdk-go/aws/credentials"
	"github.com/aws/aws-sdk-go/aws/session"
	sqsv1 "github.com/aws/aws-sdk-go/service/sqs"

	"github.com/ferrymq/ferry/internal/bench"
	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/embedded"
	"github.com/ferrymq/ferry/internal/engine/postgres"
	"github.com/ferrymq/ferry/internal/engine/postgres/pgtest"
	"github.com/ferrymq/ferry/internal/server"
	"github.com/ferrymq/ferry/internal/testwait"
)

// The key and secret of the harness's own clients.
const harnessKey, harnessSecret = "AKIDFERRYTEST", "secret"

// epoch is where every fake clock starts.
var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// ferry is a real server on 127.0.0.1:0 with clients of both protocols.
type ferry struct {
	srv *server.Server
	clk *clock.Fake
	// json speaks AWS JSON 1.0 (aws-sdk-go-v2); query speaks the query
	// protocol (aws-sdk-go v1.46, from before SQS moved to JSON).
	json  *sqs.Client
	query *sqsv1.SQS
	// sns speaks SNS (query protocol, aws-sdk-go-v2).
	sns *snssdk.Client
	// timers is how many fake timers the idle server keeps (the metrics
	// sampler's tick): waitPending counts beyond them.
	timers int
}

type option func(*server.Config)

// onDisk keeps the store, and the server's own files, in dir. On
// PostgreSQL (onPostgres) dir names the store's schema instead: a server
// started again with the same dir finds what the one before left.
func onDisk(dir string) option { return func(c *server.Config) { c.DataDir = dir } }

// onClock runs the server on clk, e.g. a restarted one on the clock of
// the server before it.
func onClock(clk *clock.Fake) option { return func(c *server.Config) { c.Clock = clk } }

// storeWith keeps the store in dir, opened with the options set chooses.
// On PostgreSQL set is not called: they are the embedded store's options.
func storeWith(t testing.TB, dir string, set func(*embedded.Options)) option {
	return func(c *server.Config) {
		c.DataDir = dir
		c.Store = openStore(t, *c, set)
	}
}

// withWaits opens the store, embedded or PostgreSQL, with SQS's waits
// set as w.
func withWaits(t testing.TB, w engine.Waits) option {
	return func(c *server.Config) {
		if onPostgres(t) {
			url, schema := pgtest.Schema(t)
			c.Store = openSchemaWaits(t, *c, url, schema, w)
			return
		}
		c.Store = openStore(t, *c, func(o *embedded.Options) { o.Waits = w })
	}
}

// httpServerEnv chooses what serves HTTP/1.x in every server the tests
// start (Config.HTTPServer): unset, the default (the lean loop); "net",
// net/http alone.
const httpServerEnv = "FERRY_TEST_HTTP_SERVER"

// serverStoreEnv chooses the store of every server the tests start: unset,
// the embedded store; "postgres", a PostgreSQL schema of each server's own
// on FERRY_TEST_POSTGRES_URL, as ferry serve --postgres runs.
const serverStoreEnv = "FERRY_TEST_SERVER_STORE"

// onPostgres reports whether the servers run on PostgreSQL.
func onPostgres(t testing.TB) bool {
	t.Helper()
	switch v := os.Getenv(serverStoreEnv); v {
	case "", "embedded":
		return false
	case "postgres":
		if os.Getenv("FERRY_TEST_POSTGRES_URL") == "" {
			t.Fatalf("%s=postgres needs FERRY_TEST_POSTGRES_URL", serverStoreEnv)
		}
		return true
	default:
		t.Fatalf("%s=%q: want embedded or postgres", serverStoreEnv, v)
		return false
	}
}

// embeddedOnly skips a test about the embedded store itself on PostgreSQL.
func embeddedOnly(t testing.TB, why string) {
	t.Helper()
	if onPostgres(t) {
		t.Skip("on PostgreSQL: " + why)
	}
}

// openStore opens the store as ferry serve does, on cfg's clock: the
// embedded store in cfg.DataDir, or in memory when it is empty; on
// PostgreSQL a schema of its own, the same one for the same cfg.DataDir.
// The server it is given closes it.
func openStore(t testing.TB, cfg server.Config, set func(*embedded.Options)) engine.Store {
	t.Helper()
	if onPostgres(t) {
		url, schema := pgtest.Schema(t)
		if cfg.DataDir != "" {
			url, schema = pgtest.SchemaFor(t, cfg.DataDir)
		}
		return openSchema(t, cfg, url, schema)
	}
	opts := embedded.Options{Dir: cfg.DataDir, InMemory: cfg.DataDir == "", Clock: cfg.Clock, Logger: cfg.Logger,
		HoldMoveTasks: true}
	if set != nil {
		set(&opts)
	}
	st, err := embedded.Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	return st
}

// openSchema opens the PostgreSQL store on schema, as one node of those
// that share it, on cfg's clock.
func openSchema(t testing.TB, cfg server.Config, url, schema string) engine.Store {
	t.Helper()
	return openSchemaWaits(t, cfg, url, schema, engine.Waits{})
}

func openSchemaWaits(t testing.TB, cfg server.Config, url, schema string, w engine.Waits) engine.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), postgres.Options{URL: url, Schema: schema, Clock: cfg.Clock,
		Logger: cfg.Logger, HoldMoveTasks: true, Waits: w})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	return st
}

// onSharedSchema runs the server on schema, which other nodes share.
func onSharedSchema(t testing.TB, url, schema string) option {
	return func(c *server.Config) { c.Store = openSchema(t, *c, url, schema) }
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("FERRY_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// start runs a Ferry in memory on a fake clock; it stops with the test.
func start(t testing.TB, opts ...option) *ferry {
	t.Helper()
	clk := clock.NewFake(epoch)
	cfg := server.Config{Listen: "127.0.0.1:0", Clock: clk, Logger: testLogger(t), HTTPServer: os.Getenv(httpServerEnv)}
	for _, o := range opts {
		o(&cfg)
	}
	if fake, ok := cfg.Clock.(*clock.Fake); ok {
		clk = fake // onClock
	}
	if cfg.Store == nil {
		cfg.Store = openStore(t, cfg, nil)
	}
	if onPostgres(t) {
		// As ferry serve --postgres: the node keeps nothing on its disk.
		cfg.DataDir = ""
	}
	srv, err := server.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start ferry: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return &ferry{srv: srv, clk: clk, json: jsonClient(srv.URL()), query: queryClient(srv.URL()), sns: snsClient(srv.URL()),
		timers: clk.Pending()}
}

// sdkHTTP is the HTTP client of the aws-sdk-go-v2 clients: see
// bench.PlainBodies for the SDK race it avoids.
var sdkHTTP = &http.Client{Transport: bench.PlainBodies{Next: http.DefaultTransport}}

func jsonClient(url string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(url),
		Credentials:      credentials.NewStaticCredentialsProvider(harnessKey, harnessSecret, ""),
		RetryMaxAttempts: 1,
		HTTPClient:       sdkHTTP,
	})
}

// snsClient speaks SNS. It allows one retry, kept from before sdkHTTP
// avoided the SDK race that now and then lost a complete 200 answer ("use
// of closed network connection" on the client's side). A retry still
// leaves every error answer visible: it comes back the same.
func snsClient(url string) *snssdk.Client {
	return snssdk.New(snssdk.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(url),
		Credentials:      credentials.NewStaticCredentialsProvider(harnessKey, harnessSecret, ""),
		RetryMaxAttempts: 2,
		HTTPClient:       sdkHTTP,
	})
}

func queryClient(url string) *sqsv1.SQS { return sqsv1.New(v1Session(url, nil)) }

// v1Session is an aws-sdk-go v1 session for url on hc, or on an HTTP
// client of its own when hc is nil: with AWS_CA_BUNDLE set, the SDK
// installs the bundle in the session's client, which would otherwise be
// http.DefaultClient, shared by every test of the package.
func v1Session(url string, hc *http.Client) *session.Session {
	if hc == nil {
		hc = &http.Client{}
	}
	return session.Must(session.NewSession(&awsv1.Config{
		Region:      awsv1.String("us-east-1"),
		Endpoint:    awsv1.String(url),
		Credentials: credv1.NewStaticCredentials(harnessKey, harnessSecret, ""),
		MaxRetries:  awsv1.Int(0),
		HTTPClient:  hc,
	}))
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// createQueue makes a queue over JSON and returns its URL.
func (f *ferry) createQueue(t testing.TB, name string, attrs map[string]string) string {
	t.Helper()
	out, err := f.json.CreateQueue(ctxT(t), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("CreateQueue %s: %v", name, err)
	}
	return aws.ToString(out.QueueUrl)
}

// waitPending blocks until the fake clock has at least n timers beyond the
// idle server's, i.e. until a long poll (or another timed wait) has started.
func (f *ferry) waitPending(t testing.TB, n int) {
	t.Helper()
	testwait.Pending(t, f.clk, f.timers+n)
}

// rawResponse is an HTTP answer as the wire carried it.
type rawResponse struct {
	Status int
	Header http.Header
	Body   string
}

// postJSON sends an SQS JSON 1.0 request by hand.
func (f *ferry) postJSON(t testing.TB, action, body string) rawResponse {
	t.Helper()
	return f.postTarget(t, "AmazonSQS."+action, body)
}

// postTarget sends an AWS JSON 1.0 request for target (prefix.Action).
func (f *ferry) postTarget(t testing.TB, target, body string) rawResponse {
	t.Helper()
	req, _ := http.NewRequest("POST", f.srv.URL()+"/", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", target)
	return do(t, req)
}

// postQuery sends a query-protocol request by hand.
func (f *ferry) postQuery(t testing.TB, form string) rawResponse {
	t.Helper()
	req, _ := http.NewRequest("POST", f.srv.URL()+"/", strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	return do(t, req)
}

func do(t testing.TB, req *http.Request) rawResponse {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return rawResponse{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
}
