package embedded

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ferrymq/ferry/internal/engine"
)

// Metric datapoints are keyed minute first (prefixMetric, minute as a
// big-endian uint64, then the series' four names, each length-prefixed,
// then its account, length-prefixed, unless it is ""), so that expiring
// old minutes is one range delete and a load is one scan from the first
// minute kept. The account "" (the configured one's) adds nothing: the
// keys written before metrics were kept per account read as its own.

func metricKey(p *engine.MetricPoint) []byte {
	k := make([]byte, 9, 9+5+len(p.Namespace)+len(p.Metric)+len(p.DimName)+len(p.DimValue)+len(p.Account))
	k[0] = prefixMetric
	binary.BigEndian.PutUint64(k[1:], uint64(p.Minute))
	for _, s := range [...]string{p.Namespace, p.Metric, p.DimName, p.DimValue} {
		k = appendString(k, s)
	}
	if p.Account != "" {
		k = appendString(k, p.Account)
	}
	return k
}

func metricMinuteKey(minute int64) []byte {
	k := make([]byte, 9)
	k[0] = prefixMetric
	binary.BigEndian.PutUint64(k[1:], uint64(max(minute, 0)))
	return k
}

func encodeMetricValue(b []byte, p *engine.MetricPoint) []byte {
	b = append(b, recordVersion)
	for _, f := range [...]float64{p.Sum, p.Count, p.Min, p.Max} {
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(f))
	}
	return b
}

func decodeMetricPoint(k, v []byte) (engine.MetricPoint, error) {
	p, err := decodeMetricKey(k)
	if err != nil {
		return p, err
	}
	if len(v) != 33 || v[0] != recordVersion {
		return p, errCorrupt
	}
	f := func(i int) float64 { return math.Float64frombits(binary.BigEndian.Uint64(v[1+8*i:])) }
	p.Sum, p.Count, p.Min, p.Max = f(0), f(1), f(2), f(3)
	return p, nil
}

// decodeMetricKey is the series and minute a key names.
func decodeMetricKey(k []byte) (engine.MetricPoint, error) {
	var p engine.MetricPoint
	if len(k) < 9 || k[0] != prefixMetric {
		return p, errCorrupt
	}
	p.Minute = int64(binary.BigEndian.Uint64(k[1:9]))
	r := newReader(k[9:], false)
	p.Namespace, p.Metric, p.DimName, p.DimValue = r.str(), r.str(), r.str(), r.str()
	if !r.bad && r.off < len(r.b) {
		p.Account = r.str()
	}
	return p, r.done()
}

// PutMetricPoints implements engine.MetricStore.
func (e *Engine) PutMetricPoints(ctx context.Context, points []engine.MetricPoint) error {
	if len(points) == 0 {
		return nil
	}
	if err := e.enter(); err != nil {
		return err
	}
	defer e.leave()
	if err := e.writable(); err != nil {
		return err
	}
	b := e.db.NewBatch()
	defer b.Close()
	var buf []byte
	for i := range points {
		buf = encodeMetricValue(buf[:0], &points[i])
		if err := b.Set(metricKey(&points[i]), buf, nil); err != nil {
			return fmt.Errorf("embedded: put metric points: %w", err)
		}
	}
	if err := b.Commit(e.writeOptions()); err != nil {
		return fmt.Errorf("embedded: put metric points: %w", err)
	}
	return nil
}

// MetricPoints implements engine.MetricStore.
func (e *Engine) MetricPoints(ctx context.Context, from int64) ([]engine.MetricPoint, error) {
	if err := e.enter(); err != nil {
		return nil, err
	}
	defer e.leave()
	var out []engine.MetricPoint
	err := e.scan(metricMinuteKey(from), []byte{prefixMetric + 1}, func(it *pebble.Iterator) (bool, error) {
		if len(out)%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return false, fmt.Errorf("embedded: read metric point: %w", err)
		}
		p, err := decodeMetricPoint(it.Key(), v)
		if err != nil {
			return false, fmt.Errorf("embedded: metric key %x: %w", it.Key(), err)
		}
		out = append(out, p)
		return false, nil
	})
	return out, err
}

// DeleteMetricPointsBefore implements engine.MetricStore.
func (e *Engine) DeleteMetricPointsBefore(ctx context.Context, minute int64) error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.leave()
	// Not synced: an expiry lost in a crash is redone by the next one.
	if err := e.db.DeleteRange([]byte{prefixMetric}, metricMinuteKey(minute), pebble.NoSync); err != nil {
		return fmt.Errorf("embedded: expire metric points: %w", err)
	}
	return nil
}

// DeleteMetricPoints implements engine.MetricStore. The points are keyed
// minute first, so finding an account's is a scan of them all; a reset
// is rare and the points few beside the messages.
func (e *Engine) DeleteMetricPoints(ctx context.Context, pick func(account string) bool) error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.leave()
	if err := e.writable(); err != nil {
		return err
	}
	b := e.db.NewBatch()
	defer b.Close()
	n := 0
	err := e.scan([]byte{prefixMetric}, []byte{prefixMetric + 1}, func(it *pebble.Iterator) (bool, error) {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		n++
		p, err := decodeMetricKey(it.Key())
		if err != nil {
			return false, fmt.Errorf("embedded: metric key %x: %w", it.Key(), err)
		}
		if !pick(p.Account) {
			return false, nil
		}
		if err := b.Delete(it.Key(), nil); err != nil {
			return false, fmt.Errorf("embedded: delete metric points: %w", err)
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	// Synced, unlike an expiry: a reset must not come back after a crash.
	if err := b.Commit(e.writeOptions()); err != nil {
		return fmt.Errorf("embedded: delete metric points: %w", err)
	}
	return nil
}

var _ engine.MetricStore = (*Engine)(nil)

// StoreMetrics returns the Pebble store's figures (disk usage, WAL,
// compactions); nil once the engine is closed.
func (e *Engine) StoreMetrics() *pebble.Metrics {
	if e.enter() != nil {
		return nil
	}
	defer e.leave()
	return e.db.Metrics()
}
