package postgres

import (
	"context"
	"testing"

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
