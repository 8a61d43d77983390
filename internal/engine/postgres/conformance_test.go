package postgres

import (
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
	"github.com/ferrymq/ferry/internal/engine/postgres/pgtest"
)

// suiteStore is a store of the suite with the schema it lives in, which a
// restart opens again, and the name its connections carry, by which a
// crash cuts them.
type suiteStore struct {
	*Store
	ts  testSchema
	app string
}

// suiteLeases are the move-task lease times of the suite's stores. A
// crashed node keeps its tasks until their lease runs out, on the
// database's clock, which no test moves: leases say whether a node is
// alive, so they are kept on the one clock every node shares rather than
// on a clock a test could drive, and the suite's stores hold them briefly
// instead, so that a task is taken over about a second after a crash.
// Renewing often costs one small statement per store and renewal.
var suiteLeases = leaseTimes{hold: time.Second, renew: 50 * time.Millisecond}

// TestConformance runs the suite with a schema of its own per test. A
// restart is a new store on the same schema after a clean close; a crash
// is a new store on it after the old one was stopped as a killed process
// stops (crash).
func TestConformance(t *testing.T) {
	pgtest.URL(t)
	open := func(t *testing.T, clk *clock.Fake, ts testSchema, hold bool, w engine.Waits) suiteStore {
		s, app := ts.openNamed(t, Options{Clock: clk, HoldMoveTasks: hold, leases: suiteLeases, Waits: w})
		return suiteStore{Store: s, ts: ts, app: app}
	}
	enginetest.Run(t, enginetest.Driver{
		Open: func(t *testing.T, clk *clock.Fake) engine.Store {
			return open(t, clk, freshSchema(t), false, engine.Waits{})
		},
		Reopen: func(t *testing.T, clk *clock.Fake, old engine.Store) engine.Store {
			o := old.(suiteStore)
			if err := o.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			return open(t, clk, o.ts, true, engine.Waits{})
		},
		Crash: func(t *testing.T, clk *clock.Fake, old engine.Store) engine.Store {
			o := old.(suiteStore)
			o.crash(t, o.ts, o.app)
			return open(t, clk, o.ts, true, engine.Waits{})
		},
		OpenWaits: func(t *testing.T, clk *clock.Fake, w engine.Waits) engine.Store {
			return open(t, clk, freshSchema(t), false, w)
		},
	})
}
