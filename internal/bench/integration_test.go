package bench_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/ferrymq/ferry/internal/bench"
	"github.com/ferrymq/ferry/internal/bench/ceiling"
	"github.com/ferrymq/ferry/internal/engine/embedded"
	"github.com/ferrymq/ferry/internal/server"
)

// startFerry starts a Ferry in memory on 127.0.0.1:0.
func startFerry(ctx context.Context, t *testing.T) (*server.Server, error) {
	t.Helper()
	store, err := embedded.Open(ctx, embedded.Options{InMemory: true})
	if err != nil {
		return nil, err
	}
	return server.Start(ctx, server.Config{Listen: "127.0.0.1:0", Store: store, StoreName: "memory"})
}

// TestScenariosAgainstFerry runs every scenario briefly against a real
// in-memory Ferry and requires each to come out right (or, for a feature
// Ferry does not have yet, unsupported). Speed is never asserted.
func TestScenariosAgainstFerry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	srv, err := startFerry(ctx, t)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())

	var lines []string
	rep, err := bench.Run(ctx, bench.Config{
		Endpoint:    srv.URL(),
		Duration:    300 * time.Millisecond,
		Concurrency: 4,
		Prefill:     2000,
		Progress:    func(r bench.Result) { lines = append(lines, r.Line()) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", strings.Join(lines, "\n"))
	if got, want := len(rep.Results), len(bench.Scenarios()); got != want {
		t.Fatalf("%d results, want %d", got, want)
	}
	// Ferry has every feature the batch variants use: they must really run.
	mustRun := map[string]bool{"produce-consume-batch": true, "sns-fanout-batch": true, "sns-fanout-50": true, "sns-fanout-50-batch": true}
	consumes := map[string]bool{"produce-consume": true, "produce-consume-batch": true, "long-poll-wakeup": true}
	for _, r := range rep.Results {
		if mustRun[r.Name] && r.Status != bench.StatusOK {
			t.Errorf("%s: %s, want ok", r.Name, r.Status)
		}
		switch r.Status {
		case bench.StatusOK:
			// Not r.Messages: on a loaded machine no message may complete
			// within the short window, and the scenario is still right.
			if r.Verified == 0 {
				t.Errorf("%s: ok with no message verified", r.Name)
			}
			if r.ServerCPU == nil || r.ServerCPUPerRequest == nil {
				t.Errorf("%s: no server CPU per message or request, though Ferry publishes it", r.Name)
			}
			if r.ClientCPU == nil || r.Requests == 0 {
				t.Errorf("%s: client CPU %v, %d requests", r.Name, r.ClientCPU, r.Requests)
			}
			if consumes[r.Name] && (r.PerReceive == nil || *r.PerReceive <= 0) {
				t.Errorf("%s: messages per receive %v, want a figure above zero", r.Name, r.PerReceive)
			}
		case bench.StatusUnsupported:
			t.Logf("%s: unsupported by this Ferry: %s", r.Name, r.Note)
		default:
			t.Errorf("%s: %s", r.Name, r.Line())
		}
		if r.Lost+r.Duplicated+r.OutOfOrder+r.Errors != 0 {
			t.Errorf("%s: correctness counters %+v", r.Name, r)
		}
	}

	// Every scenario removes what it created.
	assertNoQueues(ctx, t, srv.URL())
}

// TestScenariosAgainstCeiling runs scenarios briefly against the ceiling
// in this process, served by net/http and by the lean loop: those it
// answers read ceiling, with every figure present, and those that need
// held messages read unsupported.
func TestScenariosAgainstCeiling(t *testing.T) {
	for _, fast := range []bool{false, true} {
		t.Run(fmt.Sprintf("fast=%v", fast), func(t *testing.T) { scenariosAgainstCeiling(t, fast) })
	}
}

func scenariosAgainstCeiling(t *testing.T, fast bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := ceiling.StartOn("127.0.0.1:0", fast)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	rep, err := bench.Run(ctx, bench.Config{
		Endpoint:    srv.URL(),
		ServerPIDs:  []int{os.Getpid()}, // the ceiling runs in this process
		Scenarios:   []string{"send", "receive-delete", "produce-consume", "sns-fanout", "dlq-move"},
		Duration:    200 * time.Millisecond,
		Concurrency: 4,
		Prefill:     2000,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"send": bench.StatusCeiling, "receive-delete": bench.StatusCeiling,
		"produce-consume": bench.StatusCeiling, "sns-fanout": bench.StatusCeiling, "dlq-move": bench.StatusUnsupported}
	for _, r := range rep.Results {
		t.Log(r.Line())
		if r.Status != want[r.Name] {
			t.Errorf("%s: %s, want %s", r.Name, r.Status, want[r.Name])
			continue
		}
		if r.Status != bench.StatusCeiling {
			continue
		}
		if !strings.HasPrefix(r.Note, "holds nothing; not verified") {
			t.Errorf("%s: note %q", r.Name, r.Note)
		}
		if r.Failed() || r.Lost+r.Duplicated+r.OutOfOrder+r.Errors+r.Unverified != 0 {
			t.Errorf("%s: counters %+v", r.Name, r)
		}
		if r.Verified == 0 || r.Requests == 0 {
			t.Errorf("%s: %d messages counted in %d requests", r.Name, r.Verified, r.Requests)
		}
		for what, v := range map[string]*float64{"server CPU per message": r.ServerCPU, "per request": r.ServerCPUPerRequest,
			"client CPU per message": r.ClientCPU, "messages per receive": r.PerReceive} {
			if v == nil || *v < 0 {
				t.Errorf("%s: %s %v", r.Name, what, v)
			}
		}
		if r.PerReceive != nil && *r.PerReceive > 10 {
			t.Errorf("%s: %.2f messages per receive, more than a receive asks for", r.Name, *r.PerReceive)
		}
	}
	if len(rep.Results) != len(want) {
		t.Errorf("%d results, want %d", len(rep.Results), len(want))
	}

	// The fast client checks every message: it runs nothing against the
	// ceiling, not even the scenarios it runs elsewhere.
	rep, err = bench.Run(ctx, bench.Config{Endpoint: srv.URL(), Client: bench.ClientFast,
		Scenarios: []string{"send", "dlq-move"}, Duration: 200 * time.Millisecond, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Status != bench.StatusUnsupported || !strings.Contains(r.Note, "--client fast: checks every message") {
			t.Errorf("fast %s against the ceiling: %s", r.Name, r.Line())
		}
	}
}

func assertNoQueues(ctx context.Context, t *testing.T, endpoint string) {
	t.Helper()
	client := sqs.New(sqs.Options{Region: bench.Region, BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	out, err := client.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String("fb")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.QueueUrls) > 0 {
		t.Errorf("queues left behind: %v", out.QueueUrls)
	}
}

// TestFanoutBatchWithoutPublishBatch runs sns-fanout-batch against a Ferry
// behind a proxy that answers PublishBatch as a broker without it would,
// with AWS's InvalidAction: the scenario reads unsupported, not FAIL, and
// still removes its topic and queues.
func TestFanoutBatchWithoutPublishBatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := startFerry(ctx, t)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	target, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	ferry := httputil.NewSingleHostReverseProxy(target)
	// Long polls cut short when the scenario gives up are no news.
	ferry.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
	var rejected atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if form, _ := url.ParseQuery(string(body)); form.Get("Action") == "PublishBatch" {
			rejected.Add(1)
			w.Header().Set("Content-Type", "text/xml")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `<ErrorResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><Error><Type>Sender</Type>`+
				`<Code>InvalidAction</Code><Message>The action or operation requested is invalid.</Message></Error>`+
				`<RequestId>0</RequestId></ErrorResponse>`)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		ferry.ServeHTTP(w, r)
	}))
	defer proxy.Close()

	rep, err := bench.Run(ctx, bench.Config{Endpoint: proxy.URL, Scenarios: []string{"sns-fanout-batch"},
		Duration: 200 * time.Millisecond, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	if r.Status != bench.StatusUnsupported || !strings.Contains(r.Note, "PublishBatch") || !strings.Contains(r.Note, "InvalidAction") {
		t.Errorf("got %s", r.Line())
	}
	if n := rejected.Load(); n != 1 {
		t.Errorf("%d PublishBatch requests, want the one that found it missing", n)
	}
	assertNoQueues(ctx, t, srv.URL())
}

// nodeProxies puts n counting proxies in front of the Ferry at target, as
// if they were n nodes of one broker; calls[i] counts the SQS calls that
// proxy i passed on, by operation.
func nodeProxies(t *testing.T, target string, n int) (urls []string, calls []map[string]int, mu *sync.Mutex) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	mu = &sync.Mutex{}
	for i := range n {
		calls = append(calls, map[string]int{})
		ferry := httputil.NewSingleHostReverseProxy(u)
		ferry.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS."); ok {
				mu.Lock()
				calls[i][op]++
				mu.Unlock()
			}
			ferry.ServeHTTP(w, r)
		}))
		t.Cleanup(proxy.Close)
		urls = append(urls, proxy.URL)
	}
	return urls, calls, mu
}

// TestSpreadOverNodes drives one Ferry through three proxies standing for
// three nodes: every client keeps to the node it was given in turn, so the
// senders of a scenario reach every node, and long-poll-wakeup's sender and
// receiver are on two different ones. The server's CPU is read
// from every node (here three times the same Ferry) and the database's from
// the processes given.
func TestSpreadOverNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := startFerry(ctx, t)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())

	run := func(scenario string) ([]map[string]int, bench.Result) {
		nodes, calls, mu := nodeProxies(t, srv.URL(), 3)
		rep, err := bench.Run(ctx, bench.Config{Endpoints: nodes, DBPIDs: []int{os.Getpid()}, Scenarios: []string{scenario},
			Duration: 300 * time.Millisecond, Concurrency: 4, Prefill: 500})
		if err != nil {
			t.Fatal(err)
		}
		r := rep.Results[0]
		if r.Status != bench.StatusOK || r.Verified == 0 {
			t.Errorf("%s: %s", scenario, r.Line())
		}
		if rep.Endpoint != nodes[0] || len(rep.Endpoints) != 3 {
			t.Errorf("%s: report names %q and %v, want the three nodes", scenario, rep.Endpoint, rep.Endpoints)
		}
		if r.ServerCPU == nil || *r.ServerCPU <= 0 || r.DBCPU == nil {
			t.Errorf("%s: no CPU figures: %s", scenario, r.Line())
		}
		mu.Lock()
		defer mu.Unlock()
		return calls, r
	}

	// Four senders on three nodes: each node has one at least. (Which
	// drainers find messages depends on the machine's load.)
	calls, _ := run("send")
	for i, c := range calls {
		if c["SendMessage"] == 0 {
			t.Errorf("send: node %d passed on %v; every node should carry sends", i, c)
		}
	}
	if calls[0]["CreateQueue"] != 1 || calls[1]["CreateQueue"]+calls[2]["CreateQueue"] != 0 {
		t.Errorf("send: setup went to %v, want the first node", calls)
	}

	calls, _ = run("long-poll-wakeup")
	var senders, receivers []int
	for i, c := range calls {
		if c["SendMessage"] > 0 {
			senders = append(senders, i)
		}
		if c["ReceiveMessage"] > 0 {
			receivers = append(receivers, i)
		}
	}
	if len(senders) != 1 || len(receivers) != 1 || senders[0] == receivers[0] {
		t.Errorf("long-poll-wakeup: sends through nodes %v, receives through %v; want one node each, not the same", senders, receivers)
	}
	assertNoQueues(ctx, t, srv.URL())
}

func TestConfigRejected(t *testing.T) {
	for _, cfg := range []bench.Config{
		{Endpoint: ""},
		{Endpoint: "127.0.0.1:4566"},
		{Endpoint: "ftp://127.0.0.1"},
		{Endpoint: "http://127.0.0.1:1", Scenarios: []string{"send", "nope"}},
		{Endpoints: []string{"http://127.0.0.1:1", "127.0.0.1:2"}},
	} {
		if _, err := bench.Run(context.Background(), cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

// TestSoakAgainstFerry runs the soak for a few seconds against a real
// in-memory Ferry: every path of the mix must deliver what it sent, the
// samples must carry the server's figures, and nothing may be left behind.
// Whether memory levels off in seconds is not asserted.
func TestSoakAgainstFerry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := startFerry(ctx, t)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())

	var seen int
	rep, err := bench.Soak(ctx, bench.SoakConfig{Endpoint: srv.URL(), Duration: 1500 * time.Millisecond, Rate: 300,
		Sample: 150 * time.Millisecond, Progress: func(bench.SoakSample) { seen++ }})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep.Summary())
	r := rep.Result
	if r.Status != bench.StatusOK || r.Messages == 0 || r.Lost+r.Duplicated+r.OutOfOrder+r.Errors != 0 {
		t.Errorf("load: %s", r.Line())
	}
	// A sample is taken as the load starts and once it ends; how many fall
	// between depends on how busy the machine is.
	if len(rep.Samples) < 2 || seen != len(rep.Samples) {
		t.Fatalf("%d samples, %d reported", len(rep.Samples), seen)
	}
	last := rep.Samples[len(rep.Samples)-1]
	if last.RSS <= 0 || last.HeapInuse <= 0 || last.GCGoal <= 0 || last.GoSys <= 0 || last.Goroutines <= 0 || last.Sent == 0 || last.Received == 0 {
		t.Errorf("last sample lacks figures: %+v", last)
	}
	if len(rep.Trends) != 4 {
		t.Errorf("trends %+v", rep.Trends)
	}
	assertNoQueues(ctx, t, srv.URL())
}
