//go:build linux

package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	dto "github.com/prometheus/client_model/go"

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

// BenchmarkSendFreshWAL: 8 callers each send one message at a time into a
// new store, whose log is fresh, with the log allocated whole (presized)
// and growing as Pebble writes it (Pebble's own KEEP_SIZE preallocation).
// What differs is the kernel's work per WAL sync: sys-µs/sync is the
// process's system CPU over the syncs.
func BenchmarkSendFreshWAL(b *testing.B) {
	for _, grows := range []bool{true, false} {
		b.Run(fmt.Sprint("presized=", !grows), func(b *testing.B) {
			ctx := context.Background()
			e := openTest(b, Options{Dir: b.TempDir(), walGrows: grows})
			if _, _, err := e.CreateQueue(ctx, engine.Queue{Account: acct, Name: "q", Settings: settings()}); err != nil {
				b.Fatal(err)
			}
			syncs0, commits0 := walSyncs(b, e), e.syncedCommits.Load()
			sys0 := sysTime()
			b.SetParallelism(4) // 8 callers on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				msgs := benchBatch()[:1]
				for pb.Next() {
					if _, err := e.Send(ctx, acct, "q", msgs); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			syncs := walSyncs(b, e) - syncs0
			if syncs == 0 {
				b.Fatal("no WAL sync")
			}
			b.ReportMetric(float64((sysTime()-sys0).Microseconds())/float64(syncs), "sys-µs/sync")
			b.ReportMetric(float64(e.syncedCommits.Load()-commits0)/float64(syncs), "commits/sync")
			b.ReportMetric(b.Elapsed().Seconds()*1e6/float64(syncs), "µs/sync")
		})
	}
}

// walSyncs is the count of WAL syncs Pebble has timed.
func walSyncs(b *testing.B, e *Engine) uint64 {
	var pm dto.Metric
	if err := e.db.Metrics().LogWriter.FsyncLatency.Write(&pm); err != nil {
		b.Fatal(err)
	}
	return pm.Histogram.GetSampleCount()
}

// sysTime is the process's system CPU so far.
func sysTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Stime.Nano())
}

// TestZeroAheadFile: the records land where a plain file would put them,
// zeros cover the blocks up to a step ahead of them (never past the
// limit), and nothing a record wrote is ever zeroed.
func TestZeroAheadFile(t *testing.T) {
	const step = walZeroStep
	cases := []struct {
		name   string
		limit  int64
		writes []int
	}{
		{"small appends", 3 * step, []int{100, 4096, 1, 30000, 512}},
		{"across a step", 3 * step, []int{step - 10, 20, 5, step}},
		{"one write of several steps", 3 * step, []int{10, 2*step + 7}},
		{"past the limit", step + step/2, []int{step, step, 100}},
		{"limit not a step", step / 3, []int{1000, step / 3, 10}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			raw, err := fs.Create("log", vfs.WriteCategoryUnspecified)
			if err != nil {
				t.Fatal(err)
			}
			f := &zeroAheadFile{File: raw, limit: tc.limit}
			var want []byte
			for i, n := range tc.writes {
				p := bytes.Repeat([]byte{byte(i + 1)}, n)
				want = append(want, p...) // Pebble's race builds mangle what was written
				if w, err := f.Write(p); err != nil || w != n {
					t.Fatalf("write %d: %d, %v", i, w, err)
				}
				if end := int64(len(want)); end < tc.limit && f.zeroed < end {
					t.Fatalf("after write %d: zeroed to %d, records to %d", i, f.zeroed, end)
				}
				if f.zeroed > tc.limit || f.zeroed > int64(len(want))+step {
					t.Fatalf("after write %d: zeroed to %d (records %d, limit %d)", i, f.zeroed, len(want), tc.limit)
				}
			}
			got := make([]byte, max(f.zeroed, int64(len(want)))+1)
			n, err := raw.ReadAt(got, 0)
			if err != nil && !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			got = got[:n]
			if int64(n) != max(f.zeroed, int64(len(want))) {
				t.Fatalf("file is %d bytes, want %d", n, max(f.zeroed, int64(len(want))))
			}
			if !bytes.Equal(got[:len(want)], want) {
				i := 0
				for got[i] == want[i] {
					i++
				}
				t.Fatalf("the records differ from offset %d of %d: %d, want %d", i, len(want), got[i], want[i])
			}
			if !allZero(got[len(want):]) {
				t.Fatal("bytes past the records are not zeros")
			}
		})
	}
}
