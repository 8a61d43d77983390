package embedded

import (
	"context"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
)

// The store passes the conformance suite three ways: in memory (nothing
// survives, so no restarts), on disk (restarts), and on an in-memory
// filesystem that keeps what was synced apart from what was only written,
// which lets a crash keep exactly what was synced (restarts and crashes).

func TestConformanceInMemory(t *testing.T) {
	enginetest.Run(t, enginetest.Driver{
		Open: func(t *testing.T, clk *clock.Fake) engine.Store {
			return openChecked(t, Options{InMemory: true, Clock: clk})
		},
		OpenWaits: func(t *testing.T, clk *clock.Fake, w engine.Waits) engine.Store {
			return openChecked(t, Options{InMemory: true, Clock: clk, Waits: w})
		},
	})
}

func TestConformanceOnDisk(t *testing.T) {
	enginetest.Run(t, enginetest.Driver{
		Open: func(t *testing.T, clk *clock.Fake) engine.Store {
			return openChecked(t, Options{Dir: t.TempDir(), Clock: clk})
		},
		Reopen: reopenChecked,
		OpenWaits: func(t *testing.T, clk *clock.Fake, w engine.Waits) engine.Store {
			return openChecked(t, Options{Dir: t.TempDir(), Clock: clk, Waits: w})
		},
	})
}

func TestConformanceCrash(t *testing.T) {
	enginetest.Run(t, enginetest.Driver{
		Open: func(t *testing.T, clk *clock.Fake) engine.Store {
			// The disk space guard reads a volume's figures, which this
			// filesystem has none of.
			return openChecked(t, Options{Dir: "/data", FS: vfs.NewCrashableMem(), DiskReserve: -1, Clock: clk})
		},
		Reopen: reopenChecked,
		Crash: func(t *testing.T, clk *clock.Fake, old engine.Store) engine.Store {
			c := old.(*checked)
			opts := c.opts
			// The crash happens now: the old store's writes from here on,
			// its clean close included, reach only its own filesystem.
			opts.FS = c.opts.FS.(*vfs.MemFS).CrashClone(vfs.CrashCloneCfg{})
			if err := c.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			opts.Clock, opts.HoldMoveTasks = clk, true
			return openChecked(t, opts)
		},
	})
}

// reopenChecked closes old and opens its directory again, holding the
// move tasks it resumes as the server's store does.
func reopenChecked(t *testing.T, clk *clock.Fake, old engine.Store) engine.Store {
	c := old.(*checked)
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	opts := c.opts
	opts.Clock, opts.HoldMoveTasks = clk, true
	return openChecked(t, opts)
}

// checked is an engine whose indexes, and their agreement with the store,
// are checked when it closes.
type checked struct {
	*Engine
	opts Options
}

func openChecked(t *testing.T, opts Options) *checked {
	c := &checked{Engine: openTest(t, opts), opts: opts}
	var once sync.Once
	c.beforeClose = func() {
		once.Do(func() {
			if err := verifyStore(c.Engine); err != nil {
				t.Errorf("at close: %v", err)
			}
		})
	}
	return c
}

func openTest(t testing.TB, opts Options) *Engine {
	t.Helper()
	e, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}
