package cloudwatch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/metrics"
)

// Several nodes on one store. Alarms and their history are records every
// node keeps in memory: a node changing one writes the record first, and
// the others hear of it through RecordChanged and read it again. Reads
// answer from memory, except that a named alarm missing there is looked
// up in the store, and every change of an alarm starts from the stored
// alarm, not from memory, and is written only if the store still has the
// alarm it started from (engine.RecordStore.SwapRecord); otherwise it is
// built again on the alarm as stored now, so that two changes of one
// alarm through two nodes at once both hold.
// Evaluation, with the notifications it sends, runs on one node at a
// time: the holder of AlarmLease.

// AlarmLease is the lease under which one node evaluates the alarms.
const AlarmLease = "cloudwatch-alarms"

const (
	// DefaultAlarmLease outlasts two missed evaluations, so that a slow
	// tick does not hand the work over, and another node takes over
	// within it when the holder dies.
	DefaultAlarmLease = 150 * time.Second
	// DefaultEvaluateAfter leaves every node two saves of its points
	// (metrics.DefaultSaveEvery) after a minute ends before that minute is
	// evaluated, so that the minute is the whole cluster's.
	DefaultEvaluateAfter = 2 * metrics.DefaultSaveEvery
	// applyTimeout bounds the store reads that apply one batch of news.
	applyTimeout = 30 * time.Second
	// newsRetry is the pause before news that could not be read (the
	// store did not answer) is tried again; real time, as the store's own
	// reconnections.
	newsRetry = time.Second
)

// joinCluster sets the service up as one node of several.
func (s *Service) joinCluster(cfg Config) {
	s.cluster = cfg.Cluster
	s.lease, s.after = cfg.LeaseTime, cfg.EvaluateAfter
	if s.lease <= 0 {
		s.lease = DefaultAlarmLease
	}
	if s.after <= 0 {
		s.after = DefaultEvaluateAfter
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	s.node = hex.EncodeToString(b[:])
	s.news = engine.NewRecordNews(kindAlarm, kindHistory)
}

// leaveCluster gives the alarm lease up if this node holds it.
func (s *Service) leaveCluster() error {
	if s.cluster == nil || !s.holding.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), applyTimeout)
	defer cancel()
	// A lease taken for no time ends at once.
	if _, err := s.cluster.TakeLease(ctx, AlarmLease, 0); err != nil {
		return fmt.Errorf("cloudwatch: give the alarm lease up: %w", err)
	}
	s.holding.Store(false)
	return nil
}

// RecordChanged tells the service that another node changed a record
// (engine.Cluster.WatchRecords): kind and key "" mean any record, a key ""
// any record of the kind. It does not block: the change is read from the
// store on the service's own goroutine. Only a service on a shared store
// acts on it.
func (s *Service) RecordChanged(kind, key string) {
	if s.cluster != nil {
		s.news.Add(kind, key)
	}
}

// Applied counts the batches of other nodes' changes the service has
// read, so that a test knows when news it caused has been applied.
func (s *Service) Applied() uint64 { return s.applied.Load() }

// Ticks counts the completed evaluation ticks, whether or not this node
// held the lease.
func (s *Service) Ticks() uint64 { return s.ticks.Load() }

// Evaluating reports whether this node held the alarm lease at its latest
// tick (always false on a store no other node shares).
func (s *Service) Evaluating() bool { return s.holding.Load() }

// follow applies other nodes' changes as they are reported.
func (s *Service) follow() {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.news.Wake():
		}
		b := s.news.Take()
		ctx, cancel := context.WithTimeout(s.ctx, applyTimeout)
		failed := s.apply(ctx, b)
		cancel()
		s.applied.Add(1)
		if len(failed) > 0 {
			s.news.PutBack(engine.RecordBatch{Kinds: failed})
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(newsRetry): // the wall clock: a retry of I/O
			}
		}
	}
}

// apply reads the changed records again and returns the kinds it could
// not read, to be read again whole.
func (s *Service) apply(ctx context.Context, b engine.RecordBatch) []string {
	var failed []string
	s.mu.Lock()
	defer s.mu.Unlock()
	// The reads run under mu, so that no change this node makes meanwhile
	// is replaced by an older value.
	for _, kind := range b.Kinds {
		var err error
		if kind == kindAlarm {
			err = s.loadAlarms(ctx)
		} else {
			err = s.loadHistory(ctx)
		}
		if err != nil {
			s.log.WarnContext(ctx, "cloudwatch: read other nodes' changes", "err", err)
			failed = append(failed, kind)
		}
	}
	for _, ref := range b.Keys {
		if slices.Contains(failed, ref.Kind) {
			continue
		}
		var err error
		if ref.Kind == kindAlarm {
			_, err = s.reread(ctx, ref.Key)
		} else {
			err = s.rereadHistory(ctx, ref.Key)
		}
		if err != nil {
			s.log.WarnContext(ctx, "cloudwatch: read other nodes' changes", "kind", ref.Kind, "key", ref.Key, "err", err)
			failed = append(failed, ref.Kind)
		}
	}
	if len(s.alarms) == 0 {
		s.disarm()
	} else {
		s.arm()
	}
	return failed
}

// reread reads the alarm called name from the store into memory and
// returns it, nil when there is none. The caller holds mu.
func (s *Service) reread(ctx context.Context, name string) (*alarm, error) {
	v, found, err := s.records.GetRecord(ctx, kindAlarm, name)
	if err != nil {
		return nil, fmt.Errorf("cloudwatch: read alarm %q: %w", name, err)
	}
	if !found {
		delete(s.alarms, name)
		return nil, nil
	}
	a := &alarm{stored: v}
	if err := json.Unmarshal(v, a); err != nil {
		return nil, fmt.Errorf("cloudwatch: alarm %q: %w", name, err)
	}
	s.alarms[name] = a
	// A node that learns of an alarm here, before the news of it, must
	// evaluate it from the next minute on as well.
	s.arm()
	return a, nil
}

// current is the alarm a change starts from: on a shared store the stored
// one, which another node may have changed, else the one in memory; nil
// when there is none. The caller holds mu.
func (s *Service) current(ctx context.Context, name string) (*alarm, error) {
	if s.cluster == nil {
		return s.alarms[name], nil
	}
	return s.reread(ctx, name)
}

// find is the alarm a read names: the one in memory, or on a shared store
// the stored one if memory has none yet (made through another node a
// moment ago). The caller holds mu.
func (s *Service) find(ctx context.Context, name string) (*alarm, error) {
	if a := s.alarms[name]; a != nil || s.cluster == nil {
		return a, nil
	}
	return s.reread(ctx, name)
}

// rereadHistory reads one history item from the store into memory, or
// drops it from memory when it is gone. The caller holds mu.
func (s *Service) rereadHistory(ctx context.Context, key string) error {
	v, found, err := s.records.GetRecord(ctx, kindHistory, key)
	if err != nil {
		return fmt.Errorf("cloudwatch: read history item %q: %w", key, err)
	}
	i := sort.Search(len(s.history), func(i int) bool { return s.history[i].key >= key })
	present := i < len(s.history) && s.history[i].key == key
	switch {
	case !found && present:
		s.history = append(s.history[:i], s.history[i+1:]...)
	case found:
		var h historyItem
		if err := json.Unmarshal(v, &h); err != nil {
			return fmt.Errorf("cloudwatch: history item %q: %w", key, err)
		}
		h.key = key
		if present {
			s.history[i] = h
			return nil
		}
		s.history = append(s.history, historyItem{})
		copy(s.history[i+1:], s.history[i:])
		s.history[i] = h
	}
	return nil
}

// lead reports whether this node is to evaluate the alarms now: always
// when it is alone; on a shared store while it holds the alarm lease,
// taken or renewed here. Before a node evaluates it reads the alarms and
// the other nodes' latest points, so that it judges the stored alarms on
// the cluster's figures.
func (s *Service) lead(ctx context.Context) bool {
	if s.cluster == nil {
		return true
	}
	held, err := s.cluster.TakeLease(ctx, AlarmLease, s.lease)
	if err != nil {
		s.log.WarnContext(ctx, "cloudwatch: take the alarm lease", "err", err)
		held = false
	}
	s.holding.Store(held)
	if !held {
		return false
	}
	// The alarms as they are stored, whatever news was lost or is still
	// on its way: one read a minute, on one node.
	s.mu.Lock()
	err = s.loadAlarms(ctx)
	s.mu.Unlock()
	if err != nil {
		s.log.WarnContext(ctx, "cloudwatch: read the alarms", "err", err)
	}
	if err := s.metrics.RefreshPeers(ctx, s.cluster); err != nil {
		s.log.WarnContext(ctx, "cloudwatch: read other nodes' datapoints", "err", err)
	}
	return true
}
