package metrics

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

// The other nodes' points, on a store several nodes share. Each node
// records and saves only its own points (the store keeps them per node),
// and reads the cluster's figures as its own plus an overlay of the
// others': loaded once, then refreshed for the recent minutes only. A
// node saves its current minute every SaveEvery and once more after the
// minute has ended, so a minute older than peerSettle no longer changes.

// peerSettle is how many minutes before the current one a refresh reads
// again: the current minute and the one just ended change until their
// nodes' next save; one more covers a node that saves late.
const peerSettle = 2

// Cluster is what the sampler needs of a store several nodes share
// (engine.Cluster).
type Cluster interface {
	Shared() bool
	TakeLease(ctx context.Context, name string, d time.Duration) (bool, error)
	PeerMetricPoints(ctx context.Context, from int64) ([]engine.MetricPoint, error)
}

// Peers is where the other nodes' points come from (engine.Cluster).
type Peers interface {
	PeerMetricPoints(ctx context.Context, from int64) ([]engine.MetricPoint, error)
}

// LoadPeers reads the other nodes' points within retention into the
// overlay, replacing what it held. From then on Datapoints and Series
// show them beside the store's own.
func (s *Store) LoadPeers(ctx context.Context, p Peers) error {
	return s.readPeers(ctx, p, minuteOf(s.clock.Now())-s.retention+1)
}

// RefreshPeers reads the other nodes' points of the last minutes again.
// Before LoadPeers it loads everything.
func (s *Store) RefreshPeers(ctx context.Context, p Peers) error {
	from := minuteOf(s.clock.Now()) - peerSettle
	s.peerMu.RLock()
	loaded := s.peers != nil
	s.peerMu.RUnlock()
	if !loaded {
		from = minuteOf(s.clock.Now()) - s.retention + 1
	}
	return s.readPeers(ctx, p, from)
}

// readPeers replaces the overlay's minutes from on with the peers'.
func (s *Store) readPeers(ctx context.Context, p Peers, from int64) error {
	// Refreshes run one at a time, so that an older read never replaces
	// a newer one.
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	points, err := p.PeerMetricPoints(ctx, from)
	if err != nil {
		return fmt.Errorf("metrics: read other nodes' points: %w", err)
	}
	cut := minuteOf(s.clock.Now()) - s.retention // minutes up to cut are gone
	s.peerMu.Lock()
	defer s.peerMu.Unlock()
	if s.peers == nil {
		s.peers = map[SeriesKey][]bucket{}
	}
	for k, bs := range s.peers {
		i := sort.Search(len(bs), func(i int) bool { return bs[i].minute > cut })
		j := sort.Search(len(bs), func(i int) bool { return bs[i].minute >= from })
		if j < i {
			j = i
		}
		if i == j {
			delete(s.peers, k)
			continue
		}
		// Re-slicing keeps the refresh cheap; the front dropped is freed
		// when an append next reallocates.
		s.peers[k] = bs[i:j]
	}
	for i := range points {
		pt := &points[i]
		if pt.Minute <= cut || pt.Minute < from {
			continue
		}
		k := s.keyOf(pt)
		b := bucket{minute: pt.Minute, sum: pt.Sum, count: pt.Count, min: pt.Min, max: pt.Max}
		bs := s.peers[k]
		// The points come by minute; a store that sends them otherwise
		// still gets them in order.
		n := len(bs)
		if n == 0 || bs[n-1].minute < b.minute {
			s.peers[k] = append(bs, b)
			continue
		}
		at := sort.Search(n, func(i int) bool { return bs[i].minute >= b.minute })
		if bs[at].minute == b.minute {
			bs[at] = b
			continue
		}
		bs = append(bs, bucket{})
		copy(bs[at+1:], bs[at:])
		bs[at] = b
		s.peers[k] = bs
	}
	return nil
}

// peerDatapoints merges the peers' minutes [lo, hi) of series k into own
// (sorted by minute, from the store's own series).
func (s *Store) peerDatapoints(k SeriesKey, lo, hi int64, own []Datapoint) []Datapoint {
	s.peerMu.RLock()
	defer s.peerMu.RUnlock()
	bs := s.peers[k]
	if len(bs) == 0 {
		return own
	}
	i := sort.Search(len(bs), func(i int) bool { return bs[i].minute >= lo })
	var out []Datapoint
	j := 0
	for ; i < len(bs) && bs[i].minute < hi; i++ {
		b := &bs[i]
		at := time.Unix(b.minute*60, 0).UTC()
		for j < len(own) && own[j].Timestamp.Before(at) {
			out = append(out, own[j])
			j++
		}
		d := Datapoint{Timestamp: at, Sum: b.sum, SampleCount: b.count, Minimum: b.min, Maximum: b.max}
		if j < len(own) && own[j].Timestamp.Equal(at) {
			o := own[j]
			j++
			d.Sum += o.Sum
			d.SampleCount += o.SampleCount
			d.Minimum = min(d.Minimum, o.Minimum)
			d.Maximum = max(d.Maximum, o.Maximum)
		}
		out = append(out, d)
	}
	if out == nil {
		return own
	}
	return append(out, own[j:]...)
}

// peerSeries adds to own (this node's series) the peers' that it lacks.
func (s *Store) peerSeries(own []SeriesKey) []SeriesKey {
	s.peerMu.RLock()
	defer s.peerMu.RUnlock()
	if len(s.peers) == 0 {
		return own
	}
	mine := make(map[SeriesKey]bool, len(own))
	for _, k := range own {
		mine[k] = true
	}
	out := own
	for k := range s.peers {
		if !mine[k] {
			out = append(out, k)
		}
	}
	return out
}
