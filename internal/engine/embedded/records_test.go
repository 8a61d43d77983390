package embedded

import (
	"context"
	"testing"
)

// Record kinds and keys are cut apart by a NUL byte in the store's keys:
// a kind that is empty or holds one, or a key that holds one, is refused.
// (The conformance suite checks what records do.)
func TestRecordNamesChecked(t *testing.T) {
	ctx := context.Background()
	e := openTest(t, Options{InMemory: true})
	for _, bad := range []struct{ kind, key string }{{"", "k"}, {"a\x00b", "k"}, {"k", "a\x00"}} {
		if err := e.PutRecord(ctx, bad.kind, bad.key, nil); err == nil {
			t.Errorf("PutRecord(%q, %q) accepted", bad.kind, bad.key)
		}
		if err := e.DeleteRecord(ctx, bad.kind, bad.key); err == nil {
			t.Errorf("DeleteRecord(%q, %q) accepted", bad.kind, bad.key)
		}
	}
	if _, err := e.Records(ctx, ""); err == nil {
		t.Error("Records of the empty kind accepted")
	}
}
