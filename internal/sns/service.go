// Package sns implements Amazon SNS over Ferry's engine: topics and
// subscriptions kept as records beside the queues, publishing with AWS's
// validation and wording, fan-out straight into SQS queues, and delivery
// to HTTP/S and email endpoints through hidden per-subscription queues, so
// that retries follow the delivery policy on the engine's clock and
// survive restarts. Subscription filter policies are a language of their
// own, in package filterpolicy.
package sns

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/metrics"
	"github.com/ferrymq/ferry/internal/protocol"
)

// DeliveryAccount is the engine account of the hidden delivery queues. SQS
// serves one account only, so its clients never see them.
const DeliveryAccount = "sns-delivery"

// Config is what the SNS service needs.
type Config struct {
	// Account and Region name topics in ARNs ("000000000000" and
	// "us-east-1" when empty).
	Account, Region string
	// Backend keeps the hidden delivery queues.
	Backend engine.Backend
	// SQS takes the copies for SQS subscriptions and every dead-letter
	// copy (sqs.Port).
	SQS SQS
	// Records keeps topics and subscriptions.
	Records engine.RecordStore
	Clock   clock.Clock // clock.Real when nil
	Logger  *slog.Logger
	// BaseURL is the scheme://host:port Ferry is reached at; SubscribeURL,
	// UnsubscribeURL and SigningCertURL point there.
	BaseURL string
	// SignerDir keeps the message signing key and certificate; "" keeps
	// them in memory (signatures then change with every start).
	SignerDir string
	// HTTPClient delivers to HTTP/S endpoints; when nil one is built that
	// trusts the system roots plus CABundle (a PEM file), if set. Its
	// Timeout is not used: the 15 s delivery timeout runs on Clock.
	HTTPClient *http.Client
	CABundle   string
	// SMTPAddr (host:port) and SMTPFrom deliver email subscriptions; with
	// no SMTPAddr email deliveries are only recorded.
	SMTPAddr, SMTPFrom string
	// DeliveryStatusLog is where delivery status lines go (topics'
	// <P>SuccessFeedbackRoleArn and related attributes): a file, appended
	// to, or "-" for stdout; "" keeps them in memory only.
	DeliveryStatusLog string
	// Metrics receives the CloudWatch metrics of the topics (AWS/SNS);
	// nil records nothing. SQS counts what SNS sends into its queues.
	Metrics Recorder
}

// SQS is the way into SQS queues (sqs.Port): SNS's copies for SQS
// subscriptions and its dead-letter copies go through it, so that SQS's
// limits, digests and metrics apply to them as to SendMessage. Its
// refusals are *protocol.Error values, SQS's answer, which SNS logs as
// the delivery's outcome and does not retry.
type SQS interface {
	// Message builds a message for a queue, digests included, and returns
	// SQS's refusal of it, if any, with it.
	Message(body string, attrs []engine.MessageAttribute, senderID string) (engine.NewMessage, error)
	// Send writes msgs into the queue queueARN names.
	Send(ctx context.Context, queueARN string, msgs []engine.NewMessage) ([]engine.SendResult, error)
	// SendMany is Send to several queues in one write.
	SendMany(ctx context.Context, queueARNs []string, msgs [][]engine.NewMessage) ([]engine.SendOutcome, error)
}

// Recorder takes one sample of a metric (metrics.Store).
type Recorder interface {
	Record(namespace, metric string, dim metrics.Dimension, value float64)
}

// Defaults for an empty Config.
const (
	DefaultAccount = "000000000000"
	DefaultRegion  = "us-east-1"
	defaultFrom    = "no-reply@sns.amazonaws.com"
)

// httpTimeout is how long SNS waits for an HTTP/S endpoint.
const httpTimeout = 15 * time.Second

// Service is the SNS service: its actions, its delivery workers and its
// counters. It is safe for concurrent use.
type Service struct {
	account, region string
	backend         engine.Backend
	sqs             SQS
	records         engine.RecordStore
	clock           clock.Clock
	log             *slog.Logger
	baseURL         string
	keys            *keyring
	client          *http.Client
	smtpAddr        string
	smtpFrom        string
	metrics         Recorder
	// jitter spreads a retry delay; tests replace it.
	jitter func(time.Duration) time.Duration

	proto *protocol.Service

	// Lock order: writeMu, then mu. writeMu serialises changes to topics
	// and subscriptions (each is made durable before it is visible); mu
	// guards the maps, which publishes read.
	writeMu   sync.Mutex
	mu        sync.RWMutex
	topics    map[string]*topic                   // by ARN
	subs      map[string]*subscription            // by ARN, tombstones included
	topicSubs map[string]map[string]*subscription // topic ARN → ARN → subscription
	tokens    map[string]string                   // confirmation token → subscription ARN
	workers   map[string]*worker                  // subscription ARN → its delivery worker
	platform  platformStore

	deliveries *deliveryLog
	statusLog  *statusLog

	// fanq hands subscriptions of a fan-out to idle fan-out workers;
	// fanWorkers counts the workers (fanout.go).
	fanq       chan fanJob
	fanWorkers atomic.Int32

	ctx    context.Context // ends when the service closes
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New starts the SNS service: it loads topics and subscriptions and
// restarts the delivery workers.
func New(ctx context.Context, cfg Config) (_ *Service, err error) {
	if cfg.Backend == nil || cfg.Records == nil || cfg.SQS == nil {
		return nil, errors.New("sns: a backend, a record store and SQS are required")
	}
	s := &Service{
		account:   cfg.Account,
		region:    cfg.Region,
		backend:   cfg.Backend,
		sqs:       cfg.SQS,
		records:   cfg.Records,
		clock:     cfg.Clock,
		log:       cfg.Logger,
		baseURL:   strings.TrimRight(cfg.BaseURL, "/"),
		client:    cfg.HTTPClient,
		smtpAddr:  cfg.SMTPAddr,
		smtpFrom:  cfg.SMTPFrom,
		metrics:   cfg.Metrics,
		jitter:    defaultJitter,
		topics:    map[string]*topic{},
		subs:      map[string]*subscription{},
		topicSubs: map[string]map[string]*subscription{},
		tokens:    map[string]string{},
		workers:   map[string]*worker{},
	}
	if s.account == "" {
		s.account = DefaultAccount
	}
	if s.region == "" {
		s.region = DefaultRegion
	}
	if s.clock == nil {
		s.clock = clock.Real{}
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.baseURL == "" {
		s.baseURL = "http://localhost"
	}
	if s.smtpFrom == "" {
		s.smtpFrom = defaultFrom
	}
	s.deliveries = newDeliveryLog(deliveryLogSize, deliveryLogBytes)
	if s.statusLog, err = openStatusLog(cfg.DeliveryStatusLog); err != nil {
		return nil, err
	}
	// Until New succeeds, failures below must close the log.
	defer func() {
		if err != nil {
			s.statusLog.close()
		}
	}()
	s.keys = &keyring{make: NewMemorySigner}
	if dir := cfg.SignerDir; dir != "" {
		s.keys.make = func() (*Signer, error) { return LoadOrCreateSigner(dir, s.clock.Now()) }
		var exists bool
		if exists, err = signerExists(dir); err != nil {
			return nil, fmt.Errorf("sns: signing key: %w", err)
		}
		if exists {
			if _, err = s.keys.get(); err != nil {
				return nil, err
			}
		}
	}
	if s.client == nil {
		if s.client, err = newHTTPClient(cfg.CABundle); err != nil {
			return nil, err
		}
	}
	s.proto = s.newProtocol()
	if err := s.load(ctx); err != nil {
		return nil, err
	}
	if err := s.loadPlatform(ctx); err != nil {
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.fanq = make(chan fanJob)
	for _, sub := range s.subs {
		if sub.Queue != "" && !sub.Deleted {
			s.startWorker(sub)
		}
	}
	s.pruneTombstones(ctx)
	return s, nil
}

// newHTTPClient builds the client of HTTP/S deliveries. Redirects are not
// followed: SNS counts any 3xx as delivered.
func newHTTPClient(caBundle string) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
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

// Protocol is the service's description for the protocol handler.
func (s *Service) Protocol() *protocol.Service { return s.proto }

// Close stops the delivery workers and waits for them. Messages they were
// delivering stay in their queues and are delivered again after a restart.
func (s *Service) Close() error {
	s.cancel()
	s.wg.Wait()
	return s.statusLog.close()
}

func (s *Service) newProtocol() *protocol.Service {
	actions := []protocol.Action{
		protocol.Define("CreateTopic", s.createTopic),
		protocol.Define("DeleteTopic", s.deleteTopic),
		protocol.Define("ListTopics", s.listTopics),
		protocol.Define("GetTopicAttributes", s.getTopicAttributes),
		protocol.Define("SetTopicAttributes", s.setTopicAttributes),
		protocol.Define("Subscribe", s.subscribe),
		protocol.Define("ConfirmSubscription", s.confirmSubscription),
		protocol.Define("Unsubscribe", s.unsubscribe),
		protocol.Define("ListSubscriptions", s.listSubscriptions),
		protocol.Define("ListSubscriptionsByTopic", s.listSubscriptionsByTopic),
		protocol.Define("GetSubscriptionAttributes", s.getSubscriptionAttributes),
		protocol.Define("SetSubscriptionAttributes", s.setSubscriptionAttributes),
		protocol.Define("Publish", s.publish),
		protocol.Define("PublishBatch", s.publishBatch),
		protocol.Define("TagResource", s.tagResource),
		protocol.Define("UntagResource", s.untagResource),
		protocol.Define("ListTagsForResource", s.listTagsForResource),
		protocol.Define("AddPermission", s.addPermission),
		protocol.Define("RemovePermission", s.removePermission),
		protocol.Define("GetDataProtectionPolicy", s.getDataProtectionPolicy),
		protocol.Define("PutDataProtectionPolicy", s.putDataProtectionPolicy),
	}
	actions = append(actions, s.platformActions()...)
	svc := &protocol.Service{
		ShapeNamespace:  "com.amazonaws.sns",
		Version:         "2010-03-31",
		XMLNamespace:    "http://sns.amazonaws.com/doc/2010-03-31/",
		EmptyResult:     true,
		OmitErrorDetail: true,
		SigningName:     "sns",
		Actions:         make(map[string]protocol.Action, len(actions)),
	}
	for _, a := range actions {
		svc.Actions[a.Name] = a
	}
	return svc
}
