package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The schema's migrations: migrations/NNNN_what.sql, applied in order,
// each in its own transaction with the version it brings.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// ErrSchemaTooNew: the schema was migrated by a newer Ferry than this one.
var ErrSchemaTooNew = errors.New("postgres: the schema is newer than this Ferry knows")

// loadMigrations reads the embedded migrations, checking that their
// versions start at 1 and increase.
func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("postgres: migrations: %w", err)
	}
	sort.Strings(names)
	var ms []migration
	for _, n := range names {
		base := strings.TrimPrefix(n, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || (len(ms) == 0 && v != 1) || (len(ms) > 0 && v <= ms[len(ms)-1].version) {
			return nil, fmt.Errorf("postgres: migration %s: want a version first in its name, 1 for the first, above the one before", base)
		}
		b, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("postgres: migration %s: %w", base, err)
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	return ms, nil
}

// migrate brings schema up to the newest migration. It holds a session
// advisory lock on the schema while it looks and writes, so that nodes
// starting together migrate once: the others wait, then find nothing to
// do. A schema newer than ms is refused with ErrSchemaTooNew.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, ms []migration) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Release()
	lock := "ferry migrate " + schema
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(hashtextextended($1, 0))", lock); err != nil {
		return fmt.Errorf("postgres: migration lock: %w", err)
	}
	defer func() {
		// A failed unlock ends with the session; do not let it hide err.
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(hashtextextended($1, 0))", lock)
	}()
	ident := pgx.Identifier{schema}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+ident); err != nil {
		return fmt.Errorf("postgres: create schema %s: %w", schema, err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+ident+".schema_version (version int4 NOT NULL)"); err != nil {
		return fmt.Errorf("postgres: create schema_version: %w", err)
	}
	var have int
	err = conn.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+ident+".schema_version").Scan(&have)
	if err != nil {
		return fmt.Errorf("postgres: read the schema version: %w", err)
	}
	if known := ms[len(ms)-1].version; have > known {
		return fmt.Errorf("%w: schema %s is at version %d, this Ferry knows versions up to %d; run a Ferry at least as new as the one that migrated it",
			ErrSchemaTooNew, schema, have, known)
	}
	for _, m := range ms {
		if m.version <= have {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+ident); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "DELETE FROM schema_version"); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_version (version) VALUES ($1)", m.version)
			return err
		})
		if err != nil {
			return fmt.Errorf("postgres: migration %s: %w", m.name, err)
		}
	}
	return nil
}
