// Package pgtest gives tests a PostgreSQL schema of their own. The tests
// that need one run only when FERRY_TEST_POSTGRES_URL names a database on a
// PostgreSQL server (15 or newer) they may create schemas in; .ci/postgres
// starts one.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// URL is FERRY_TEST_POSTGRES_URL; without it the test is skipped, saying
// why.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("FERRY_TEST_POSTGRES_URL")
	if url == "" {
		t.Skip("FERRY_TEST_POSTGRES_URL is not set: the PostgreSQL tests need a server (see the README, .ci/postgres)")
	}
	return url
}

// Schema returns the URL and the name of a new schema, dropped when the
// test ends (after whatever the test opened on it is closed, cleanups
// running last first). Ferry creates the schema when it opens it.
func Schema(t testing.TB) (url, schema string) {
	t.Helper()
	url = URL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema = "test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return url, schema
}
