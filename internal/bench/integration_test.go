package bench_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/ferrymq/ferry/internal/bench"
	"github.com/ferrymq/ferry/internal/server"
)

// TestScenariosAgainstFerry runs every scenario briefly against a real
// in-memory Ferry and requires each to come out right (or, for a feature
// Ferry does not have yet, unsupported). Speed is never asserted.
func TestScenariosAgainstFerry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	srv, err := server.Start(ctx, server.Config{Listen: "127.0.0.1:0", Memory: true})
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
	for _, r := range rep.Results {
		switch r.Status {
		case bench.StatusOK:
			if r.Messages == 0 {
				t.Errorf("%s: ok with no messages", r.Name)
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
	client := sqs.New(sqs.Options{Region: bench.Region, BaseEndpoint: aws.String(srv.URL()),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	out, err := client.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String("fb")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.QueueUrls) > 0 {
		t.Errorf("queues left behind: %v", out.QueueUrls)
	}
}

func TestConfigRejected(t *testing.T) {
	for _, cfg := range []bench.Config{
		{Endpoint: ""},
		{Endpoint: "127.0.0.1:4566"},
		{Endpoint: "ftp://127.0.0.1"},
		{Endpoint: "http://127.0.0.1:1", Scenarios: []string{"send", "nope"}},
	} {
		if _, err := bench.Run(context.Background(), cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}
