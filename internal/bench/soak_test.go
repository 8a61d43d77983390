package bench

import (
	"math"
	"strings"
	"testing"
)

// series is n samples 10 s apart of f(minutes).
func series(n int, f func(min float64) float64) (t, v []float64) {
	for i := range n {
		t = append(t, float64(i*10))
		v = append(v, f(float64(i*10)/60))
	}
	return t, v
}

func TestJudge(t *testing.T) {
	const mb = 1 << 20
	noise := func(min float64) float64 { return mb * math.Sin(min*7) } // ±1 MB saw-tooth
	cases := []struct {
		name    string
		n       int
		f       func(min float64) float64
		plateau bool
		note    string
	}{
		{"flat", 180, func(m float64) float64 { return 60*mb + noise(m) }, true, ""},
		{"leak 0.5 MB/min", 180, func(m float64) float64 { return 40*mb + 0.5*mb*m + noise(m) }, false, ""},
		{"slow leak 0.2 MB/min", 180, func(m float64) float64 { return 40*mb + 0.2*mb*m }, false, ""},
		{"fills then levels", 180, func(m float64) float64 { return 40*mb + 30*mb*(1-math.Exp(-m/4)) + noise(m) }, true, ""},
		{"fills within the first third", 180, func(m float64) float64 { return 40*mb + 20*mb*min(m/5, 1) }, true, ""},
		{"shrinks", 180, func(m float64) float64 { return 80*mb - mb*m }, true, ""},
		{"goroutines flat", 180, func(m float64) float64 { return 50 + float64(int(m*13)%5) }, true, ""},
		{"goroutine leak", 180, func(m float64) float64 { return 50 + 2*m }, false, ""},
		{"too short", 8, func(m float64) float64 { return 1 }, false, "too few samples"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts, v := series(tc.n, tc.f)
			tr := judge("x", ts, v)
			if tr.Plateau != tc.plateau || !strings.Contains(tr.Note, tc.note) {
				t.Errorf("plateau %v (%q), want %v; medians %v", tr.Plateau, tr.Note, tc.plateau, tr.Medians)
			}
		})
	}
}

func TestSlope(t *testing.T) {
	ts, v := series(30, func(m float64) float64 { return 3 + 2*m })
	if s := slope(ts, v) * 60; math.Abs(s-2) > 1e-9 {
		t.Errorf("slope %v per minute, want 2", s)
	}
}

func TestParseExposition(t *testing.T) {
	fig, err := parseExposition(strings.NewReader(`# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 42
go_gc_duration_seconds{quantile="0.5"} 0.001
process_resident_memory_bytes 4.5056e+07
ferry_sqs_messages_stored{account="111111111111"} 3 1700000000000
ferry_sqs_messages_stored{account="222222222222",queue="a b}"} 4
bad_line
not_a_number x
labelled_not_a_number{a="b"} x
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"go_goroutines": 42, "go_gc_duration_seconds": 0.001, "process_resident_memory_bytes": 45056000,
		"ferry_sqs_messages_stored": 7}
	if len(fig) != len(want) {
		t.Errorf("got %v, want %v", fig, want)
	}
	for k, w := range want {
		if fig[k] != w {
			t.Errorf("%s = %v, want %v", k, fig[k], w)
		}
	}
}

func TestSoakVerdict(t *testing.T) {
	cases := []struct {
		name            string
		judged, plateau bool
		status          string
		failed          bool
		verdict         string
	}{
		{"levelled off", true, true, StatusOK, false, "memory levelled off"},
		{"growing", true, false, StatusOK, true, "memory kept growing"},
		{"too short", false, false, StatusOK, false, "too few samples to judge memory"},
		{"too short, load failed", false, false, StatusFail, true, "too few samples to judge memory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &SoakReport{Judged: tc.judged, Plateau: tc.plateau, Result: Result{Status: tc.status}}
			if r.Failed() != tc.failed {
				t.Errorf("Failed() = %v, want %v", r.Failed(), tc.failed)
			}
			if s := r.Summary(); !strings.Contains(s, "verdict: "+tc.verdict+";") {
				t.Errorf("summary %q, want verdict %q", s, tc.verdict)
			}
		})
	}
}
