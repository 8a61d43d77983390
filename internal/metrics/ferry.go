package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Ferry's own figures: request latencies (the store reports its own).

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
