package sqs

import (
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/metrics"
)

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
		s.metrics.Record(metrics.NamespaceSQS, metrics.SentMessageSize, metrics.Queue(queue), float64(metrics.MessageSize(&msgs[i])))
	}
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
