package metrics

import (
	"context"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
)

// memPoints is an engine.MetricStore in a map.
type memPoints struct {
	points map[[6]any]engine.MetricPoint
	puts   int // batches
}

func newMemPoints() *memPoints { return &memPoints{points: map[[6]any]engine.MetricPoint{}} }

func (m *memPoints) PutMetricPoints(_ context.Context, ps []engine.MetricPoint) error {
	m.puts++
	for _, p := range ps {
		m.points[[6]any{p.Account, p.Namespace, p.Metric, p.DimName, p.DimValue, p.Minute}] = p
	}
	return nil
}

func (m *memPoints) MetricPoints(_ context.Context, from int64) ([]engine.MetricPoint, error) {
	var out []engine.MetricPoint
	for _, p := range m.points {
		if p.Minute >= from {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Minute != out[j].Minute {
			return out[i].Minute < out[j].Minute
		}
		if out[i].Account != out[j].Account {
			return out[i].Account < out[j].Account
		}
		return out[i].Metric < out[j].Metric
	})
	return out, nil
}

func (m *memPoints) DeleteMetricPointsBefore(_ context.Context, minute int64) error {
	for k, p := range m.points {
		if p.Minute < minute {
			delete(m.points, k)
		}
	}
	return nil
}

func (m *memPoints) DeleteMetricPoints(_ context.Context, pick func(string) bool) error {
	for k, p := range m.points {
		if pick(p.Account) {
			delete(m.points, k)
		}
	}
	return nil
}

func TestFlushAndLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(t0)
	s := New(Options{Clock: clk, Account: acct})
	disk := newMemPoints()
	s.Record(acct, NamespaceSQS, MessagesSent, Queue("q"), 1)
	clk.Advance(30 * time.Second)
	s.Record(acct, NamespaceSQS, MessagesSent, Queue("q"), 2)
	clk.Advance(30 * time.Second)
	s.Record(acct, NamespaceSQS, MessagesSent, Queue("q"), 3)
	s.Record(acct, NamespaceSQS, SentMessageSize, Queue("q"), 10)

	m0, m1 := t0.Unix()/60, t0.Unix()/60+1
	sent := func(minute int64, sum, n, lo, hi float64) engine.MetricPoint {
		return engine.MetricPoint{Namespace: NamespaceSQS, Metric: MessagesSent, DimName: DimQueueName, DimValue: "q",
			Minute: minute, Sum: sum, Count: n, Min: lo, Max: hi}
	}
	size := engine.MetricPoint{Namespace: NamespaceSQS, Metric: SentMessageSize, DimName: DimQueueName, DimValue: "q",
		Minute: m1, Sum: 10, Count: 1, Min: 10, Max: 10}
	steps := []struct {
		name string
		all  bool
		want []engine.MetricPoint
	}{
		{"completed minutes only", false, []engine.MetricPoint{sent(m0, 3, 2, 1, 2)}},
		{"again: nothing new", false, []engine.MetricPoint{sent(m0, 3, 2, 1, 2)}},
		{"all, the current minute too", true, []engine.MetricPoint{sent(m0, 3, 2, 1, 2), sent(m1, 3, 1, 3, 3), size}},
	}
	for _, st := range steps {
		if err := s.Flush(ctx, disk, st.all); err != nil {
			t.Fatal(err)
		}
		got, _ := disk.MetricPoints(ctx, 0)
		if !reflect.DeepEqual(got, st.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", st.name, got, st.want)
		}
	}

	// A new store loads them and goes on counting in the current minute.
	s2 := New(Options{Clock: clk, Account: acct})
	if err := s2.Load(ctx, disk); err != nil {
		t.Fatal(err)
	}
	s2.Record(acct, NamespaceSQS, MessagesSent, Queue("q"), 4)
	want := []Datapoint{
		{Timestamp: t0, Sum: 3, SampleCount: 2, Minimum: 1, Maximum: 2},
		{Timestamp: t0.Add(time.Minute), Sum: 7, SampleCount: 2, Minimum: 3, Maximum: 4},
	}
	if got := s2.Datapoints(acct, NamespaceSQS, MessagesSent, Queue("q"), t0, t0.Add(time.Hour)); !reflect.DeepEqual(got, want) {
		t.Errorf("after load:\n got %+v\nwant %+v", got, want)
	}
	if tot, _ := s2.Totals(acct, NamespaceSQS, MessagesSent, Queue("q")); tot != (Totals{Sum: 4, SampleCount: 1}) {
		t.Errorf("totals after load = %+v: loaded minutes are no new samples", tot)
	}
	clk.Advance(time.Minute)
	if err := s2.Flush(ctx, disk, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := disk.MetricPoints(ctx, m1); len(got) != 2 || got[0] != sent(m1, 7, 2, 3, 4) {
		t.Errorf("m1 saved again: %+v", got)
	}

	// Past retention, minutes leave memory and disk.
	clk.Set(t0.Add(DefaultRetention + time.Minute))
	if err := s2.Flush(ctx, disk, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := disk.MetricPoints(ctx, 0); len(got) != 0 {
		t.Errorf("expired minutes on disk: %+v", got)
	}
	if got := s2.Datapoints(acct, NamespaceSQS, MessagesSent, Queue("q"), t0, t0.Add(DefaultRetention+time.Hour)); len(got) != 0 {
		t.Errorf("expired minutes served: %+v", got)
	}
	s3 := New(Options{Clock: clk, MaxSeries: 1})
	if err := s3.Load(ctx, disk); err != nil || len(s3.Series()) != 0 {
		t.Errorf("load after expiry: %v, %v", s3.Series(), err)
	}
}

// The configured account's series are stored without an account, as every
// series was before they were kept per account, and the points stored so
// load as its own; another account's are stored and load as its own. The
// same names in two accounts are two series.
func TestFlushAndLoadAccounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(t0)
	m0 := t0.Unix() / 60
	disk := newMemPoints()
	// A point stored before series were kept per account.
	old := engine.MetricPoint{Namespace: NamespaceSQS, Metric: MessagesSent, DimName: DimQueueName, DimValue: "q",
		Minute: m0 - 1, Sum: 5, Count: 1, Min: 5, Max: 5}
	if err := disk.PutMetricPoints(ctx, []engine.MetricPoint{old}); err != nil {
		t.Fatal(err)
	}
	s := New(Options{Clock: clk, Account: acct})
	s.Record(acct, NamespaceSQS, MessagesSent, Queue("q"), 1)
	s.Record(other, NamespaceSQS, MessagesSent, Queue("q"), 2)
	if err := s.Flush(ctx, disk, true); err != nil {
		t.Fatal(err)
	}
	point := func(account string, sum float64) engine.MetricPoint {
		return engine.MetricPoint{Account: account, Namespace: NamespaceSQS, Metric: MessagesSent, DimName: DimQueueName,
			DimValue: "q", Minute: m0, Sum: sum, Count: 1, Min: sum, Max: sum}
	}
	got, _ := disk.MetricPoints(ctx, 0)
	if want := []engine.MetricPoint{old, point("", 1), point(other, 2)}; !reflect.DeepEqual(got, want) {
		t.Errorf("stored:\n got %+v\nwant %+v", got, want)
	}

	s2 := New(Options{Clock: clk, Account: acct})
	if err := s2.Load(ctx, disk); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		account string
		want    []Datapoint
	}{
		{acct, []Datapoint{
			{Timestamp: t0.Add(-time.Minute), Sum: 5, SampleCount: 1, Minimum: 5, Maximum: 5},
			{Timestamp: t0, Sum: 1, SampleCount: 1, Minimum: 1, Maximum: 1},
		}},
		{other, []Datapoint{{Timestamp: t0, Sum: 2, SampleCount: 1, Minimum: 2, Maximum: 2}}},
		{"333333333333", nil},
	} {
		if got := s2.Datapoints(c.account, NamespaceSQS, MessagesSent, Queue("q"), t0.Add(-time.Hour), t0.Add(time.Hour)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s's datapoints after load:\n got %+v\nwant %+v", c.account, got, c.want)
		}
	}
	want := []SeriesKey{{acct, NamespaceSQS, MessagesSent, Queue("q")}, {other, NamespaceSQS, MessagesSent, Queue("q")}}
	if got := s2.Series(); !reflect.DeepEqual(got, want) {
		t.Errorf("series after load = %+v, want %+v", got, want)
	}
}

// Loading more series than the cap keeps the cap.
func TestLoadKeepsSeriesCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(t0)
	disk := newMemPoints()
	s := New(Options{Clock: clk})
	for _, q := range []string{"a", "b", "c"} {
		s.Record(acct, NamespaceSQS, MessagesSent, Queue(q), 1)
	}
	if err := s.Flush(ctx, disk, true); err != nil {
		t.Fatal(err)
	}
	s2 := New(Options{Clock: clk, MaxSeries: 2})
	if err := s2.Load(ctx, disk); err != nil {
		t.Fatal(err)
	}
	if n := len(s2.Series()); n != 2 {
		t.Errorf("%d series loaded under a cap of 2", n)
	}
}
