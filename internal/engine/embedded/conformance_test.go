package embedded

import (
	"context"
	"testing"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
)

func TestConformanceInMemory(t *testing.T) {
	enginetest.Run(t, func(t *testing.T, clk *clock.Fake) engine.Backend {
		return openTest(t, Options{InMemory: true, Clock: clk})
	})
}

func TestConformanceOnDisk(t *testing.T) {
	enginetest.Run(t, func(t *testing.T, clk *clock.Fake) engine.Backend {
		return openTest(t, Options{Dir: t.TempDir(), Clock: clk})
	})
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
