package metrics

import (
	"context"
	"fmt"

	"github.com/ferrymq/ferry/internal/engine"
)

// Durable datapoints. Recording never touches the disk: once a minute the
// sampler hands the minutes completed since the previous flush to an
// engine.MetricStore in one batch and expires the minutes past retention
// there; Close saves the current minute too. Start loads what is kept.

// Flush saves the minutes completed since the previous flush (with all,
// the current minute too) and deletes the stored minutes past retention.
func (s *Store) Flush(ctx context.Context, p engine.MetricStore, all bool) error {
	now := minuteOf(s.clock.Now())
	upto := now - 1
	if all {
		upto = now
	}
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	from := s.flushed + 1
	points := s.collect(from, upto)
	if err := p.PutMetricPoints(ctx, points); err != nil {
		return fmt.Errorf("metrics: save: %w", err)
	}
	// The current minute may still change: it is saved again next time.
	s.flushed = max(s.flushed, now-1)
	if err := p.DeleteMetricPointsBefore(ctx, now-s.retention+1); err != nil {
		return fmt.Errorf("metrics: expire: %w", err)
	}
	return nil
}

// collect copies the buckets of minutes [from, upto] of every series.
func (s *Store) collect(from, upto int64) []engine.MetricPoint {
	var out []engine.MetricPoint
	s.mu.RLock()
	defer s.mu.RUnlock()
	for k, se := range s.series {
		se.mu.Lock()
		live := se.buckets[se.head:]
		for i := len(live) - 1; i >= 0 && live[i].minute >= from; i-- {
			b := &live[i]
			if b.minute > upto {
				continue
			}
			out = append(out, engine.MetricPoint{Account: s.storedAccount(k.Account),
				Namespace: k.Namespace, Metric: k.Metric, DimName: k.Dimension.Name, DimValue: k.Dimension.Value,
				Minute: b.minute, Sum: b.sum, Count: b.count, Min: b.min, Max: b.max,
			})
		}
		se.mu.Unlock()
	}
	return out
}

// Load adds the stored minutes within retention to the store, merged with
// any recorded since it started. Loaded minutes do not count in Totals
// (Prometheus counters restart with the process).
func (s *Store) Load(ctx context.Context, p engine.MetricStore) error {
	now := minuteOf(s.clock.Now())
	points, err := p.MetricPoints(ctx, now-s.retention+1)
	if err != nil {
		return fmt.Errorf("metrics: load: %w", err)
	}
	for i := range points {
		pt := &points[i]
		k := s.keyOf(pt)
		s.mu.RLock()
		se := s.series[k]
		s.mu.RUnlock()
		if se == nil {
			se = s.create(k, pt.Minute)
		}
		se.mu.Lock()
		se.put(bucket{minute: pt.Minute, sum: pt.Sum, count: pt.Count, min: pt.Min, max: pt.Max}, s.retention)
		se.mu.Unlock()
	}
	return nil
}

// put merges a whole minute into the series at its place.
func (se *series) put(b bucket, retention int64) {
	if b.minute > se.last {
		se.last = b.minute
	}
	se.evict(se.last, retention)
	live := se.buckets[se.head:]
	i := len(live)
	for i > 0 && live[i-1].minute > b.minute {
		i--
	}
	if i > 0 && live[i-1].minute == b.minute {
		m := &live[i-1]
		m.sum += b.sum
		m.count += b.count
		m.min = min(m.min, b.min)
		m.max = max(m.max, b.max)
		return
	}
	if b.minute <= se.last-retention {
		return
	}
	se.buckets = append(se.buckets, bucket{})
	j := se.head + i
	copy(se.buckets[j+1:], se.buckets[j:])
	se.buckets[j] = b
}
