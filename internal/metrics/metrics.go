// Package metrics keeps CloudWatch-style one-minute datapoints per account
// and queue or topic, and exposes them to Prometheus. Recording is cheap enough for the
// message hot path: a map lookup under a read lock and a short critical
// section on the series, with no allocation once a minute's bucket exists.
package metrics

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
)

// NamespaceSQS is the CloudWatch namespace of the SQS metrics.
const NamespaceSQS = "AWS/SQS"

// SQS metric names, as CloudWatch spells them.
const (
	MessagesSent             = "NumberOfMessagesSent"
	SentMessageSize          = "SentMessageSize"
	MessagesReceived         = "NumberOfMessagesReceived"
	EmptyReceives            = "NumberOfEmptyReceives"
	MessagesDeleted          = "NumberOfMessagesDeleted"
	DeduplicatedSentMessages = "NumberOfDeduplicatedSentMessages"
)

// NamespaceSNS is the CloudWatch namespace of the SNS metrics.
const NamespaceSNS = "AWS/SNS"

// SNS metric names, as CloudWatch spells them (dimension TopicName).
const (
	MessagesPublished                         = "NumberOfMessagesPublished"
	PublishSize                               = "PublishSize"
	NotificationsDelivered                    = "NumberOfNotificationsDelivered"
	NotificationsFailed                       = "NumberOfNotificationsFailed"
	NotificationsFilteredOut                  = "NumberOfNotificationsFilteredOut"
	NotificationsFilteredOutMessageAttributes = "NumberOfNotificationsFilteredOut-MessageAttributes"
	NotificationsFilteredOutMessageBody       = "NumberOfNotificationsFilteredOut-MessageBody"
	NotificationsFilteredOutInvalidAttributes = "NumberOfNotificationsFilteredOut-InvalidAttributes"
	NotificationsFilteredOutNoAttributes      = "NumberOfNotificationsFilteredOut-NoMessageAttributes"
	NotificationsFilteredOutInvalidBody       = "NumberOfNotificationsFilteredOut-InvalidMessageBody"
	NotificationsRedrivenToDLQ                = "NumberOfNotificationsRedrivenToDlq"
	NotificationsFailedToRedriveToDLQ         = "NumberOfNotificationsFailedToRedriveToDlq"
)

// Defaults of Options.
const (
	DefaultRetention = 15 * 24 * time.Hour
	DefaultMaxSeries = 10000
)

// Dimension is the one name/value pair that tells a metric's series apart:
// QueueName for SQS, TopicName for SNS.
type Dimension struct {
	Name, Value string
}

// Dimension names, as CloudWatch spells them.
const (
	DimQueueName = "QueueName"
	DimTopicName = "TopicName"
)

// Queue is the QueueName dimension of queue.
func Queue(name string) Dimension { return Dimension{DimQueueName, name} }

// Topic is the TopicName dimension of topic.
func Topic(name string) Dimension { return Dimension{DimTopicName, name} }

// SeriesKey names one series: a metric of a namespace for one dimension,
// of one account.
type SeriesKey struct {
	Account, Namespace, Metric string
	Dimension                  Dimension
}

// Datapoint is one minute's statistics of a series.
type Datapoint struct {
	// Timestamp is the start of the minute.
	Timestamp                          time.Time
	Sum, SampleCount, Minimum, Maximum float64
}

// Average is Sum / SampleCount (0 for an empty datapoint).
func (d Datapoint) Average() float64 {
	if d.SampleCount == 0 {
		return 0
	}
	return d.Sum / d.SampleCount
}

// Totals are a series' statistics since the store started; unlike the
// datapoints they are never evicted (Prometheus counters need them).
type Totals struct {
	Sum, SampleCount float64
}

// Options configure a Store.
type Options struct {
	Clock clock.Clock // clock.Real if nil
	// Retention is how long minutes are kept (DefaultRetention if zero).
	Retention time.Duration
	// MaxSeries bounds the number of series (DefaultMaxSeries if zero);
	// a new series beyond it replaces the least recently recorded one.
	MaxSeries int
	// Account is the configured account: its series are stored without
	// an account (engine.MetricPoint), as every series was before they
	// were kept per account, so that those stored then read as its own.
	Account string
}

// Store holds the series. It is safe for concurrent use.
type Store struct {
	clock     clock.Clock
	retention int64 // minutes
	maxSeries int
	account   string // Options.Account

	mu     sync.RWMutex
	series map[SeriesKey]*series

	// flushMu orders flushes; flushed is the last minute saved for good.
	flushMu sync.Mutex
	flushed int64

	// peers holds the other nodes' minutes on a shared store (peers.go),
	// nil until LoadPeers; refreshMu orders the reads that replace them.
	// Lock order: refreshMu, then peerMu; peerMu is never held with mu.
	refreshMu sync.Mutex
	peerMu    sync.RWMutex
	peers     map[SeriesKey][]bucket
}

// bucket is one minute; minute counts minutes since the Unix epoch.
type bucket struct {
	minute               int64
	sum, count, min, max float64
}

type series struct {
	mu sync.Mutex
	// buckets are sorted by minute, oldest first; head is the first live
	// one, so that eviction does not shift the slice on every minute.
	buckets []bucket
	head    int
	totals  Totals
	last    int64 // minute of the latest record, to pick a series to evict
}

// New returns an empty store.
func New(o Options) *Store {
	s := &Store{clock: o.Clock, maxSeries: o.MaxSeries, account: o.Account, series: make(map[SeriesKey]*series)}
	if s.clock == nil {
		s.clock = clock.Real{}
	}
	ret := o.Retention
	if ret <= 0 {
		ret = DefaultRetention
	}
	s.retention = int64((ret + time.Minute - 1) / time.Minute)
	if s.maxSeries <= 0 {
		s.maxSeries = DefaultMaxSeries
	}
	s.flushed = minuteOf(s.clock.Now()) - 1
	return s
}

func minuteOf(t time.Time) int64 {
	m := t.Unix() / 60
	if t.Unix()%60 < 0 {
		m-- // floor for times before 1970
	}
	return m
}

// Record adds one sample of value to the current minute of account's
// series.
func (s *Store) Record(account, ns, metric string, dim Dimension, value float64) {
	s.RecordSample(account, ns, metric, dim, One(value))
}

// Sample is values recorded together, as one call's messages are: their
// sum, how many, the least and the greatest. Recording it counts as
// recording each value, in one lookup of the series instead of one each.
type Sample struct {
	Sum, Count, Min, Max float64
}

// One is the sample of the one value v.
func One(v float64) Sample { return Sample{Sum: v, Count: 1, Min: v, Max: v} }

// Add counts v in the sample.
func (a *Sample) Add(v float64) {
	if a.Count == 0 || v < a.Min {
		a.Min = v
	}
	if a.Count == 0 || v > a.Max {
		a.Max = v
	}
	a.Sum += v
	a.Count++
}

// RecordSample records v's values at once in the current minute; an
// empty sample records nothing.
func (s *Store) RecordSample(account, ns, metric string, dim Dimension, v Sample) {
	if s == nil || v.Count == 0 {
		return
	}
	now := minuteOf(s.clock.Now())
	k := SeriesKey{account, ns, metric, dim}
	s.mu.RLock()
	se := s.series[k]
	s.mu.RUnlock()
	if se == nil {
		se = s.create(k, now)
	}
	se.mu.Lock()
	se.add(now, v, s.retention)
	se.mu.Unlock()
}

// create adds the series k, evicting the least recently recorded series
// when the store is full.
func (s *Store) create(k SeriesKey, now int64) *series {
	s.mu.Lock()
	defer s.mu.Unlock()
	if se := s.series[k]; se != nil {
		return se
	}
	if len(s.series) >= s.maxSeries {
		var oldest SeriesKey
		var oldestMin int64
		first := true
		for key, se := range s.series {
			se.mu.Lock()
			l := se.last
			se.mu.Unlock()
			if first || l < oldestMin {
				oldest, oldestMin, first = key, l, false
			}
		}
		delete(s.series, oldest)
	}
	// The key is kept as long as the series: copies, not views into the
	// request whose action named the queue.
	k = SeriesKey{strings.Clone(k.Account), strings.Clone(k.Namespace), strings.Clone(k.Metric),
		Dimension{strings.Clone(k.Dimension.Name), strings.Clone(k.Dimension.Value)}}
	se := &series{last: now}
	s.series[k] = se
	return se
}

func (se *series) add(now int64, v Sample, retention int64) {
	se.totals.Sum += v.Sum
	se.totals.SampleCount += v.Count
	if now > se.last {
		se.last = now
	}
	live := se.buckets[se.head:]
	if n := len(live); n > 0 && live[n-1].minute == now {
		live[n-1].merge(v)
		return
	}
	se.evict(now, retention)
	b := bucket{minute: now, sum: v.Sum, count: v.Count, min: v.Min, max: v.Max}
	live = se.buckets[se.head:]
	i := sort.Search(len(live), func(i int) bool { return live[i].minute >= now })
	switch {
	case i < len(live) && live[i].minute == now:
		live[i].merge(v)
	case i == len(live):
		se.buckets = append(se.buckets, b)
	case now <= se.last-retention:
		// Older than the window (the clock went back): counted in the
		// totals only.
	default:
		// The clock went back to a minute with no bucket yet: rare.
		se.buckets = append(se.buckets, bucket{})
		j := se.head + i
		copy(se.buckets[j+1:], se.buckets[j:])
		se.buckets[j] = b
	}
}

func (b *bucket) merge(v Sample) {
	b.sum += v.Sum
	b.count += v.Count
	if v.Min < b.min {
		b.min = v.Min
	}
	if v.Max > b.max {
		b.max = v.Max
	}
}

// evict drops the minutes that have left the retention window, and
// compacts the slice when most of it is dead.
func (se *series) evict(now, retention int64) {
	for se.head < len(se.buckets) && se.buckets[se.head].minute <= now-retention {
		se.head++
	}
	if se.head > 0 && se.head*2 >= len(se.buckets) {
		n := copy(se.buckets, se.buckets[se.head:])
		se.buckets = se.buckets[:n]
		se.head = 0
	}
}

// Datapoints returns the minutes of account's series that start in [from,
// to), oldest first, within the retention window. Minutes without samples
// are absent. With the other nodes' points loaded (LoadPeers), a minute is
// the cluster's: this node's and theirs, merged.
func (s *Store) Datapoints(account, ns, metric string, dim Dimension, from, to time.Time) []Datapoint {
	k := SeriesKey{account, ns, metric, dim}
	s.mu.RLock()
	se := s.series[k]
	s.mu.RUnlock()
	lo, hi := minuteOf(from), minuteOf(to)
	if from.After(time.Unix(lo*60, 0)) {
		lo++ // a minute starting before from is not in the range
	}
	if cut := minuteOf(s.clock.Now()) - s.retention; lo <= cut {
		lo = cut + 1
	}
	var out []Datapoint
	if se != nil {
		se.mu.Lock()
		for _, b := range se.buckets[se.head:] {
			if b.minute < lo || b.minute >= hi {
				continue
			}
			out = append(out, Datapoint{Timestamp: time.Unix(b.minute*60, 0).UTC(),
				Sum: b.sum, SampleCount: b.count, Minimum: b.min, Maximum: b.max})
		}
		se.mu.Unlock()
	}
	return s.peerDatapoints(k, lo, hi, out)
}

// Totals returns the series' statistics since the store started (or since
// the series was created again after an eviction), and whether it exists.
func (s *Store) Totals(account, ns, metric string, dim Dimension) (Totals, bool) {
	s.mu.RLock()
	se := s.series[SeriesKey{account, ns, metric, dim}]
	s.mu.RUnlock()
	if se == nil {
		return Totals{}, false
	}
	se.mu.Lock()
	defer se.mu.Unlock()
	return se.totals, true
}

// Series lists the keys of every series of every account, sorted (by
// account first): this node's and, once loaded, the other nodes' (which
// have no Totals here).
func (s *Store) Series() []SeriesKey {
	s.mu.RLock()
	out := make([]SeriesKey, 0, len(s.series))
	for k := range s.series {
		out = append(out, k)
	}
	s.mu.RUnlock()
	out = s.peerSeries(out)
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Account != b.Account {
			return a.Account < b.Account
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Metric != b.Metric {
			return a.Metric < b.Metric
		}
		if a.Dimension.Name != b.Dimension.Name {
			return a.Dimension.Name < b.Dimension.Name
		}
		return a.Dimension.Value < b.Dimension.Value
	})
	return out
}

// storedAccount is account as a stored point names it (engine.MetricPoint):
// "" for the configured account.
func (s *Store) storedAccount(account string) string {
	if account == s.account {
		return ""
	}
	return account
}

// ownerOf is storedAccount's inverse: the account a stored point names.
func (s *Store) ownerOf(stored string) string {
	if stored == "" {
		return s.account
	}
	return stored
}

// keyOf is the series of a stored point.
func (s *Store) keyOf(p *engine.MetricPoint) SeriesKey {
	return SeriesKey{s.ownerOf(p.Account), p.Namespace, p.Metric, Dimension{p.DimName, p.DimValue}}
}
