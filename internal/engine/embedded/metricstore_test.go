package embedded

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
)

func TestMetricPoints(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, Options{Dir: dir, Clock: clk})
	pt := func(minute int64, metric, queue string, sum float64) engine.MetricPoint {
		return engine.MetricPoint{Namespace: "AWS/SQS", Metric: metric, DimName: "QueueName", DimValue: queue,
			Minute: minute, Sum: sum, Count: 1, Min: sum, Max: sum}
	}
	if err := e.PutMetricPoints(ctx, []engine.MetricPoint{
		pt(100, "NumberOfMessagesSent", "a", 1),
		pt(101, "NumberOfMessagesSent", "a", 2),
		pt(101, "NumberOfMessagesSent", "a\x00b", 3), // names are length-prefixed: any bytes go
		pt(102, "SentMessageSize", "b", 4),
	}); err != nil {
		t.Fatal(err)
	}
	// A later put of the same series and minute replaces the point.
	if err := e.PutMetricPoints(ctx, []engine.MetricPoint{pt(101, "NumberOfMessagesSent", "a", 5)}); err != nil {
		t.Fatal(err)
	}
	e = reopen(t, e, dir, clk)
	defer e.Close()
	tests := []struct {
		name   string
		before int64 // DeleteMetricPointsBefore, when not 0
		from   int64
		want   []engine.MetricPoint
	}{
		{name: "all", from: 0, want: []engine.MetricPoint{
			pt(100, "NumberOfMessagesSent", "a", 1),
			pt(101, "NumberOfMessagesSent", "a", 5),
			pt(101, "NumberOfMessagesSent", "a\x00b", 3),
			pt(102, "SentMessageSize", "b", 4),
		}},
		{name: "from a minute", from: 102, want: []engine.MetricPoint{pt(102, "SentMessageSize", "b", 4)}},
		{name: "expired", before: 102, from: 0, want: []engine.MetricPoint{pt(102, "SentMessageSize", "b", 4)}},
	}
	for _, tc := range tests {
		if tc.before != 0 {
			if err := e.DeleteMetricPointsBefore(ctx, tc.before); err != nil {
				t.Fatal(err)
			}
		}
		got, err := e.MetricPoints(ctx, tc.from)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, %v\nwant %+v", tc.name, got, err, tc.want)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.MetricPoints(ctx, 0); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("read after close: %v", err)
	}
	if e.StoreMetrics() != nil {
		t.Error("store metrics after close")
	}
}

func TestMetricPointDecodeCorrupt(t *testing.T) {
	p := engine.MetricPoint{Namespace: "n", Metric: "m", DimName: "d", DimValue: "v", Minute: 7, Sum: 1, Count: 2, Min: 3, Max: 4}
	k, v := metricKey(&p), encodeMetricValue(nil, &p)
	if got, err := decodeMetricPoint(k, v); err != nil || got != p {
		t.Fatalf("round trip = %+v, %v", got, err)
	}
	for n := range len(k) {
		if _, err := decodeMetricPoint(k[:n], v); !errors.Is(err, errCorrupt) {
			t.Errorf("key cut to %d: %v", n, err)
		}
	}
	for n := range len(v) {
		if _, err := decodeMetricPoint(k, v[:n]); !errors.Is(err, errCorrupt) {
			t.Errorf("value cut to %d: %v", n, err)
		}
	}
}
