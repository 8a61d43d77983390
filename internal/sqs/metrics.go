package sqs

import (
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/metrics"
)

// Toucher learns that an action named a queue (metrics.Sampler).
type Toucher interface {
	Touch(account, queue string)
}

// touch tells the sampler of an action on account's queue.
func (s *service) touch(account, queue string) {
	if s.activity != nil {
		s.activity.Touch(account, queue)
	}
}

// recordSent counts the messages a send enqueued, whoever sent them. A
// FIFO duplicate was not enqueued: it counts as deduplicated, not as sent.
func (p *Port) recordSent(account, queue string, msgs []engine.NewMessage, res []engine.SendResult) {
	if p.metrics == nil {
		return
	}
	for i := range res {
		if res[i].Duplicate {
			p.metrics.Record(account, metrics.NamespaceSQS, metrics.DeduplicatedSentMessages, metrics.Queue(queue), 1)
			continue
		}
		p.countSent(account, queue, &msgs[i])
	}
}

// countSent counts one message enqueued in account's queue as sent;
// p.metrics is set.
func (p *Port) countSent(account, queue string, m *engine.NewMessage) {
	p.metrics.Record(account, metrics.NamespaceSQS, metrics.MessagesSent, metrics.Queue(queue), 1)
	p.metrics.Record(account, metrics.NamespaceSQS, metrics.SentMessageSize, metrics.Queue(queue), float64(metrics.MessageSize(m)))
}

// recordReceived counts one receive call: its messages, or an empty receive.
func (s *service) recordReceived(account, queue string, n int) {
	if s.metrics == nil {
		return
	}
	if n == 0 {
		s.metrics.Record(account, metrics.NamespaceSQS, metrics.EmptyReceives, metrics.Queue(queue), 1)
		return
	}
	s.metrics.Record(account, metrics.NamespaceSQS, metrics.MessagesReceived, metrics.Queue(queue), float64(n))
}

// recordDeleted counts successful deletes (repeats of a valid handle too).
func (s *service) recordDeleted(account, queue string, n int) {
	if s.metrics == nil || n == 0 {
		return
	}
	s.metrics.Record(account, metrics.NamespaceSQS, metrics.MessagesDeleted, metrics.Queue(queue), float64(n))
}
