package sns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ferrymq/ferry/internal/protocol"
	"github.com/ferrymq/ferry/internal/sns/delivery"
	"github.com/ferrymq/ferry/internal/sns/filterpolicy"
)

// Record kinds in the engine's RecordStore.
const (
	kindTopic        = "sns-topic"
	kindSubscription = "sns-subscription"
)

// topic is a topic's durable description. A *topic in the service's maps
// is never modified: a change stores a modified copy, so a publish can use
// the one it took without a lock.
type topic struct {
	ARN  string `json:"arn"`
	Name string `json:"name"`
	FIFO bool   `json:"fifo,omitempty"`
	// Attrs holds the settable attributes that have a value, Policy
	// always among them.
	Attrs                map[string]string `json:"attrs"`
	Tags                 map[string]string `json:"tags,omitempty"`
	DataProtectionPolicy string            `json:"dataProtectionPolicy,omitempty"`
	Created              time.Time         `json:"created"`

	delivery *delivery.Topic // what deliveries read of it (prepare)
	access   topicAccess     // its Policy, parsed (prepare)
	state    *topicState     // shared by every copy of the topic
	// stored is the record as stored, which a change of a clone replaces
	// only if the store still has it (saveTopic); nil for a new topic.
	stored []byte
}

func (t *topic) clone() *topic {
	c := *t
	c.Attrs = maps.Clone(t.Attrs)
	c.Tags = maps.Clone(t.Tags)
	return &c
}

// prepare reads what the stored attributes imply: who may act on the
// topic, and what deliveries read of it. An error is a DeliveryPolicy
// that no longer parses; the topic goes without it.
func (t *topic) prepare() error {
	t.access = newTopicAccess(t.Attrs[attrPolicy])
	var err error
	t.delivery, err = delivery.NewTopic(t.ARN, t.Name, t.FIFO, t.Attrs)
	return err
}

func (t *topic) contentBasedDedup() bool { return t.Attrs[attrContentBasedDeduplication] == "true" }

// dedupPerGroup: FifoThroughputScope=MessageGroup scopes deduplication to
// the message group.
func (t *topic) dedupPerGroup() bool { return t.Attrs[attrFifoThroughputScope] == "MessageGroup" }

// subscription is a subscription's durable description, replaced on
// change like a topic. Its stored fields are grouped in embedded structs,
// which JSON flattens, so that the records keep their form.
type subscription struct {
	ARN      string `json:"arn"`
	TopicARN string `json:"topicArn"`
	Protocol string `json:"protocol"`
	Endpoint string `json:"endpoint"`
	Owner    string `json:"owner"`
	// Attrs holds the settable attributes that have a value, as
	// GetSubscriptionAttributes shows them.
	Attrs map[string]string `json:"attrs,omitempty"`
	confirmation
	// Queue is the hidden delivery queue of a subscription whose
	// deliveries may need retries (delivery.NeedsQueue), or the retry
	// queue of one SNS delivers to at once, made when a delivery first
	// needs a retry (retryQueue).
	Queue string `json:"queue,omitempty"`
	tombstone
	Created time.Time `json:"created"`

	// What the attributes imply (prepare).
	filter     *filterpolicy.Policy
	policy     *delivery.SubscriptionPolicy
	deadLetter string // the RedrivePolicy's queue ARN; "" without one
	state      *subState
	stored     []byte // the record as stored, as topic.stored
}

// confirmation is where a subscription stands with its confirmation.
type confirmation struct {
	Pending       bool `json:"pending,omitempty"`
	Authenticated bool `json:"authenticated,omitempty"`
	// AuthOnUnsubscribe: confirmed with AuthenticateOnUnsubscribe=true, so
	// only a signed request may unsubscribe.
	AuthOnUnsubscribe bool `json:"authOnUnsubscribe,omitempty"`
	// Token confirms the subscription (or restores it once deleted) until
	// TokenIssued + tokenLifetime.
	Token       string    `json:"token,omitempty"`
	TokenIssued time.Time `json:"tokenIssued,omitempty"`
}

// tombstone marks an unsubscribed HTTP/S subscription, kept while the
// UnsubscribeConfirmation's SubscribeURL may restore it.
type tombstone struct {
	Deleted   bool      `json:"deleted,omitempty"`
	DeletedAt time.Time `json:"deletedAt,omitempty"`
}

func (s *subscription) clone() *subscription {
	c := *s
	c.Attrs = maps.Clone(s.Attrs)
	return &c
}

// prepare parses what the stored attributes imply.
func (s *subscription) prepare() error {
	s.filter, s.policy, s.deadLetter = nil, nil, ""
	if raw := s.Attrs[attrFilterPolicy]; raw != "" {
		fp, err := filterpolicy.Parse(raw, s.Attrs[attrFilterPolicyScope])
		if err != nil {
			return err
		}
		s.filter = fp
	}
	if raw := s.Attrs[attrDeliveryPolicy]; raw != "" {
		p, err := delivery.ParseSubscriptionPolicy(raw)
		if err != nil {
			return err
		}
		s.policy = p
	}
	if raw := s.Attrs[attrRedrivePolicy]; raw != "" {
		dlq, err := parseRedriveTarget(raw)
		if err != nil {
			return err
		}
		s.deadLetter = dlq
	}
	return nil
}

// delivery is what deliveries need of the subscription as it is.
func (s *subscription) delivery() *delivery.Subscription {
	return &delivery.Subscription{ARN: s.ARN, TopicARN: s.TopicARN, Protocol: s.Protocol, Endpoint: s.Endpoint, Raw: s.raw(),
		Pending: s.Pending, Token: s.Token, Queue: s.Queue, DeadLetter: s.deadLetter, Policy: s.policy}
}

func (s *subscription) raw() bool { return s.Attrs[attrRawMessageDelivery] == "true" }

func (s *subscription) active() bool { return !s.Deleted && !s.Pending }

// tokenLifetime is how long a confirmation token works.
const tokenLifetime = 48 * time.Hour

// load reads every topic and subscription back from the record store.
func (s *Service) load(ctx context.Context) error {
	trecs, err := s.records.Records(ctx, kindTopic)
	if err != nil {
		return fmt.Errorf("sns: load topics: %w", err)
	}
	for _, r := range trecs {
		t, err := s.decodeTopic(r.Value)
		if err != nil {
			return fmt.Errorf("sns: topic record %s: %w", r.Key, err)
		}
		s.installTopic(t)
	}
	srecs, err := s.records.Records(ctx, kindSubscription)
	if err != nil {
		return fmt.Errorf("sns: load subscriptions: %w", err)
	}
	for _, r := range srecs {
		sub, err := s.decodeSubscription(r.Value)
		if err != nil {
			return fmt.Errorf("sns: subscription record %s: %w", r.Key, err)
		}
		if _, ok := s.topics[sub.TopicARN]; !ok {
			if err := s.dropOrphan(ctx, sub); err != nil {
				return err
			}
			continue
		}
		s.install(sub)
	}
	return nil
}

// decodeTopic reads a topic record. A DeliveryPolicy that no longer parses
// is logged, and the topic goes without it.
func (s *Service) decodeTopic(b []byte) (*topic, error) {
	t := &topic{stored: b}
	if err := json.Unmarshal(b, t); err != nil {
		return nil, err
	}
	if t.Attrs == nil {
		t.Attrs = map[string]string{}
	}
	if err := t.prepare(); err != nil {
		s.log.Warn("sns: stored topic delivery policy no longer parses; ignoring it", "topic", t.ARN, "err", err)
	}
	return t, nil
}

// decodeSubscription reads a subscription record. An attribute that no
// longer parses is logged, and the subscription goes without it.
func (s *Service) decodeSubscription(b []byte) (*subscription, error) {
	sub := &subscription{stored: b}
	if err := json.Unmarshal(b, sub); err != nil {
		return nil, err
	}
	if err := sub.prepare(); err != nil {
		s.log.Warn("sns: stored subscription attribute no longer parses; ignoring it", "subscription", sub.ARN, "err", err)
	}
	return sub, nil
}

// dropOrphan removes a subscription whose topic is gone: the topic's
// delete did not finish removing it (a crash), or, on a store several
// nodes share, the node that deleted the topic did not know of it yet.
func (s *Service) dropOrphan(ctx context.Context, sub *subscription) error {
	if err := s.delivery.DeleteQueue(ctx, sub.Queue); err != nil {
		return fmt.Errorf("sns: drop orphan subscription: %w", err)
	}
	if err := s.records.DeleteRecord(ctx, kindSubscription, sub.ARN); err != nil {
		return fmt.Errorf("sns: drop orphan subscription: %w", err)
	}
	if err := s.releaseEndpoint(ctx, sub); err != nil {
		return fmt.Errorf("sns: drop orphan subscription: %w", err)
	}
	return nil
}

// installTopic puts t into the maps in place of the copy it replaces,
// whose state it keeps. The caller holds mu (or is loading, alone).
func (s *Service) installTopic(t *topic) {
	if old := s.topics[t.ARN]; old != nil {
		t.state = old.state
	} else if t.state == nil {
		t.state = newTopicState()
	}
	s.topics[t.ARN] = t
	if s.topicSubs[t.ARN] == nil {
		s.topicSubs[t.ARN] = map[string]*subscription{}
	}
}

// install puts sub into the maps in place of the copy it replaces, whose
// state it keeps. The caller holds mu (or is loading, alone).
func (s *Service) install(sub *subscription) {
	if old := s.subs[sub.ARN]; old != nil {
		sub.state = old.state
		if old.Token != sub.Token && s.tokens[old.Token] == sub.ARN {
			delete(s.tokens, old.Token)
		}
	} else if sub.state == nil {
		sub.state = &subState{}
	}
	s.subs[sub.ARN] = sub
	if m := s.topicSubs[sub.TopicARN]; m != nil {
		m[sub.ARN] = sub
	}
	if sub.Token != "" {
		s.tokens[sub.Token] = sub.ARN
	}
}

// forget removes sub from the maps. The caller holds mu.
func (s *Service) forget(sub *subscription) {
	delete(s.subs, sub.ARN)
	if m := s.topicSubs[sub.TopicARN]; m != nil {
		delete(m, sub.ARN)
	}
	if sub.Token != "" && s.tokens[sub.Token] == sub.ARN {
		delete(s.tokens, sub.Token)
	}
}

// errLostRace: a change was built on a record that another node changed
// (or removed, or made) before the change was written. The record is read
// again and the change built again on it (retryRaces).
var errLostRace = errors.New("sns: the record changed meanwhile")

// maxRaces bounds how often one change is built again; a change that
// loses more often answers ServiceUnavailable, which clients retry.
const maxRaces = 20

// retryRaces runs try under writeMu until it does not lose a race, reading
// the record kind/key again before every attempt but the first (that one
// only on a store other nodes share: on its own store a node's memory is
// the record).
func (s *Service) retryRaces(ctx context.Context, op, kind, key string, try func() error) error {
	for attempt := 0; ; attempt++ {
		var err error
		if attempt == 0 {
			err = s.fresh(ctx, kind, key)
		} else {
			err = s.reread(ctx, kind, key)
		}
		if err != nil {
			return s.internal(ctx, op, err)
		}
		s.writeMu.Lock()
		err = try()
		s.writeMu.Unlock()
		if err != errLostRace {
			return err
		}
		if attempt == maxRaces {
			s.log.WarnContext(ctx, "sns: "+op+": the record kept changing", "key", key)
			return protocol.ErrServiceUnavailable
		}
	}
}

// saveTopic makes t durable, then visible: it inserts a new topic (stored
// nil), or replaces the record t was read from (stored) if the store still
// has it, and returns errLostRace if not. The caller holds writeMu.
func (s *Service) saveTopic(ctx context.Context, t *topic) error {
	b, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("encode topic: %w", err)
	}
	if err := s.writeRecord(ctx, kindTopic, t.ARN, t.stored, b); err != nil {
		return err
	}
	t.stored = b
	s.mu.Lock()
	s.installTopic(t)
	s.mu.Unlock()
	return nil
}

// saveSubscription makes sub durable, then visible, as saveTopic does.
// The caller holds writeMu.
func (s *Service) saveSubscription(ctx context.Context, sub *subscription) error {
	b, err := json.Marshal(sub)
	if err != nil {
		return fmt.Errorf("encode subscription: %w", err)
	}
	if err := s.writeRecord(ctx, kindSubscription, sub.ARN, sub.stored, b); err != nil {
		return err
	}
	sub.stored = b
	s.mu.Lock()
	s.install(sub)
	s.mu.Unlock()
	return nil
}

// writeRecord inserts kind/key (old nil) or replaces old by value; it
// returns errLostRace when the store had something else.
func (s *Service) writeRecord(ctx context.Context, kind, key string, old, value []byte) error {
	var (
		ok  bool
		err error
	)
	if old == nil {
		ok, err = s.records.InsertRecord(ctx, kind, key, value)
	} else {
		ok, err = s.records.SwapRecord(ctx, kind, key, old, value)
	}
	switch {
	case err != nil:
		return fmt.Errorf("store %s: %w", kind, err)
	case !ok:
		return errLostRace
	}
	return nil
}

// removeSubscription forgets sub for good, and frees its endpoint for a
// new subscription. The caller holds writeMu.
func (s *Service) removeSubscription(ctx context.Context, sub *subscription) error {
	if err := s.records.DeleteRecord(ctx, kindSubscription, sub.ARN); err != nil {
		return fmt.Errorf("delete subscription: %w", err)
	}
	s.mu.Lock()
	s.forget(sub)
	s.mu.Unlock()
	return s.releaseEndpoint(ctx, sub)
}

// lookupTopic returns the topic named by a TopicArn parameter, for the
// request's action, which the topic's policy must let the caller perform
// (authorizeTopic); a topic that does not exist is NotFound, whatever its
// ARN's account. The caller must not hold writeMu (cachedTopic is for
// those who do).
func (s *Service) lookupTopic(ctx context.Context, arn, param, action string) (*topic, error) {
	t, err := s.findTopic(ctx, arn, param)
	if err != nil {
		return nil, err
	}
	if err := s.authorizeTopic(ctx, t, action, nil); err != nil {
		return nil, err
	}
	return t, nil
}

// findTopic is lookupTopic without deciding who may act on it. On a store
// other nodes share, a topic this node does not know is looked for in the
// store before the answer is NotFound: one made through another node a
// moment ago, whose news has not come yet.
func (s *Service) findTopic(ctx context.Context, arn, param string) (*topic, error) {
	t, err := s.cachedTopic(ctx, arn, param)
	if err == errTopicNotFound && s.shared {
		if rerr := s.reread(ctx, kindTopic, arn); rerr != nil {
			return nil, s.internal(ctx, "read topic", rerr)
		}
		t, err = s.cachedTopic(ctx, arn, param)
	}
	return t, err
}

// cachedTopic is lookupTopic without the store, and of any account: what
// this node knows.
func (s *Service) cachedTopic(ctx context.Context, arn, param string) (*topic, error) {
	if _, err := s.checkTopicARN(ctx, arn, param); err != nil {
		return nil, err
	}
	s.mu.RLock()
	t := s.topics[arn]
	s.mu.RUnlock()
	if t == nil {
		return nil, errTopicNotFound
	}
	return t, nil
}

// lookupSubscription returns the live subscription named by arn, read
// from the store on a miss as findTopic does, for the request's action,
// which the caller must be allowed (authorizeSubscription).
// The caller must not hold writeMu.
func (s *Service) lookupSubscription(ctx context.Context, arn, action string) (*subscription, error) {
	sub, err := s.cachedSubscription(ctx, arn)
	if err == errSubscriptionNotFound && s.shared {
		if rerr := s.reread(ctx, kindSubscription, arn); rerr != nil {
			return nil, s.internal(ctx, "read subscription", rerr)
		}
		sub, err = s.cachedSubscription(ctx, arn)
	}
	if err != nil {
		return nil, err
	}
	if err := s.authorizeSubscription(ctx, sub, action); err != nil {
		return nil, err
	}
	return sub, nil
}

// cachedSubscription is lookupSubscription without the store, and of any
// account.
func (s *Service) cachedSubscription(ctx context.Context, arn string) (*subscription, error) {
	if _, err := s.checkSubscriptionARN(ctx, arn); err != nil {
		return nil, err
	}
	s.mu.RLock()
	sub := s.subs[arn]
	s.mu.RUnlock()
	if sub == nil || sub.Deleted {
		return nil, errSubscriptionNotFound
	}
	return sub, nil
}

// subscriptionsOf returns the topic's subscriptions (tombstones included),
// sorted by ARN.
func (s *Service) subscriptionsOf(topicARN string) []*subscription {
	s.mu.RLock()
	out := slices.Collect(maps.Values(s.topicSubs[topicARN]))
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b *subscription) int { return strings.Compare(a.ARN, b.ARN) })
	return out
}
