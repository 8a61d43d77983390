package bench

import (
	"strings"
	"testing"
	"time"
)

func TestPostgresSampleLines(t *testing.T) {
	vacuumed := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	ps := PostgresSample{XminAge: 12345, Tables: []TableSample{
		{Name: "messages", Live: 67, Dead: 11921, Bytes: 3 << 20, Autovacuums: 2, LastAutovacuum: vacuumed, Updates: 200, HOTUpdates: 50},
		{Name: "message_bodies", Live: 0, Dead: 5, Bytes: 1 << 20},
		{Name: "leases", Bytes: 8192}, // never touched: left out
	}}
	got := ps.Lines()
	want := []string{
		"oldest snapshot 12,345 transactions old",
		"messages        live        67  dead    11,921  size     3.0M  hot  25%  autovacuum   2, last 15:04:05",
		"message_bodies  live         0  dead         5  size     1.0M  hot    -  autovacuum   0, last never",
	}
	if len(got) != len(want) {
		t.Fatalf("lines %q, want %d", got, len(want))
	}
	for i := range want {
		if !strings.HasSuffix(got[i], want[i]) {
			t.Errorf("line %d: %q, want it to end with %q", i, got[i], want[i])
		}
	}
}

func TestSoakSampleText(t *testing.T) {
	s := SoakSample{Seconds: 15}
	if txt := s.Text(); txt != s.Line() {
		t.Errorf("without the database: %q, want the line alone", txt)
	}
	s.Postgres = &PostgresSample{Tables: []TableSample{{Name: "messages", Dead: 1}}}
	lines := strings.Split(s.Text(), "\n")
	if len(lines) != 3 || lines[0] != s.Line() || !strings.Contains(lines[2], "messages") {
		t.Errorf("with the database: %q", lines)
	}
}

func TestPGTrends(t *testing.T) {
	// 12 samples: messages' dead tuples and size grow throughout, bodies'
	// dead tuples saw-tooth under vacuum at a constant size, queues is never
	// touched, and fifo_groups appears at the fourth sample, fills and levels
	// off.
	var samples []SoakSample
	for i := range 12 {
		tables := []TableSample{
			{Name: "message_bodies", Dead: int64(2000 * (i % 2)), Bytes: 1 << 20},
			{Name: "messages", Dead: int64(1000 * i), Bytes: int64(1<<20 + i<<20)},
			{Name: "queues", Live: 3, Bytes: 8192},
		}
		if i >= 3 {
			tables = append(tables, TableSample{Name: "fifo_groups", Dead: int64(10 * min(i, 6)), Bytes: 8192})
		}
		samples = append(samples, SoakSample{Seconds: float64(15 * i), Postgres: &PostgresSample{Tables: tables}})
	}
	samples = append([]SoakSample{{Seconds: -1}}, samples...) // a sample without the database is skipped
	trs := pgTrends(samples)
	got := map[string]Trend{}
	for _, tr := range trs {
		got[tr.Figure] = tr
	}
	want := map[string]struct {
		plateau bool
		note    string
	}{
		"pg message_bodies dead": {true, ""},
		"pg message_bodies size": {true, ""},
		"pg messages dead":       {false, ""},
		"pg messages size":       {false, ""},
		"pg fifo_groups dead":    {true, ""},
		"pg fifo_groups size":    {true, ""},
	}
	if len(got) != len(want) {
		t.Errorf("trends %v, want %d", trs, len(want))
	}
	for f, w := range want {
		tr, ok := got[f]
		if !ok || tr.Plateau != w.plateau || tr.Note != w.note {
			t.Errorf("%s: %+v (present %v), want plateau %v", f, tr, ok, w.plateau)
		}
	}
	if m := got["pg messages dead"].Medians; m[0] != 1500 || m[2] != 9500 {
		t.Errorf("messages dead medians %v, want 1500 .. 9500", m)
	}
}

func TestSoakSummaryPostgres(t *testing.T) {
	r := &SoakReport{Judged: true, Plateau: true, Result: Result{Status: StatusOK},
		PostgresTrends: []Trend{{Figure: "pg messages dead", Medians: [3]float64{100, 5000, 9000}, LastSlope: 800}}}
	s := r.Summary()
	if !strings.Contains(s, "pg messages dead         thirds' medians      100     5000     9000  last third      800/min  GROWING") {
		t.Errorf("summary %q", s)
	}
	// Growing tables are reported, not judged: memory decides.
	if r.Failed() || !strings.Contains(s, "verdict: memory levelled off;") {
		t.Errorf("failed %v, summary %q", r.Failed(), s)
	}
}
