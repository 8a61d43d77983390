package metrics

import (
	"context"
	"fmt"
	"math"

	"github.com/ferrymq/ferry/internal/engine"
)

// Reset forgets the series of the accounts pick picks (SeriesKey.Account,
// an owner key; nil picks every series) with the other nodes' points of
// them, deletes their points in p, of every node, and returns how many
// series this node had of them: a reset of the broker's state. Totals
// restart with the series, as they do at a restart.
func (s *Store) Reset(ctx context.Context, p engine.MetricStore, pick func(account string) bool) (int, error) {
	// Held throughout, so that no flush saves a forgotten series again
	// and no refresh reads back the points being deleted.
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	n := s.forget(pick)
	var err error
	if pick == nil {
		err = p.DeleteMetricPointsBefore(ctx, math.MaxInt64)
	} else {
		err = p.DeleteMetricPoints(ctx, func(stored string) bool { return pick(s.ownerOf(stored)) })
	}
	if err != nil {
		return n, fmt.Errorf("metrics: reset: %w", err)
	}
	return n, nil
}

// Forget is Reset on this node alone: the store's points are left, for
// another node's reset, which deleted them.
func (s *Store) Forget(pick func(account string) bool) int {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	return s.forget(pick)
}

// forget drops the picked series and their overlay; refreshMu is held.
func (s *Store) forget(pick func(account string) bool) int {
	n := 0
	s.mu.Lock()
	if pick == nil {
		n = len(s.series)
		s.series = make(map[SeriesKey]*series)
	} else {
		for k := range s.series {
			if pick(k.Account) {
				delete(s.series, k)
				n++
			}
		}
	}
	s.mu.Unlock()
	s.peerMu.Lock()
	for k := range s.peers {
		if pick == nil || pick(k.Account) {
			delete(s.peers, k)
		}
	}
	s.peerMu.Unlock()
	return n
}
