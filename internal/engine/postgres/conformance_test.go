package postgres

import (
	"strings"
	"testing"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
)

// notBuilt are the conformance tests of features not built on PostgreSQL
// yet (move tasks); they are skipped, saying so, until they are. Every
// other test of the suite runs.
var notBuilt = map[string]bool{
	"FIFOMoveTask": true, "MoveTaskToSources": true, "MoveTaskToDestination": true, "MoveTaskRate": true,
	"MoveTaskUnlimited": true, "MoveTaskOnePerSource": true, "MoveTaskAccountLimit": true,
	"MoveTaskCancel": true, "MoveTaskCancelEnded": true, "MoveTaskDestinationDeleted": true,
	"MoveTaskNoSourceARN": true, "MoveTaskSourceDeleted": true, "MoveTaskTimeout": true,
	"MoveTaskList": true, "MoveTaskMissingQueue": true,
}

func TestConformance(t *testing.T) {
	testURL(t)
	enginetest.Run(t, func(t *testing.T, clk *clock.Fake) engine.Backend {
		name := t.Name()[strings.LastIndex(t.Name(), "/")+1:]
		if notBuilt[name] {
			t.Skip("not built on PostgreSQL yet")
		}
		return openFresh(t, clk)
	})
}
