package postgres

import (
	"context"

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

// Durable implements engine.Monitor.
func (s *Store) Durable() bool { return true }

// Collector implements engine.Monitor: the connection pool's figures.
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
)

// Describe implements prometheus.Collector.
func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descConns, descMaxConns, descAcquires, descEmptyAcquires, descAcquireWait} {
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
}

var _ engine.Store = (*Store)(nil)
