package bench

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		d := make([]time.Duration, len(v))
		for i, x := range v {
			d[i] = time.Duration(x) * time.Millisecond
		}
		return d
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	cases := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one sample", ms(7), 50, 7 * time.Millisecond},
		{"one sample p99", ms(7), 99, 7 * time.Millisecond},
		{"median of odd", ms(1, 2, 3), 50, 2 * time.Millisecond},
		{"median of even is the lower", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p99 of 100", ms(hundred...), 99, 99 * time.Millisecond},
		{"p50 of 100", ms(hundred...), 50, 50 * time.Millisecond},
		{"p100", ms(hundred...), 100, 100 * time.Millisecond},
		{"p99 of 10 is the max", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{"tiny p is the min", ms(5, 6, 7), 0.001, 5 * time.Millisecond},
	}
	for _, tc := range cases {
		if got := Percentile(tc.sorted, tc.p); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestLatenciesSummary(t *testing.T) {
	var l Latencies
	if s := l.Summary(); s != (Summary{}) {
		t.Errorf("empty: %+v", s)
	}
	// Out of order, and one negative sample that counts as zero.
	for _, d := range []time.Duration{30, 10, -5, 20, 40} {
		l.Add(d * time.Millisecond)
	}
	want := Summary{N: 5, P50: 20 * time.Millisecond, P99: 40 * time.Millisecond}
	if s := l.Summary(); s != want {
		t.Errorf("summary %+v, want %+v", s, want)
	}
}

func TestRate(t *testing.T) {
	cases := []struct {
		n       int64
		elapsed time.Duration
		want    float64
	}{
		{1000, time.Second, 1000},
		{1000, 2 * time.Second, 500},
		{5, 0, 0},
		{5, -time.Second, 0},
		{0, time.Second, 0},
	}
	for _, tc := range cases {
		if got := Rate(tc.n, tc.elapsed); got != tc.want {
			t.Errorf("Rate(%d, %v) = %v, want %v", tc.n, tc.elapsed, got, tc.want)
		}
	}
}
