package server_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestServerKnowsNoBackend: the server, and everything it is built from,
// reach the store only through engine.Store; the command line chooses the
// backend. A second backend must not need the server changed.
func TestServerKnowsNoBackend(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "github.com/ferrymq/ferry/internal/server").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list found only %v", deps)
	}
	for _, dep := range deps {
		if strings.HasPrefix(dep, "github.com/ferrymq/ferry/internal/engine/") {
			t.Errorf("internal/server depends on %s", dep)
		}
	}
}
