package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Statistics that follow the tables. After five executions of a prepared
// statement a connection keeps a generic plan, made for the tables as their
// statistics (pg_class) describe them, until those change: one made while a
// queue's tables were vacuumed empty reads messages whole (a Seq Scan, or
// an index walked end to end) once they have filled again. Autovacuum's
// analyze comes a naptime or more later. So one node (the "statistics"
// lease) looks every statsEvery for tables of the schema that hold far more
// rows than their statistics say, partitions and partitioned tables
// included, and analyzes them: ANALYZE updates pg_class, which invalidates
// every connection's plans of the table, and the next execution plans for
// the table as it is.
const (
	defaultStatsEvery = time.Second
	// A table is analyzed once it holds grownRows live rows or more, and
	// more than grownFactor times the rows its statistics say: a plan made
	// for the old count reads at most grownFactor times what it expected.
	grownRows   = 1000
	grownFactor = 4
	// analyzeLockWait bounds the wait for a lock other than the table's
	// (which ANALYZE skips when another holds it: autovacuum, a TRUNCATE).
	analyzeLockWait = "100ms"
)

// grownSQL names the tables of schema $1 that have grown past their
// statistics. The live rows are the cumulative statistics' (each backend
// reports its changes within a second or so); reltuples is -1 for a table
// never analyzed nor vacuumed, 0 for one vacuumed empty. The cumulative
// statistics count rows in the leaf partitions only, so a partitioned
// table (messages, message_bodies) is judged by its leaves' sum: its own
// statistics are what the planner reads for a statement on it, and
// autovacuum never analyzes it. ANALYZE of a partitioned table samples its
// leaves and analyzes each, so a leaf under a grown parent is not named
// again.
const grownSQL = `
WITH leaf AS (
	SELECT t.relid, t.n_live_tup, c.reltuples, i.inhparent AS parent
	FROM pg_stat_user_tables t JOIN pg_class c ON c.oid = t.relid
		LEFT JOIN pg_inherits i ON i.inhrelid = t.relid
	WHERE t.schemaname = $1
), parent AS (
	SELECT p.oid FROM pg_class p JOIN (SELECT parent, sum(n_live_tup) AS live FROM leaf GROUP BY parent) l ON l.parent = p.oid
	WHERE p.relkind = 'p' AND l.live >= $2 AND l.live > $3 * greatest(p.reltuples, 0)
)
SELECT format('%I.%I', $1::text, c.relname) FROM pg_class c
WHERE c.oid IN (SELECT oid FROM parent)
	OR c.oid IN (SELECT relid FROM leaf WHERE n_live_tup >= $2 AND n_live_tup > $3 * greatest(reltuples, 0)
		AND (parent IS NULL OR parent NOT IN (SELECT oid FROM parent)))
ORDER BY 1`

// analyzeGrown analyzes the tables that have grown past their statistics,
// each in its own transaction (so that no lock outlives its table's
// analysis), and answers their names.
func (s *Store) analyzeGrown(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, grownSQL, s.schema, grownRows, grownFactor)
	if err != nil {
		return nil, fmt.Errorf("tables grown past their statistics: %w", err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("tables grown past their statistics: %w", err)
	}
	for _, table := range tables {
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '"+analyzeLockWait+"'"); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "ANALYZE (SKIP_LOCKED) "+table)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("analyze %s: %w", table, err)
		}
	}
	if len(tables) > 0 {
		s.log.Debug("postgres: analyzed the tables grown past their statistics", "tables", tables)
	}
	return tables, nil
}
