package sns

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

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

	policy *topicPolicy // the parsed DeliveryPolicy; nil when unset
	// feedback holds the delivery status settings per feedbackProtocols;
	// nil when the topic logs no delivery status.
	feedback *[len(feedbackProtocols)]feedbackConf
	state    *topicState // shared by every copy of the topic
}

func (t *topic) clone() *topic {
	c := *t
	c.Attrs = maps.Clone(t.Attrs)
	c.Tags = maps.Clone(t.Tags)
	return &c
}

// prepare parses what the stored attributes imply.
func (t *topic) prepare() error {
	t.prepareFeedback()
	t.policy = nil
	if raw := t.Attrs[attrDeliveryPolicy]; raw != "" {
		p, perr := parseTopicPolicy(raw)
		if perr != nil {
			return perr
		}
		t.policy = p
	}
	return nil
}

func (t *topic) signatureVersion() string {
	if v := t.Attrs[attrSignatureVersion]; v != "" {
		return v
	}
	return SignatureVersion1
}

func (t *topic) contentBasedDedup() bool { return t.Attrs[attrContentBasedDeduplication] == "true" }

// dedupPerGroup: FifoThroughputScope=MessageGroup scopes deduplication to
// the message group.
func (t *topic) dedupPerGroup() bool { return t.Attrs[attrFifoThroughputScope] == "MessageGroup" }

// subscription is a subscription's durable description, replaced on
// change like a topic.
type subscription struct {
	ARN      string `json:"arn"`
	TopicARN string `json:"topicArn"`
	Protocol string `json:"protocol"`
	Endpoint string `json:"endpoint"`
	Owner    string `json:"owner"`
	// Attrs holds the settable attributes that have a value, as
	// GetSubscriptionAttributes shows them.
	Attrs         map[string]string `json:"attrs,omitempty"`
	Pending       bool              `json:"pending,omitempty"`
	Authenticated bool              `json:"authenticated,omitempty"`
	// AuthOnUnsubscribe: confirmed with AuthenticateOnUnsubscribe=true, so
	// only a signed request may unsubscribe.
	AuthOnUnsubscribe bool `json:"authOnUnsubscribe,omitempty"`
	// Token confirms the subscription (or restores it once deleted) until
	// TokenIssued + tokenLifetime.
	Token       string    `json:"token,omitempty"`
	TokenIssued time.Time `json:"tokenIssued,omitempty"`
	// Queue is the hidden delivery queue of a subscription whose
	// deliveries may need retries (every protocol but sqs and those that
	// are only recorded).
	Queue string `json:"queue,omitempty"`
	// Deleted marks an unsubscribed HTTP/S subscription, kept while the
	// UnsubscribeConfirmation's SubscribeURL may restore it.
	Deleted   bool      `json:"deleted,omitempty"`
	DeletedAt time.Time `json:"deletedAt,omitempty"`
	Created   time.Time `json:"created"`

	filter  *filterpolicy.Policy
	policy  *subscriptionPolicy
	redrive string // the dead-letter queue's ARN; "" without one
	state   *subState
}

func (s *subscription) clone() *subscription {
	c := *s
	c.Attrs = maps.Clone(s.Attrs)
	return &c
}

// prepare parses what the stored attributes imply.
func (s *subscription) prepare() error {
	s.filter, s.policy, s.redrive = nil, nil, ""
	if raw := s.Attrs[attrFilterPolicy]; raw != "" {
		fp, err := filterpolicy.Parse(raw, s.Attrs[attrFilterPolicyScope])
		if err != nil {
			return err
		}
		s.filter = fp
	}
	if raw := s.Attrs[attrDeliveryPolicy]; raw != "" {
		p, perr := parseSubscriptionPolicy(raw)
		if perr != nil {
			return perr
		}
		s.policy = p
	}
	if raw := s.Attrs[attrRedrivePolicy]; raw != "" {
		dlq, err := parseRedriveTarget(raw)
		if err != nil {
			return err
		}
		s.redrive = dlq
	}
	return nil
}

func (s *subscription) raw() bool { return s.Attrs[attrRawMessageDelivery] == "true" }

func (s *subscription) id() string { return s.ARN[strings.LastIndexByte(s.ARN, ':')+1:] }

func (s *subscription) active() bool { return !s.Deleted && !s.Pending }

// tokenLifetime is how long a confirmation token works.
const tokenLifetime = 48 * time.Hour

// needsQueue reports whether deliveries of a protocol ride on a hidden
// delivery queue: they can fail and be retried.
func needsQueue(protocol string) bool {
	switch protocol {
	case protoHTTP, protoHTTPS, protoEmail, protoEmailJSON:
		return true
	}
	return false
}

// load reads every topic and subscription back from the record store.
func (s *Service) load(ctx context.Context) error {
	trecs, err := s.records.Records(ctx, kindTopic)
	if err != nil {
		return fmt.Errorf("sns: load topics: %w", err)
	}
	for _, r := range trecs {
		t := &topic{}
		if err := json.Unmarshal(r.Value, t); err != nil {
			return fmt.Errorf("sns: topic record %s: %w", r.Key, err)
		}
		if t.Attrs == nil {
			t.Attrs = map[string]string{}
		}
		if err := t.prepare(); err != nil {
			s.log.Warn("sns: stored topic delivery policy no longer parses; ignoring it", "topic", t.ARN, "err", err)
		}
		t.state = newTopicState()
		s.topics[t.ARN] = t
		s.topicSubs[t.ARN] = map[string]*subscription{}
	}
	srecs, err := s.records.Records(ctx, kindSubscription)
	if err != nil {
		return fmt.Errorf("sns: load subscriptions: %w", err)
	}
	for _, r := range srecs {
		sub := &subscription{}
		if err := json.Unmarshal(r.Value, sub); err != nil {
			return fmt.Errorf("sns: subscription record %s: %w", r.Key, err)
		}
		if _, ok := s.topics[sub.TopicARN]; !ok {
			// The topic's delete did not finish removing it.
			if err := s.deleteQueue(ctx, sub); err != nil {
				return fmt.Errorf("sns: drop orphan subscription: %w", err)
			}
			if err := s.records.DeleteRecord(ctx, kindSubscription, sub.ARN); err != nil {
				return fmt.Errorf("sns: drop orphan subscription: %w", err)
			}
			continue
		}
		if err := sub.prepare(); err != nil {
			s.log.Warn("sns: stored subscription attribute no longer parses; ignoring it", "subscription", sub.ARN, "err", err)
		}
		sub.state = &subState{}
		s.install(sub)
	}
	return nil
}

// install puts sub into the in-memory maps; the caller holds mu (or is
// loading, alone).
func (s *Service) install(sub *subscription) {
	s.subs[sub.ARN] = sub
	if m := s.topicSubs[sub.TopicARN]; m != nil {
		m[sub.ARN] = sub
	}
	if sub.Token != "" {
		s.tokens[sub.Token] = sub.ARN
	}
}

// saveTopic makes t durable, then visible. The caller holds writeMu.
func (s *Service) saveTopic(ctx context.Context, t *topic) error {
	b, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("encode topic: %w", err)
	}
	if err := s.records.PutRecord(ctx, kindTopic, t.ARN, b); err != nil {
		return fmt.Errorf("store topic: %w", err)
	}
	s.mu.Lock()
	s.topics[t.ARN] = t
	if s.topicSubs[t.ARN] == nil {
		s.topicSubs[t.ARN] = map[string]*subscription{}
	}
	s.mu.Unlock()
	return nil
}

// saveSubscription makes sub durable, then visible. The caller holds
// writeMu.
func (s *Service) saveSubscription(ctx context.Context, sub *subscription) error {
	b, err := json.Marshal(sub)
	if err != nil {
		return fmt.Errorf("encode subscription: %w", err)
	}
	if err := s.records.PutRecord(ctx, kindSubscription, sub.ARN, b); err != nil {
		return fmt.Errorf("store subscription: %w", err)
	}
	s.mu.Lock()
	if old := s.subs[sub.ARN]; old != nil && old.Token != sub.Token {
		delete(s.tokens, old.Token)
	}
	s.install(sub)
	s.mu.Unlock()
	return nil
}

// removeSubscription forgets sub for good. The caller holds writeMu.
func (s *Service) removeSubscription(ctx context.Context, sub *subscription) error {
	if err := s.records.DeleteRecord(ctx, kindSubscription, sub.ARN); err != nil {
		return fmt.Errorf("delete subscription: %w", err)
	}
	s.mu.Lock()
	delete(s.subs, sub.ARN)
	if m := s.topicSubs[sub.TopicARN]; m != nil {
		delete(m, sub.ARN)
	}
	if sub.Token != "" && s.tokens[sub.Token] == sub.ARN {
		delete(s.tokens, sub.Token)
	}
	s.mu.Unlock()
	return nil
}

// lookupTopic returns the topic named by a TopicArn parameter.
func (s *Service) lookupTopic(arn, param string) (*topic, error) {
	if _, err := s.checkTopicARN(arn, param); err != nil {
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

// lookupSubscription returns the live subscription named by arn.
func (s *Service) lookupSubscription(arn string) (*subscription, error) {
	if _, err := s.checkSubscriptionARN(arn); err != nil {
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
