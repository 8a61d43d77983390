package embedded

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ferrymq/ferry/internal/engine"
)

// Series names are length-prefixed in the store's keys: any bytes go, and
// a name is never read as part of its neighbour. (The conformance suite
// checks what metric points do.)
func TestMetricPointNamesAnyBytes(t *testing.T) {
	ctx := context.Background()
	e := openTest(t, Options{InMemory: true})
	pt := func(queue string, sum float64) engine.MetricPoint {
		return engine.MetricPoint{Namespace: "AWS/SQS", Metric: "NumberOfMessagesSent", DimName: "QueueName", DimValue: queue,
			Minute: 100, Sum: sum, Count: 1, Min: sum, Max: sum}
	}
	want := []engine.MetricPoint{pt("a", 1), pt("a\x00b", 2), pt("a\x00", 3)}
	if err := e.PutMetricPoints(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := e.MetricPoints(ctx, 0)
	slices.SortFunc(got, func(a, b engine.MetricPoint) int { return strings.Compare(a.DimValue, b.DimValue) })
	slices.SortFunc(want, func(a, b engine.MetricPoint) int { return strings.Compare(a.DimValue, b.DimValue) })
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("points = %+v, %v\nwant %+v", got, err, want)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
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
