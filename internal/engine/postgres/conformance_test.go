package postgres

import (
	"testing"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
	"github.com/ferrymq/ferry/internal/engine/postgres/pgtest"
)

// suiteStore is a store of the suite with the schema it lives in, which a
// restart opens again.
type suiteStore struct {
	*Store
	ts testSchema
}

// TestConformance runs the suite with a schema of its own per test. A
// restart is a new store on the same schema after a clean close. A crash
// is left out: a node that dies keeps its move-task leases until they run
// out, which the suite's clock does not drive (leases are on the
// database's clock); the takeover has its own test here.
func TestConformance(t *testing.T) {
	pgtest.URL(t)
	enginetest.Run(t, enginetest.Driver{
		Open: func(t *testing.T, clk *clock.Fake) engine.Store {
			ts := freshSchema(t)
			return suiteStore{Store: ts.open(t, clk), ts: ts}
		},
		Reopen: func(t *testing.T, clk *clock.Fake, old engine.Store) engine.Store {
			o := old.(suiteStore)
			if err := o.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			return suiteStore{Store: o.ts.openWith(t, Options{Clock: clk, HoldMoveTasks: true}), ts: o.ts}
		},
	})
}
