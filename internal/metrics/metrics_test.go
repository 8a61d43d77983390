package metrics

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)

// acct is the account of the series that need one, other another.
const (
	acct  = "123456789012"
	other = "222222222222"
)

// manualClock may go backwards, which clock.Fake refuses to do.
type manualClock struct{ now time.Time }

func (c *manualClock) Now() time.Time { return c.now }

func (c *manualClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	panic("metrics uses no timers")
}

// step is one action of a scenario: advance the clock, then record values.
type step struct {
	advance time.Duration
	values  []float64
}

func TestStoreBuckets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		opts  Options
		steps []step
		// from/to are offsets from t0.
		from, to time.Duration
		want     []Datapoint
		totals   Totals
	}{
		{
			name:  "one minute statistics",
			steps: []step{{0, []float64{3, 1, 2}}, {59 * time.Second, []float64{10}}},
			from:  0, to: time.Hour,
			want:   []Datapoint{{Timestamp: t0, Sum: 16, SampleCount: 4, Minimum: 1, Maximum: 10}},
			totals: Totals{Sum: 16, SampleCount: 4},
		},
		{
			name:  "minutes split at the boundary, empty minutes absent",
			steps: []step{{30 * time.Second, []float64{1}}, {30 * time.Second, []float64{2, 4}}, {2 * time.Minute, []float64{5}}},
			from:  0, to: time.Hour,
			want: []Datapoint{
				{Timestamp: t0, Sum: 1, SampleCount: 1, Minimum: 1, Maximum: 1},
				{Timestamp: t0.Add(time.Minute), Sum: 6, SampleCount: 2, Minimum: 2, Maximum: 4},
				{Timestamp: t0.Add(3 * time.Minute), Sum: 5, SampleCount: 1, Minimum: 5, Maximum: 5},
			},
			totals: Totals{Sum: 12, SampleCount: 4},
		},
		{
			name:  "range is [from, to) by minute start",
			steps: []step{{0, []float64{1}}, {time.Minute, []float64{2}}, {time.Minute, []float64{3}}},
			from:  time.Second, to: 2 * time.Minute,
			want:   []Datapoint{{Timestamp: t0.Add(time.Minute), Sum: 2, SampleCount: 1, Minimum: 2, Maximum: 2}},
			totals: Totals{Sum: 6, SampleCount: 3},
		},
		{
			name:  "retention evicts old minutes, totals stay",
			opts:  Options{Retention: 10 * time.Minute},
			steps: []step{{0, []float64{1}}, {5 * time.Minute, []float64{2}}, {5 * time.Minute, []float64{3}}},
			from:  -time.Hour, to: time.Hour,
			want: []Datapoint{
				{Timestamp: t0.Add(5 * time.Minute), Sum: 2, SampleCount: 1, Minimum: 2, Maximum: 2},
				{Timestamp: t0.Add(10 * time.Minute), Sum: 3, SampleCount: 1, Minimum: 3, Maximum: 3},
			},
			totals: Totals{Sum: 6, SampleCount: 3},
		},
		{
			name:  "clock going back fills an earlier minute in order",
			steps: []step{{3 * time.Minute, []float64{3}}, {-2 * time.Minute, []float64{1}}, {0, []float64{-1}}},
			from:  0, to: time.Hour,
			want: []Datapoint{
				{Timestamp: t0.Add(time.Minute), Sum: 0, SampleCount: 2, Minimum: -1, Maximum: 1},
				{Timestamp: t0.Add(3 * time.Minute), Sum: 3, SampleCount: 1, Minimum: 3, Maximum: 3},
			},
			totals: Totals{Sum: 3, SampleCount: 3},
		},
		{
			name: "nothing recorded",
			from: 0, to: time.Hour,
			totals: Totals{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &manualClock{now: t0}
			tt.opts.Clock = clk
			s := New(tt.opts)
			for _, st := range tt.steps {
				clk.now = clk.now.Add(st.advance)
				for _, v := range st.values {
					s.Record(acct, NamespaceSQS, MessagesSent, Queue("q"), v)
				}
			}
			got := s.Datapoints(acct, NamespaceSQS, MessagesSent, Queue("q"), t0.Add(tt.from), t0.Add(tt.to))
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("datapoints\n got %v\nwant %v", got, tt.want)
			}
			tot, _ := s.Totals(acct, NamespaceSQS, MessagesSent, Queue("q"))
			if tot != tt.totals {
				t.Errorf("totals = %+v, want %+v", tot, tt.totals)
			}
		})
	}
}

func TestDefaultRetentionKeeps15Days(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	s := New(Options{Clock: clk})
	for i := 0; i < 16*24*60; i++ { // one sample a minute for 16 days
		clk.Advance(time.Minute)
		s.Record(acct, NamespaceSQS, MessagesSent, Queue("q"), 1)
	}
	// The window is 15 days of minutes, the current one included.
	got := s.Datapoints(acct, NamespaceSQS, MessagesSent, Queue("q"), t0, clk.Now().Add(time.Minute))
	if len(got) != 15*24*60 {
		t.Fatalf("kept %d minutes, want %d", len(got), 15*24*60)
	}
	if first := got[0].Timestamp; !first.Equal(clk.Now().Add(-15*24*time.Hour + time.Minute)) {
		t.Errorf("oldest minute %v", first)
	}
	se := s.series[SeriesKey{acct, NamespaceSQS, MessagesSent, Queue("q")}]
	if n := len(se.buckets); n > 2*15*24*60 {
		t.Errorf("series holds %d buckets", n)
	}
}

func TestAverage(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		d    Datapoint
		want float64
	}{
		{Datapoint{Sum: 10, SampleCount: 4}, 2.5},
		{Datapoint{}, 0},
	} {
		if got := tt.d.Average(); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Average(%+v) = %v, want %v", tt.d, got, tt.want)
		}
	}
}

func TestMaxSeriesEvictsLeastRecent(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	s := New(Options{Clock: clk, MaxSeries: 2})
	s.Record(acct, NamespaceSQS, MessagesSent, Queue("a"), 1)
	clk.Advance(time.Minute)
	s.Record(acct, NamespaceSQS, MessagesSent, Queue("b"), 1)
	clk.Advance(time.Minute)
	s.Record(acct, NamespaceSQS, MessagesSent, Queue("a"), 1) // a is now the most recent
	s.Record(acct, NamespaceSQS, MessagesSent, Queue("c"), 1)
	want := []SeriesKey{{acct, NamespaceSQS, MessagesSent, Queue("a")}, {acct, NamespaceSQS, MessagesSent, Queue("c")}}
	if got := s.Series(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("series = %v, want %v", got, want)
	}
	if _, ok := s.Totals(acct, NamespaceSQS, MessagesSent, Queue("b")); ok {
		t.Error("b survived")
	}
}

func TestNilStoreRecords(t *testing.T) {
	t.Parallel()
	var s *Store
	s.Record(acct, NamespaceSQS, MessagesSent, Queue("q"), 1) // must not panic
}

func TestConcurrentRecord(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	s := New(Options{Clock: clk})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				s.Record(acct, NamespaceSQS, MessagesSent, Queue(fmt.Sprint("q", g%2)), 1)
				if i%100 == 0 {
					s.Series()
					s.Datapoints(acct, NamespaceSQS, MessagesSent, Queue("q0"), t0, t0.Add(time.Hour))
				}
			}
		}(g)
	}
	wg.Wait()
	var sum float64
	for _, q := range []string{"q0", "q1"} {
		tot, _ := s.Totals(acct, NamespaceSQS, MessagesSent, Queue(q))
		sum += tot.SampleCount
	}
	if sum != 8000 {
		t.Fatalf("counted %v samples, want 8000", sum)
	}
}

func BenchmarkRecord(b *testing.B) {
	s := New(Options{Clock: clock.NewFake(t0)})
	s.Record(acct, NamespaceSQS, MessagesSent, Queue("orders"), 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Record(acct, NamespaceSQS, MessagesSent, Queue("orders"), 1)
	}
}

func BenchmarkRecordParallel(b *testing.B) {
	s := New(Options{Clock: clock.NewFake(t0)})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.Record(acct, NamespaceSQS, MessagesSent, Queue("orders"), 1)
		}
	})
}

// A sample recorded at once counts as its values recorded one by one.
func TestRecordSample(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	one, many := New(Options{Clock: clk}), New(Options{Clock: clk})
	dim := Queue("q")
	var sample Sample
	for _, v := range []float64{300, 7, 1024, 7} {
		one.Record("a", NamespaceSQS, SentMessageSize, dim, v)
		sample.Add(v)
	}
	many.RecordSample("a", NamespaceSQS, SentMessageSize, dim, sample)
	many.RecordSample("a", NamespaceSQS, SentMessageSize, dim, Sample{}) // records nothing
	if sample != (Sample{Sum: 1338, Count: 4, Min: 7, Max: 1024}) {
		t.Fatalf("sample %+v", sample)
	}
	k := SeriesKey{"a", NamespaceSQS, SentMessageSize, dim}
	if got, want := many.series[k].buckets, one.series[k].buckets; !slices.Equal(got, want) {
		t.Errorf("buckets %+v, want %+v", got, want)
	}
	if got, want := many.series[k].totals, one.series[k].totals; got != want {
		t.Errorf("totals %+v, want %+v", got, want)
	}
}
