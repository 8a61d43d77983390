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
		recordOneSent(s.metrics, queue, &msgs[i])
	}
}

// RecordMovedByTask counts a message that a move task wrote into queue as
// sent there. Such a message is a new one in its destination (new id, new
// SentTimestamp, no receives), as a send makes it, and AWS has the task
// need sqs:SendMessage on the destination. A redrive policy's move into a
// dead-letter queue is another matter: it keeps the message and is not
// counted.
func RecordMovedByTask(r Recorder, queue string, m *engine.NewMessage) {
	if r != nil {
		recordOneSent(r, queue, m)
	}
}

func recordOneSent(r Recorder, queue string, m *engine.NewMessage) {
	r.Record(metrics.NamespaceSQS, metrics.MessagesSent, metrics.Queue(queue), 1)
	r.Record(metrics.NamespaceSQS, metrics.SentMessageSize, metrics.Queue(queue), float64(metrics.MessageSize(m)))
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
