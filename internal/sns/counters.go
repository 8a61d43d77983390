package sns

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ferrymq/ferry/internal/metrics"
	"github.com/ferrymq/ferry/internal/sns/delivery"
	"github.com/ferrymq/ferry/internal/sns/filterpolicy"
)

// Counters are the CloudWatch-style counts of a topic or a subscription
// (sns.md §11.1) since the service started. A topic's delivery counts are
// the sums over its subscriptions; Published and PublishSize are the
// topic's own.
type Counters struct {
	Published   int64 // messages accepted by Publish and PublishBatch
	PublishSize int64 // their bytes (body and attributes)
	Delivered   int64
	// Failed counts, for HTTP/S, every failed attempt (retries included);
	// for other protocols, each message given up.
	Failed      int64
	FilteredOut int64 // all messages a filter policy kept back, split below
	// FilteredOutAttributes and FilteredOutBody split FilteredOut by the
	// policy's scope; the NoMessageAttributes, InvalidAttributes and
	// InvalidMessageBody counts are the part of those that had nothing
	// the policy could match.
	FilteredOutAttributes          int64
	FilteredOutBody                int64
	FilteredOutNoMessageAttributes int64
	FilteredOutInvalidAttributes   int64
	FilteredOutInvalidMessageBody  int64
	RedrivenToDLQ                  int64
	FailedToRedriveToDLQ           int64
}

// counter names one of the counts.
type counter uint8

const (
	cPublished counter = iota
	cPublishSize
	cDelivered
	cFailed
	cFilteredOut
	cFilteredAttrs
	cFilteredBody
	cFilteredNoAttrs
	cFilteredBadAttrs
	cFilteredBadBody
	cRedriven
	cRedriveFailed
	numCounters
)

// deliveryCounters are the counters of deliveries' counts.
var deliveryCounters = [...]counter{
	delivery.Delivered:     cDelivered,
	delivery.Failed:        cFailed,
	delivery.Redriven:      cRedriven,
	delivery.RedriveFailed: cRedriveFailed,
}

// counterMetric is the CloudWatch metric (namespace AWS/SNS, dimension
// TopicName) that each counter also feeds.
var counterMetric = [numCounters]string{
	cPublished:        metrics.MessagesPublished,
	cPublishSize:      metrics.PublishSize,
	cDelivered:        metrics.NotificationsDelivered,
	cFailed:           metrics.NotificationsFailed,
	cFilteredOut:      metrics.NotificationsFilteredOut,
	cFilteredAttrs:    metrics.NotificationsFilteredOutMessageAttributes,
	cFilteredBody:     metrics.NotificationsFilteredOutMessageBody,
	cFilteredNoAttrs:  metrics.NotificationsFilteredOutNoAttributes,
	cFilteredBadAttrs: metrics.NotificationsFilteredOutInvalidAttributes,
	cFilteredBadBody:  metrics.NotificationsFilteredOutInvalidBody,
	cRedriven:         metrics.NotificationsRedrivenToDLQ,
	cRedriveFailed:    metrics.NotificationsFailedToRedriveToDLQ,
}

// counters are Counters updated concurrently.
type counters [numCounters]atomic.Int64

func (c *counters) snapshot() Counters {
	return Counters{
		Published:                      c[cPublished].Load(),
		PublishSize:                    c[cPublishSize].Load(),
		Delivered:                      c[cDelivered].Load(),
		Failed:                         c[cFailed].Load(),
		FilteredOut:                    c[cFilteredOut].Load(),
		FilteredOutAttributes:          c[cFilteredAttrs].Load(),
		FilteredOutBody:                c[cFilteredBody].Load(),
		FilteredOutNoMessageAttributes: c[cFilteredNoAttrs].Load(),
		FilteredOutInvalidAttributes:   c[cFilteredBadAttrs].Load(),
		FilteredOutInvalidMessageBody:  c[cFilteredBadBody].Load(),
		RedrivenToDLQ:                  c[cRedriven].Load(),
		FailedToRedriveToDLQ:           c[cRedriveFailed].Load(),
	}
}

// topicState is a topic's runtime state, shared by every copy of it.
type topicState struct {
	counters counters

	// fifoMu serialises a FIFO topic's publishes through this node, so
	// that its deliveries keep the order of their sequence numbers.
	fifoMu sync.Mutex
}

func newTopicState() *topicState { return &topicState{} }

// subState is a subscription's runtime state.
type subState struct {
	counters counters

	mu sync.Mutex
	// retried counts the failed attempts of notifications that were
	// tried again; recent holds the latest failed attempts, next is where
	// the next goes.
	retried int64
	recent  [recentFailures]delivery.Failure
	next    int
}

// recentFailures is how many failed attempts a subscription keeps.
const recentFailures = 10

// failed keeps a failed attempt.
func (st *subState) failed(f delivery.Failure) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if f.Retry {
		st.retried++
	}
	st.recent[st.next%recentFailures] = f
	st.next++
}

// SubscriptionFailures returns how many failed attempts of a
// subscription's notifications were tried again, and its latest failed
// attempts, newest first, since the service started.
func (s *Service) SubscriptionFailures(subscriptionARN string) (retried int64, recent []delivery.Failure, ok bool) {
	s.mu.RLock()
	sub := s.subs[subscriptionARN]
	s.mu.RUnlock()
	if sub == nil {
		return 0, nil, false
	}
	st := sub.state
	st.mu.Lock()
	defer st.mu.Unlock()
	for i := st.next - 1; i >= 0 && i >= st.next-recentFailures; i-- {
		recent = append(recent, st.recent[i%recentFailures])
	}
	return st.retried, recent, true
}

// TopicCounters returns a topic's counters: its own and the sums over its
// subscriptions, unsubscribed ones included while the service runs.
func (s *Service) TopicCounters(topicARN string) (Counters, bool) {
	s.mu.RLock()
	t := s.topics[topicARN]
	s.mu.RUnlock()
	if t == nil {
		return Counters{}, false
	}
	return t.state.counters.snapshot(), true
}

// SubscriptionCounters returns one subscription's counters.
func (s *Service) SubscriptionCounters(subscriptionARN string) (Counters, bool) {
	s.mu.RLock()
	sub := s.subs[subscriptionARN]
	s.mu.RUnlock()
	if sub == nil {
		return Counters{}, false
	}
	return sub.state.counters.snapshot(), true
}

// count adds n messages to a subscription's counter, its topic's, and
// the topic's CloudWatch metric in the topic's account: one sample of 1
// per message, as CloudWatch counts notifications.
func (s *Service) count(sub *subscription, k counter, n int) {
	if n <= 0 {
		return
	}
	sub.state.counters[k].Add(int64(n))
	s.mu.RLock()
	t := s.topics[sub.TopicARN]
	s.mu.RUnlock()
	if t != nil {
		t.state.counters[k].Add(int64(n))
	}
	if s.metrics != nil {
		account, dim := s.ownerOfARN(sub.TopicARN), metrics.Topic(topicNameOf(sub.TopicARN))
		for range n {
			s.metrics.Record(account, metrics.NamespaceSNS, counterMetric[k], dim, 1)
		}
	}
}

// countFiltered counts a message a filter policy kept back, by the
// policy's scope and the reason.
func (s *Service) countFiltered(sub *subscription, scope string, r filterpolicy.Result) {
	s.count(sub, cFilteredOut, 1)
	if scope == filterpolicy.ScopeMessageBody {
		s.count(sub, cFilteredBody, 1)
	} else {
		s.count(sub, cFilteredAttrs, 1)
	}
	switch r {
	case filterpolicy.NoAttributes:
		s.count(sub, cFilteredNoAttrs, 1)
	case filterpolicy.InvalidAttributes:
		s.count(sub, cFilteredBadAttrs, 1)
	case filterpolicy.InvalidBody:
		s.count(sub, cFilteredBadBody, 1)
	}
}

// countPublished counts messages a topic accepted, and their sizes.
func (s *Service) countPublished(t *topic, msgs ...*message) {
	var account string
	var dim metrics.Dimension
	record := s.metrics != nil
	if record {
		account, dim = s.ownerOfARN(t.ARN), metrics.Topic(t.Name)
	}
	for _, m := range msgs {
		t.state.counters[cPublished].Add(1)
		t.state.counters[cPublishSize].Add(int64(m.size))
		if record {
			s.metrics.Record(account, metrics.NamespaceSNS, metrics.MessagesPublished, dim, 1)
			s.metrics.Record(account, metrics.NamespaceSNS, metrics.PublishSize, dim, float64(m.size))
		}
	}
}

// serveCounters answers {"topics":{arn:counters},"subscriptions":{arn:counters}}.
func (s *Service) serveCounters(w http.ResponseWriter, r *http.Request) {
	out := struct {
		Topics        map[string]Counters `json:"topics"`
		Subscriptions map[string]Counters `json:"subscriptions"`
	}{map[string]Counters{}, map[string]Counters{}}
	s.mu.RLock()
	for arn, t := range s.topics {
		out.Topics[arn] = t.state.counters.snapshot()
	}
	for arn, sub := range s.subs {
		if !sub.Deleted {
			out.Subscriptions[arn] = sub.state.counters.snapshot()
		}
	}
	s.mu.RUnlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// topicNameOf is the last element of a topic ARN.
func topicNameOf(arn string) string { return arn[strings.LastIndexByte(arn, ':')+1:] }
