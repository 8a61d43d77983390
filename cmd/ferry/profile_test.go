package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCPUProfile(t *testing.T) {
	stop, err := cpuProfile("")
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatalf("no profile: %v", err)
	}

	path := filepath.Join(t.TempDir(), "cpu.prof")
	stop, err = cpuProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("profile at %s: %v, %v", path, fi, err)
	}

	if _, err := cpuProfile(filepath.Join(t.TempDir(), "missing", "cpu.prof")); err == nil {
		t.Fatal("a profile in a missing directory started")
	}
}
