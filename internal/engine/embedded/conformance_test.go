package embedded

import (
	"context"
	"sync"
	"testing"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
)

func TestConformanceInMemory(t *testing.T) {
	enginetest.Run(t, func(t *testing.T, clk *clock.Fake) engine.Backend {
		return openChecked(t, Options{InMemory: true, Clock: clk})
	})
}

func TestConformanceOnDisk(t *testing.T) {
	enginetest.Run(t, func(t *testing.T, clk *clock.Fake) engine.Backend {
		return openChecked(t, Options{Dir: t.TempDir(), Clock: clk})
	})
}

// checked is an engine whose indexes are checked when the suite closes it.
type checked struct {
	*Engine
	t    *testing.T
	once sync.Once
}

func openChecked(t *testing.T, opts Options) engine.Backend {
	return &checked{Engine: openTest(t, opts), t: t}
}

func (c *checked) Close() error {
	c.once.Do(func() {
		e := c.Engine
		if e.enter() != nil {
			return // closed already
		}
		defer e.leave()
		e.mu.RLock()
		defer e.mu.RUnlock()
		now := e.now()
		for k, q := range e.queues {
			q.mu.Lock()
			q.advanceLocked(now)
			q.rearmLocked(now)
			err := q.checkIndex(now)
			q.mu.Unlock()
			if err != nil {
				c.t.Errorf("queue %s: %v", k.name, err)
			}
		}
	})
	return c.Engine.Close()
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
