package console

import (
	"bufio"
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/testwait"
)

// TestEventsPushedOnChange: an action announced through Changes reaches
// an open event stream at once; the periodic check, set here to an hour,
// plays no part.
func TestEventsPushedOnChange(t *testing.T) {
	changes := NewChanges()
	b := newFakeBackend()
	c := New(Options{Backend: b, Account: testAccount, Region: "us-east-1", Changes: changes, EventCheck: time.Hour})
	srv := httptest.NewServer(c)
	defer srv.Close()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	get := func(path string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
		resp, err := hc.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %v %v", path, resp, err)
		}
		return resp
	}
	get("/console/api/session").Body.Close()
	resp := get("/console/api/events")
	defer resp.Body.Close()
	events := bufio.NewScanner(resp.Body)
	events.Buffer(make([]byte, 1<<16), 1<<20)
	// next returns the data of the next overview event.
	next := func() string {
		t.Helper()
		overview := false
		for events.Scan() {
			line := events.Text()
			switch {
			case line == "event: overview":
				overview = true
			case overview && strings.HasPrefix(line, "data: "):
				return line
			}
		}
		t.Fatalf("the stream ended: %v", events.Err())
		return ""
	}
	if first := next(); !strings.Contains(first, `"visible":2`) {
		t.Fatalf("first overview: %s", first)
	}
	b.visible.Store(7)
	testwait.Eventually(t, "the stream waiting for a change", changes.armed.Load)
	changes.Changed()
	if data := next(); !strings.Contains(data, `"visible":7`) {
		t.Fatalf("overview after the change: %s", data)
	}
}

// TestChangesIdle: with no stream waiting, Changed does nothing but read
// a flag; a wait is woken by the next Changed only.
func TestChangesIdle(t *testing.T) {
	c := NewChanges()
	c.Changed() // nobody waits: nothing to close
	ch := c.wait()
	select {
	case <-ch:
		t.Fatal("a wait woken by a touch before it")
	default:
	}
	c.Changed()
	select {
	case <-ch:
	default:
		t.Fatal("the touch did not wake the wait")
	}
	if c.armed.Load() {
		t.Error("still armed after the wake")
	}
}
