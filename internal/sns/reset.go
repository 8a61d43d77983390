package sns

import (
	"context"
	"fmt"

	"github.com/ferrymq/ferry/internal/arn"
)

// ResetCounts is what Reset removed.
type ResetCounts struct {
	Topics               int `json:"topics"`
	Subscriptions        int `json:"subscriptions"`
	PlatformApplications int `json:"platformApplications"`
	PlatformEndpoints    int `json:"platformEndpoints"`
	SMSSettings          int `json:"smsSettings"`
}

// Reset removes the SNS state of account, or of every account when it is
// "": topics with their FIFO sequences, subscriptions with their hidden
// delivery queues and endpoint claims, platform applications and
// endpoints, SMS settings and opt-outs, and the deliveries this node
// recorded and logged for those topics. What to remove is read from the
// store, not from this node's memory, so that what other nodes made goes
// too; they hear of every record removed (engine.Cluster.WatchRecords)
// and forget it. The signing key stays.
func (s *Service) Reset(ctx context.Context, account string) (ResetCounts, error) {
	of := func(a string) bool {
		parsed, ok := arn.Split(a)
		return account == "" || (ok && parsed.Account == account)
	}
	var c ResetCounts
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	// Subscriptions first: their workers stop before their queues go.
	subs, err := s.records.Records(ctx, kindSubscription)
	if err != nil {
		return c, fmt.Errorf("sns: reset: %w", err)
	}
	for _, r := range subs {
		if !of(r.Key) {
			continue
		}
		s.delivery.Stop(r.Key)
		if err := s.records.DeleteRecord(ctx, kindSubscription, r.Key); err != nil {
			return c, fmt.Errorf("sns: reset: %w", err)
		}
		// A record that no longer decodes leaves no queue to find.
		if sub, err := s.decodeSubscription(r.Value); err == nil {
			if err := s.delivery.DeleteQueue(ctx, sub.Queue); err != nil {
				return c, fmt.Errorf("sns: reset: %w", err)
			}
		}
		c.Subscriptions++
	}
	// An endpoint claim's value is the subscription's ARN.
	if err := s.deleteRecords(ctx, kindEndpoint, func(_ string, v []byte) bool { return of(string(v)) }, nil); err != nil {
		return c, err
	}
	err = s.deleteRecords(ctx, kindTopic, func(key string, _ []byte) bool { return of(key) }, func(key string) error {
		c.Topics++
		// Only FIFO topics have a sequence; dropping none is no error.
		return s.sequences.DropSequence(ctx, key)
	})
	if err != nil {
		return c, err
	}
	for _, k := range []struct {
		kind string
		n    *int
	}{{kindPlatformApp, &c.PlatformApplications}, {kindPlatformEndpoint, &c.PlatformEndpoints}} {
		err := s.deleteRecords(ctx, k.kind, func(key string, _ []byte) bool { return of(key) }, func(string) error { *k.n++; return nil })
		if err != nil {
			return c, err
		}
	}
	err = s.deleteRecords(ctx, kindSMS, func(key string, _ []byte) bool {
		return account == "" || s.smsAccountOf(s.smsAccount(key)) == account
	}, func(string) error { c.SMSSettings++; return nil })
	if err != nil {
		return c, err
	}
	s.forgetAccount(of, account)
	return c, nil
}

// deleteRecords deletes the records of kind that pick accepts, calling
// removed after each.
func (s *Service) deleteRecords(ctx context.Context, kind string, pick func(key string, value []byte) bool, removed func(key string) error) error {
	recs, err := s.records.Records(ctx, kind)
	if err != nil {
		return fmt.Errorf("sns: reset %s: %w", kind, err)
	}
	for _, r := range recs {
		if !pick(r.Key, r.Value) {
			continue
		}
		if err := s.records.DeleteRecord(ctx, kind, r.Key); err != nil {
			return fmt.Errorf("sns: reset %s: %w", kind, err)
		}
		if removed != nil {
			if err := removed(r.Key); err != nil {
				return fmt.Errorf("sns: reset %s: %w", kind, err)
			}
		}
	}
	return nil
}

// forgetAccount drops from memory what of picks (by ARN) and account's
// SMS settings ("" every account's), and the deliveries recorded for
// those topics. The caller holds writeMu and has removed the records.
func (s *Service) forgetAccount(of func(arn string) bool, account string) {
	var stopped []string
	s.mu.Lock()
	for a, sub := range s.subs {
		if of(a) {
			s.forget(sub)
			stopped = append(stopped, a)
		}
	}
	for a := range s.topics {
		if of(a) {
			delete(s.topics, a)
			delete(s.topicSubs, a)
		}
	}
	for a := range s.platform.apps {
		if of(a) {
			delete(s.platform.apps, a)
		}
	}
	for a := range s.platform.endpoints {
		if of(a) {
			delete(s.platform.endpoints, a)
		}
	}
	for a := range s.platform.sms {
		if account == "" || s.smsAccountOf(a) == account {
			delete(s.platform.sms, a)
		}
	}
	s.mu.Unlock()
	for _, a := range stopped {
		s.delivery.Stop(a)
	}
	s.ForgetDeliveries(account)
}

// ForgetDeliveries drops the deliveries this node recorded and logged for
// account's topics ("" every topic's): what a reset through another node
// leaves to each node, whose logs are its own.
func (s *Service) ForgetDeliveries(account string) {
	if account == "" {
		s.delivery.Forget(nil)
		return
	}
	s.delivery.Forget(func(topicARN string) bool {
		a, ok := arn.Split(topicARN)
		return ok && a.Account == account
	})
}
