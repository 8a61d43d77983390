package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine/embedded"
)

// BenchmarkClockAdvance14Days moves the clock of a running Ferry 14 days
// at once over a queue of a million messages whose retention is 4 days,
// on the embedded store on disk or on PostgreSQL: the move steps through
// every minute's metric sampling and the queue's expiries, and leaves the
// queue empty, as 14 real days would. One op is one advance; the fill is
// not timed.
func BenchmarkClockAdvance14Days(b *testing.B) {
	const total = 1_000_000
	// The fill and the move outlast ctxT's 30 s on PostgreSQL.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for range b.N {
		b.StopTimer()
		c := clock.NewControlled()
		f := start(b, controlled(c), storeWith(b, b.TempDir(), func(o *embedded.Options) { o.NoSync = true }))
		f.createQueue(b, "backlog", map[string]string{"MessageRetentionPeriod": "345600"})
		f.fill(ctx, b, "backlog", "a message that waits", total)
		eng := f.srv.Engine()
		if st, err := eng.Stats(ctx, "000000000000", "backlog"); err != nil || st.Visible != total {
			b.Fatalf("after the fill: %+v, %v", st, err)
		}
		steps := c.Steps()
		b.StartTimer()
		began := time.Now()
		if _, err := c.Advance(ctx, 14*24*time.Hour); err != nil {
			b.Fatal(err)
		}
		took := time.Since(began)
		b.StopTimer()
		st, err := eng.Stats(ctx, "000000000000", "backlog")
		if err != nil || st.Visible+st.NotVisible+st.Delayed != 0 {
			b.Fatalf("after 14 days: %+v, %v", st, err)
		}
		if c.Stalls() != 0 {
			b.Fatalf("%d steps stalled", c.Stalls())
		}
		b.ReportMetric(float64(c.Steps()-steps), "steps/op")
		b.Logf("advance 14d over %d messages: %v, %d steps", total, took, c.Steps()-steps)
	}
}
