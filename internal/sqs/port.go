package sqs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ferrymq/ferry/internal/arn"
	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	iam "github.com/ferrymq/ferry/internal/policy"
	"github.com/ferrymq/ferry/internal/region"
	"github.com/ferrymq/ferry/internal/sigv4"
)

// Port is the way into SQS queues for the rest of Ferry: SNS's copies of
// its messages and their dead-letter copies, and the messages move tasks
// write. Whichever way a message comes, SQS's rules apply here, as they
// do to SendMessage, which goes through the same code: Message checks a
// message against SQS's limits and computes its digests; Send and
// SendMany find the queue as SQS does (the queues are this account's, in
// this region) and count what they enqueue in the queue's metrics as
// SendMessage counts its own sends, as AWS counts SNS deliveries;
// MovedByTask counts a move task's writes so.
//
// A refusal is a *protocol.Error worded as SQS answers the service that
// sent the message; any other error is the engine's. A Port is safe for
// concurrent use.
type Port struct {
	account, region string
	backend         engine.Backend
	metrics         Recorder
	clock           clock.Clock
	policies        policyCache
}

// NewPort returns the port into the queues of cfg.Backend; it uses
// cfg's Account, Region, Backend and Metrics.
func NewPort(cfg Config) *Port {
	p := &Port{account: cfg.Account, region: cfg.Region, backend: cfg.Backend, metrics: cfg.Metrics, clock: cfg.Clock}
	if p.clock == nil {
		p.clock = clock.Real{}
	}
	if p.account == "" {
		p.account = DefaultAccount
	}
	if p.region == "" {
		p.region = DefaultRegion
	}
	return p
}

// Message builds a message another service sends: body and attributes
// (sorted by name) as that service checked them by its own rules, the
// sender, and the digests. err is SQS's refusal when the message breaks
// one of SQS's limits; the message is built all the same, so that the
// sender can hand it on as it is (SNS puts a copy its queue refused into
// the subscription's dead-letter queue).
func (p *Port) Message(body string, attrs []engine.MessageAttribute, senderID string) (engine.NewMessage, error) {
	nm := engine.NewMessage{Body: body, Attributes: attrs, SenderID: senderID}
	setDigests(&nm)
	if n := len(attrs); n > maxMessageAttributes {
		return nm, invalidParameter(tooManyAttributesFromService, n, maxMessageAttributes)
	}
	return nm, nil
}

// Send writes msgs into the queue that queueARN names, in one engine
// write, and counts them. A standard queue takes no deduplication id:
// Send clears in msgs those it would not take (a FIFO topic's copies may
// go to standard queues).
func (p *Port) Send(ctx context.Context, queueARN string, msgs []engine.NewMessage) ([]engine.SendResult, error) {
	owner, _, name, ok := p.resolve(queueARN)
	if !ok {
		return nil, errQueueUnreachable
	}
	fitDeduplication(name, msgs)
	res, err := p.send(ctx, owner, name, msgs)
	if errors.Is(err, engine.ErrQueueNotFound) {
		return nil, errQueueUnreachable
	}
	return res, err
}

// SendMany is Send to several queues in one engine write, so that copies
// for many queues cost about one commit: queueARNs[i] takes msgs[i], and
// each part is answered as Send would answer it alone. An error is for
// the whole call, and then nothing was written.
func (p *Port) SendMany(ctx context.Context, queueARNs []string, msgs [][]engine.NewMessage) ([]engine.SendOutcome, error) {
	// sends[i] is queueARNs[i]'s part, its Name "" when the queue cannot
	// exist; the engine is given those that may (all, usually).
	sends := make([]engine.QueueSend, len(queueARNs))
	n := 0
	for i, a := range queueARNs {
		if owner, _, name, ok := p.resolve(a); ok {
			fitDeduplication(name, msgs[i])
			sends[i] = engine.QueueSend{Account: owner, Name: name, Msgs: msgs[i]}
			n++
		}
	}
	written := sends
	if n < len(sends) {
		written = make([]engine.QueueSend, 0, n)
		for _, s := range sends {
			if s.Name != "" {
				written = append(written, s)
			}
		}
	}
	var res []engine.SendOutcome
	if len(written) > 0 {
		var err error
		if res, err = p.backend.SendMany(ctx, written); err != nil {
			return nil, err
		}
	}
	for j := range res {
		switch o := &res[j]; {
		case o.Err == nil:
			p.recordSent(written[j].Account, written[j].Name, written[j].Msgs, o.Results)
		case errors.Is(o.Err, engine.ErrQueueNotFound):
			o.Err = errQueueUnreachable
		}
	}
	if len(written) == len(sends) {
		return res, nil
	}
	outs := make([]engine.SendOutcome, len(sends))
	for i := range sends {
		if sends[i].Name == "" {
			outs[i].Err = errQueueUnreachable
		} else {
			outs[i], res = res[0], res[1:]
		}
	}
	return outs, nil
}

// MovedByTask counts a message that a move task wrote into a queue of
// account as sent there (engine.Store.OnMovedByTask). Such a message is a
// new one in its destination (new id, new SentTimestamp, no receives), as
// a send makes it, and AWS has the task need sqs:SendMessage on the
// destination. A redrive policy's move into a dead-letter queue is
// another matter: it keeps the message and is not counted.
func (p *Port) MovedByTask(account, queue string, m *engine.NewMessage) {
	if p.metrics != nil {
		p.countSent(account, queue, m)
	}
}

// send writes msgs into the named queue of account and counts what it
// enqueued: the one write of SendMessage, SendMessageBatch and the
// services' sends.
func (p *Port) send(ctx context.Context, account, name string, msgs []engine.NewMessage) ([]engine.SendResult, error) {
	res, err := p.backend.Send(ctx, account, name, msgs)
	if err != nil {
		return nil, err
	}
	if len(res) != len(msgs) {
		return nil, fmt.Errorf("engine answered %d results for %d messages", len(res), len(msgs))
	}
	p.recordSent(account, name, msgs, res)
	return res, nil
}

// Locate is the queue a queue URL or ARN names, as the store keeps it:
// its owner (region.Owner) and name. A URL without an account is the
// configured account's, one without a region the home region's. ok is
// false when ref names no queue.
func (p *Port) Locate(ref string) (owner, name string, ok bool) {
	if strings.HasPrefix(ref, "arn:") {
		owner, _, name, ok = p.resolve(ref)
		return owner, name, ok
	}
	account, name, reg, ok := parseQueueRef(ref)
	if !ok || !validAnyQueueName(name) {
		return "", "", false
	}
	if account == "" {
		account = p.account
	}
	if reg == "" {
		reg = p.region
	}
	return region.Owner(account, reg, p.region), name, true
}

// resolve is the queue that queueARN names: the key its store keeps it
// under (region.Owner), its account and its name, in any region, as SNS
// delivers across regions on AWS. ok is false for any ARN but one of a
// queue of an account (an account id, or the configured account) in a
// region, which cannot exist. Whether the sender may write there is the
// sender's to decide before it sends (SNS: mayDeliver).
func (p *Port) resolve(queueARN string) (owner, account, name string, ok bool) {
	a, ok := arn.Parse(queueARN)
	if !ok || a.Service != "sqs" || !region.Valid(a.Region) || a.Account != p.account && !sigv4.IsAccountID(a.Account) ||
		!validAnyQueueName(a.Resource) {
		return "", "", "", false
	}
	return region.Owner(a.Account, a.Region, p.region), a.Account, a.Resource, true
}

// MaySNSSend reports whether the topic topicARN may send into the queue
// queueARN, as the queue's Policy decides it (policy.MaySNSSend): SNS
// asks before it writes a subscription's copies or its dead-letter
// copies. A queue that cannot be found is let through: the send then
// answers that it is missing, as before. An invalid stored Policy grants
// and denies nothing.
func (p *Port) MaySNSSend(ctx context.Context, topicARN, queueARN string) (bool, error) {
	owner, account, name, ok := p.resolve(queueARN)
	if !ok {
		return true, nil
	}
	q, err := p.backend.ViewQueue(ctx, owner, name)
	if errors.Is(err, engine.ErrQueueNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	var pol *iam.Policy
	if raw := q.Attributes[attrPolicy]; raw != "" {
		pol, _ = p.policies.parse(raw)
	}
	topic, _ := arn.Parse(topicARN)
	return iam.MaySNSSend(pol, topicARN, topic.Account, queueARN, account, p.clock.Now()), nil
}

// fitDeduplication clears the deduplication ids of messages for a
// standard queue: deduplication is FIFO's.
func fitDeduplication(queue string, msgs []engine.NewMessage) {
	if strings.HasSuffix(queue, fifoSuffix) {
		return
	}
	for i := range msgs {
		msgs[i].DeduplicationID = ""
	}
}
