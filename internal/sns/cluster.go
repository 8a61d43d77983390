package sns

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/sns/delivery"
)

// Several nodes on one store (engine.Cluster.Shared) act as one SNS. Each
// keeps the topics and subscriptions in memory, as a single node does, and
// keeps them current three ways: news of other nodes' changes
// (RecordChanged), applied on a goroutine of the service; a look in the
// store before an action answers that a topic or subscription does not
// exist; and a fresh read before a change, so that a change builds on the
// stored record rather than on news still under way. Every node signs
// with one key kept in the store, and runs a worker for every subscription
// with a delivery queue: the workers of all nodes compete for the queue's
// messages through the store, and a retry, scheduled as the message's
// visibility, is taken by whichever node receives it next.

// kindSigningKey is a record that announces the shared signing key once a
// node has made it, so that the other nodes serve its certificate before
// they sign anything themselves. The key is in the store's secrets.
const kindSigningKey = "sns-signing-key"

// signingKeySecret names the shared signing key among the store's secrets:
// the key's PEM block and its certificate's.
const signingKeySecret = "sns-signing-key"

// newsKinds are the record kinds SNS keeps, in the order a full reread
// takes them (topics before their subscriptions).
var newsKinds = []string{kindTopic, kindSubscription, kindPlatformApp, kindPlatformEndpoint, kindSMS, kindSigningKey}

// newsRetry is the pause before news that could not be applied (the store
// did not answer) is tried again. It waits on the store, not on broker
// time, so it runs on real time, like the store's own reconnections.
const newsRetry = time.Second

// newsState is the goroutine that applies other nodes' changes, and what
// it has still to read.
type newsState struct {
	*engine.RecordNews
	stop context.CancelFunc
	done chan struct{}
}

// RecordChanged is told that another node put or deleted the record kind/key
// (engine.Cluster.WatchRecords); ("", "") means any record may have
// changed, (kind, "") any of that kind. It is called on the store's
// goroutine and does not block: the change is queued and applied on the
// service's own goroutine, which reads the record and installs, replaces
// or removes what this node keeps of it, starting or stopping delivery
// workers. Kinds that are not SNS's are ignored.
func (s *Service) RecordChanged(kind, key string) { s.news.Add(kind, key) }

// startNews starts the goroutine that applies news.
func (s *Service) startNews() {
	n := &s.news
	n.RecordNews = engine.NewRecordNews(newsKinds...)
	n.done = make(chan struct{})
	ctx, stop := context.WithCancel(context.Background())
	n.stop = stop
	go s.applyNews(ctx)
}

// stopNews stops applying news and waits until the goroutine has ended.
func (s *Service) stopNews() {
	s.news.stop()
	<-s.news.done
}

func (s *Service) applyNews(ctx context.Context) {
	defer close(s.news.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.news.Wake():
		}
		b := s.news.Take()
		if err := s.applyChanges(ctx, b); err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("sns: read other nodes' changes; trying again", "err", err)
			s.news.PutBack(b)
			select {
			case <-ctx.Done():
				return
			case <-time.After(newsRetry): // the wall clock: a retry of I/O
			}
		}
	}
}

// applyChanges rereads the kinds, then the records, topics first.
func (s *Service) applyChanges(ctx context.Context, b engine.RecordBatch) error {
	for _, kind := range b.Kinds {
		if err := s.rereadKind(ctx, kind); err != nil {
			return err
		}
	}
	for _, r := range b.Keys {
		if err := s.reread(ctx, r.Kind, r.Key); err != nil {
			return err
		}
	}
	return nil
}

// fresh rereads a record from a store other nodes share before a change
// builds on it; on a store of its own the node's memory is the record.
// The caller must not hold writeMu.
func (s *Service) fresh(ctx context.Context, kind, key string) error {
	if !s.shared {
		return nil
	}
	return s.reread(ctx, kind, key)
}

// reread reads the record kind/key from the store and installs, replaces
// or removes what this node keeps of it. The caller must not hold writeMu,
// which serialises it with this node's own changes.
func (s *Service) reread(ctx context.Context, kind, key string) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.rereadLocked(ctx, kind, key)
}

func (s *Service) rereadLocked(ctx context.Context, kind, key string) error {
	if kind == kindSigningKey {
		return s.delivery.LoadSharedKey(ctx)
	}
	v, found, err := s.records.GetRecord(ctx, kind, key)
	if err != nil {
		return err
	}
	return s.apply(ctx, kind, key, v, found)
}

// rereadKind rereads every record of a kind, and removes what this node
// keeps that the store no longer has.
func (s *Service) rereadKind(ctx context.Context, kind string) error {
	if kind == kindSigningKey {
		return s.delivery.LoadSharedKey(ctx)
	}
	recs, err := s.records.Records(ctx, kind)
	if err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	stored := make(map[string]bool, len(recs))
	for _, r := range recs {
		stored[r.Key] = true
		if err := s.apply(ctx, kind, r.Key, r.Value, true); err != nil {
			return err
		}
	}
	var gone []string
	s.mu.RLock()
	switch kind {
	case kindTopic:
		gone = missingKeys(s.topics, stored)
	case kindSubscription:
		gone = missingKeys(s.subs, stored)
	case kindPlatformApp:
		gone = missingKeys(s.platform.apps, stored)
	case kindPlatformEndpoint:
		gone = missingKeys(s.platform.endpoints, stored)
	case kindSMS:
		if !stored[smsStateKey] {
			gone = []string{smsStateKey}
		}
	}
	s.mu.RUnlock()
	for _, key := range gone {
		if err := s.apply(ctx, kind, key, nil, false); err != nil {
			return err
		}
	}
	return nil
}

func missingKeys[V any](m map[string]V, stored map[string]bool) []string {
	var out []string
	for k := range m {
		if !stored[k] {
			out = append(out, k)
		}
	}
	return out
}

// apply installs the record kind/key as the store has it (value; found
// false once it is deleted). The caller holds writeMu. A record that does
// not decode is logged and left out.
func (s *Service) apply(ctx context.Context, kind, key string, value []byte, found bool) error {
	switch kind {
	case kindTopic:
		return s.applyTopic(key, value, found)
	case kindSubscription:
		return s.applySubscription(ctx, key, value, found)
	case kindPlatformApp, kindPlatformEndpoint, kindSMS:
		s.mu.Lock()
		defer s.mu.Unlock()
		if !found {
			s.removePlatform(kind, key)
			return nil
		}
		if err := s.putPlatform(kind, key, value); err != nil {
			s.log.Error("sns: unreadable record", "kind", kind, "key", key, "err", err)
		}
	}
	return nil
}

func (s *Service) applyTopic(arn string, value []byte, found bool) error {
	if !found {
		s.mu.Lock()
		subs := s.topicSubs[arn]
		delete(s.topics, arn)
		delete(s.topicSubs, arn)
		for _, sub := range subs {
			s.forget(sub)
		}
		s.mu.Unlock()
		for _, sub := range subs {
			s.delivery.Stop(sub.ARN)
		}
		return nil
	}
	t, err := s.decodeTopic(value)
	if err != nil {
		s.log.Error("sns: unreadable topic record", "topic", arn, "err", err)
		return nil
	}
	s.mu.Lock()
	s.installTopic(t)
	s.mu.Unlock()
	return nil
}

func (s *Service) applySubscription(ctx context.Context, arn string, value []byte, found bool) error {
	s.mu.RLock()
	old := s.subs[arn]
	s.mu.RUnlock()
	if !found {
		if old != nil {
			s.mu.Lock()
			s.forget(old)
			s.mu.Unlock()
			s.delivery.Stop(arn)
		}
		return nil
	}
	sub, err := s.decodeSubscription(value)
	if err != nil {
		s.log.Error("sns: unreadable subscription record", "subscription", arn, "err", err)
		return nil
	}
	s.mu.RLock()
	t := s.topics[sub.TopicARN]
	s.mu.RUnlock()
	if t == nil {
		// Its topic's news has not come yet, or the topic is gone: the
		// store says which.
		if err := s.rereadLocked(ctx, kindTopic, sub.TopicARN); err != nil {
			return err
		}
		s.mu.RLock()
		t = s.topics[sub.TopicARN]
		s.mu.RUnlock()
		if t == nil {
			return s.dropOrphan(ctx, sub)
		}
	}
	s.mu.Lock()
	s.install(sub)
	s.mu.Unlock()
	if old != nil && old.Queue != "" && (old.Queue != sub.Queue || sub.Deleted) {
		s.delivery.Stop(arn)
	}
	if sub.Queue != "" && !sub.Deleted {
		s.delivery.Start(sub.delivery())
	}
	return nil
}

// sharedKey keeps the signing key among the store's secrets
// (delivery.Options.SharedKey). The node that makes it announces it with a
// record, whose news has the other nodes load it.
func (s *Service) sharedKey(ctx context.Context, create func() ([]byte, error)) ([]byte, error) {
	var made []byte
	v, err := s.cluster.Secret(ctx, signingKeySecret, func() ([]byte, error) {
		b, err := create()
		made = b
		return b, err
	})
	if err != nil {
		return nil, err
	}
	if made != nil && bytes.Equal(v, made) {
		if err := s.records.PutRecord(ctx, kindSigningKey, "made", []byte("{}")); err != nil {
			// The others load it when they first sign, or on their next
			// reread of everything.
			s.log.Warn("sns: announce the signing key", "err", err)
		}
	}
	return v, nil
}

// Stored implements delivery.Subscriptions: on a store of its own, the
// node's memory is the store.
func (h *deliveryHooks) Stored(ctx context.Context, arn string) (delivery.Subscription, bool, error) {
	s := (*Service)(h)
	if !s.shared {
		sub, _, ok := h.Live(arn)
		return sub, ok, nil
	}
	v, found, err := s.records.GetRecord(ctx, kindSubscription, arn)
	if err != nil || !found {
		return delivery.Subscription{}, false, err
	}
	sub, err := s.decodeSubscription(v)
	if err != nil {
		return delivery.Subscription{}, false, fmt.Errorf("subscription record %s: %w", arn, err)
	}
	if sub.Deleted {
		return delivery.Subscription{}, false, nil
	}
	return *sub.delivery(), true, nil
}
