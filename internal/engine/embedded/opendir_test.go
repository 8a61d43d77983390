package embedded

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/wal"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
)

// logCapture is a slog handler that keeps every record.
type logCapture struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (c *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (c *logCapture) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *logCapture) WithGroup(string) slog.Handler            { return c }

func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recs = append(c.recs, r.Clone())
	return nil
}

// walWarnings returns the attributes of every warning about a dropped
// write-ahead log tail.
func (c *logCapture) walWarnings() []map[string]slog.Value {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]slog.Value
	for _, r := range c.recs {
		if r.Level < slog.LevelWarn || !strings.Contains(r.Message, "write-ahead log") {
			continue
		}
		attrs := map[string]slog.Value{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value; return true })
		out = append(out, attrs)
	}
	return out
}

// fillStore creates queue q in e and sends n messages to it, one call
// (one log record) each, so that the log spans several blocks.
func fillStore(t *testing.T, e *Engine, n int) map[string]bool {
	t.Helper()
	mustCreate(t, e, engine.Queue{Name: "q", Settings: settings()})
	ids := map[string]bool{}
	for i := range n {
		for _, id := range mustSend(t, e, "q", engine.NewMessage{Body: fmt.Sprintf("%04d-%s", i, strings.Repeat("x", 300))}) {
			ids[id] = true
		}
	}
	return ids
}

// listing is every file and directory under dir with its size.
func listing(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			out[rel+"/"] = -1
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[rel] = fi.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameListing compares listings but for Ferry's lock file, which every
// Open rewrites.
func sameListing(t *testing.T, what string, got, want map[string]int64) {
	t.Helper()
	delete(got, lockFileName)
	delete(want, lockFileName)
	if !maps.Equal(got, want) {
		t.Fatalf("%s: files changed:\n got %v\nwant %v", what, got, want)
	}
}

func openErr(t *testing.T, opts Options) error {
	t.Helper()
	e, err := Open(context.Background(), opts)
	if err == nil {
		e.Close()
		t.Fatalf("Open(%s) succeeded", opts.Dir)
	}
	return err
}

func TestOpenRefusesStoreWithoutManifest(t *testing.T) {
	clk := clock.NewFake(time.Now())
	dir := t.TempDir()
	// Ferry's own files beside the store.
	if err := os.MkdirAll(filepath.Join(dir, "sns"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sns", "key.pem"), []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := openTest(t, Options{Dir: dir, Clock: clk})
	sent := fillStore(t, e, 300)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// The manifest and its marker, as they are now (every Open writes a
	// new manifest).
	current := func(t *testing.T) (marker, manifest string) {
		markers, _ := filepath.Glob(filepath.Join(dir, "marker.manifest.*"))
		if len(markers) != 1 {
			t.Fatalf("markers %v", markers)
		}
		// marker.manifest.<seq>.<the manifest's name>
		return markers[0], filepath.Join(dir, markers[0][strings.LastIndexByte(markers[0], '.')+1:])
	}
	cases := []struct {
		name string
		// damage returns what restores the directory and what the
		// error must say.
		damage func(t *testing.T) (restore func() error, want string)
	}{
		{"marker deleted", func(t *testing.T) (func() error, string) {
			marker, _ := current(t)
			if err := os.Remove(marker); err != nil {
				t.Fatal(err)
			}
			// A marker is empty: its name is its content.
			return func() error { return os.WriteFile(marker, nil, 0o644) }, "no marker.manifest.* file"
		}},
		{"manifest missing", func(t *testing.T) (func() error, string) {
			_, manifest := current(t)
			if err := os.Rename(manifest, manifest+".bak"); err != nil {
				t.Fatal(err)
			}
			return func() error { return os.Rename(manifest+".bak", manifest) },
				"names " + filepath.Base(manifest) + ", which is missing"
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			restore, want := tc.damage(t)
			before := listing(t, dir)
			err := openErr(t, Options{Dir: dir, Clock: clk})
			if !errors.Is(err, ErrNoManifest) {
				t.Fatalf("Open: %v, want ErrNoManifest", err)
			}
			for _, s := range []string{dir, "holds store files (0", ".sst", want, "backup", "empty directory"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			sameListing(t, "refused Open", listing(t, dir), before)

			if err := restore(); err != nil {
				t.Fatal(err)
			}
			e := openTest(t, Options{Dir: dir, Clock: clk})
			if got := storedMessageIDs(t, e, "q"); !maps.Equal(got, sent) {
				t.Fatalf("after restoring: %d of %d messages", len(got), len(sent))
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestOpenFreshDirectory: a new directory, an empty one and one with only
// Ferry's own files start an empty store.
func TestOpenFreshDirectory(t *testing.T) {
	cases := map[string]func(dir string) error{
		"new":   func(dir string) error { return os.Remove(dir) },
		"empty": func(string) error { return nil },
		"ferry's files": func(dir string) error {
			if err := os.WriteFile(filepath.Join(dir, lockFileName), nil, 0o644); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, "LOCK"), nil, 0o644); err != nil {
				return err
			}
			return os.MkdirAll(filepath.Join(dir, "sns"), 0o700)
		},
	}
	for name, prep := range cases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := prep(dir); err != nil {
				t.Fatal(err)
			}
			e := openTest(t, Options{Dir: dir})
			mustCreate(t, e, engine.Queue{Name: "q", Settings: settings()})
		})
	}
}

func TestOpenRefusesDirectoryInUse(t *testing.T) {
	dir := t.TempDir()
	e := openTest(t, Options{Dir: dir})
	mustCreate(t, e, engine.Queue{Name: "q", Settings: settings()})
	// The same directory, spelt another way, is still the same directory.
	for _, d := range []string{dir, dir + "/.", filepath.Join(dir, "sub", "..")} {
		if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		err := openErr(t, Options{Dir: d})
		if !errors.Is(err, ErrDirInUse) {
			t.Fatalf("second Open(%s): %v, want ErrDirInUse", d, err)
		}
		want := fmt.Sprintf("%s is in use by another Ferry (pid %d)", d, os.Getpid())
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// The first one is unharmed.
	ids := mustSend(t, e, "q", engine.NewMessage{Body: "still here"})
	if got := mustReceive(t, e, "q", engine.ReceiveRequest{}); len(got) != 1 || got[0].MessageID != ids[0] {
		t.Fatalf("first engine after the refused Open: %+v", got)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openTest(t, Options{Dir: dir})
	if s := mustStats(t, e, "q"); s.NotVisible != 1 {
		t.Fatalf("after reopening: %+v", s)
	}
}

// crashImage copies dir, whose store e has open and idle, as a crash
// would leave it: every acknowledged write is in the log, nothing was
// closed.
func crashImage(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range ents {
		if ent.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, ent.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, ent.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// newestWAL returns the path of dir's newest log, the offsets at which
// its records start and the end of the last one (a log can be longer:
// preallocated or recycled).
func newestWAL(t *testing.T, dir string) (path string, starts []int64, end int64) {
	t.Helper()
	logs, err := wal.Scan(wal.Dir{FS: vfs.Default, Dirname: dir})
	if err != nil || len(logs) == 0 {
		t.Fatalf("logs %v: %v", logs, err)
	}
	r := logs[len(logs)-1].OpenForRead()
	defer r.Close()
	for {
		_, off, err := r.NextRecord()
		if err != nil {
			end = off.Physical
			break
		}
		path = off.PhysicalFile
		starts = append(starts, off.Physical)
	}
	if path == "" {
		t.Fatal("newest log holds no record")
	}
	return path, starts, end
}

// TestOpenReportsDroppedLogTail damages the newest log of a crashed store
// in the ways a disk or a copy can, in both of the chunk formats Pebble
// writes: a new store's first log has no synced offsets, the logs after
// a restart do.
func TestOpenReportsDroppedLogTail(t *testing.T) {
	for _, restarted := range []bool{false, true} {
		t.Run(fmt.Sprintf("restarted=%v", restarted), func(t *testing.T) {
			testDroppedLogTail(t, restarted)
		})
	}
}

func testDroppedLogTail(t *testing.T, restarted bool) {
	clk := clock.NewFake(time.Now())
	live := t.TempDir()
	if restarted {
		e := openTest(t, Options{Dir: live, Clock: clk})
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	e := openTest(t, Options{Dir: live, Clock: clk})
	sent := fillStore(t, e, 300)
	image := crashImage(t, live)
	path, starts, size := newestWAL(t, image)
	last := starts[len(starts)-1]
	// A record that spans a block boundary: a cut there leaves its first
	// chunk whole.
	var spanning, boundary int64
	for i := 0; i+1 < len(starts) && boundary == 0; i++ {
		b := (starts[i]/walBlockSize + 1) * walBlockSize
		if starts[i+1] > b+walHeaderSync {
			spanning, boundary = starts[i], b
		}
	}
	if boundary == 0 {
		t.Fatalf("no record spans a block in %d bytes", size)
	}
	half := starts[len(starts)/2]
	mid := (half + starts[len(starts)/2+1]) / 2

	cases := []struct {
		name   string
		damage func(f *os.File) error
		// wantAt is where replay stops, wantDropped the bytes it drops
		// (0: no warning); wantCorrupt: Pebble itself refuses.
		wantAt, wantDropped int64
		wantCorrupt         bool
	}{
		{name: "undamaged"},
		{name: "cut mid-record", damage: func(f *os.File) error { return f.Truncate(mid) },
			wantAt: half, wantDropped: mid - half},
		{name: "cut at a block boundary inside a record", damage: func(f *os.File) error { return f.Truncate(boundary) },
			wantAt: spanning, wantDropped: boundary - spanning},
		{name: "cut in the last record's header", damage: func(f *os.File) error { return f.Truncate(last + 5) },
			wantAt: last, wantDropped: 5},
		{name: "last record fails its checksum", damage: func(f *os.File) error { return flipByte(f, size-10) },
			wantAt: last, wantDropped: size - last},
		// Later records prove a middle one was written: with synced
		// offsets in the chunks Pebble refuses to open, without them it
		// would go on from the damaged record, dropping the rest.
		{name: "middle record fails its checksum", damage: func(f *os.File) error { return flipByte(f, mid) },
			wantAt: half, wantDropped: size - half, wantCorrupt: restarted},
		// A cut at a record's end leaves a log like the one a crash leaves;
		// nothing in the file can tell them apart.
		{name: "cut at a record's end", damage: func(f *os.File) error { return f.Truncate(last) }},
		// Zeros after the records are preallocated space.
		{name: "zeros after the end", damage: func(f *os.File) error { return f.Truncate(size + 3*walBlockSize) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := crashImage(t, image)
			wal := filepath.Join(dir, filepath.Base(path))
			if tc.damage != nil {
				f, err := os.OpenFile(wal, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				err = tc.damage(f)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if tc.wantCorrupt {
				err := openErr(t, Options{Dir: dir, Clock: clk})
				if !pebble.IsCorruptionError(err) || !strings.Contains(err.Error(), "damaged") {
					t.Fatalf("Open: %v, want corruption", err)
				}
				return
			}
			before := listing(t, dir)
			// Strict recovery refuses a lossy log and changes nothing.
			if tc.wantDropped > 0 {
				err := openErr(t, Options{Dir: dir, Clock: clk, StrictRecovery: true})
				if !errors.Is(err, ErrLossyRecovery) {
					t.Fatalf("strict Open: %v, want ErrLossyRecovery", err)
				}
				want := fmt.Sprintf("%s ends in %d bytes of records that recovery would drop (from offset %d of", wal, tc.wantDropped, tc.wantAt)
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("strict Open: %q does not say %q", err, want)
				}
				sameListing(t, "strict Open", listing(t, dir), before)
			}
			logs := &logCapture{}
			e := openTest(t, Options{Dir: dir, Clock: clk, Logger: slog.New(logs)})
			got := storedMessageIDs(t, e, "q")
			warns := logs.walWarnings()
			if tc.wantDropped == 0 {
				if len(warns) != 0 {
					t.Fatalf("warned %v", warns)
				}
				if tc.damage == nil && !maps.Equal(got, sent) {
					t.Fatalf("%d of %d messages after a crash", len(got), len(sent))
				}
				return
			}
			if len(warns) != 1 {
				t.Fatalf("warnings %v, want one", warns)
			}
			w := warns[0]
			if w["file"].String() != wal || w["dropped_bytes"].Int64() != tc.wantDropped || w["offset"].Int64() != tc.wantAt {
				t.Fatalf("warning %v, want file %s, %d bytes dropped at %d", w, wal, tc.wantDropped, tc.wantAt)
			}
			if len(got) >= len(sent) {
				t.Fatalf("%d of %d messages: nothing was dropped", len(got), len(sent))
			}
		})
	}
}

func flipByte(f *os.File, at int64) error {
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, at); err != nil {
		return err
	}
	b[0] ^= 0x40
	_, err := f.WriteAt(b, at)
	return err
}

// TestOpenRecycledLogAfterCrash: a log written into a recycled file ends,
// after a crash, in the older log's chunks. They are not lost records.
func TestOpenRecycledLogAfterCrash(t *testing.T) {
	clk := clock.NewFake(time.Now())
	live := t.TempDir()
	e := openTest(t, Options{Dir: live, Clock: clk})
	sent := fillStore(t, e, 300)
	// Each flush moves to another log; the second reuses the file of the
	// first, which the 300 sends filled.
	for range 2 {
		if err := e.db.Flush(); err != nil {
			t.Fatal(err)
		}
		for _, id := range mustSend(t, e, "q", engine.NewMessage{Body: "after a flush"}) {
			sent[id] = true
		}
	}
	image := crashImage(t, live)
	path, starts, end := newestWAL(t, image)
	// A fresh log is preallocated, zeros after its records; a recycled
	// one holds the older log's chunks there.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if tail := b[end:min(end+walBlockSize, int64(len(b)))]; len(starts) > 2 || allZero(tail) {
		t.Fatalf("newest log %s: %d records in %d bytes, then %d bytes of zeros: not a recycled file", path, len(starts), end, len(tail))
	}
	logs := &logCapture{}
	e2 := openTest(t, Options{Dir: image, Clock: clk, Logger: slog.New(logs)})
	if got := storedMessageIDs(t, e2, "q"); !maps.Equal(got, sent) {
		t.Fatalf("%d of %d messages", len(got), len(sent))
	}
	if w := logs.walWarnings(); len(w) != 0 {
		t.Fatalf("warned %v", w)
	}
}

// TestCleanCloseNeedsNoLog: Close writes everything into tables, so a
// cleanly stopped store does not depend on its log: cutting the newest
// log in half (what lost half the messages of a stopped store) loses
// nothing and warns of nothing.
func TestCleanCloseNeedsNoLog(t *testing.T) {
	clk := clock.NewFake(time.Now())
	dir := t.TempDir()
	e := openTest(t, Options{Dir: dir, Clock: clk})
	sent := fillStore(t, e, 300)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("logs %v: %v", logs, err)
	}
	slices.Sort(logs)
	newest := logs[len(logs)-1]
	fi, err := os.Stat(newest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(newest, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	capture := &logCapture{}
	e = openTest(t, Options{Dir: dir, Clock: clk, Logger: slog.New(capture)})
	if got := storedMessageIDs(t, e, "q"); !maps.Equal(got, sent) {
		t.Fatalf("%d of %d messages after cutting %s in half", len(got), len(sent), newest)
	}
	if w := capture.walWarnings(); len(w) != 0 {
		t.Fatalf("warned %v", w)
	}
}
