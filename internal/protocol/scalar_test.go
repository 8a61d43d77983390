package protocol

import (
	"math"
	"testing"
	"time"
)

func TestJavaDouble(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		f    float64
		want string
	}{
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{1, "1.0"},
		{0.5, "0.5"},
		{90.5, "90.5"},
		{100, "100.0"},
		{-2.25, "-2.25"},
		{0.001, "0.001"},
		{0.000999, "9.99E-4"},
		{1e-5, "1.0E-5"},
		{1.5e-7, "1.5E-7"},
		{1234567, "1234567.0"},
		{9999999.5, "9999999.5"},
		{1e7, "1.0E7"},
		{-2.25e10, "-2.25E10"},
		{12345678.9, "1.23456789E7"},
		{0.30000000000000004, "0.30000000000000004"},
		{math.MaxFloat64, "1.7976931348623157E308"},
		{2.5e-300, "2.5E-300"},
		{math.NaN(), "NaN"},
		{math.Inf(1), "Infinity"},
		{math.Inf(-1), "-Infinity"},
	} {
		if got := string(appendJavaDouble(nil, tt.f, 64)); got != tt.want {
			t.Errorf("%v: got %s, want %s", tt.f, got, tt.want)
		}
	}
	if got := string(appendJavaDouble(nil, float64(float32(0.1)), 32)); got != "0.1" {
		t.Errorf("float32 0.1: %s", got)
	}
}

func TestXMLTime(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		t    time.Time
		want string
	}{
		{time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC), "2026-01-02T03:04:00Z"},
		{time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC), "2026-01-02T03:04:05.123Z"},
		{time.Date(2026, 1, 2, 3, 4, 5, 500e6, time.UTC), "2026-01-02T03:04:05.5Z"},
		{time.Date(2026, 1, 2, 5, 4, 5, 0, time.FixedZone("x", 2*3600)), "2026-01-02T03:04:05Z"},
	} {
		if got := string(appendXMLTime(nil, tt.t)); got != tt.want {
			t.Errorf("%v: got %s, want %s", tt.t, got, tt.want)
		}
	}
}

func TestQueryTime(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2026-01-02T03:04:05Z", base, true},
		{"2026-01-02T03:04:05.123Z", base.Add(123 * time.Millisecond), true},
		{"2026-01-02T03:04:05.123456Z", base.Add(123456 * time.Microsecond), true},
		{"2026-01-02T05:04:05+02:00", base, true},
		{"2026-01-02T03:04:05", base, true},
		{"2026-01-02T03:04:05+0000", base, true},
		{"2026-01-02T03:04Z", base.Add(-5 * time.Second), true},
		{"2026-01-02", time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), true},
		{"", time.Time{}, false},
		{"yesterday", time.Time{}, false},
		{"2026-13-02T03:04:05Z", time.Time{}, false},
		{"1767323045", time.Time{}, false},
	} {
		got, ok := parseQueryTime(tt.in)
		if ok != tt.ok || !got.Equal(tt.want) || (ok && got.Location() != time.UTC) {
			t.Errorf("%q: got %v %v, want %v %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestEpochSeconds(t *testing.T) {
	t.Parallel()
	tm := time.Date(2026, 1, 2, 3, 4, 5, 123e6, time.UTC)
	if s := epochSeconds(tm); s != 1767323045.123 {
		t.Errorf("epochSeconds %v", s)
	}
	if back, ok := fromEpochSeconds(1767323045.123); !ok || !back.Equal(tm) {
		t.Errorf("fromEpochSeconds %v %v", back, ok)
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e300, 253402300800, -62135596801} {
		if _, ok := fromEpochSeconds(bad); ok {
			t.Errorf("%v accepted", bad)
		}
	}
}
