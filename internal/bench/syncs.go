package bench

import (
	"context"
	"time"
)

// syncMark is what the nodes' embedded stores had committed durably and
// synced (ferry_store_synced_commits_total, ferry_store_wal_syncs_total,
// summed over the nodes); ok is false when a node does not publish them.
type syncMark struct {
	commits, syncs float64
	ok             bool
}

// syncsNow scrapes the nodes' store sync counters.
func (e *env) syncsNow(ctx context.Context) syncMark {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m := syncMark{ok: len(e.cfg.Endpoints) > 0}
	for _, ep := range e.cfg.Endpoints {
		fig, err := scrape(ctx, e.cfg.HTTPClient, ep)
		c, cok := fig["ferry_store_synced_commits_total"]
		s, sok := fig["ferry_store_wal_syncs_total"]
		if err != nil || !cok || !sok {
			return syncMark{}
		}
		m.commits += c
		m.syncs += s
	}
	return m
}

// perSync is the commits each WAL sync covered from m to now (how many
// requests shared an fsync); nil without figures or without a sync.
func (m syncMark) perSync(now syncMark) *float64 {
	if !m.ok || !now.ok || now.syncs <= m.syncs {
		return nil
	}
	v := (now.commits - m.commits) / (now.syncs - m.syncs)
	return &v
}
