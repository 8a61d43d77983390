package sns

import (
	"sync"
	"sync/atomic"
	"time"
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
	// policy's scope; the NoMessageAttributes and InvalidMessageBody
	// counts are the part of those where there was nothing to match.
	FilteredOutAttributes          int64
	FilteredOutBody                int64
	FilteredOutNoMessageAttributes int64
	FilteredOutInvalidMessageBody  int64
	RedrivenToDLQ                  int64
	FailedToRedriveToDLQ           int64
}

// counters are Counters updated concurrently.
type counters struct {
	published, publishSize, delivered, failed                     atomic.Int64
	filteredAttrs, filteredBody, filteredNoAttrs, filteredBadBody atomic.Int64
	redriven, redriveFailed                                       atomic.Int64
}

func (c *counters) snapshot() Counters {
	out := Counters{
		Published:                      c.published.Load(),
		PublishSize:                    c.publishSize.Load(),
		Delivered:                      c.delivered.Load(),
		Failed:                         c.failed.Load(),
		FilteredOutAttributes:          c.filteredAttrs.Load(),
		FilteredOutBody:                c.filteredBody.Load(),
		FilteredOutNoMessageAttributes: c.filteredNoAttrs.Load(),
		FilteredOutInvalidMessageBody:  c.filteredBadBody.Load(),
		RedrivenToDLQ:                  c.redriven.Load(),
		FailedToRedriveToDLQ:           c.redriveFailed.Load(),
	}
	out.FilteredOut = out.FilteredOutAttributes + out.FilteredOutBody
	return out
}

// topicState is a topic's runtime state, shared by every copy of it.
type topicState struct {
	counters counters

	// fifoMu serialises a FIFO topic's publishes, so that sequence numbers
	// and deliveries keep the order of publication.
	fifoMu   sync.Mutex
	seqMicro int64 // last sequence number: micro-second stamp and counter
	seqN     int64
	dedup    map[string]dedupEntry
	dedupQ   []dedupKey // in expiry order
}

func newTopicState() *topicState { return &topicState{dedup: map[string]dedupEntry{}} }

// dedupEntry remembers a FIFO message for the deduplication window.
type dedupEntry struct {
	messageID, sequence string
	expires             time.Time
}

type dedupKey struct {
	key     string
	expires time.Time
}

// subState is a subscription's runtime state.
type subState struct {
	counters counters
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

// count applies f to the subscription's counters and its topic's.
func (s *Service) count(sub *subscription, f func(*counters)) {
	f(&sub.state.counters)
	s.mu.RLock()
	t := s.topics[sub.TopicARN]
	s.mu.RUnlock()
	if t != nil {
		f(&t.state.counters)
	}
}
