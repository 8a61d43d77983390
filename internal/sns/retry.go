package sns

import (
	"context"
	"slices"
	"strings"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/sns/delivery"
)

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
	msg := &message{Message: delivery.Message{ID: m.ID, Body: m.Body, Subject: m.Subject, Timestamp: m.Timestamp,
		Attributes: m.Attributes, Sequence: m.Sequence}, groupID: group, dedupID: dedup}
	msg.attrList = make([]engine.MessageAttribute, 0, len(m.Attributes))
	for name, a := range m.Attributes {
		msg.attrList = append(msg.attrList, engine.MessageAttribute{Name: name, DataType: a.DataType, StringValue: a.StringValue, BinaryValue: a.BinaryValue})
	}
	slices.SortFunc(msg.attrList, func(a, b engine.MessageAttribute) int { return strings.Compare(a.Name, b.Name) })
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

// startRetries starts the workers of the at-once subscriptions that have
// retries kept in the store.
func (s *Service) startRetries(ctx context.Context) error {
	names, err := s.delivery.RetryQueues(ctx)
	if err != nil || len(names) == 0 {
		return err
	}
	for _, sub := range s.subs {
		if sub.Queue == "" && !sub.Deleted && names[delivery.RetryQueueName(sub.ARN)] {
			s.delivery.StartRetries(sub.delivery())
		}
	}
	return nil
}

// deleteQueues removes the subscription's delivery queue or, for an
// at-once subscription, its retry queue, if it has one.
func (s *Service) deleteQueues(ctx context.Context, sub *subscription) error {
	if sub.Queue == "" && !delivery.NeedsQueue(sub.Protocol) {
		return s.delivery.DeleteQueue(ctx, delivery.RetryQueueName(sub.ARN))
	}
	return s.delivery.DeleteQueue(ctx, sub.Queue)
}
