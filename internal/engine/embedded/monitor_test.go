package embedded

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ferrymq/ferry/internal/engine"
)

// TestSyncCounters: every acknowledged write of a durable store is a
// synced commit, and each WAL sync covers at least one; an in-memory store
// syncs nothing.
func TestSyncCounters(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    Options
		durable bool
	}{
		{"durable", Options{Dir: t.TempDir()}, true},
		{"in memory", Options{InMemory: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := openTest(t, tc.opts)
			ctx := context.Background()
			if _, _, err := e.CreateQueue(ctx, engine.Queue{Account: acct, Name: "q", Settings: settings()}); err != nil {
				t.Fatal(err)
			}
			before := syncFigures(t, e)
			const sends = 3
			for range sends {
				if _, err := e.Send(ctx, acct, "q", []engine.NewMessage{{Body: "m"}}); err != nil {
					t.Fatal(err)
				}
			}
			after := syncFigures(t, e)
			commits := after["ferry_store_synced_commits_total"] - before["ferry_store_synced_commits_total"]
			syncs := after["ferry_store_wal_syncs_total"] - before["ferry_store_wal_syncs_total"]
			if !tc.durable {
				if commits != 0 || syncs != 0 {
					t.Fatalf("in memory: %v synced commits, %v syncs; want none", commits, syncs)
				}
				return
			}
			// One caller: each send waits for its own sync. Pebble counts a
			// sync when it records its latency, after it has released the
			// commits it covered: the queue's creation's sync may be
			// counted only after before was read, hence the one extra.
			if commits != sends || syncs < 1 || syncs > commits+1 {
				t.Fatalf("%v synced commits over %v syncs for %d sends", commits, syncs, sends)
			}
		})
	}
}

// syncFigures gathers the store's sync counters from its collector.
func syncFigures(t *testing.T, e *Engine) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	fig := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if c := m.GetCounter(); c != nil {
				fig[mf.GetName()] = c.GetValue()
			}
		}
	}
	for _, name := range []string{"ferry_store_synced_commits_total", "ferry_store_wal_syncs_total"} {
		if _, ok := fig[name]; !ok {
			t.Fatalf("%s not collected", name)
		}
	}
	return fig
}
