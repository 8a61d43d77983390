package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/ferrymq/ferry/internal/engine"
)

// PutRecord implements engine.RecordStore.
func (s *Store) PutRecord(ctx context.Context, kind, key string, value []byte) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if value == nil {
		value = []byte{}
	}
	// The notification goes out with the commit of the same statement.
	_, err := s.pool.Exec(ctx, `
		WITH w AS (
			INSERT INTO records (kind, key, value) VALUES ($1, $2, $3)
			ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value RETURNING 1)
		SELECT pg_notify($4, $5) FROM w`, kind, key, value, s.channel, s.recordNote(kind, key))
	if err != nil {
		return fmt.Errorf("postgres: put record %s/%s: %w", kind, key, err)
	}
	return nil
}

// DeleteRecord implements engine.RecordStore.
func (s *Store) DeleteRecord(ctx context.Context, kind, key string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if _, err := s.pool.Exec(ctx, `
		WITH d AS (DELETE FROM records WHERE kind = $1 AND key = $2 RETURNING 1)
		SELECT pg_notify($3, $4) FROM d`, kind, key, s.channel, s.recordNote(kind, key)); err != nil {
		return fmt.Errorf("postgres: delete record %s/%s: %w", kind, key, err)
	}
	return nil
}

// InsertRecord implements engine.RecordStore: one statement, which
// notifies the other nodes only when it inserted.
func (s *Store) InsertRecord(ctx context.Context, kind, key string, value []byte) (bool, error) {
	return s.writeRecordIf(ctx, "insert", kind, key, `
		WITH w AS (
			INSERT INTO records (kind, key, value) VALUES ($1, $2, $5)
			ON CONFLICT (kind, key) DO NOTHING RETURNING 1)
		SELECT pg_notify($3, $4) FROM w`, orEmpty(value))
}

// SwapRecord implements engine.RecordStore. Under READ COMMITTED the
// UPDATE waits for a concurrent writer of the row and then checks its
// condition against the row that writer left, so the compare and the set
// are one step on every node.
func (s *Store) SwapRecord(ctx context.Context, kind, key string, old, value []byte) (bool, error) {
	return s.writeRecordIf(ctx, "swap", kind, key, `
		WITH w AS (
			UPDATE records SET value = $6 WHERE kind = $1 AND key = $2 AND value = $5 RETURNING 1)
		SELECT pg_notify($3, $4) FROM w`, orEmpty(old), orEmpty(value))
}

// DeleteRecordIf implements engine.RecordStore.
func (s *Store) DeleteRecordIf(ctx context.Context, kind, key string, old []byte) (bool, error) {
	return s.writeRecordIf(ctx, "delete", kind, key, `
		WITH d AS (DELETE FROM records WHERE kind = $1 AND key = $2 AND value = $5 RETURNING 1)
		SELECT pg_notify($3, $4) FROM d`, orEmpty(old))
}

// writeRecordIf runs a conditional write of kind/key, whose arguments
// are kind, key, the channel and the note, then args; it returns a row
// (and notifies) only if it wrote.
func (s *Store) writeRecordIf(ctx context.Context, op, kind, key, sql string, args ...any) (bool, error) {
	if err := s.enter(); err != nil {
		return false, err
	}
	defer s.leave()
	tag, err := s.pool.Exec(ctx, sql, append([]any{kind, key, s.channel, s.recordNote(kind, key)}, args...)...)
	if err != nil {
		return false, fmt.Errorf("postgres: %s record %s/%s: %w", op, kind, key, err)
	}
	return tag.RowsAffected() == 1, nil
}

func orEmpty(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Records implements engine.RecordStore: sorted bytewise by key.
func (s *Store) Records(ctx context.Context, kind string) ([]engine.Record, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	rows, err := s.pool.Query(ctx, `SELECT key, value FROM records WHERE kind = $1 ORDER BY key COLLATE "C"`, kind)
	if err != nil {
		return nil, fmt.Errorf("postgres: records %s: %w", kind, err)
	}
	recs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (engine.Record, error) {
		var rec engine.Record
		err := r.Scan(&rec.Key, &rec.Value)
		return rec, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: records %s: %w", kind, err)
	}
	return recs, nil
}

// GetRecord implements engine.RecordStore.
func (s *Store) GetRecord(ctx context.Context, kind, key string) ([]byte, bool, error) {
	if err := s.enter(); err != nil {
		return nil, false, err
	}
	defer s.leave()
	var v []byte
	err := s.pool.QueryRow(ctx, `SELECT value FROM records WHERE kind = $1 AND key = $2`, kind, key).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("postgres: get record %s/%s: %w", kind, key, err)
	}
	return v, true, nil
}

// PutMetricPoints implements engine.MetricStore, in one statement: the
// points are this node's (engine.Cluster).
func (s *Store) PutMetricPoints(ctx context.Context, points []engine.MetricPoint) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if len(points) == 0 {
		return nil
	}
	n := len(points)
	var (
		minutes                   = make([]int64, n)
		accs, ns, ms, dns, dvs    = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		sums, counts, mins, maxes = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	)
	for i, p := range points {
		minutes[i], accs[i], ns[i], ms[i], dns[i], dvs[i] = p.Minute, p.Account, p.Namespace, p.Metric, p.DimName, p.DimValue
		sums[i], counts[i], mins[i], maxes[i] = p.Sum, p.Count, p.Min, p.Max
	}
	// DISTINCT ON keeps the last of a series' minute when the batch names
	// it twice, as applying the points in order would.
	_, err := s.pool.Exec(ctx, `
		INSERT INTO metric_points (node, minute, account, namespace, metric, dim_name, dim_value, sum, count, min, max)
		SELECT DISTINCT ON (minute, account, namespace, metric, dim_name, dim_value)
			$11, minute, account, namespace, metric, dim_name, dim_value, sum, count, min, max
		FROM unnest($1::int8[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
			$7::float8[], $8::float8[], $9::float8[], $10::float8[])
			WITH ORDINALITY AS u(minute, account, namespace, metric, dim_name, dim_value, sum, count, min, max, i)
		ORDER BY minute, account, namespace, metric, dim_name, dim_value, i DESC
		ON CONFLICT (minute, account, namespace, metric, dim_name, dim_value, node) DO UPDATE SET
			sum = excluded.sum, count = excluded.count, min = excluded.min, max = excluded.max`,
		minutes, accs, ns, ms, dns, dvs, sums, counts, mins, maxes, s.node)
	if err != nil {
		return fmt.Errorf("postgres: put metric points: %w", err)
	}
	return nil
}

// MetricPoints implements engine.MetricStore: every node's points, merged.
func (s *Store) MetricPoints(ctx context.Context, from int64) ([]engine.MetricPoint, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	return s.metricPoints(ctx, from, nil)
}

// metricPoints reads the points of minute from on of every node but
// except (nil: every node), merged per series and minute.
func (s *Store) metricPoints(ctx context.Context, from int64, except *string) ([]engine.MetricPoint, error) {
	rows, err := s.pool.Query(ctx, `SELECT minute, account, namespace, metric, dim_name, dim_value,
			sum(sum), sum(count), min(min), max(max)
		FROM metric_points WHERE minute >= $1 AND ($2::text IS NULL OR node <> $2)
		GROUP BY minute, account, namespace, metric, dim_name, dim_value
		ORDER BY minute, account COLLATE "C", namespace COLLATE "C", metric COLLATE "C", dim_name COLLATE "C", dim_value COLLATE "C"`, from, except)
	if err != nil {
		return nil, fmt.Errorf("postgres: metric points: %w", err)
	}
	pts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (engine.MetricPoint, error) {
		var p engine.MetricPoint
		err := r.Scan(&p.Minute, &p.Account, &p.Namespace, &p.Metric, &p.DimName, &p.DimValue, &p.Sum, &p.Count, &p.Min, &p.Max)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: metric points: %w", err)
	}
	return pts, nil
}

// DeleteMetricPointsBefore implements engine.MetricStore.
func (s *Store) DeleteMetricPointsBefore(ctx context.Context, minute int64) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if _, err := s.pool.Exec(ctx, `DELETE FROM metric_points WHERE minute < $1`, minute); err != nil {
		return fmt.Errorf("postgres: delete metric points: %w", err)
	}
	return nil
}

// DeleteMetricPoints implements engine.MetricStore.
func (s *Store) DeleteMetricPoints(ctx context.Context, pick func(account string) bool) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	accounts, err := s.pickAccounts(ctx, "metric_points", pick)
	if err != nil {
		return fmt.Errorf("postgres: delete metric points: %w", err)
	}
	if len(accounts) == 0 {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM metric_points WHERE account = ANY($1)`, accounts); err != nil {
		return fmt.Errorf("postgres: delete metric points: %w", err)
	}
	return nil
}
