package embedded

import (
	"context"
	"fmt"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

// The embedded store belongs to one node: it answers engine.Cluster as the
// only member of its cluster.

// Shared implements engine.Cluster: no other node opens the same files.
func (e *Engine) Shared() bool { return false }

// TakeLease implements engine.Cluster: every lease is this node's.
func (e *Engine) TakeLease(ctx context.Context, name string, d time.Duration) (bool, error) {
	if err := e.enter(); err != nil {
		return false, err
	}
	e.leave()
	return true, nil
}

// Secrets live under 0x01 's' name, beside the receipt-handle key.
func secretKey(name string) []byte { return append([]byte{prefixMeta, 's'}, name...) }

// Secret implements engine.Cluster: the value is kept durably, so that a
// restart reads the same one.
func (e *Engine) Secret(ctx context.Context, name string, create func() ([]byte, error)) ([]byte, error) {
	if err := e.enter(); err != nil {
		return nil, err
	}
	defer e.leave()
	e.secretMu.Lock()
	defer e.secretMu.Unlock()
	k := secretKey(name)
	v, err := e.get(k)
	if err != nil {
		return nil, err
	}
	if v != nil {
		return v, nil
	}
	if err := e.writable(); err != nil {
		return nil, err
	}
	v, err = create()
	if err != nil {
		return nil, fmt.Errorf("embedded: make secret %s: %w", name, err)
	}
	if err := e.db.Set(k, v, e.writeOptions()); err != nil {
		return nil, fmt.Errorf("embedded: store secret %s: %w", name, err)
	}
	return v, nil
}

// WatchRecords implements engine.Cluster: no other node changes records.
func (e *Engine) WatchRecords(fn func(kind, key string)) {}

// PeerMetricPoints implements engine.Cluster: there are no peers.
func (e *Engine) PeerMetricPoints(ctx context.Context, from int64) ([]engine.MetricPoint, error) {
	return nil, nil
}
