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
// A call's messages are recorded as one sample per metric: one lookup of
// each series rather than one per message.
func (p *Port) recordSent(account, queue string, msgs []engine.NewMessage, res []engine.SendResult) {
	if p.metrics == nil {
		return
	}
	var sent, sizes, duplicates metrics.Sample
	for i := range res {
		if res[i].Duplicate {
			duplicates.Add(1)
			continue
		}
		sent.Add(1)
		sizes.Add(float64(metrics.MessageSize(&msgs[i])))
	}
	p.recordSample(account, queue, metrics.DeduplicatedSentMessages, duplicates)
	p.recordSample(account, queue, metrics.MessagesSent, sent)
	p.recordSample(account, queue, metrics.SentMessageSize, sizes)
}

// recordSample records v of account's queue in SQS's metric, unless it
// is empty; p.metrics is set.
func (p *Port) recordSample(account, queue, metric string, v metrics.Sample) {
	if v.Count == 0 {
		return
	}
	p.metrics.RecordSample(account, metrics.NamespaceSQS, metric, metrics.Queue(queue), v)
}

// countSent counts one message enqueued in account's queue as sent;
// p.metrics is set.
func (p *Port) countSent(account, queue string, m *engine.NewMessage) {
	p.recordSample(account, queue, metrics.MessagesSent, metrics.One(1))
	p.recordSample(account, queue, metrics.SentMessageSize, metrics.One(float64(metrics.MessageSize(m))))
}

// recordReceived counts one receive call: its messages, or an empty receive.
func (s *service) recordReceived(account, queue string, n int) {
	if s.metrics == nil {
		return
	}
	if n == 0 {
		s.recordSample(account, queue, metrics.EmptyReceives, metrics.One(1))
		return
	}
	s.recordSample(account, queue, metrics.MessagesReceived, metrics.One(float64(n)))
}

// recordDeleted counts successful deletes (repeats of a valid handle too).
func (p *Port) recordDeleted(account, queue string, n int) {
	if p.metrics == nil || n == 0 {
		return
	}
	p.recordSample(account, queue, metrics.MessagesDeleted, metrics.One(float64(n)))
}
