package postgres

import (
	"testing"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
)

func TestConformance(t *testing.T) {
	testURL(t)
	enginetest.Run(t, func(t *testing.T, clk *clock.Fake) engine.Backend {
		return openFresh(t, clk)
	})
}
