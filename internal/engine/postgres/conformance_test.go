package postgres

import (
	"testing"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
	"github.com/ferrymq/ferry/internal/engine/postgres/pgtest"
)

func TestConformance(t *testing.T) {
	pgtest.URL(t)
	enginetest.Run(t, func(t *testing.T, clk *clock.Fake) engine.Backend {
		return openFresh(t, clk)
	})
}
