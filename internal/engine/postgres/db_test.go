package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine/postgres/pgtest"
)

// testSchema is a schema of its own for one test, dropped when it ends.
type testSchema struct {
	url, name string
}

func freshSchema(t testing.TB) testSchema {
	t.Helper()
	url, name := pgtest.Schema(t)
	return testSchema{url: url, name: name}
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
	s, _ := ts.openNamed(t, opts)
	return s
}

// openNamed is openWith, the store's connections carrying an
// application_name of their own, which it returns: the name by which a
// test finds them in pg_stat_activity.
func (ts testSchema) openNamed(t testing.TB, opts Options) (*Store, string) {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	app := "ferry-test-" + hex.EncodeToString(b[:])
	opts.URL, opts.Schema, opts.MaxConns = withApplicationName(t, ts.url, app), ts.name, 8
	s, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, app
}

// withApplicationName adds application_name to a connection string, in
// the URL form or the key=value form.
func withApplicationName(t testing.TB, conn, app string) string {
	t.Helper()
	if !strings.HasPrefix(conn, "postgres://") && !strings.HasPrefix(conn, "postgresql://") {
		return conn + " application_name=" + app
	}
	u, err := url.Parse(conn)
	if err != nil {
		t.Fatalf("parse the database URL: %v", err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String()
}

// terminate ends the backends of the connections named app, only its
// listening connection if listener: as the network or a dying process
// would end them, rolling back what they had not committed.
func (ts testSchema) terminate(t testing.TB, app string, listener bool) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, ts.url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1 AND (NOT $2 OR query LIKE 'LISTEN %')`, app, listener).Scan(&n)
	if err != nil || n == 0 {
		t.Fatalf("terminate the connections of %s: %d terminated, %v", app, n, err)
	}
}

// crash stops s as a killed process stops: no call is answered any more,
// its long polls and move tasks stop where they are, its connections are
// cut, rolling back what they had not committed, and it gives nothing up:
// its leases stay held until they run out.
func (s *Store) crash(t testing.TB, ts testSchema, app string) {
	t.Helper()
	if !s.halt() {
		t.Fatal("crash of a closed store")
	}
	ts.terminate(t, app, false)
	s.shutdown(false)
}

// openFresh opens a store on a new, empty schema.
func openFresh(t testing.TB, clk clock.Clock) *Store {
	t.Helper()
	return freshSchema(t).open(t, clk)
}
