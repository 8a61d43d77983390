package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// A soak of a broker on PostgreSQL also watches the database: a queue that
// deletes what it consumed leaves dead tuples, which only vacuum reclaims,
// and vacuum cannot reclaim what a snapshot still open might see. The watch
// reports each of the schema's tables per sample, and may hold such a
// snapshot open for the whole run to show what it costs.

// PostgresWatch says which database and schema a soak watches.
type PostgresWatch struct {
	// URL is a PostgreSQL connection string, like the broker's --postgres.
	URL string
	// Schema is the broker's schema (its --postgres-schema).
	Schema string
	// HoldSnapshot keeps a REPEATABLE READ transaction open on a
	// connection of its own for the whole run, after a query in it has
	// taken its snapshot: the long reader of another application.
	HoldSnapshot bool
}

// HeldSnapshotApplication is the application_name of the session that
// holds the long transaction.
const HeldSnapshotApplication = "ferry soak: held snapshot"

// TableSample is one table of the watched schema at one sample.
type TableSample struct {
	Name string `json:"table"`
	Live int64  `json:"live_tuples"` // n_live_tup
	Dead int64  `json:"dead_tuples"` // n_dead_tup
	// Bytes is the table's size with its indexes and TOAST
	// (pg_total_relation_size).
	Bytes int64 `json:"total_bytes"`
	// Autovacuums counts the table's autovacuum runs since the statistics
	// were reset; LastAutovacuum is the end of the last one (zero: none).
	Autovacuums    int64     `json:"autovacuum_count"`
	LastAutovacuum time.Time `json:"last_autovacuum,omitzero"`
	// Updates and HOTUpdates count the rows updated, and those of them
	// updated without a new index entry (heap-only), since the reset.
	Updates    int64 `json:"updates"`
	HOTUpdates int64 `json:"hot_updates"`
}

// PostgresSample is the database part of a soak's sample.
type PostgresSample struct {
	// XminAge is the age in transactions of the oldest snapshot any
	// session of the database holds: how far behind vacuum's horizon is.
	XminAge int64         `json:"xmin_age"`
	Tables  []TableSample `json:"tables"`
}

// tableStatsSQL reads the schema's tables from the statistics collector.
//
// A partitioned table (messages and message_bodies, in their slots) is
// reported as one, its partitions summed.
const tableStatsSQL = `
SELECT coalesce(p.relname, s.relname) AS name, sum(s.n_live_tup)::int8, sum(s.n_dead_tup)::int8,
	sum(pg_total_relation_size(s.relid))::int8, sum(s.autovacuum_count)::int8, max(s.last_autovacuum),
	sum(s.n_tup_upd)::int8, sum(s.n_tup_hot_upd)::int8
FROM pg_stat_user_tables s
LEFT JOIN pg_inherits i ON i.inhrelid = s.relid
LEFT JOIN pg_class p ON p.oid = i.inhparent
WHERE s.schemaname = $1
GROUP BY 1 ORDER BY 1`

// xminAgeSQL is the age of the oldest snapshot held in this database, the
// watch's own left out, and autovacuum's too: other vacuums ignore it.
const xminAgeSQL = `
SELECT coalesce(max(age(backend_xmin)), 0) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type <> 'autovacuum worker'`

// pgWatcher samples a schema's tables on a connection of its own, and
// holds the long transaction on another when asked to.
type pgWatcher struct {
	schema string
	conn   *pgx.Conn
	holder *pgx.Conn
}

// watchPostgres connects to w's database and, with HoldSnapshot, opens the
// long transaction and takes its snapshot before it returns.
func watchPostgres(ctx context.Context, w PostgresWatch) (*pgWatcher, error) {
	if w.Schema == "" {
		return nil, errors.New("bench: the PostgreSQL watch needs a schema")
	}
	conn, err := pgx.Connect(ctx, w.URL)
	if err != nil {
		return nil, fmt.Errorf("bench: connect to PostgreSQL: %w", err)
	}
	pw := &pgWatcher{schema: w.Schema, conn: conn}
	if !w.HoldSnapshot {
		return pw, nil
	}
	hc, err := pgx.ParseConfig(w.URL)
	if err != nil {
		pw.close(ctx)
		return nil, fmt.Errorf("bench: parse the PostgreSQL URL: %w", err)
	}
	// Named, so that an operator who finds it in pg_stat_activity knows
	// whose it is.
	hc.RuntimeParams["application_name"] = HeldSnapshotApplication
	if pw.holder, err = pgx.ConnectConfig(ctx, hc); err != nil {
		pw.close(ctx)
		return nil, fmt.Errorf("bench: connect to PostgreSQL: %w", err)
	}
	// A REPEATABLE READ transaction takes its snapshot at its first
	// query, not at BEGIN; from then until it ends, vacuum keeps every
	// row version that snapshot might see.
	if _, err := pw.holder.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ"); err != nil {
		pw.close(ctx)
		return nil, fmt.Errorf("bench: open the long transaction: %w", err)
	}
	var n int64
	if err := pw.holder.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{w.Schema, "queues"}.Sanitize()).Scan(&n); err != nil {
		pw.close(ctx)
		return nil, fmt.Errorf("bench: take the long transaction's snapshot: %w", err)
	}
	return pw, nil
}

// sample reads the tables and the oldest snapshot's age.
func (pw *pgWatcher) sample(ctx context.Context) (*PostgresSample, error) {
	ps := &PostgresSample{}
	if err := pw.conn.QueryRow(ctx, xminAgeSQL).Scan(&ps.XminAge); err != nil {
		return nil, fmt.Errorf("bench: read the oldest snapshot: %w", err)
	}
	rows, err := pw.conn.Query(ctx, tableStatsSQL, pw.schema)
	if err != nil {
		return nil, fmt.Errorf("bench: read the table statistics: %w", err)
	}
	for rows.Next() {
		var (
			t    TableSample
			last *time.Time
		)
		if err := rows.Scan(&t.Name, &t.Live, &t.Dead, &t.Bytes, &t.Autovacuums, &last, &t.Updates, &t.HOTUpdates); err != nil {
			rows.Close()
			return nil, fmt.Errorf("bench: read the table statistics: %w", err)
		}
		if last != nil {
			t.LastAutovacuum = last.UTC()
		}
		ps.Tables = append(ps.Tables, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("bench: read the table statistics: %w", err)
	}
	if len(ps.Tables) == 0 {
		return nil, fmt.Errorf("bench: schema %q has no tables", pw.schema)
	}
	return ps, nil
}

// close ends the long transaction (rolled back: it wrote nothing) and the
// connections.
func (pw *pgWatcher) close(ctx context.Context) {
	if pw.holder != nil {
		// Rolled back before the close, which the server notices only
		// later: the snapshot is released when close returns.
		_, _ = pw.holder.Exec(ctx, "ROLLBACK")
		_ = pw.holder.Close(ctx)
	}
	_ = pw.conn.Close(ctx)
}

// Lines renders ps as indented lines under a sample's line: the oldest
// snapshot, then each table that holds or held rows.
func (ps *PostgresSample) Lines() []string {
	lines := []string{fmt.Sprintf("         pg  oldest snapshot %s transactions old", count(ps.XminAge))}
	for _, t := range ps.Tables {
		if t.Live == 0 && t.Dead == 0 && t.Updates == 0 {
			continue
		}
		last := "never"
		if !t.LastAutovacuum.IsZero() {
			last = t.LastAutovacuum.Format(time.TimeOnly)
		}
		hot := "-"
		if t.Updates > 0 {
			hot = strconv.FormatFloat(100*float64(t.HOTUpdates)/float64(t.Updates), 'f', 0, 64) + "%"
		}
		lines = append(lines, fmt.Sprintf("         pg  %-15s live %9s  dead %9s  size %8s  hot %4s  autovacuum %3d, last %s",
			t.Name, count(t.Live), count(t.Dead), MiB(float64(t.Bytes)), hot, t.Autovacuums, last))
	}
	return lines
}

// pgTrends judges each table the load touched: its dead tuples and size.
func pgTrends(samples []SoakSample) []Trend {
	var (
		names []string
		t     []float64
		dead  = map[string][]float64{}
		size  = map[string][]float64{}
	)
	for _, s := range samples {
		if s.Postgres == nil {
			continue
		}
		t = append(t, s.Seconds)
		for _, tb := range s.Postgres.Tables {
			if _, ok := size[tb.Name]; !ok {
				names = append(names, tb.Name)
			}
			dead[tb.Name] = append(dead[tb.Name], float64(tb.Dead))
			size[tb.Name] = append(size[tb.Name], float64(tb.Bytes))
		}
	}
	var trs []Trend
	for _, n := range names {
		// A table that appeared mid-run has fewer samples than t.
		tt := t[len(t)-len(size[n]):]
		if slices.Min(dead[n]) == slices.Max(dead[n]) && slices.Min(size[n]) == slices.Max(size[n]) {
			continue // untouched by the load
		}
		trs = append(trs, judge("pg "+n+" dead", tt, dead[n]), judge("pg "+n+" size", tt, size[n]))
	}
	return trs
}

// count renders a whole number with thousands separators.
func count(n int64) string {
	if n < 100 {
		return strconv.FormatInt(n, 10)
	}
	return Thousands(float64(n))
}

// trendValue prints a trend's figure in its unit.
func trendValue(figure string, v float64) string {
	switch {
	case figure == "goroutines", strings.HasSuffix(figure, " dead"):
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return MiB(v)
}
