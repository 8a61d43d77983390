package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ferrymq/ferry/internal/engine"
)

// Refusing implements engine.Monitor: PostgreSQL keeps its own disk, so
// the store never refuses writes by itself.
func (s *Store) Refusing() string { return "" }

// Unreachable implements engine.Monitor: why the last call, or the node's
// listening connection, could not reach the database; "" once both can.
// After an outage it pings the database, so that health reports the
// recovery without waiting for a call to find it.
func (s *Store) Unreachable(ctx context.Context) string {
	if why := s.hub.down(); why != "" {
		return why
	}
	if s.out.reason() == "" {
		return ""
	}
	_ = s.pool.Ping(ctx)
	return s.out.reason()
}

// Degraded implements engine.Monitor: what the last sample found holding
// vacuum back for longer than the warning allows (rotation.go), so that an
// operator hears of it before the dead rows it leaves slow the receives.
func (s *Store) Degraded() string {
	v := s.vacuum.get()
	if v.at.IsZero() || v.heldFor < s.rotation.warnAfter {
		return ""
	}
	return fmt.Sprintf("vacuum held back for %s by %s; the message tables were rotated %d times",
		v.heldFor.Round(time.Second), v.holder, v.rotations)
}

// Durable implements engine.Monitor.
func (s *Store) Durable() bool { return true }

// Collector implements engine.Monitor: the connection pool's figures, and
// the last sample of what holds vacuum back.
func (s *Store) Collector() prometheus.Collector { return poolCollector{s} }

type poolCollector struct{ s *Store }

var (
	descConns = prometheus.NewDesc("ferry_store_pool_connections",
		"Connections of the pool to PostgreSQL, by state.", []string{"state"}, nil)
	descMaxConns = prometheus.NewDesc("ferry_store_pool_max_connections",
		"The pool's connection cap.", nil, nil)
	descAcquires = prometheus.NewDesc("ferry_store_pool_acquires_total",
		"Connections taken from the pool.", nil, nil)
	descEmptyAcquires = prometheus.NewDesc("ferry_store_pool_empty_acquires_total",
		"Connections taken from the pool that had to wait for one.", nil, nil)
	descAcquireWait = prometheus.NewDesc("ferry_store_pool_acquire_wait_seconds_total",
		"Time spent waiting for a connection of the pool.", nil, nil)
	descHeld = prometheus.NewDesc("ferry_store_oldest_transaction_seconds",
		"Age of the oldest transaction of the database that holds vacuum back (a snapshot, a transaction id, a prepared transaction).", nil, nil)
	descHeldXids = prometheus.NewDesc("ferry_store_oldest_snapshot_transactions",
		"Age in transaction ids of the oldest snapshot of the database, replication slots included.", nil, nil)
	descDead = prometheus.NewDesc("ferry_store_message_dead_rows",
		"Dead rows of the message tables, by slot (the statistics' estimate).", []string{"slot"}, nil)
	descRotations = prometheus.NewDesc("ferry_store_message_rotations_total",
		"Rotations of the message tables, by any node.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descConns, descMaxConns, descAcquires, descEmptyAcquires, descAcquireWait,
		descHeld, descHeldXids, descDead, descRotations} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.pool.Stat()
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	ch <- prometheus.MustNewConstMetric(descConns, gauge, float64(st.AcquiredConns()), "acquired")
	ch <- prometheus.MustNewConstMetric(descConns, gauge, float64(st.IdleConns()), "idle")
	ch <- prometheus.MustNewConstMetric(descConns, gauge, float64(st.ConstructingConns()), "constructing")
	ch <- prometheus.MustNewConstMetric(descMaxConns, gauge, float64(st.MaxConns()))
	ch <- prometheus.MustNewConstMetric(descAcquires, counter, float64(st.AcquireCount()))
	ch <- prometheus.MustNewConstMetric(descEmptyAcquires, counter, float64(st.EmptyAcquireCount()))
	ch <- prometheus.MustNewConstMetric(descAcquireWait, counter, st.AcquireDuration().Seconds())
	v := c.s.vacuum.get()
	if v.at.IsZero() {
		return // not sampled yet
	}
	ch <- prometheus.MustNewConstMetric(descHeld, gauge, v.heldFor.Seconds())
	ch <- prometheus.MustNewConstMetric(descHeldXids, gauge, float64(v.heldXids))
	for slot, dead := range v.dead {
		ch <- prometheus.MustNewConstMetric(descDead, gauge, float64(dead), strconv.Itoa(slot))
	}
	ch <- prometheus.MustNewConstMetric(descRotations, counter, float64(v.rotations))
}

var _ engine.Store = (*Store)(nil)
