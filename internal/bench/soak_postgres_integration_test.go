package bench_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ferrymq/ferry/internal/bench"
	"github.com/ferrymq/ferry/internal/engine/postgres"
	"github.com/ferrymq/ferry/internal/engine/postgres/pgtest"
	"github.com/ferrymq/ferry/internal/server"
)

// TestSoakWatchesPostgres runs the soak for a few seconds against a real
// Ferry on PostgreSQL, with and without a held snapshot: every sample must
// carry the broker's tables, the load must show in them, and the held
// transaction must be open, with a snapshot, while the load runs and gone
// once the soak returns.
func TestSoakWatchesPostgres(t *testing.T) {
	url, schema := pgtest.Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store, err := postgres.Open(ctx, postgres.Options{URL: url, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.Start(ctx, server.Config{Listen: "127.0.0.1:0", Store: store, StoreName: "postgres schema " + schema})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// held counts the sessions holding the soak's snapshot in a transaction.
	held := func() int {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND state = 'idle in transaction' AND backend_xmin IS NOT NULL`,
			bench.HeldSnapshotApplication).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// A database the watch cannot reach stops the soak before its load.
	_, err = bench.Soak(ctx, bench.SoakConfig{Endpoint: srv.URL(), Duration: time.Second,
		Postgres: &bench.PostgresWatch{URL: "postgres://ferry@127.0.0.1:1/ferry?connect_timeout=5", Schema: schema}})
	if err == nil || !strings.Contains(err.Error(), "connect to PostgreSQL") {
		t.Errorf("unreachable database: %v", err)
	}

	for _, hold := range []bool{false, true} {
		heldSeen := 0
		backlog := map[bool]int{false: 0, true: 200}[hold] // the held run has a backlog too
		rep, err := bench.Soak(ctx, bench.SoakConfig{Endpoint: srv.URL(), Duration: 1500 * time.Millisecond, Rate: 300,
			Sample: 300 * time.Millisecond, Backlog: backlog, Postgres: &bench.PostgresWatch{URL: url, Schema: schema, HoldSnapshot: hold},
			Progress: func(bench.SoakSample) { heldSeen = max(heldSeen, held()) }})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("hold %v:\n%s", hold, rep.Summary())
		r := rep.Result
		if r.Status != bench.StatusOK || r.Lost+r.Duplicated+r.Errors != 0 {
			t.Errorf("hold %v: load: %s", hold, r.Line())
		}
		if filled := strings.Contains(r.Line(), "pre-filled 200 "); filled != (backlog > 0) {
			t.Errorf("backlog %d, result %s", backlog, r.Line())
		}
		if rep.PostgresSchema != schema || rep.HeldSnapshot != hold {
			t.Errorf("report names schema %q, held %v", rep.PostgresSchema, rep.HeldSnapshot)
		}
		if want := map[bool]int{false: 0, true: 1}[hold]; heldSeen != want {
			t.Errorf("hold %v: %d sessions held a snapshot during the soak, want %d", hold, heldSeen, want)
		}
		if n := held(); n != 0 {
			t.Errorf("hold %v: %d sessions still hold a snapshot after the soak", hold, n)
		}
		for _, smp := range rep.Samples {
			if smp.Postgres == nil || len(smp.Postgres.Tables) == 0 {
				t.Fatalf("hold %v: sample at %.1fs without the database's tables", hold, smp.Seconds)
			}
		}
		// The statistics lag their transactions by up to a second, so
		// only the last sample must show the load: receives update
		// message states, and sizes are never zero.
		last := rep.Samples[len(rep.Samples)-1].Postgres
		tables := map[string]bench.TableSample{}
		for _, tb := range last.Tables {
			tables[tb.Name] = tb
			if tb.Bytes <= 0 {
				t.Errorf("hold %v: %s has size %d", hold, tb.Name, tb.Bytes)
			}
		}
		for _, name := range []string{"messages", "message_bodies", "queues", "fifo_groups"} {
			if _, ok := tables[name]; !ok {
				t.Errorf("hold %v: table %s missing from %+v", hold, name, last.Tables)
			}
		}
		if tables["messages"].Updates == 0 {
			t.Errorf("hold %v: no update of messages seen: %+v", hold, tables["messages"])
		}
		if hold && last.XminAge == 0 {
			t.Errorf("held snapshot is %d transactions old at the end", last.XminAge)
		}
	}
}
