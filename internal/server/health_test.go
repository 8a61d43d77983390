package server_test

import (
	"strings"
	"testing"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/server"
)

// degradedStore is a store that serves but says it works less well, as
// the PostgreSQL store does while vacuum is held back.
type degradedStore struct {
	engine.Store
	why string
}

func (d degradedStore) Degraded() string { return d.why }

// A degraded store keeps the services running and HTTP 200; health says
// "degraded" and why, for monitoring to alert on.
func TestHealthDegraded(t *testing.T) {
	t.Parallel()
	why := `vacuum held back for 6m0s by pid 42 (report, idle in transaction)`
	f := start(t, func(c *server.Config) {
		c.Store = degradedStore{Store: openStore(t, *c, nil), why: why}
	})
	h := do(t, mustRequest(t, "GET", f.srv.URL()+"/_ferry/health"))
	if h.Status != 200 || !strings.Contains(h.Body, `"status":"degraded"`) ||
		!strings.Contains(h.Body, `"services":{"sqs":"running","sns":"running","cloudwatch":"running"}`) ||
		!strings.Contains(h.Body, `"store":"vacuum held back for 6m0s by pid 42 (report, idle in transaction)"`) {
		t.Fatalf("health = %d %s", h.Status, h.Body)
	}
}
