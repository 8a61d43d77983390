package embedded

import (
	"context"
	"fmt"
	"testing"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
)

func TestRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, Options{Dir: dir, Clock: clk})
	for _, r := range []struct{ kind, key, value string }{
		{"topic", "b", "2"}, {"topic", "a", "1"}, {"topic", "c", "3"}, {"topics", "x", "other kind"}, {"sub", "a", "s"},
	} {
		if err := e.PutRecord(ctx, r.kind, r.key, []byte(r.value)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.PutRecord(ctx, "topic", "b", []byte("two")); err != nil {
		t.Fatal(err)
	}
	if err := e.DeleteRecord(ctx, "topic", "c"); err != nil {
		t.Fatal(err)
	}
	if err := e.DeleteRecord(ctx, "topic", "never"); err != nil {
		t.Fatalf("deleting a missing record: %v", err)
	}
	for _, bad := range []struct{ kind, key string }{{"", "k"}, {"a\x00b", "k"}, {"k", "a\x00"}} {
		if err := e.PutRecord(ctx, bad.kind, bad.key, nil); err == nil {
			t.Errorf("PutRecord(%q, %q) accepted", bad.kind, bad.key)
		}
	}
	want := "[{a [49]} {b [116 119 111]}]"
	if got, err := e.Records(ctx, "topic"); err != nil || fmt.Sprint(got) != want {
		t.Fatalf("records = %v, %v", got, err)
	}
	e = reopen(t, e, dir, clk)
	got, err := e.Records(ctx, "topic")
	if err != nil || fmt.Sprint(got) != want {
		t.Fatalf("after reopen: %v, %v", got, err)
	}
	if got, _ := e.Records(ctx, "sub"); len(got) != 1 || string(got[0].Value) != "s" {
		t.Fatalf("sub records = %v", got)
	}
	var _ engine.RecordStore = e
}
