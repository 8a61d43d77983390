package sqs

import (
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/metrics"
)

// Toucher learns that an action named a queue (metrics.Sampler).
type Toucher interface {
	Touch(queue string)
}

func (s *service) touch(queue string) {
	if s.activity != nil {
		s.activity.Touch(queue)
	}
}

// recordSent counts the messages a send enqueued. A FIFO duplicate was not
// enqueued: it counts as deduplicated, not as sent.
func (s *service) recordSent(queue string, msgs []engine.NewMessage, res []engine.SendResult) {
	if s.metrics == nil {
		return
	}
	for i := range res {
		if res[i].Duplicate {
			s.metrics.Record(metrics.NamespaceSQS, metrics.DeduplicatedSentMessages, metrics.Queue(queue), 1)
			continue
		}
		s.metrics.Record(metrics.NamespaceSQS, metrics.MessagesSent, metrics.Queue(queue), 1)
		s.metrics.Record(metrics.NamespaceSQS, metrics.SentMessageSize, metrics.Queue(queue), float64(sentSize(&msgs[i])))
	}
}

// sentSize is a message's body plus its attributes' names, types and
// values, as SQS counts message size.
func sentSize(m *engine.NewMessage) int {
	n := len(m.Body)
	for i := range m.Attributes {
		a := &m.Attributes[i]
		n += len(a.Name) + len(a.DataType) + len(a.StringValue) + len(a.BinaryValue)
	}
	return n
}

// recordReceived counts one receive call: its messages, or an empty receive.
func (s *service) recordReceived(queue string, n int) {
	if s.metrics == nil {
		return
	}
	if n == 0 {
		s.metrics.Record(metrics.NamespaceSQS, metrics.EmptyReceives, metrics.Queue(queue), 1)
		return
	}
	s.metrics.Record(metrics.NamespaceSQS, metrics.MessagesReceived, metrics.Queue(queue), float64(n))
}

// recordDeleted counts successful deletes (repeats of a valid handle too).
func (s *service) recordDeleted(queue string, n int) {
	if s.metrics == nil || n == 0 {
		return
	}
	s.metrics.Record(metrics.NamespaceSQS, metrics.MessagesDeleted, metrics.Queue(queue), float64(n))
}
