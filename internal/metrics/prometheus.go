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

var (
	descSent = prometheus.NewDesc("ferry_sqs_messages_sent_total",
		"Messages added to the queue by SendMessage and SendMessageBatch.", []string{"queue"}, nil)
	descReceived = prometheus.NewDesc("ferry_sqs_messages_received_total",
		"Messages returned by ReceiveMessage.", []string{"queue"}, nil)
	descEmpty = prometheus.NewDesc("ferry_sqs_empty_receives_total",
		"ReceiveMessage calls that returned no message.", []string{"queue"}, nil)
	descDeleted = prometheus.NewDesc("ferry_sqs_messages_deleted_total",
		"Successful deletes with a valid receipt handle, repeats included.", []string{"queue"}, nil)
	descDedup = prometheus.NewDesc("ferry_sqs_deduplicated_sent_messages_total",
		"FIFO sends dropped as duplicates.", []string{"queue"}, nil)
	descSize = prometheus.NewDesc("ferry_sqs_sent_message_size_bytes",
		"Size of the messages added to the queue.", []string{"queue"}, nil)
	descVisible = prometheus.NewDesc("ferry_sqs_messages_visible",
		"Messages available for retrieval.", []string{"queue"}, nil)
	descNotVisible = prometheus.NewDesc("ferry_sqs_messages_not_visible",
		"Messages in flight.", []string{"queue"}, nil)
	descDelayed = prometheus.NewDesc("ferry_sqs_messages_delayed",
		"Messages delayed by a queue or message delay.", []string{"queue"}, nil)
	descAge = prometheus.NewDesc("ferry_sqs_age_of_oldest_message_seconds",
		"Age of the oldest message as ApproximateAgeOfOldestMessage counts it: from its send, or its move into a dead-letter queue; messages received 3 times or more are left out.",
		[]string{"queue"}, nil)
	descGroups = prometheus.NewDesc("ferry_sqs_groups_with_inflight_messages",
		"FIFO queues: message groups with a message in flight.", []string{"queue"}, nil)
	descQueues = prometheus.NewDesc("ferry_sqs_queues",
		"Queues of the account.", nil, nil)
	descStored = prometheus.NewDesc("ferry_sqs_messages_stored",
		"Messages stored in the account's queues: visible, in flight and delayed.", nil, nil)
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

// Collector is a prometheus.Collector of one account's SQS queues: the
// counters come from a Store, the gauges from the engine at scrape time.
type Collector struct {
	store   *Store
	backend engine.Backend
	account string
	log     *slog.Logger
	clock   clock.Clock // the store's: ages are measured on it
}

// NewCollector returns a collector of account's queues.
func NewCollector(store *Store, backend engine.Backend, account string, log *slog.Logger) *Collector {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Collector{store: store, backend: backend, account: account, log: log, clock: store.clock}
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
		t, ok := c.store.Totals(k.Namespace, k.Metric, k.Dimension)
		if !ok {
			continue
		}
		if k.Metric == SentMessageSize {
			c.emit(ch)(prometheus.NewConstSummary(descSize, uint64(t.SampleCount), t.Sum, nil, k.Dimension.Value))
			continue
		}
		for _, m := range counters {
			if m.metric == k.Metric {
				c.emit(ch)(prometheus.NewConstMetric(m.desc, prometheus.CounterValue, t.Sum, k.Dimension.Value))
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
	queues, err := c.backend.ListQueues(ctx, c.account, "")
	if err != nil {
		c.log.Warn("metrics: list queues", "err", err)
		return
	}
	now := c.clock.Now()
	var queueCount, stored int64
	for _, q := range queues {
		st, err := c.backend.Stats(ctx, c.account, q.Name)
		if err != nil {
			// Deleted since the listing, most likely: skip it.
			continue
		}
		queueCount++
		stored += st.Visible + st.NotVisible + st.Delayed
		c.emit(ch)(prometheus.NewConstMetric(descVisible, prometheus.GaugeValue, float64(st.Visible), q.Name))
		c.emit(ch)(prometheus.NewConstMetric(descNotVisible, prometheus.GaugeValue, float64(st.NotVisible), q.Name))
		c.emit(ch)(prometheus.NewConstMetric(descDelayed, prometheus.GaugeValue, float64(st.Delayed), q.Name))
		c.emit(ch)(prometheus.NewConstMetric(descAge, prometheus.GaugeValue, AgeSeconds(st, now), q.Name))
		if q.Settings.FIFO {
			c.emit(ch)(prometheus.NewConstMetric(descGroups, prometheus.GaugeValue, float64(st.GroupsInFlight), q.Name))
		}
	}
	c.emit(ch)(prometheus.NewConstMetric(descQueues, prometheus.GaugeValue, float64(queueCount)))
	c.emit(ch)(prometheus.NewConstMetric(descStored, prometheus.GaugeValue, float64(stored)))
}
