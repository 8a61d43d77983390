package sns

import (
	"context"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/sns/delivery"
)

// retry is a delivery of a fan-out to an at-once subscription that goes to
// its retry queue (delivery.Service.Retry): a fault's server-side failure
// of the first attempt (f, handed off at at), or, on a FIFO topic, a
// message behind such a one (f nil).
type retry struct {
	m  *message
	f  *delivery.Faulted
	at time.Time
}

// behindRetries reports whether sub's deliveries wait behind its retries:
// those of a FIFO topic, once the subscription has a retry queue.
func behindRetries(t *topic, sub *subscription) bool { return t.FIFO && sub.Queue != "" }

// retry hands rs, in order, to sub's retry queue.
func (s *Service) retry(ctx context.Context, t *topic, sub *subscription, rs []retry) error {
	if len(rs) == 0 {
		return nil
	}
	ds, err := s.retryQueue(ctx, t, sub.ARN)
	if err != nil || ds == nil {
		return err
	}
	for _, r := range rs {
		if r.f == nil {
			err = s.delivery.QueueBehind(ctx, ds, &r.m.Message, r.m.groupID, r.m.dedupID)
		} else {
			err = s.delivery.Retry(ctx, ds, &r.m.Message, r.m.groupID, r.m.dedupID, *r.f, r.at)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// retryQueue is the at-once subscription arn with its retry queue, which
// it gets when a delivery first needs one: named in its record, so that
// every node runs its worker (applySubscription) and that the name is new
// each time. It is nil once the subscription is gone.
func (s *Service) retryQueue(ctx context.Context, t *topic, arn string) (*delivery.Subscription, error) {
	s.mu.RLock()
	sub := s.subs[arn]
	s.mu.RUnlock()
	if sub != nil && sub.Queue != "" {
		return sub.delivery(), nil
	}
	var ds *delivery.Subscription
	err := s.retryRaces(ctx, "retry delivery", kindSubscription, arn, func() error {
		s.mu.RLock()
		sub := s.subs[arn]
		s.mu.RUnlock()
		switch {
		case sub == nil || !sub.active():
			return nil
		case sub.Queue != "":
			ds = sub.delivery()
			return nil
		}
		c := sub.clone()
		c.Queue = delivery.RetryQueueName(arn, t.FIFO)
		if err := s.delivery.CreateQueue(ctx, c.Queue); err != nil {
			return err
		}
		if err := s.saveSubscription(ctx, c); err != nil {
			if derr := s.delivery.DeleteQueue(ctx, c.Queue); derr != nil {
				s.log.WarnContext(ctx, "sns: drop unused retry queue", "subscription", arn, "err", derr)
			}
			return err
		}
		s.delivery.Start(c.delivery())
		ds = c.delivery()
		return nil
	})
	return ds, err
}

// Deliver delivers a retried notification of an at-once subscription
// (delivery.Service.Retry) into its endpoint, as the publish would have:
// for SQS the same copy (envelope or raw, digests and attributes), with
// the queue's policy asked again.
func (h *deliveryHooks) Deliver(ctx context.Context, t *delivery.Topic, ds *delivery.Subscription, m *delivery.Message, group, dedup string) error {
	s := (*Service)(h)
	if ds.Protocol != delivery.ProtoSQS {
		return s.delivery.RecordNotification(t, ds, m)
	}
	s.mu.RLock()
	sub, tp := s.subs[ds.ARN], s.topics[ds.TopicARN]
	s.mu.RUnlock()
	if sub == nil || tp == nil {
		return nil // gone since: nobody to deliver to
	}
	// Field by field: a Message keeps its renderings under a lock.
	msg := &message{Message: delivery.Message{ID: m.ID, Body: m.Body, Subject: m.Subject, Timestamp: m.Timestamp,
		Attributes: m.Attributes, Sequence: m.Sequence}, attrList: delivery.AttrList(m.Attributes), groupID: group, dedupID: dedup}
	allowed, err := s.mayDeliver(ctx, tp.ARN, sub.Endpoint)
	if err != nil {
		return err
	}
	nm, err := s.sqsCopy(tp, sub, msg)
	if err == nil && !allowed {
		err = errDeliveryDenied
	}
	if err != nil {
		return err
	}
	_, err = s.sqs.Send(ctx, sub.Endpoint, []engine.NewMessage{nm})
	return err
}
