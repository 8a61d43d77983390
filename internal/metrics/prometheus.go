package metrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
)

// ScrapeTimeout bounds the engine reads of one scrape.
const ScrapeTimeout = 5 * time.Second

// queueLabels name a queue's series: every account's queues are shown, so
// that one scrape covers the broker, and the same name in two accounts is
// two series.
var queueLabels = []string{"account", "queue"}

var (
	descSent = prometheus.NewDesc("ferry_sqs_messages_sent_total",
		"Messages added to the queue by SendMessage and SendMessageBatch.", queueLabels, nil)
	descReceived = prometheus.NewDesc("ferry_sqs_messages_received_total",
		"Messages returned by ReceiveMessage.", queueLabels, nil)
	descEmpty = prometheus.NewDesc("ferry_sqs_empty_receives_total",
		"ReceiveMessage calls that returned no message.", queueLabels, nil)
	descDeleted = prometheus.NewDesc("ferry_sqs_messages_deleted_total",
		"Successful deletes with a valid receipt handle, repeats included.", queueLabels, nil)
	descDedup = prometheus.NewDesc("ferry_sqs_deduplicated_sent_messages_total",
		"FIFO sends dropped as duplicates.", queueLabels, nil)
	descSize = prometheus.NewDesc("ferry_sqs_sent_message_size_bytes",
		"Size of the messages added to the queue.", queueLabels, nil)
	descVisible = prometheus.NewDesc("ferry_sqs_messages_visible",
		"Messages available for retrieval.", queueLabels, nil)
	descNotVisible = prometheus.NewDesc("ferry_sqs_messages_not_visible",
		"Messages in flight.", queueLabels, nil)
	descDelayed = prometheus.NewDesc("ferry_sqs_messages_delayed",
		"Messages delayed by a queue or message delay.", queueLabels, nil)
	descAge = prometheus.NewDesc("ferry_sqs_age_of_oldest_message_seconds",
		"Age of the oldest message as ApproximateAgeOfOldestMessage counts it: from its send, or its move into a dead-letter queue; messages received 3 times or more are left out.",
		queueLabels, nil)
	descGroups = prometheus.NewDesc("ferry_sqs_groups_with_inflight_messages",
		"FIFO queues: message groups with a message in flight.", queueLabels, nil)
	descQueues = prometheus.NewDesc("ferry_sqs_queues",
		"Queues of the account.", []string{"account"}, nil)
	descStored = prometheus.NewDesc("ferry_sqs_messages_stored",
		"Messages stored in the account's queues: visible, in flight and delayed.", []string{"account"}, nil)
)

// counters maps the stored SQS metrics that Prometheus shows as counters.
var counters = []struct {
	metric string
	desc   *prometheus.Desc
}{
	{MessagesSent, descSent},
	{MessagesReceived, descReceived},
	{EmptyReceives, descEmpty},
	{MessagesDeleted, descDeleted},
	{DeduplicatedSentMessages, descDedup},
}

// Collector is a prometheus.Collector of every account's SQS queues: the
// counters come from a Store, the gauges from the engine at scrape time.
type Collector struct {
	store   *Store
	backend engine.Backend
	hidden  []string // accounts never shown (SamplerOptions.Hidden)
	log     *slog.Logger
	clock   clock.Clock // the store's: ages are measured on it
}

// NewCollector returns a collector of the queues of every account but the
// hidden ones.
func NewCollector(store *Store, backend engine.Backend, hidden []string, log *slog.Logger) *Collector {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Collector{store: store, backend: backend, hidden: hidden, log: log, clock: store.clock}
}

// emit sends a metric, or logs why it could not be built (a label value
// that is not UTF-8, say) instead of failing the whole scrape.
func (c *Collector) emit(ch chan<- prometheus.Metric) func(prometheus.Metric, error) {
	return func(m prometheus.Metric, err error) {
		if err != nil {
			c.log.Warn("metrics: skip a metric", "err", err)
			return
		}
		ch <- m
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range counters {
		ch <- m.desc
	}
	for _, d := range []*prometheus.Desc{descSize, descVisible, descNotVisible, descDelayed, descAge, descGroups, descQueues, descStored} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, k := range c.store.Series() {
		if k.Namespace != NamespaceSQS {
			continue
		}
		t, ok := c.store.Totals(k.Account, k.Namespace, k.Metric, k.Dimension)
		if !ok {
			continue
		}
		if k.Metric == SentMessageSize {
			c.emit(ch)(prometheus.NewConstSummary(descSize, uint64(t.SampleCount), t.Sum, nil, k.Account, k.Dimension.Value))
			continue
		}
		for _, m := range counters {
			if m.metric == k.Metric {
				c.emit(ch)(prometheus.NewConstMetric(m.desc, prometheus.CounterValue, t.Sum, k.Account, k.Dimension.Value))
			}
		}
	}
	if c.backend == nil {
		return
	}
	// Collect has no context of its own; a bound keeps a stuck store from
	// holding the scrape forever.
	ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
	defer cancel()
	queues, err := reportedQueues(ctx, c.backend, c.hidden)
	if err != nil {
		c.log.Warn("metrics: list queues", "err", err)
		return
	}
	now := c.clock.Now()
	// The queues come by account: each account's totals are emitted when
	// its last queue has been read.
	var queueCount, stored int64
	for i, q := range queues {
		if st, err := c.backend.Stats(ctx, q.Account, q.Name); err == nil {
			queueCount++
			stored += st.Visible + st.NotVisible + st.Delayed
			gauge := func(d *prometheus.Desc, v float64) {
				c.emit(ch)(prometheus.NewConstMetric(d, prometheus.GaugeValue, v, q.Account, q.Name))
			}
			gauge(descVisible, float64(st.Visible))
			gauge(descNotVisible, float64(st.NotVisible))
			gauge(descDelayed, float64(st.Delayed))
			gauge(descAge, AgeSeconds(st, now))
			if q.Settings.FIFO {
				gauge(descGroups, float64(st.GroupsInFlight))
			}
		} // else deleted since the listing, most likely: skip it.
		if i+1 < len(queues) && queues[i+1].Account == q.Account {
			continue
		}
		c.emit(ch)(prometheus.NewConstMetric(descQueues, prometheus.GaugeValue, float64(queueCount), q.Account))
		c.emit(ch)(prometheus.NewConstMetric(descStored, prometheus.GaugeValue, float64(stored), q.Account))
		queueCount, stored = 0, 0
	}
}
