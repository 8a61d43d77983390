// Package sqs implements the Amazon SQS actions over an engine.Backend: the
// validation, limits and error wording of AWS, queue URLs and ARNs,
// attribute arithmetic and message digests. Handlers are protocol-agnostic;
// the protocol package decodes their inputs and encodes their outputs from
// the struct tags in types.go.
package sqs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/faults"
	"github.com/ferrymq/ferry/internal/metrics"
	"github.com/ferrymq/ferry/internal/protocol"
	"github.com/ferrymq/ferry/internal/region"
)

// Config is what the SQS service needs.
type Config struct {
	// Account is the account id in queue URLs and ARNs ("000000000000" if
	// empty); queues of other accounts do not exist.
	Account string
	// Region is the home region ("us-east-1" if empty): of requests that
	// name none, and of the queues kept under the bare account
	// (region.Owner); a queue's ARN names its own region.
	Region  string
	Backend engine.Backend
	Clock   clock.Clock // clock.Real if nil
	Logger  *slog.Logger
	// QueueURLBase prefixes queue URLs, e.g. "http://localhost:4566"; empty
	// means the request's scheme (http, or https over TLS) and Host.
	QueueURLBase string
	// Metrics receives the CloudWatch-style counts of the message actions;
	// nil records nothing.
	Metrics Recorder
	// Activity, when set, learns of every action on a queue (for
	// CloudWatch's "active queue" rule).
	Activity Toucher
	// Faults, when set, may make actions wait or fail on purpose.
	Faults *faults.Set
	// FailureHistory records every receive, with its consumer, in the
	// history of the messages it hands out (engine.HistoryReader).
	FailureHistory bool
}

// Recorder takes samples of a metric of an account's queue
// (metrics.Store): one call's values together, as one record.
type Recorder interface {
	RecordSample(account, namespace, metric string, dim metrics.Dimension, v metrics.Sample)
}

// Defaults for an empty Config.
const (
	DefaultAccount = "000000000000"
	DefaultRegion  = "us-east-1"
)

// service holds the handlers' shared state. Its Port holds the account,
// region, backend and metrics, and writes what the actions send.
type service struct {
	*Port
	clock    clock.Clock
	log      *slog.Logger
	urlBase  string
	activity Toucher
	policies policyCache
	history  bool // Config.FailureHistory
}

// NewService returns the SQS service with every action.
func NewService(cfg Config) *protocol.Service {
	s := &service{
		Port:     NewPort(cfg),
		clock:    cfg.Clock,
		log:      cfg.Logger,
		urlBase:  strings.TrimRight(cfg.QueueURLBase, "/"),
		activity: cfg.Activity,
		history:  cfg.FailureHistory,
	}
	if s.clock == nil {
		s.clock = clock.Real{}
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	actions := []protocol.Action{
		protocol.Define("CreateQueue", s.createQueue),
		protocol.Define("GetQueueUrl", s.getQueueURL),
		protocol.Define("ListQueues", s.listQueues),
		protocol.Define("DeleteQueue", s.deleteQueue),
		protocol.Define("GetQueueAttributes", s.getQueueAttributes),
		protocol.Define("SetQueueAttributes", s.setQueueAttributes),
		protocol.Define("PurgeQueue", s.purgeQueue),
		protocol.Define("TagQueue", s.tagQueue),
		protocol.Define("UntagQueue", s.untagQueue),
		protocol.Define("ListQueueTags", s.listQueueTags),
		protocol.Define("AddPermission", s.addPermission),
		protocol.Define("RemovePermission", s.removePermission),
		protocol.Define("SendMessage", s.sendMessage),
		protocol.Define("SendMessageBatch", s.sendMessageBatch),
		protocol.Define("ReceiveMessage", s.receiveMessage),
		protocol.Define("DeleteMessage", s.deleteMessage),
		protocol.Define("DeleteMessageBatch", s.deleteMessageBatch),
		protocol.Define("ChangeMessageVisibility", s.changeMessageVisibility),
		protocol.Define("ChangeMessageVisibilityBatch", s.changeMessageVisibilityBatch),
		protocol.Define("ListDeadLetterSourceQueues", s.listDeadLetterSourceQueues),
		protocol.Define("StartMessageMoveTask", s.startMessageMoveTask),
		protocol.Define("ListMessageMoveTasks", s.listMessageMoveTasks),
		protocol.Define("CancelMessageMoveTask", s.cancelMessageMoveTask),
	}
	if cfg.Faults != nil {
		s.withFaults(cfg.Faults, actions)
	}
	svc := &protocol.Service{
		JSONTargetPrefix: "AmazonSQS",
		ShapeNamespace:   "com.amazonaws.sqs",
		Version:          "2012-11-05",
		XMLNamespace:     "http://queue.amazonaws.com/doc/2012-11-05/",
		SigningName:      "sqs",
		// A lone surrogate is outside the characters SQS allows in a body
		// or an attribute value, as it is on the query wire.
		InvalidCharacters: errInvalidMessageContents,
		Actions:           make(map[string]protocol.Action, len(actions)),
	}
	for _, a := range actions {
		svc.Actions[a.Name] = a
	}
	return svc
}

// requestInfo is what the wire knows of the request: its Host header, its
// path and the SigV4 access key (each empty when absent).
func requestInfo(ctx context.Context) (host, path, accessKey string) {
	info := protocol.Info(ctx)
	return info.Host, info.Path, info.AccessKey
}

// queueURL is the URL of ref's queue as this request should see it: on
// the host the request came to, or the configured base (QueueURL).
func (s *service) queueURL(ctx context.Context, ref queueRef) string {
	base := s.urlBase
	if base == "" {
		info := protocol.Info(ctx)
		host, scheme := info.Host, "http://"
		if host == "" {
			host = "localhost"
		}
		if info.TLS {
			scheme = "https://"
		}
		base = scheme + host
	}
	return QueueURL(base, s.region, ref.region, ref.account, ref.name)
}

// QueueURL is the URL under base (scheme://host[:port]) of account's
// queue name in region, where home is the server's region (--region): a
// queue of the home region has the path /ACCOUNT/NAME; one of another
// region /queue/REGION/ACCOUNT/NAME (LocalStack's path form), so that the
// URL alone names its region whoever uses it, unless the host names the
// region already (sqs.REGION.…).
func QueueURL(base, home, region, account, name string) string {
	if region != home && hostRegion(hostOf(base)) != region {
		return base + "/queue/" + region + "/" + account + "/" + name
	}
	return base + "/" + account + "/" + name
}

// hostOf is the host of a URL base (scheme://host[:port][/path]).
func hostOf(base string) string {
	_, rest, _ := strings.Cut(base, "://")
	host, _, _ := strings.Cut(rest, "/")
	return host
}

// regionOf is the region the request is served in, as the protocol layer
// decided it (protocol.Auth); the configured region for a call that came
// through no handler.
func (s *service) regionOf(ctx context.Context) string {
	if r := protocol.Info(ctx).Region; r != "" {
		return r
	}
	return s.region
}

// ref is the queue called name of account in region reg.
func (s *service) ref(account, reg, name string) queueRef {
	return queueRef{account: account, region: reg, name: name, owner: region.Owner(account, reg, s.region)}
}

// own is the caller's queue called name, in the request's region.
func (s *service) own(ctx context.Context, name string) queueRef {
	return s.ref(s.accountOf(ctx), s.regionOf(ctx), name)
}

// refOf is the reference of a queue the store returned, whose Account is
// its owner key.
func (s *service) refOf(q *engine.Queue) queueRef {
	account, reg := region.Split(q.Account, s.region)
	return queueRef{account: account, region: reg, name: q.Name, owner: q.Account}
}

// accountOf is the account the request is served in, as the protocol
// layer decided it (protocol.Auth); the configured account for a call
// that came through no handler.
func (s *service) accountOf(ctx context.Context) string {
	if a := protocol.Info(ctx).Account; a != "" {
		return a
	}
	return s.account
}

// getQueue resolves QueueUrl, loads the queue and authorizes action on
// it.
func (s *service) getQueue(ctx context.Context, queueURL, action string) (engine.Queue, error) {
	return s.loadQueue(ctx, queueURL, action, s.backend.GetQueue)
}

// viewQueue is getQueue for the message actions, which only read the
// queue: its maps are the backend's, not copies made on every call.
func (s *service) viewQueue(ctx context.Context, queueURL, action string) (engine.Queue, error) {
	return s.loadQueue(ctx, queueURL, action, s.backend.ViewQueue)
}

func (s *service) loadQueue(ctx context.Context, queueURL, action string,
	load func(ctx context.Context, account, name string) (engine.Queue, error)) (engine.Queue, error) {
	ref, err := s.parseTarget(ctx, queueURL)
	if err != nil {
		return engine.Queue{}, err
	}
	q, err := load(ctx, ref.owner, ref.name)
	if err != nil {
		return engine.Queue{}, s.loadError(ctx, ref, action, err)
	}
	if s.mustAuthorize(ctx, ref) {
		if err := s.authorize(ctx, ref, &q, action); err != nil {
			return engine.Queue{}, err
		}
	}
	return q, nil
}

// engineError turns a backend error into AWS's, keeping unexpected ones
// wrapped (the protocol layer answers those with a 500 and logs them).
func (s *service) engineError(err error, op string) error {
	switch {
	case errors.Is(err, engine.ErrQueueNotFound):
		return errQueueDoesNotExist
	case errors.Is(err, engine.ErrQueueDeletedRecently):
		return errQueueDeletedRecently
	case engine.Temporary(err):
		return protocol.ErrServiceUnavailable
	}
	var perr *protocol.Error
	if errors.As(err, &perr) {
		return perr
	}
	return fmt.Errorf("sqs: %s: %w", op, err)
}

// senderID is the SenderId system attribute of messages this request sends.
func (s *service) senderID(ctx context.Context) string {
	if _, _, key := requestInfo(ctx); key != "" {
		return key
	}
	return s.accountOf(ctx)
}
