// Package delivery is how SNS's notifications leave it: the signed JSON
// envelopes, the delivery to HTTP/S and email endpoints through hidden
// per-subscription queues that workers drain, so that retries follow the
// delivery policy on the engine's timers and survive restarts, the
// delivery policies themselves, the dead-letter copies of what is given
// up, the recorded deliveries of the protocols Ferry cannot reach, and the
// delivery status logs.
//
// Package sns keeps topics and subscriptions and decides who receives what;
// it tells this package of every change (Start, Stop, CreateQueue, ...)
// and answers, through Subscriptions, how a subscription is at the moment
// of an attempt.
package delivery

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/egress"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/faults"
	"github.com/ferrymq/ferry/internal/sns/filterpolicy"
)

// Subscription protocols.
const (
	ProtoHTTP        = "http"
	ProtoHTTPS       = "https"
	ProtoEmail       = "email"
	ProtoEmailJSON   = "email-json"
	ProtoSMS         = "sms"
	ProtoSQS         = "sqs"
	ProtoApplication = "application"
	ProtoLambda      = "lambda"
	ProtoFirehose    = "firehose"
)

// SenderID is the SenderId of the messages SNS puts into SQS queues.
const SenderID = "AIDAIT2UOQQY3AUEKVGXU"

// Config is what deliveries need.
type Config struct {
	// Account and Region name the log groups of delivery status lines and
	// the ARNs of the delivery queues.
	Account, Region string
	// Backend keeps the delivery queues, in account QueueAccount.
	Backend engine.Backend
	// SQS takes the dead-letter copies (sqs.Port).
	SQS SQS
	// Subscriptions is SNS's side: how a subscription is at each attempt,
	// and its counters.
	Subscriptions Subscriptions
	Clock         clock.Clock // required
	Logger        *slog.Logger
	Options
}

// Options are the settings of deliveries that Ferry's configuration gives.
type Options struct {
	// BaseURL is the scheme://host:port Ferry is reached at; SubscribeURL,
	// UnsubscribeURL and SigningCertURL point there.
	BaseURL string
	// SignerDir keeps the message signing key and certificate; "" keeps
	// them in memory (signatures then change with every start).
	SignerDir string
	// SharedKey, when set, keeps them instead where every node sharing
	// the store reads the same ones (engine.Cluster.Secret): it returns
	// the stored value, first storing what create makes if there is none.
	// SignerDir is then not used.
	SharedKey func(ctx context.Context, create func() ([]byte, error)) ([]byte, error)
	// HTTPClient delivers to HTTP/S endpoints; when nil one is built that
	// trusts the system roots plus CABundle (a PEM file), if set. Its
	// Timeout is not used: the 15 s delivery timeout runs on Clock.
	HTTPClient *http.Client
	CABundle   string
	// Egress, when set, refuses deliveries (and their connections, after
	// name resolution) to addresses it does not admit: loopback,
	// link-local, private ranges and the like, unless allow-listed. Proxies
	// from the environment are then not used, as they would connect for
	// Ferry where no check runs. Not used with HTTPClient.
	Egress *egress.Policy
	// SMTPAddr (host:port) and SMTPFrom deliver email subscriptions; with
	// no SMTPAddr email deliveries are only recorded.
	SMTPAddr, SMTPFrom string
	// Faults, when set, may make deliveries fail, time out, vanish or
	// arrive twice on purpose.
	Faults *faults.Set
	// StatusLog is where delivery status lines go (topics'
	// <P>SuccessFeedbackRoleArn and related attributes): a file, appended
	// to, or "-" for stdout; "" keeps them in memory only.
	StatusLog string
	// History records every failed delivery attempt in the delivery's
	// history, and gives a delivery sent to a subscription's dead-letter
	// queue its story there (engine.HistoryReader).
	History bool
}

// SQS is the way into SQS queues (sqs.Port). Its refusals are SQS's
// answers, *protocol.Error values, which SNS does not retry.
type SQS interface {
	// Message builds a message for a queue, digests included, and returns
	// SQS's refusal of it, if any, with it.
	Message(body string, attrs []engine.MessageAttribute, senderID string) (engine.NewMessage, error)
	// Send writes msgs into the queue queueARN names.
	Send(ctx context.Context, queueARN string, msgs []engine.NewMessage) ([]engine.SendResult, error)
	// MaySNSSend reports whether the topic may send into the queue, as
	// the queue's policy decides it; an error is the store's.
	MaySNSSend(ctx context.Context, topicARN, queueARN string) (bool, error)
}

// Subscriptions is SNS's side of deliveries.
type Subscriptions interface {
	// Live is the subscription arn and its topic as they are now; ok is
	// false once either is gone.
	Live(arn string) (sub Subscription, t *Topic, ok bool)
	// Stored is the subscription as the store has it at this moment (ok
	// false once it is gone or unsubscribed), for a worker whose delivery
	// queue has gone: another node may have removed the subscription an
	// instant ago, which this node's Live does not show yet, and the queue
	// must not come back for a subscription that is gone.
	Stored(ctx context.Context, arn string) (sub Subscription, ok bool, err error)
	// Count adds n to one of the subscription's counters.
	Count(arn string, c Counter, n int)
	// Failed tells of a notification's failed attempt.
	Failed(arn string, f Failure)
	// Deliver delivers a retried notification of an at-once subscription
	// (not NeedsQueue) into its endpoint, as a publish does: for SQS the
	// copy SQS gets, group and dedup its FIFO ids. An error SQS refuses it
	// with (Refusal) is a client-side error; another is server-side.
	Deliver(ctx context.Context, t *Topic, sub *Subscription, m *Message, group, dedup string) error
}

// Failure is a notification's failed delivery attempt.
type Failure struct {
	At time.Time
	// Status is the endpoint's HTTP status; 0 when none came.
	Status int
	// Error is the start of the answer's body, or why none came.
	Error string
	// Endpoint is the subscription's, masked (MaskEndpoint).
	Endpoint string
	// Retry: the message will be tried again.
	Retry bool
}

// Counter names a count deliveries make of a subscription.
type Counter int

const (
	Delivered     Counter = iota // delivered to the endpoint
	Failed                       // an attempt failed (HTTP/S) or the message was given up
	Redriven                     // given up and put into the dead-letter queue
	RedriveFailed                // given up, and the dead-letter queue would not take it
)

// Subscription is what deliveries need of a subscription, as it is now.
type Subscription struct {
	ARN, TopicARN, Protocol, Endpoint string
	Raw                               bool // RawMessageDelivery
	Pending                           bool // waits for its confirmation
	Token                             string
	// Queue is its delivery queue (NeedsQueue); "" when it has none.
	Queue string
	// DeadLetter is its dead-letter queue's ARN; "" when it has none.
	DeadLetter string
	// Policy is its parsed DeliveryPolicy; nil when it has none.
	Policy *SubscriptionPolicy
}

// Message is a published message as deliveries carry it.
type Message struct {
	ID        string
	Body      string
	Subject   string
	Timestamp time.Time
	// PerProtocol holds MessageStructure=json's strings by protocol key;
	// nil for a plain message.
	PerProtocol map[string]string
	// Attributes are the message attributes as published.
	Attributes map[string]filterpolicy.Attribute
	Sequence   string // FIFO topics only

	sigMu sync.Mutex
	sigs  map[string]string // message text → signature of its envelope
}

// StructureDefault is the MessageStructure=json member for protocols that
// have none of their own.
const StructureDefault = "default"

// Structured reports MessageStructure=json: subscribers get their
// protocol's string and no message attributes.
func (m *Message) Structured() bool { return m.PerProtocol != nil }

// TextFor is the message a subscriber of protocol receives.
func (m *Message) TextFor(protocol string) string {
	if m.PerProtocol == nil {
		return m.Body
	}
	if v, ok := m.PerProtocol[protocol]; ok {
		return v
	}
	return m.PerProtocol[StructureDefault]
}

// Delivered are the attributes subscribers see.
func (m *Message) Delivered() map[string]filterpolicy.Attribute {
	if m.Structured() {
		return nil
	}
	return m.Attributes
}

// Service delivers notifications. It is safe for concurrent use.
type Service struct {
	account, region string
	backend         engine.Backend
	sqs             SQS
	subs            Subscriptions
	clock           clock.Clock
	log             *slog.Logger
	env             envelopes
	client          *http.Client
	mail            mailer
	// jitter spreads a retry delay; tests replace it.
	jitter  func(time.Duration) time.Duration
	records *recordLog
	status  *statusLog
	// sharedKey is Options.SharedKey.
	sharedKey func(ctx context.Context, create func() ([]byte, error)) ([]byte, error)
	bg        background
	waits     deliveryWaits
	faults    *faults.Set
	// history is Options.History.
	history bool
}

// background is the work deliveries do besides their callers: the
// subscriptions' workers and unsubscribe confirmations. Close ends it.
type background struct {
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	workers map[string]*worker // subscription ARN → its worker
}

// Defaults for an empty Config.
const defaultFrom = "no-reply@sns.amazonaws.com"

// New prepares deliveries; Start starts each subscription's worker.
func New(cfg Config) (_ *Service, err error) {
	if cfg.Backend == nil || cfg.SQS == nil || cfg.Subscriptions == nil || cfg.Clock == nil || cfg.Logger == nil {
		return nil, errors.New("sns delivery: a backend, SQS, the subscriptions, a clock and a logger are required")
	}
	d := &Service{
		account: cfg.Account,
		region:  cfg.Region,
		backend: cfg.Backend,
		sqs:     cfg.SQS,
		subs:    cfg.Subscriptions,
		clock:   cfg.Clock,
		log:     cfg.Logger,
		env:     envelopes{base: strings.TrimRight(cfg.BaseURL, "/")},
		client:  cfg.HTTPClient,
		mail:    mailer{addr: cfg.SMTPAddr, from: cfg.SMTPFrom},
		jitter:  defaultJitter,
		records: newRecordLog(recordLogSize, recordLogBytes),

		sharedKey: cfg.SharedKey,
		faults:    cfg.Faults,
		history:   cfg.History,
	}
	if d.env.base == "" {
		d.env.base = "http://localhost"
	}
	if d.mail.from == "" {
		d.mail.from = defaultFrom
	}
	if d.status, err = openStatusLog(cfg.StatusLog); err != nil {
		return nil, err
	}
	// Until New succeeds, failures below must close the log.
	defer func() {
		if err != nil {
			d.status.close()
		}
	}()
	d.env.keys = &keyring{make: NewMemorySigner}
	if shared := cfg.SharedKey; shared != nil {
		d.env.keys.make = func() (*Signer, error) {
			ctx, cancel := context.WithTimeout(d.bg.ctx, sharedKeyTimeout)
			defer cancel()
			v, err := shared(ctx, func() ([]byte, error) { return newSharedSigner(d.clock.Now()) })
			if err != nil {
				return nil, fmt.Errorf("sns: signing key: %w", err)
			}
			return sharedSigner(v, d.clock.Now())
		}
	} else if dir := cfg.SignerDir; dir != "" {
		d.env.keys.make = func() (*Signer, error) { return LoadOrCreateSigner(dir, d.clock.Now()) }
		var exists bool
		if exists, err = signerExists(dir); err != nil {
			return nil, fmt.Errorf("sns: signing key: %w", err)
		}
		if exists {
			if _, err = d.env.keys.get(); err != nil {
				return nil, err
			}
		}
	}
	if d.client == nil {
		if d.client, err = newHTTPClient(cfg.CABundle, cfg.Egress); err != nil {
			return nil, err
		}
	}
	d.bg.ctx, d.bg.cancel = context.WithCancel(context.Background())
	d.bg.workers = map[string]*worker{}
	return d, nil
}

// sharedKeyTimeout bounds reading (or storing) the shared signing key for
// a signature, whose callers carry no context of their own.
const sharedKeyTimeout = 30 * time.Second

// errNoSharedKey: LoadSharedKey found no key stored yet.
var errNoSharedKey = errors.New("no shared signing key yet")

// LoadSharedKey reads the signing key that another node made and stored
// (Options.SharedKey), so that this node serves its certificate before it
// signs anything itself. A key not made yet is left to the first
// signature, as making one is slow. Without SharedKey it does nothing.
func (d *Service) LoadSharedKey(ctx context.Context) error {
	if d.sharedKey == nil || d.env.keys.signer.Load() != nil {
		return nil
	}
	v, err := d.sharedKey(ctx, func() ([]byte, error) { return nil, errNoSharedKey })
	switch {
	case errors.Is(err, errNoSharedKey):
		return nil
	case err != nil:
		return fmt.Errorf("sns: read signing key: %w", err)
	}
	s, err := sharedSigner(v, d.clock.Now())
	if err != nil {
		return err
	}
	d.env.keys.set(s)
	return nil
}

// newHTTPClient builds the client of HTTP/S deliveries. Redirects are not
// followed: SNS counts any 3xx as delivered (and a followed redirect would
// lead past guard's check of the endpoint). Certificates are verified
// against the system roots plus caBundle.
func newHTTPClient(caBundle string, guard *egress.Policy) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if guard != nil {
		tr.Proxy = nil
		tr.DialContext = guard.DialContext(&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second})
	}
	if caBundle != "" {
		pem, err := os.ReadFile(caBundle)
		if err != nil {
			return nil, fmt.Errorf("sns: read CA bundle: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("sns: CA bundle %s holds no PEM certificate", caBundle)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, nil
}

// defaultJitter moves d by up to ±10%, so that endpoints that failed
// together are not retried together.
func defaultJitter(d time.Duration) time.Duration {
	spread := int64(d) / 10
	if spread <= 0 {
		return d
	}
	return d - time.Duration(spread) + time.Duration(rand.Int64N(2*spread+1))
}

// Close stops the workers and waits for them. Messages they were
// delivering stay in their queues and are delivered again after a restart.
func (d *Service) Close() error {
	d.bg.cancel()
	d.bg.wg.Wait()
	return d.status.close()
}

// Mux is where Register adds paths: an *http.ServeMux, or the server's
// table of routes, which decides who may use each.
type Mux interface {
	HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request))
}

// Register adds the paths of deliveries to mux: the signing certificate
// (where SigningCertURL points, added once the key exists), the recorded
// deliveries and the delivery status logs.
func (d *Service) Register(mux Mux) {
	d.env.keys.register(mux)
	mux.HandleFunc("GET /_ferry/sns/deliveries", d.serveRecords)
	mux.HandleFunc("DELETE /_ferry/sns/deliveries", func(w http.ResponseWriter, r *http.Request) {
		d.records.clear()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /_ferry/sns/delivery-logs", d.serveStatusLog)
	mux.HandleFunc("DELETE /_ferry/sns/delivery-logs", func(w http.ResponseWriter, r *http.Request) {
		d.status.clear()
		w.WriteHeader(http.StatusNoContent)
	})
}

// sleep waits on the service's clock; false if ctx ended first. The wait
// of delivery wk, if any, is recorded once its timer is set. As
// clock.Sleep, it releases the holds ctx carries while it waits and keeps
// there the hold of the step that woke it.
func (d *Service) sleep(ctx context.Context, wait time.Duration, wk *waitKey) bool {
	if wait <= 0 {
		return ctx.Err() == nil
	}
	var hold uint64
	if wk != nil {
		hold = d.waits.hold(*wk)
	}
	at := d.clock.Now().Add(wait)
	due := make(chan func(), 1)
	t := d.clock.AfterFunc(wait, func() { due <- clock.Hold(d.clock) })
	if wk != nil {
		d.waits.until(*wk, hold, at)
	}
	if h := clock.HoldsOf(ctx); h != nil {
		h.Release()
	}
	select {
	case rel := <-due:
		clock.Pass(ctx, rel)
		return true
	case <-ctx.Done():
		if !t.Stop() {
			(<-due)() // fired: its callback sends
		}
		return false
	}
}

// now is the service's time, for deliveries recorded now.
func (d *Service) now() time.Time { return d.clock.Now().UTC() }
