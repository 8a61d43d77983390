package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// Ferry's own figures: request latencies and the store's.

// RequestBuckets are the latency histogram's upper bounds in seconds: from
// a fraction of a millisecond (an in-memory send) to a 20-second long poll.
var RequestBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30}

// Requests is the request latency histogram by service, action and HTTP
// status code. Register it and pass Observe to protocol.Handler.
type Requests struct {
	hist *prometheus.HistogramVec

	// observers caches the histogram of each label set, so that a request
	// costs a map read and no allocation; the label sets are few (actions
	// times status codes).
	mu        sync.RWMutex
	observers map[requestLabels]prometheus.Observer
}

type requestLabels struct {
	service, action string
	status          int
}

// NewRequests returns an empty histogram.
func NewRequests() *Requests {
	return &Requests{observers: make(map[requestLabels]prometheus.Observer), hist: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ferry_http_request_duration_seconds",
		Help:    "Time to answer an API request, by service, action and HTTP status code.",
		Buckets: RequestBuckets,
	}, []string{"service", "action", "code"})}
}

// Collector is the histogram, to register.
func (r *Requests) Collector() prometheus.Collector { return r.hist }

// codes are the status codes' label values that Ferry answers with, made
// once.
var codes = map[int]string{200: "200", 400: "400", 403: "403", 404: "404", 405: "405", 413: "413", 500: "500", 503: "503"}

// Observe records one answered request.
func (r *Requests) Observe(service, action string, status int, took time.Duration) {
	k := requestLabels{service, action, status}
	r.mu.RLock()
	o := r.observers[k]
	r.mu.RUnlock()
	if o == nil {
		code, ok := codes[status]
		if !ok {
			code = strconv.Itoa(status)
		}
		o = r.hist.WithLabelValues(service, action, code)
		r.mu.Lock()
		r.observers[k] = o
		r.mu.Unlock()
	}
	o.Observe(took.Seconds())
}

// StoreCollector exposes the embedded store's Pebble figures.
type StoreCollector struct {
	metrics func() *pebble.Metrics // nil once the store is closed
}

// NewStoreCollector reads the figures from metrics at every scrape.
func NewStoreCollector(metrics func() *pebble.Metrics) *StoreCollector {
	return &StoreCollector{metrics: metrics}
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
	descSyncQueue = prometheus.NewDesc("ferry_store_wal_sync_queue_mean",
		"Mean number of commits waiting for each write-ahead log sync (group commit batch size) since start.", nil, nil)
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

var storeDescs = []*prometheus.Desc{descDisk, descWALFiles, descWALSize, descWALWritten, descSyncQueue,
	descCompactions, descCompactionTime, descCompactionDebt, descFlushes, descMemtable, descBlockCache, descReadAmp, descTables}

// Describe implements prometheus.Collector.
func (c *StoreCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range storeDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *StoreCollector) Collect(ch chan<- prometheus.Metric) {
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
	gauge(descSyncQueue, m.LogWriter.SyncQueueLen.Mean())
	counter(descCompactions, float64(m.Compact.Count))
	counter(descCompactionTime, m.Compact.Duration.Seconds())
	gauge(descCompactionDebt, float64(m.Compact.EstimatedDebt))
	counter(descFlushes, float64(m.Flush.Count))
	gauge(descMemtable, float64(m.MemTable.Size))
	gauge(descBlockCache, float64(m.BlockCache.Size))
	gauge(descReadAmp, float64(m.ReadAmp()))
	gauge(descTables, float64(m.Total().TablesCount))
}
