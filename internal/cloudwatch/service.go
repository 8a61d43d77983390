// Package cloudwatch serves the CloudWatch API over Ferry's own metrics:
// listing and reading the one-minute SQS and SNS datapoints that
// internal/metrics keeps, and metric alarms that are kept durably, are
// evaluated each minute as CloudWatch evaluates them, keep a history, and
// notify SNS topics when their state changes.
package cloudwatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrymq/ferry/internal/arn"
	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/metrics"
	"github.com/ferrymq/ferry/internal/protocol"
)

// Notifier publishes an alarm notification to an SNS topic.
type Notifier interface {
	Notify(ctx context.Context, topicARN, subject, message string) error
}

// Config is what the service needs.
type Config struct {
	// Account and Region serve requests that name none ("000000000000",
	// "us-east-1" when empty); an alarm's ARN names its own account and
	// region, and its actions must be SNS topics of the same.
	Account, Region string
	Metrics         *metrics.Store
	// Records keeps alarms and their history.
	Records  engine.RecordStore
	Notifier Notifier
	Clock    clock.Clock // clock.Real when nil
	Logger   *slog.Logger

	// Cluster, when it is Shared, makes the service one node of several
	// on one store (cluster.go): alarms are evaluated only by the holder
	// of AlarmLease, taken for LeaseTime (DefaultAlarmLease if zero) at
	// every minute's evaluation, EvaluateAfter (DefaultEvaluateAfter if
	// zero) after the minute, on the cluster's figures; what other nodes
	// change comes in through RecordChanged.
	Cluster       metrics.Cluster
	LeaseTime     time.Duration
	EvaluateAfter time.Duration
}

// Record kinds in the engine's record store.
const (
	kindAlarm   = "cloudwatch-alarm"
	kindHistory = "cloudwatch-alarm-history"
)

// Service is the CloudWatch service. It is safe for concurrent use.
type Service struct {
	account, region string
	metrics         *metrics.Store
	records         engine.RecordStore
	notifier        Notifier
	clock           clock.Clock
	log             *slog.Logger
	proto           *protocol.Service

	// mu guards the alarms and the history, and serialises their writes:
	// each change is durable before it is visible.
	mu      sync.Mutex
	alarms  map[string]*alarm
	history []historyItem // oldest first
	seq     uint64        // tells apart history keys of one instant
	timer   clock.Timer   // the next minute's evaluation, while armed
	armed   bool
	gen     uint64 // the timer's generation: a stale tick does nothing
	closed  bool

	ctx    context.Context // ends when the service closes
	cancel context.CancelFunc
	wg     sync.WaitGroup // evaluation ticks, notifications and the follower

	cluster metrics.Cluster // nil unless Shared
	node    string          // tells this node's history keys from others'
	lease   time.Duration
	after   time.Duration      // how long after a minute its evaluation runs
	news    *engine.RecordNews // other nodes' record changes, to apply
	holding atomic.Bool        // held AlarmLease at the latest tick
	ticks   atomic.Uint64
	applied atomic.Uint64
}

// New loads the alarms and their history and starts evaluating them each
// minute.
func New(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.Records == nil || cfg.Metrics == nil {
		return nil, errors.New("cloudwatch: a record store and a metric store are required")
	}
	s := &Service{
		account:  cfg.Account,
		region:   cfg.Region,
		metrics:  cfg.Metrics,
		records:  cfg.Records,
		notifier: cfg.Notifier,
		clock:    cfg.Clock,
		log:      cfg.Logger,
		alarms:   map[string]*alarm{},
	}
	if s.account == "" {
		s.account = "000000000000"
	}
	if s.region == "" {
		s.region = "us-east-1"
	}
	if s.clock == nil {
		s.clock = clock.Real{}
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Cluster != nil && cfg.Cluster.Shared() {
		s.joinCluster(cfg)
	}
	if err := s.load(ctx); err != nil {
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.proto = s.newProtocol()
	if s.cluster != nil {
		s.wg.Add(1)
		go s.follow()
	}
	s.mu.Lock()
	s.arm()
	s.mu.Unlock()
	return s, nil
}

func (s *Service) load(ctx context.Context) error {
	if err := s.loadAlarms(ctx); err != nil {
		return err
	}
	if err := s.loadHistory(ctx); err != nil {
		return err
	}
	return s.pruneHistory(ctx, s.clock.Now())
}

// loadAlarms reads every alarm, replacing those in memory. The caller
// holds mu (or is New).
func (s *Service) loadAlarms(ctx context.Context) error {
	recs, err := s.records.Records(ctx, kindAlarm)
	if err != nil {
		return fmt.Errorf("cloudwatch: load alarms: %w", err)
	}
	alarms := make(map[string]*alarm, len(recs))
	for _, r := range recs {
		a := &alarm{stored: r.Value}
		if err := json.Unmarshal(r.Value, a); err != nil {
			return fmt.Errorf("cloudwatch: alarm %q: %w", r.Key, err)
		}
		alarms[s.key(a)] = a
	}
	s.alarms = alarms
	return nil
}

// loadHistory reads the whole history, replacing what is in memory. The
// caller holds mu (or is New).
func (s *Service) loadHistory(ctx context.Context) error {
	recs, err := s.records.Records(ctx, kindHistory)
	if err != nil {
		return fmt.Errorf("cloudwatch: load alarm history: %w", err)
	}
	history := make([]historyItem, 0, len(recs))
	for _, r := range recs {
		var h historyItem
		if err := json.Unmarshal(r.Value, &h); err != nil {
			return fmt.Errorf("cloudwatch: history item %q: %w", r.Key, err)
		}
		h.key = r.Key
		history = append(history, h)
	}
	s.history = history
	return nil
}

// Protocol is the service's description for the protocol handler.
func (s *Service) Protocol() *protocol.Service { return s.proto }

// Close stops the evaluations and waits for one under way; on a shared
// store it then gives the alarm lease up, so that another node evaluates
// from its next minute on.
func (s *Service) Close() error {
	s.mu.Lock()
	s.closed = true
	s.disarm()
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return s.leaveCluster()
}

func (s *Service) newProtocol() *protocol.Service {
	actions := []protocol.Action{
		protocol.Define("ListMetrics", s.listMetrics),
		protocol.Define("GetMetricStatistics", s.getMetricStatistics),
		protocol.Define("GetMetricData", s.getMetricData),
		protocol.Define("PutMetricAlarm", s.putMetricAlarm),
		protocol.Define("DescribeAlarms", s.describeAlarms),
		protocol.Define("DescribeAlarmsForMetric", s.describeAlarmsForMetric),
		protocol.Define("DeleteAlarms", s.deleteAlarms),
		protocol.Define("SetAlarmState", s.setAlarmState),
		protocol.Define("DescribeAlarmHistory", s.describeAlarmHistory),
		protocol.Define("EnableAlarmActions", s.enableAlarmActions),
		protocol.Define("DisableAlarmActions", s.disableAlarmActions),
		protocol.Define("TagResource", s.tagResource),
		protocol.Define("UntagResource", s.untagResource),
		protocol.Define("ListTagsForResource", s.listTagsForResource),
	}
	svc := &protocol.Service{
		// The current SDKs speak Smithy RPC v2 CBOR or AWS JSON 1.0 (the
		// JavaScript SDK v3's default); older ones and the CLI the query
		// protocol. One set of actions serves all three.
		JSONTargetPrefix: "GraniteServiceVersion20100801",
		RPCv2ServiceName: "GraniteServiceVersion20100801",
		ShapeNamespace:   "com.amazonaws.cloudwatch.v2010_08_01",
		Version:          "2010-08-01",
		XMLNamespace:     "http://monitoring.amazonaws.com/doc/2010-08-01/",
		OmitErrorDetail:  true,
		SigningName:      "monitoring",
		Actions:          make(map[string]protocol.Action, len(actions)),
	}
	for _, a := range actions {
		svc.Actions[a.Name] = a
	}
	return svc
}

// internal logs a failure of Ferry's own and answers AWS's internal error.
func (s *Service) internal(ctx context.Context, what string, err error) error {
	// A full disk or an unreachable database is a known, temporary
	// condition, logged by the store once: a 503 that SDKs retry, without
	// a line per request.
	if engine.Temporary(err) {
		return fmt.Errorf("%s: %w", what, errors.Join(protocol.ErrServiceUnavailable, err))
	}
	s.log.ErrorContext(ctx, "cloudwatch: "+what, "err", err)
	return fmt.Errorf("%s: %w", what, errors.Join(errInternal, err))
}

// alarmARN is the ARN of owner's alarm called name.
func (s *Service) alarmARN(owner, name string) string {
	account, reg := s.split(owner)
	return "arn:" + arn.Partition(reg) + ":cloudwatch:" + reg + ":" + account + ":alarm:" + name
}

// now is the service's time, in UTC and to the millisecond as CloudWatch
// keeps it.
func (s *Service) now() time.Time { return s.clock.Now().UTC().Truncate(time.Millisecond) }
