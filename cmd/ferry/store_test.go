package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/wal"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/embedded"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
)

// TestServeRefusesDataDirectory: a data directory Ferry must not open
// stops serve with exit code 1 and an error that says why.
func TestServeRefusesDataDirectory(t *testing.T) {
	ctx := context.Background()
	// A store in use by an engine of this process.
	inUse := t.TempDir()
	e, err := embedded.Open(ctx, embedded.Options{Dir: inUse})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	// A store without its manifest marker.
	noMarker := t.TempDir()
	if err := fillStore(t, noMarker, 1).Close(); err != nil {
		t.Fatal(err)
	}
	markers, _ := filepath.Glob(filepath.Join(noMarker, "marker.manifest.*"))
	if len(markers) != 1 {
		t.Fatalf("markers %v", markers)
	}
	if err := os.Remove(markers[0]); err != nil {
		t.Fatal(err)
	}

	// A crashed store whose log lost the end of its last record.
	cut := tornStore(t)

	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"in use", []string{"--data", inUse}, nil, fmt.Sprintf("%s is in use by another Ferry (pid %d)", inUse, os.Getpid())},
		{"no manifest", []string{"--data", noMarker}, nil, "no valid manifest (no marker.manifest.* file)"},
		{"strict recovery flag", []string{"--data", cut, "--strict-recovery"}, nil, "strict recovery refuses to start"},
		{"strict recovery variable", []string{"--data", cut}, map[string]string{"FERRY_STRICT_RECOVERY": "true"}, "strict recovery refuses to start"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Should it start after all, it stops at once.
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			out := &stopOnListen{cancel: cancel}
			args := append([]string{"serve", "--listen", "127.0.0.1:0"}, tc.args...)
			code := run(ctx, args, func(k string) string { return tc.env[k] }, out, out)
			if code != 1 || !strings.Contains(out.String(), tc.want) || strings.Contains(out.String(), "ferry listening") {
				t.Fatalf("code %d, output %q, want %q", code, out.String(), tc.want)
			}
		})
	}
}

// stopOnListen keeps serve's output and cancels its context once it
// listens.
type stopOnListen struct {
	syncBuffer
	cancel func()
}

func (s *stopOnListen) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("ferry listening")) {
		s.cancel()
	}
	return s.syncBuffer.Write(p)
}

// TestServeWarnsOfDroppedLog: without strict recovery a torn log starts,
// with a warning that names the file.
func TestServeWarnsOfDroppedLog(t *testing.T) {
	cut := tornStore(t)
	_, logs, stop := serveFromEnv(t, map[string]string{"FERRY_LISTEN": "127.0.0.1:0", "FERRY_DATA": cut})
	if code := stop(); code != 0 {
		t.Fatalf("exit code %d: %s", code, logs.String())
	}
	if !strings.Contains(logs.String(), "level=WARN msg=\"store: recovery drops the end of the write-ahead log") ||
		!strings.Contains(logs.String(), "file="+cut) {
		t.Fatalf("no warning in %q", logs.String())
	}
}

// fillStore writes n messages, one call each, into a store in dir and
// returns the engine, still open, unless closed.
func fillStore(t *testing.T, dir string, n int) *embedded.Engine {
	t.Helper()
	ctx := context.Background()
	e, err := embedded.Open(ctx, embedded.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.CreateQueue(ctx, engine.Queue{Account: "000000000000", Name: "q", Settings: enginetest.Settings()}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := e.Send(ctx, "000000000000", "q", []engine.NewMessage{{Body: fmt.Sprint("message ", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// tornStore is a copy of a store taken while it ran (as a crash leaves
// it), with the last 7 bytes of its newest log cut off.
func tornStore(t *testing.T) string {
	t.Helper()
	live := t.TempDir()
	e := fillStore(t, live, 20)
	defer e.Close()
	cut := t.TempDir()
	ents, err := os.ReadDir(live)
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	for _, ent := range ents {
		if ent.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(live, ent.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(ent.Name(), ".log") {
			logs = append(logs, ent.Name())
		}
		if err := os.WriteFile(filepath.Join(cut, ent.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(logs)
	newest := filepath.Join(cut, logs[len(logs)-1])
	if err := os.Truncate(newest, recordsEnd(t, cut)-7); err != nil {
		t.Fatal(err)
	}
	return cut
}

// recordsEnd is where the records of dir's newest log end: a log file can
// be longer (preallocated and zeroed, or recycled).
func recordsEnd(t *testing.T, dir string) int64 {
	t.Helper()
	logs, err := wal.Scan(wal.Dir{FS: vfs.Default, Dirname: dir})
	if err != nil || len(logs) == 0 {
		t.Fatalf("logs of %s: %v", dir, err)
	}
	r := logs[len(logs)-1].OpenForRead()
	defer r.Close()
	for {
		if _, off, err := r.NextRecord(); err != nil {
			return off.Physical
		}
	}
}
