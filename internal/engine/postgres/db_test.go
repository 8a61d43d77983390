package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ferrymq/ferry/internal/clock"
)

// The tests need a PostgreSQL server: FERRY_TEST_POSTGRES_URL names a
// database they may create schemas in (.ci/postgres starts one).

func testURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("FERRY_TEST_POSTGRES_URL")
	if url == "" {
		t.Skip("FERRY_TEST_POSTGRES_URL is not set: the PostgreSQL tests need a server (see the README, .ci/postgres)")
	}
	return url
}

// testSchema is a schema of its own for one test, dropped when it ends.
type testSchema struct {
	url, name string
}

// freshSchema names a new schema and drops it at the test's end (after
// the stores opened on it are closed: cleanups run last first).
func freshSchema(t testing.TB) testSchema {
	t.Helper()
	url := testURL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	ts := testSchema{url: url, name: "test_" + hex.EncodeToString(b[:])}
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schema %s: %v", ts.name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{ts.name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", ts.name, err)
		}
	})
	return ts
}

// open opens a store on the schema, closed when the test ends; a second
// open of the same schema is the same data seen by a new store (a restart,
// or another node).
func (ts testSchema) open(t testing.TB, clk clock.Clock) *Store {
	t.Helper()
	return ts.openWith(t, Options{Clock: clk})
}

// openWith is open with more options.
func (ts testSchema) openWith(t testing.TB, opts Options) *Store {
	t.Helper()
	opts.URL, opts.Schema, opts.MaxConns = ts.url, ts.name, 8
	s, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// openFresh opens a store on a new, empty schema.
func openFresh(t testing.TB, clk clock.Clock) *Store {
	t.Helper()
	return freshSchema(t).open(t, clk)
}
