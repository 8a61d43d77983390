// Package ferrytest runs a Ferry inside a Go test: an SQS, SNS and
// CloudWatch endpoint on 127.0.0.1 with an in-memory store, on a clock
// that moves only when the test says so, with fault injection and the
// failure history on. A test walks a message through retries, the
// dead-letter queue and a redrive in milliseconds instead of the minutes
// and days the real timeouts take.
//
//	f := ferrytest.Start(t)
//	client := sqs.NewFromConfig(f.Config())
//	... send, receive ...
//	f.Advance(30 * time.Second) // the visibility timeout runs out
//
// Everything timed follows the clock: visibility timeouts, delays, long
// polls, retention, deduplication windows, purges, move tasks, SNS
// retries, CloudWatch datapoints and alarms. The AWS SDK's own retries and
// timeouts stay on the wall clock, as does SigV4's check of the request's
// time. On the frozen clock a long poll of an empty queue waits until a
// message comes or the test advances the clock past its wait: give
// receives WaitTimeSeconds 0, or advance from another goroutine.
package ferrytest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine/embedded"
	"github.com/ferrymq/ferry/internal/faults"
	"github.com/ferrymq/ferry/internal/server"
	"github.com/ferrymq/ferry/internal/topology"
)

// Fault is a fault rule: which SQS actions or SNS deliveries it matches,
// how many of them (Count, or a Fraction with a Seed), and what happens to
// them. The README's "Make things fail on purpose" describes each field;
// they are those of POST /_ferry/faults.
type Fault = faults.Rule

// FaultListing is every rule in force with its counts.
type FaultListing = faults.Listing

// History is a message's failure history: its receives (with the
// consumer's address, user agent and access key), the expiries of their
// visibility, its moves, and for SNS deliveries each attempt.
type History = server.History

// HistoryEvent is one event of a History.
type HistoryEvent = server.HistoryEvent

// Ferry is a running in-process Ferry. Its methods are safe to call from
// several goroutines.
type Ferry struct {
	srv   *server.Server
	clock *clock.Controlled
	cfg   server.Config
}

// Option changes how Start or New runs Ferry.
type Option func(*options) error

type options struct {
	cfg     server.Config
	running bool
}

// WithAccount serves account (12 digits) instead of 000000000000.
func WithAccount(id string) Option {
	return func(o *options) error { o.cfg.Account = id; return nil }
}

// WithRegion names region in ARNs and URLs instead of us-east-1.
func WithRegion(region string) Option {
	return func(o *options) error { o.cfg.Region = region; return nil }
}

// WithLogger sends Ferry's logs to l; by default they are discarded.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error { o.cfg.Logger = l; return nil }
}

// WithTopologyFile creates the queues, topics, subscriptions and alarms of
// a topology file (the format of ferry serve --init) before Start returns.
func WithTopologyFile(path string) Option {
	return func(o *options) error {
		t, err := topology.LoadFile(path)
		if err != nil {
			return err
		}
		o.cfg.Init = t
		return nil
	}
}

// WithRunningClock starts the clock running with the wall clock (it can
// still be frozen, set and advanced) instead of frozen.
func WithRunningClock() Option {
	return func(o *options) error { o.running = true; return nil }
}

// WithoutFailureHistory turns the failure history off, as in production
// with --failure-history=false.
func WithoutFailureHistory() Option {
	return func(o *options) error { o.cfg.NoFailureHistory = true; return nil }
}

// Start runs a Ferry for the test and stops it when the test ends; a
// failure to start fails the test. The clock starts frozen at the wall
// clock's time.
func Start(tb testing.TB, opts ...Option) *Ferry {
	tb.Helper()
	f, err := New(context.Background(), opts...)
	if err != nil {
		tb.Fatalf("ferrytest: %v", err)
	}
	tb.Cleanup(func() {
		if err := f.Close(); err != nil {
			tb.Errorf("ferrytest: stop: %v", err)
		}
	})
	return f
}

// New runs a Ferry until Close, for code that has no testing.TB (an
// example, a TestMain).
func New(ctx context.Context, opts ...Option) (*Ferry, error) {
	clk := clock.NewControlled()
	o := options{cfg: server.Config{
		Listen:         "127.0.0.1:0",
		Account:        server.DefaultAccount,
		Region:         server.DefaultRegion,
		Clock:          clk,
		ClockControl:   true,
		FaultInjection: true,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	}}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if !o.running {
		clk.Freeze()
	}
	store, err := embedded.Open(ctx, embedded.Options{InMemory: true, Clock: clk, Logger: o.cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("open the in-memory store: %w", err)
	}
	o.cfg.Store, o.cfg.StoreName = store, "memory"
	srv, err := server.Start(ctx, o.cfg)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("start: %w", err)
	}
	return &Ferry{srv: srv, clock: clk, cfg: o.cfg}, nil
}

// Close stops Ferry: long polls end empty, and everything it held is gone.
func (f *Ferry) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return f.srv.Shutdown(ctx)
}

// URL is Ferry's endpoint, e.g. http://127.0.0.1:39127.
func (f *Ferry) URL() string { return f.srv.URL() }

// Config is an AWS SDK configuration for this Ferry: its endpoint and
// region, and static credentials of its account. Give it to
// sqs.NewFromConfig, sns.NewFromConfig or cloudwatch.NewFromConfig.
func (f *Ferry) Config() aws.Config {
	return aws.Config{
		Region:       f.cfg.Region,
		BaseEndpoint: aws.String(f.URL()),
		// An access key of 12 digits names the account its requests act
		// in (Ferry does so with auth off).
		Credentials: credentials.NewStaticCredentialsProvider(f.cfg.Account, "ferrytest", ""),
	}
}

// Now is Ferry's time.
func (f *Ferry) Now() time.Time { return f.clock.Now() }

// Advance moves Ferry's time forward by d, through every instant at which
// something was due (a visibility timeout, a retry, a datapoint), each in
// turn, and returns when the work they started is done: the state is the
// one d of real time would have left. It panics on a negative d, as time
// never goes back.
func (f *Ferry) Advance(d time.Duration) time.Time {
	if d < 0 {
		panic(fmt.Sprintf("ferrytest: Advance(%v): time never goes back", d))
	}
	st, err := f.clock.Advance(context.Background(), d)
	if err != nil {
		// Only a cancelled context stops a move, and Background is never
		// cancelled.
		panic(fmt.Sprintf("ferrytest: Advance(%v): %v", d, err))
	}
	return st.Now
}

// SetTime moves Ferry's time forward to t, as Advance does; a t before
// Ferry's now is refused.
func (f *Ferry) SetTime(t time.Time) error {
	_, err := f.clock.Set(context.Background(), t)
	return err
}

// Freeze stops Ferry's time where it is.
func (f *Ferry) Freeze() { f.clock.Freeze() }

// Resume lets Ferry's time run again with the wall clock, from where it
// stood.
func (f *Ferry) Resume() { f.clock.Resume() }

// AddFault puts a fault rule in force and returns its id.
func (f *Ferry) AddFault(rule Fault) (string, error) {
	st, err := f.srv.Faults().Add(rule)
	if err != nil {
		return "", err
	}
	return st.ID, nil
}

// RemoveFault ends the rule of id; false if there was none.
func (f *Ferry) RemoveFault(id string) bool { return f.srv.Faults().Remove(id) }

// ClearFaults ends every rule.
func (f *Ferry) ClearFaults() { f.srv.Faults().Clear() }

// Faults lists the rules in force with how often each matched and struck.
func (f *Ferry) Faults() FaultListing { return f.srv.Faults().List() }

// ErrNoHistory is History's error for a message that the queue does not
// hold, or that nobody received.
var ErrNoHistory = server.ErrNoHistory

// History is the failure history of the message messageID in the queue
// of queueURL (a URL or an ARN).
func (f *Ferry) History(ctx context.Context, queueURL, messageID string) (History, error) {
	return f.srv.MessageHistory(ctx, queueURL, messageID)
}
