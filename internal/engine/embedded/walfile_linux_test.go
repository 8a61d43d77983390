//go:build linux

package embedded

import (
	"context"
	"fmt"
	"testing"

	"github.com/ferrymq/ferry/internal/engine"
)

// TestWALPresized checks that a store's fresh write-ahead logs, the one
// created with the store and the one a restart creates, are allocated at
// their full size before the first record, and that records written into
// such a log, followed by its zeros, are all recovered.
func TestWALPresized(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := openTest(t, Options{Dir: dir})
	if _, _, err := e.CreateQueue(ctx, engine.Queue{Account: acct, Name: "q", Settings: settings()}); err != nil {
		t.Fatal(err)
	}
	sent := map[string]bool{}
	for i := range 50 {
		res, err := e.Send(ctx, acct, "q", []engine.NewMessage{{Body: fmt.Sprint("m", i)}})
		if err != nil {
			t.Fatal(err)
		}
		sent[res[0].MessageID] = true
	}
	first, size := walSize(t, dir)
	if size != walPresize {
		t.Fatalf("log %s is %d bytes after 50 sends, want its preallocated %d", first, size, walPresize)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	e = openTest(t, Options{Dir: dir, StrictRecovery: true})
	defer e.Close()
	if second, size := walSize(t, dir); second == first || size != walPresize {
		t.Fatalf("after a restart the newest log is %s of %d bytes, want a new one (not %s) of %d", second, size, first, walPresize)
	}
	present := storedMessageIDs(t, e, "q")
	if len(present) != len(sent) {
		t.Fatalf("%d messages after the restart, want %d", len(present), len(sent))
	}
	for id := range sent {
		if !present[id] {
			t.Fatalf("acknowledged message %s lost", id)
		}
	}
}
