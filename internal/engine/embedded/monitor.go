package embedded

import (
	"context"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// What the store tells the server of itself (engine.Monitor).

// Refusing implements engine.Monitor.
func (e *Engine) Refusing() string {
	if e.DiskFull() {
		return "disk full"
	}
	return ""
}

// Unreachable implements engine.Monitor: the store is in the process.
func (e *Engine) Unreachable(context.Context) string { return "" }

// Degraded implements engine.Monitor: nothing outside the process holds
// the store back.
func (e *Engine) Degraded() string { return "" }

// Durable implements engine.Monitor: an in-memory store keeps nothing.
func (e *Engine) Durable() bool { return !e.memory }

// storeCollector exposes the store's Pebble figures (ferry_store_*).
type storeCollector struct {
	metrics func() *pebble.Metrics // nil once the store is closed
	synced  func() uint64          // commits that waited for a WAL sync
}

// Collector implements engine.Monitor: it reads the store's figures at
// every scrape.
func (e *Engine) Collector() prometheus.Collector {
	return &storeCollector{metrics: e.StoreMetrics, synced: e.syncedCommits.Load}
}

var (
	descDisk = prometheus.NewDesc("ferry_store_disk_usage_bytes",
		"Bytes the store occupies: tables, WAL, manifests.", nil, nil)
	descWALFiles = prometheus.NewDesc("ferry_store_wal_files",
		"Live write-ahead log files.", nil, nil)
	descWALSize = prometheus.NewDesc("ferry_store_wal_size_bytes",
		"Bytes in the live write-ahead log files.", nil, nil)
	descWALWritten = prometheus.NewDesc("ferry_store_wal_written_bytes_total",
		"Bytes written to the write-ahead log.", nil, nil)
	descSyncs = prometheus.NewDesc("ferry_store_wal_syncs_total",
		"Syncs (fdatasync) of the write-ahead log.", nil, nil)
	descSyncedCommits = prometheus.NewDesc("ferry_store_synced_commits_total",
		"Commits acknowledged only once a write-ahead log sync covered them; over ferry_store_wal_syncs_total, the commits each sync served (group commit).", nil, nil)
	descCompactions = prometheus.NewDesc("ferry_store_compactions_total",
		"Compactions completed.", nil, nil)
	descCompactionTime = prometheus.NewDesc("ferry_store_compaction_duration_seconds_total",
		"Time spent in compactions.", nil, nil)
	descCompactionDebt = prometheus.NewDesc("ferry_store_compaction_debt_bytes",
		"Estimated bytes left to compact.", nil, nil)
	descFlushes = prometheus.NewDesc("ferry_store_flushes_total",
		"Memtable flushes completed.", nil, nil)
	descMemtable = prometheus.NewDesc("ferry_store_memtable_size_bytes",
		"Bytes allocated to memtables.", nil, nil)
	descBlockCache = prometheus.NewDesc("ferry_store_block_cache_size_bytes",
		"Bytes in the store's block cache (bounded by its capacity).", nil, nil)
	descReadAmp = prometheus.NewDesc("ferry_store_read_amplification",
		"Sorted runs a read may have to consult.", nil, nil)
	descTables = prometheus.NewDesc("ferry_store_tables",
		"Live sstables.", nil, nil)
)

var storeDescs = []*prometheus.Desc{descDisk, descWALFiles, descWALSize, descWALWritten, descSyncs, descSyncedCommits,
	descCompactions, descCompactionTime, descCompactionDebt, descFlushes, descMemtable, descBlockCache, descReadAmp, descTables}

// Describe implements prometheus.Collector.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range storeDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.metrics()
	if m == nil {
		return
	}
	emit := func(d *prometheus.Desc, t prometheus.ValueType, v float64) {
		ch <- prometheus.MustNewConstMetric(d, t, v)
	}
	gauge := func(d *prometheus.Desc, v float64) { emit(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v float64) { emit(d, prometheus.CounterValue, v) }
	gauge(descDisk, float64(m.DiskSpaceUsage()))
	gauge(descWALFiles, float64(m.WAL.Files))
	gauge(descWALSize, float64(m.WAL.Size))
	counter(descWALWritten, float64(m.WAL.BytesWritten))
	// Pebble times every WAL sync, so its histogram counts them, live
	// (its own mean sync queue length is merged in only when a log is
	// rotated, and counts the flushes that synced nothing).
	if h := m.LogWriter.FsyncLatency; h != nil {
		var pm dto.Metric
		if err := h.Write(&pm); err == nil && pm.Histogram != nil {
			counter(descSyncs, float64(pm.Histogram.GetSampleCount()))
		}
	}
	counter(descSyncedCommits, float64(c.synced()))
	counter(descCompactions, float64(m.Compact.Count))
	counter(descCompactionTime, m.Compact.Duration.Seconds())
	gauge(descCompactionDebt, float64(m.Compact.EstimatedDebt))
	counter(descFlushes, float64(m.Flush.Count))
	gauge(descMemtable, float64(m.MemTable.Size))
	gauge(descBlockCache, float64(m.BlockCache.Size))
	gauge(descReadAmp, float64(m.ReadAmp()))
	gauge(descTables, float64(m.Total().TablesCount))
}
