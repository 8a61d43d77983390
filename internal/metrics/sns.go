package metrics

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// snsCounters maps the stored SNS metrics to the Prometheus counters that
// show them, per topic.
var snsCounters = []struct {
	metric string
	desc   *prometheus.Desc
}{
	{MessagesPublished, snsDesc("messages_published_total", "Messages accepted by Publish and PublishBatch.")},
	{NotificationsDelivered, snsDesc("notifications_delivered_total", "Notifications subscribers accepted.")},
	{NotificationsFailed, snsDesc("notifications_failed_total",
		"Notifications given up (HTTP/S: every failed attempt, retries included).")},
	{NotificationsFilteredOut, snsDesc("notifications_filtered_out_total", "Notifications a filter policy kept back.")},
	{NotificationsFilteredOutMessageAttributes, snsDesc("notifications_filtered_out_message_attributes_total",
		"Notifications kept back by attribute-scope filter policies.")},
	{NotificationsFilteredOutMessageBody, snsDesc("notifications_filtered_out_message_body_total",
		"Notifications kept back by body-scope filter policies.")},
	{NotificationsFilteredOutInvalidAttributes, snsDesc("notifications_filtered_out_invalid_attributes_total",
		"Notifications kept back because an attribute the policy reads is malformed.")},
	{NotificationsFilteredOutNoAttributes, snsDesc("notifications_filtered_out_no_message_attributes_total",
		"Notifications kept back because the message has no attributes.")},
	{NotificationsFilteredOutInvalidBody, snsDesc("notifications_filtered_out_invalid_message_body_total",
		"Notifications kept back because the body is not a JSON object.")},
	{NotificationsRedrivenToDLQ, snsDesc("notifications_redriven_to_dlq_total",
		"Notifications moved to a subscription's dead-letter queue.")},
	{NotificationsFailedToRedriveToDLQ, snsDesc("notifications_failed_to_redrive_to_dlq_total",
		"Notifications that could not be written to a subscription's dead-letter queue.")},
}

var descPublishSize = snsDesc("publish_size_bytes", "Size of the published messages.")

func snsDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("ferry_sns_"+name, help, []string{"account", "topic"}, nil)
}

// SNSCollector is a prometheus.Collector of every account's SNS topics'
// metrics in a Store.
type SNSCollector struct {
	store *Store
	log   *slog.Logger
}

// NewSNSCollector returns a collector of the SNS series of store.
func NewSNSCollector(store *Store, log *slog.Logger) *SNSCollector {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &SNSCollector{store: store, log: log}
}

// Describe implements prometheus.Collector.
func (c *SNSCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range snsCounters {
		ch <- m.desc
	}
	ch <- descPublishSize
}

// Collect implements prometheus.Collector.
func (c *SNSCollector) Collect(ch chan<- prometheus.Metric) {
	emit := func(m prometheus.Metric, err error) {
		if err != nil {
			c.log.Warn("metrics: skip a metric", "err", err)
			return
		}
		ch <- m
	}
	for _, k := range c.store.Series() {
		if k.Namespace != NamespaceSNS || k.Dimension.Name != DimTopicName {
			continue
		}
		t, ok := c.store.Totals(k.Account, k.Namespace, k.Metric, k.Dimension)
		if !ok {
			continue
		}
		if k.Metric == PublishSize {
			emit(prometheus.NewConstSummary(descPublishSize, uint64(t.SampleCount), t.Sum, nil, k.Account, k.Dimension.Value))
			continue
		}
		for _, m := range snsCounters {
			if m.metric == k.Metric {
				emit(prometheus.NewConstMetric(m.desc, prometheus.CounterValue, t.Sum, k.Account, k.Dimension.Value))
			}
		}
	}
}
