// Package sns implements Amazon SNS over Ferry's engine: topics and
// subscriptions kept as records beside the queues, publishing with AWS's
// validation and wording, and fan-out: it decides which subscriptions
// receive a message, writes the copies for SQS queues through SQS's port
// and hands the others to package delivery, which delivers them to HTTP/S
// and email endpoints through hidden per-subscription queues, so that
// retries follow the delivery policy on the engine's clock and survive
// restarts. Subscription filter policies are a language of their own, in
// package filterpolicy.
package sns

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/metrics"
	"github.com/ferrymq/ferry/internal/protocol"
	"github.com/ferrymq/ferry/internal/sns/delivery"
)

// Config is what the SNS service needs.
type Config struct {
	// Account and Region serve requests that name none ("000000000000"
	// and "us-east-1" when empty); a topic's ARN names the account and
	// region of the request that made it.
	Account, Region string
	// Backend keeps the hidden delivery queues.
	Backend engine.Backend
	// SQS takes the copies for SQS subscriptions and every dead-letter
	// copy (sqs.Port).
	SQS SQS
	// Records keeps topics and subscriptions.
	Records engine.RecordStore
	// Sequences numbers and deduplicates the FIFO topics' messages, on
	// a store several nodes share for all of them.
	Sequences engine.Sequencer
	// Cluster is the store's side of the nodes that share it: with a
	// Shared store the service keeps its records current with the other
	// nodes' changes (RecordChanged, which the caller wires to
	// WatchRecords) and signs with the key every node reads. Nil is a
	// node alone.
	Cluster engine.Cluster
	Clock   clock.Clock // clock.Real when nil
	Logger  *slog.Logger
	// Delivery sets up deliveries: links, signing key, endpoints, logs.
	Delivery delivery.Options
	// Metrics receives the CloudWatch metrics of the topics (AWS/SNS);
	// nil records nothing. SQS counts what SNS sends into its queues.
	Metrics Recorder
}

// SQS is the way into SQS queues (sqs.Port): SNS's copies for SQS
// subscriptions and its dead-letter copies go through it, so that SQS's
// limits, digests and metrics apply to them as to SendMessage. Its
// refusals are *protocol.Error values, SQS's answer, which SNS logs as
// the delivery's outcome and does not retry (delivery.Refusal).
type SQS interface {
	delivery.SQS
	// SendMany is Send to several queues in one write.
	SendMany(ctx context.Context, queueARNs []string, msgs [][]engine.NewMessage) ([]engine.SendOutcome, error)
}

// Recorder takes one sample of a metric of an account (metrics.Store).
type Recorder interface {
	Record(account, namespace, metric string, dim metrics.Dimension, value float64)
}

// Defaults for an empty Config.
const (
	DefaultAccount = "000000000000"
	DefaultRegion  = "us-east-1"
)

// Service is the SNS service: its actions, fan-out and counters. It is
// safe for concurrent use.
type Service struct {
	account, region string
	sqs             SQS
	records         engine.RecordStore
	sequences       engine.Sequencer
	clock           clock.Clock
	log             *slog.Logger
	metrics         Recorder
	proto           *protocol.Service
	delivery        *delivery.Service
	cluster         engine.Cluster
	shared          bool // other nodes share the store (cluster.Shared)
	news            newsState
	catalog
	fan fanPool
}

// catalog is the topics and subscriptions in memory.
//
// Lock order: writeMu, then mu. writeMu serialises changes to topics and
// subscriptions (each is made durable before it is visible); mu guards
// the maps, which publishes read.
type catalog struct {
	writeMu   sync.Mutex
	mu        sync.RWMutex
	topics    map[string]*topic                   // by ARN
	subs      map[string]*subscription            // by ARN, tombstones included
	topicSubs map[string]map[string]*subscription // topic ARN → ARN → subscription
	tokens    map[string]string                   // confirmation token → subscription ARN
	platform  platformStore
}

// New starts the SNS service: it loads topics and subscriptions and
// restarts their deliveries.
func New(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.Records == nil || cfg.Sequences == nil || cfg.SQS == nil {
		return nil, errors.New("sns: a record store, a sequencer and SQS are required")
	}
	s := &Service{
		account:   cfg.Account,
		region:    cfg.Region,
		sqs:       cfg.SQS,
		records:   cfg.Records,
		sequences: cfg.Sequences,
		clock:     cfg.Clock,
		log:       cfg.Logger,
		metrics:   cfg.Metrics,
		cluster:   cfg.Cluster,
		shared:    cfg.Cluster != nil && cfg.Cluster.Shared(),
		catalog: catalog{
			topics:    map[string]*topic{},
			subs:      map[string]*subscription{},
			topicSubs: map[string]map[string]*subscription{},
			tokens:    map[string]string{},
		},
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
	opts := cfg.Delivery
	if s.shared {
		opts.SharedKey = s.sharedKey
	}
	d, err := delivery.New(delivery.Config{Account: s.account, Region: s.region, Backend: cfg.Backend, SQS: cfg.SQS,
		Subscriptions: (*deliveryHooks)(s), Clock: s.clock, Logger: s.log, Options: opts})
	if err != nil {
		return nil, err
	}
	s.delivery = d
	s.proto = s.newProtocol()
	if err := s.load(ctx); err != nil {
		d.Close()
		return nil, err
	}
	if err := s.loadPlatform(ctx); err != nil {
		d.Close()
		return nil, err
	}
	if err := d.LoadSharedKey(ctx); err != nil {
		d.Close()
		return nil, err
	}
	s.fan.ctx, s.fan.cancel = context.WithCancel(context.Background())
	s.fan.q = make(chan fanJob)
	for _, sub := range s.subs {
		if sub.Queue != "" && !sub.Deleted {
			d.Start(sub.delivery())
		}
	}
	s.pruneTombstones(ctx)
	s.startNews()
	return s, nil
}

// deliveryHooks is the service as deliveries see it (delivery.Subscriptions).
type deliveryHooks Service

// Live is the subscription and its topic as they are now.
func (h *deliveryHooks) Live(arn string) (delivery.Subscription, *delivery.Topic, bool) {
	s := (*Service)(h)
	s.mu.RLock()
	defer s.mu.RUnlock()
	sub := s.subs[arn]
	if sub == nil || sub.Deleted {
		return delivery.Subscription{}, nil, false
	}
	t := s.topics[sub.TopicARN]
	if t == nil {
		return delivery.Subscription{}, nil, false
	}
	return *sub.delivery(), t.delivery, true
}

// Count adds to the subscription's counters.
func (h *deliveryHooks) Count(arn string, c delivery.Counter, n int) {
	s := (*Service)(h)
	s.mu.RLock()
	sub := s.subs[arn]
	s.mu.RUnlock()
	if sub != nil {
		s.count(sub, deliveryCounters[c], n)
	}
}

// Failed keeps a failed attempt with the subscription's state.
func (h *deliveryHooks) Failed(arn string, f delivery.Failure) {
	s := (*Service)(h)
	s.mu.RLock()
	sub := s.subs[arn]
	s.mu.RUnlock()
	if sub != nil {
		sub.state.failed(f)
	}
}

// Protocol is the service's description for the protocol handler.
func (s *Service) Protocol() *protocol.Service { return s.proto }

// Close stops the fan-out and delivery workers and waits for the latter.
// Messages they were delivering stay in their queues and are delivered
// again after a restart.
func (s *Service) Close() error {
	s.stopNews()
	s.fan.cancel()
	return s.delivery.Close()
}

// Register adds Ferry's own SNS paths to mux: those of deliveries (the
// signing certificate, the recorded deliveries, the delivery status logs),
// the counters and the SMS opt-outs.
func (s *Service) Register(mux delivery.Mux) {
	s.delivery.Register(mux)
	mux.HandleFunc("GET /_ferry/sns/counters", s.serveCounters)
	mux.HandleFunc("POST /_ferry/sns/sms-opt-outs", s.serveOptOut)
}

// Deliveries returns the recorded deliveries of a protocol ("" for all),
// oldest first.
func (s *Service) Deliveries(protocol string) []delivery.Record { return s.delivery.Records(protocol) }

// DeliveryWaits reports when each delivery waiting on the clock is due
// (delivery.Service.Waits), for tests that move a fake clock.
func (s *Service) DeliveryWaits() []time.Time { return s.delivery.Waits() }

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
	// The SubscribeURL and UnsubscribeURL links a subscriber is sent are
	// followed unsigned, as AWS serves them.
	for i := range actions {
		if actions[i].Name == "ConfirmSubscription" || actions[i].Name == "Unsubscribe" {
			actions[i].Unsigned = true
		}
	}
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
