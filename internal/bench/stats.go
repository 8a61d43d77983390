package bench

import (
	"math"
	"slices"
	"sync"
	"time"
)

// Latencies collects durations from many goroutines. Scenarios are bounded
// in messages, so every sample is kept and percentiles are exact.
type Latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

// Add records one sample; a negative one (clocks are read in different
// goroutines) counts as zero.
func (l *Latencies) Add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, max(d, 0))
	l.mu.Unlock()
}

// Summary is the shape of a set of samples.
type Summary struct {
	N        int
	P50, P99 time.Duration
}

// Summary sorts a copy of the samples and reads its percentiles.
func (l *Latencies) Summary() Summary {
	l.mu.Lock()
	d := slices.Clone(l.d)
	l.mu.Unlock()
	slices.Sort(d)
	return Summary{N: len(d), P50: Percentile(d, 50), P99: Percentile(d, 99)}
}

// Percentile is the nearest-rank p-th percentile (0 < p ≤ 100) of sorted:
// the smallest sample that at least p% of the samples do not exceed. It is
// always one of the samples, never an interpolation; zero for no samples.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	return sorted[min(max(rank, 1), n)-1]
}

// Rate is count per second of elapsed, zero when nothing elapsed.
func Rate(count int64, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return float64(count) / elapsed.Seconds()
}
