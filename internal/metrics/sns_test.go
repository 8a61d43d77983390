package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
)

func TestSNSCollector(t *testing.T) {
	t.Parallel()
	s := New(Options{Clock: clock.NewFake(t0)})
	for _, r := range []struct {
		ns, metric string
		dim        Dimension
		v          float64
	}{
		{NamespaceSNS, MessagesPublished, Topic("t"), 1},
		{NamespaceSNS, MessagesPublished, Topic("t"), 1},
		{NamespaceSNS, PublishSize, Topic("t"), 10},
		{NamespaceSNS, PublishSize, Topic("t"), 30},
		{NamespaceSNS, NotificationsDelivered, Topic("t"), 1},
		{NamespaceSNS, NotificationsFailed, Topic("u"), 1},
		{NamespaceSNS, NotificationsFilteredOut, Topic("u"), 1},
		{NamespaceSNS, NotificationsFilteredOutNoAttributes, Topic("u"), 1},
		{NamespaceSNS, NotificationsFailedToRedriveToDLQ, Topic("u"), 1},
		{NamespaceSQS, MessagesSent, Queue("q"), 5},     // not an SNS series
		{NamespaceSNS, "SMSSuccessRate", Topic("t"), 1}, // not exported
	} {
		s.Record(acct, r.ns, r.metric, r.dim, r.v)
	}
	// The same topic name in another account is another series.
	s.Record(other, NamespaceSNS, MessagesPublished, Topic("t"), 1)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewSNSCollector(s, nil))
	want := `
# HELP ferry_sns_messages_published_total Messages accepted by Publish and PublishBatch.
# TYPE ferry_sns_messages_published_total counter
ferry_sns_messages_published_total{account="123456789012",topic="t"} 2
ferry_sns_messages_published_total{account="222222222222",topic="t"} 1
# HELP ferry_sns_notifications_delivered_total Notifications subscribers accepted.
# TYPE ferry_sns_notifications_delivered_total counter
ferry_sns_notifications_delivered_total{account="123456789012",topic="t"} 1
# HELP ferry_sns_notifications_failed_to_redrive_to_dlq_total Notifications that could not be written to a subscription's dead-letter queue.
# TYPE ferry_sns_notifications_failed_to_redrive_to_dlq_total counter
ferry_sns_notifications_failed_to_redrive_to_dlq_total{account="123456789012",topic="u"} 1
# HELP ferry_sns_notifications_failed_total Notifications given up (HTTP/S: every failed attempt, retries included).
# TYPE ferry_sns_notifications_failed_total counter
ferry_sns_notifications_failed_total{account="123456789012",topic="u"} 1
# HELP ferry_sns_notifications_filtered_out_no_message_attributes_total Notifications kept back because the message has no attributes.
# TYPE ferry_sns_notifications_filtered_out_no_message_attributes_total counter
ferry_sns_notifications_filtered_out_no_message_attributes_total{account="123456789012",topic="u"} 1
# HELP ferry_sns_notifications_filtered_out_total Notifications a filter policy kept back.
# TYPE ferry_sns_notifications_filtered_out_total counter
ferry_sns_notifications_filtered_out_total{account="123456789012",topic="u"} 1
# HELP ferry_sns_publish_size_bytes Size of the published messages.
# TYPE ferry_sns_publish_size_bytes summary
ferry_sns_publish_size_bytes_sum{account="123456789012",topic="t"} 40
ferry_sns_publish_size_bytes_count{account="123456789012",topic="t"} 2
`
	if got := scrape(reg); strings.TrimSpace(got) != strings.TrimSpace(want) {
		t.Errorf("scrape:\n%s\nwant:\n%s", got, want)
	}
}

func TestMessageSize(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		m    engine.NewMessage
		want int
	}{
		{engine.NewMessage{}, 0},
		{engine.NewMessage{Body: "hello"}, 5},
		{engine.NewMessage{Body: "ab", Attributes: []engine.MessageAttribute{
			{Name: "k", DataType: "String", StringValue: "vv"},
			{Name: "bin", DataType: "Binary", BinaryValue: []byte{1, 2, 3}},
		}}, 2 + 1 + 6 + 2 + 3 + 6 + 3},
	} {
		if got := MessageSize(&c.m); got != c.want {
			t.Errorf("MessageSize(%+v) = %d, want %d", c.m, got, c.want)
		}
	}
}
