package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/testwait"
)

// quotaFS is a volume of a set capacity over an in-memory filesystem: a
// write that does not fit fails whole with ENOSPC, as on a full disk, and
// GetDiskUsage reports what is left. Overwrites count as new bytes, which
// only makes it fuller than a real disk.
type quotaFS struct {
	vfs.FS
	mu       sync.Mutex
	capacity int64
	used     int64
	sizes    map[string]int64
	enospc   int // writes refused
}

func newQuotaFS(capacity int64) *quotaFS {
	return &quotaFS{FS: vfs.NewMem(), capacity: capacity, sizes: map[string]int64{}}
}

// setFree makes n bytes free.
func (q *quotaFS) setFree(n int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.capacity = q.used + n
}

func (q *quotaFS) free() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.capacity - q.used
}

func (q *quotaFS) take(name string, n int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.used+n > q.capacity {
		q.enospc++
		return syscall.ENOSPC
	}
	q.used += n
	q.sizes[name] += n
	return nil
}

func (q *quotaFS) forget(name string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.used -= q.sizes[name]
	delete(q.sizes, name)
}

func (q *quotaFS) GetDiskUsage(string) (vfs.DiskUsage, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	avail := uint64(max(q.capacity-q.used, 0))
	return vfs.DiskUsage{AvailBytes: avail, TotalBytes: uint64(q.capacity), UsedBytes: uint64(q.used)}, nil
}

func (q *quotaFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	q.forget(name)
	f, err := q.FS.Create(name, c)
	if err != nil {
		return nil, err
	}
	return &quotaFile{File: f, fs: q, name: name}, nil
}

func (q *quotaFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := q.FS.OpenReadWrite(name, c, opts...)
	if err != nil {
		return nil, err
	}
	return &quotaFile{File: f, fs: q, name: name}, nil
}

func (q *quotaFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := q.FS.ReuseForWrite(oldname, newname, c)
	if err != nil {
		return nil, err
	}
	q.rename(oldname, newname)
	return &quotaFile{File: f, fs: q, name: newname}, nil
}

func (q *quotaFS) Remove(name string) error {
	if err := q.FS.Remove(name); err != nil {
		return err
	}
	q.forget(name)
	return nil
}

func (q *quotaFS) Rename(oldname, newname string) error {
	if err := q.FS.Rename(oldname, newname); err != nil {
		return err
	}
	q.rename(oldname, newname)
	return nil
}

func (q *quotaFS) rename(oldname, newname string) {
	q.forget(newname)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sizes[newname] = q.sizes[oldname]
	delete(q.sizes, oldname)
}

func (q *quotaFS) Unwrap() vfs.FS { return q.FS }

type quotaFile struct {
	vfs.File
	fs   *quotaFS
	name string
}

func (f *quotaFile) Write(p []byte) (int, error) {
	if err := f.fs.take(f.name, int64(len(p))); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *quotaFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.take(f.name, int64(len(p))); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *quotaFile) Preallocate(off, n int64) error { return f.fs.take(f.name, n) }

const (
	testReserve = 8 << 20 // a 4 MiB ballast and 4 MiB free
	testDir     = "data"
)

// logBuffer collects log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) count(s string) int { return strings.Count(l.String(), s) }

func openQuota(t *testing.T, fs *quotaFS, clk clock.Clock, logs *logBuffer) (*Engine, error) {
	t.Helper()
	return Open(context.Background(), Options{Dir: testDir, FS: fs, DiskReserve: testReserve, Clock: clk,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
}

func sendNumbered(t *testing.T, e *Engine, queue string, from, n int) error {
	t.Helper()
	msgs := make([]engine.NewMessage, n)
	for i := range msgs {
		msgs[i] = engine.NewMessage{Body: fmt.Sprintf("m%05d", from+i)}
	}
	_, err := e.Send(context.Background(), "acct", queue, msgs)
	return err
}

// storedBodies reads every message of queue (a long visibility, so each
// once).
func storedBodies(t *testing.T, e *Engine, queue string) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	hour := time.Hour
	for range 1000 {
		ms, err := e.Receive(context.Background(), "acct", queue, engine.ReceiveRequest{Max: 10, Visibility: &hour})
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		if len(ms) == 0 {
			return got
		}
		for _, m := range ms {
			got[m.Body] = true
		}
	}
	t.Fatal("receive never ran dry")
	return nil
}

// TestDiskFull fills the volume under a running engine: every write is
// refused with ErrStoreFull and writes nothing, reads and receives go on,
// the ballast makes room, and once space is freed writes are accepted
// again by themselves; nothing acknowledged is lost across a reopen.
func TestDiskFull(t *testing.T) {
	fs := newQuotaFS(256 << 20)
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	logs := &logBuffer{}
	e, err := openQuota(t, fs, clk, logs)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ballast := fs.PathJoin(testDir, ballastName)
	if _, err := fs.Stat(ballast); err != nil {
		t.Fatalf("no ballast after open: %v", err)
	}
	for _, name := range []string{"q", "dlq"} {
		if _, _, err := e.CreateQueue(ctx, engine.Queue{Account: "acct", Name: name, ARN: "arn:" + name,
			Settings: engine.QueueSettings{VisibilityTimeout: 30 * time.Second}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := sendNumbered(t, e, "q", 0, 100); err != nil {
		t.Fatal(err)
	}
	hour := time.Hour
	ms, err := e.Receive(ctx, "acct", "q", engine.ReceiveRequest{Max: 2, Visibility: &hour})
	if err != nil || len(ms) != 2 {
		t.Fatalf("receive: %d, %v", len(ms), err)
	}
	if errs, err := e.Delete(ctx, "acct", "q", []string{ms[0].ReceiptHandle}); err != nil || errs[0] != nil {
		t.Fatalf("delete: %v %v", errs, err)
	}
	if err := e.PutRecord(ctx, "kind", "key", []byte("v")); err != nil {
		t.Fatal(err)
	}

	// Fill: 1 MiB free, under the 4 MiB kept free.
	fs.setFree(1 << 20)
	e.CheckDiskSpace()
	if !e.DiskFull() {
		t.Fatal("not full with 1 MiB free")
	}
	if _, err := fs.Stat(ballast); err == nil {
		t.Fatal("the ballast was kept on a full disk")
	}
	// The ballast's room does not count as free: still full.
	e.CheckDiskSpace()
	if !e.DiskFull() {
		t.Fatal("the released ballast's room made the store writable")
	}
	before := fs.free()

	writes := []struct {
		name string
		call func() error
	}{
		{"Send", func() error { return sendNumbered(t, e, "q", 1000, 1) }},
		{"SendMany", func() error {
			_, err := e.SendMany(ctx, []engine.QueueSend{{Account: "acct", Name: "q", Msgs: []engine.NewMessage{{Body: "x"}}}})
			return err
		}},
		{"Delete", func() error { _, err := e.Delete(ctx, "acct", "q", []string{ms[1].ReceiptHandle}); return err }},
		{"ChangeVisibility", func() error {
			_, err := e.ChangeVisibility(ctx, "acct", "q", []engine.VisibilityChange{{ReceiptHandle: ms[1].ReceiptHandle}})
			return err
		}},
		{"Purge", func() error { return e.Purge(ctx, "acct", "q") }},
		{"CreateQueue", func() error {
			_, _, err := e.CreateQueue(ctx, engine.Queue{Account: "acct", Name: "new"})
			return err
		}},
		{"UpdateQueue", func() error {
			return e.UpdateQueue(ctx, "acct", "q", func(q *engine.Queue) error { q.Tags = map[string]string{"a": "b"}; return nil })
		}},
		{"DeleteQueue", func() error { return e.DeleteQueue(ctx, "acct", "q") }},
		{"StartMoveTask", func() error {
			_, err := e.StartMoveTask(ctx, engine.MoveTask{SourceAccount: "acct", SourceName: "dlq", SourceARN: "arn:dlq"})
			return err
		}},
		{"CancelMoveTask", func() error { _, err := e.CancelMoveTask(ctx, "acct", "dlq", "id"); return err }},
		{"PutRecord", func() error { return e.PutRecord(ctx, "kind", "key2", []byte("v")) }},
		{"DeleteRecord", func() error { return e.DeleteRecord(ctx, "kind", "key") }},
		{"PutMetricPoints", func() error {
			return e.PutMetricPoints(ctx, []engine.MetricPoint{{Namespace: "AWS/SQS", Metric: "m", Minute: 1, Count: 1}})
		}},
	}
	for _, w := range writes {
		if err := w.call(); !errors.Is(err, engine.ErrStoreFull) {
			t.Errorf("%s on a full disk: %v, want ErrStoreFull", w.name, err)
		}
	}

	// Reads go on, and so do receives, without writing their bookkeeping.
	if _, err := e.GetQueue(ctx, "acct", "q"); err != nil {
		t.Errorf("GetQueue: %v", err)
	}
	if qs, err := e.ListQueues(ctx, "acct", ""); err != nil || len(qs) != 2 {
		t.Errorf("ListQueues: %d, %v", len(qs), err)
	}
	if recs, err := e.Records(ctx, "kind"); err != nil || len(recs) != 1 {
		t.Errorf("Records: %v, %v", recs, err)
	}
	if st, err := e.Stats(ctx, "acct", "q"); err != nil || st.Visible != 98 || st.NotVisible != 1 {
		t.Errorf("Stats: %+v, %v", st, err)
	}
	states := stateRecords(t, e, "q")
	got, err := e.Receive(ctx, "acct", "q", engine.ReceiveRequest{Max: 10, Visibility: &hour})
	if err != nil || len(got) != 10 {
		t.Fatalf("receive on a full disk: %d, %v", len(got), err)
	}
	if n := stateRecords(t, e, "q"); n != states {
		t.Errorf("a receive on a full disk wrote %d state records", n-states)
	}
	if after := fs.free(); after != before {
		t.Errorf("%d bytes written while full", before-after)
	}
	if n := logs.count("writes are refused"); n != 1 {
		t.Errorf("%d lines about the full disk, want 1:\n%s", n, logs)
	}

	// Free space: the next check, here at the guard's tick on the clock,
	// brings the ballast back and accepts writes; its log line is the last
	// thing it does. (Each look moves the clock again: the guard may be
	// re-arming its timer after a check of its own when the clock first
	// moves.)
	fs.setFree(64 << 20)
	testwait.Eventually(t, "writes accepted once space was freed", func() bool {
		clk.Advance(diskCheckInterval)
		return logs.count("writes are accepted again") > 0
	})
	if e.DiskFull() {
		t.Fatal("still full after the check that accepted writes again")
	}
	if _, err := fs.Stat(ballast); err != nil {
		t.Fatalf("no ballast after recovery: %v", err)
	}
	if err := sendNumbered(t, e, "q", 100, 5); err != nil {
		t.Fatalf("send after recovery: %v", err)
	}
	if n := logs.count("writes are accepted again"); n != 1 {
		t.Errorf("%d lines about the recovery, want 1:\n%s", n, logs)
	}

	// Nothing acknowledged is lost: 105 sent, 1 deleted.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = openQuota(t, fs, clk, logs)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	clk.Advance(2 * time.Hour) // the one in flight becomes visible
	bodies := storedBodies(t, e, "q")
	if len(bodies) != 104 {
		t.Fatalf("%d messages after reopen, want 104", len(bodies))
	}
	for i := 1; i < 105; i++ {
		if !bodies[fmt.Sprintf("m%05d", i)] {
			t.Errorf("message %d lost", i)
		}
	}
}

// stateRecords counts the receive bookkeeping records of queue's messages.
func stateRecords(t *testing.T, e *Engine, queue string) int {
	t.Helper()
	q, err := e.lookup("acct", queue)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := queueMsgSpan(q.id)
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		if k := it.Key(); len(k) == len(msgKey{}) && k[len(k)-1] == kindState {
			n++
		}
	}
	return n
}

// TestDiskFullENOSPC fills the disk between two checks: the WAL write that
// meets ENOSPC gives up the ballast and is retried, so the send is
// acknowledged (and durable) instead of ending the process, and the store
// refuses writes from then on.
func TestDiskFullENOSPC(t *testing.T) {
	fs := newQuotaFS(256 << 20)
	logs := &logBuffer{}
	e, err := openQuota(t, fs, clock.NewFake(time.Now()), logs)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := e.CreateQueue(ctx, engine.Queue{Account: "acct", Name: "q"}); err != nil {
		t.Fatal(err)
	}
	fs.setFree(100)
	if err := sendNumbered(t, e, "q", 0, 10); err != nil {
		t.Fatalf("send that met ENOSPC: %v", err)
	}
	if fs.enospc == 0 {
		t.Fatal("the send never met ENOSPC")
	}
	if !e.DiskFull() {
		t.Fatal("writable after ENOSPC")
	}
	if err := sendNumbered(t, e, "q", 10, 1); !errors.Is(err, engine.ErrStoreFull) {
		t.Fatalf("send after ENOSPC: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	fs.setFree(64 << 20)
	e, err = openQuota(t, fs, clock.NewFake(time.Now()), logs)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if n := len(storedBodies(t, e, "q")); n != 10 {
		t.Fatalf("%d messages after reopen, want the 10 acknowledged", n)
	}
}

// TestDiskFullRestart starts on a full disk: with the ballast there Ferry
// opens read-only (reads and receives work, writes are refused) and
// recovers once space is freed; with not even that room it fails at once
// with a clear error.
func TestDiskFullRestart(t *testing.T) {
	fs := newQuotaFS(256 << 20)
	logs := &logBuffer{}
	clk := clock.NewFake(time.Now())
	e, err := openQuota(t, fs, clk, logs)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := e.CreateQueue(ctx, engine.Queue{Account: "acct", Name: "q"}); err != nil {
		t.Fatal(err)
	}
	if err := sendNumbered(t, e, "q", 0, 20); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	fs.setFree(0) // the ballast's 4 MiB are all Pebble can have
	e, err = openQuota(t, fs, clk, logs)
	if err != nil {
		t.Fatalf("open on a full disk with its ballast: %v", err)
	}
	if !e.DiskFull() {
		t.Fatal("writable on a full disk")
	}
	if err := sendNumbered(t, e, "q", 20, 1); !errors.Is(err, engine.ErrStoreFull) {
		t.Fatalf("send: %v", err)
	}
	if n := len(storedBodies(t, e, "q")); n != 20 {
		t.Fatalf("read-only store hands out %d messages, want 20", n)
	}
	fs.setFree(64 << 20)
	e.CheckDiskSpace()
	if err := sendNumbered(t, e, "q", 20, 1); err != nil {
		t.Fatalf("send after space was freed: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	// No ballast (another program took its room) and 1 MiB free.
	if err := fs.Remove(fs.PathJoin(testDir, ballastName)); err != nil {
		t.Fatal(err)
	}
	fs.setFree(1 << 20)
	lines := strings.Count(logs.String(), "\n")
	_, err = openQuota(t, fs, clk, logs)
	if err == nil || !strings.Contains(err.Error(), "data volume is full") {
		t.Fatalf("open with 1 MiB free: %v", err)
	}
	if n := strings.Count(logs.String(), "\n") - lines; n != 0 {
		t.Errorf("a refused open logged %d lines", n)
	}
}

// TestStoreErrorsRateLimited checks that a store error repeated in a loop
// (Pebble retries a failed flush at once) writes a few lines per window,
// and the next window says how many were held back.
func TestStoreErrorsRateLimited(t *testing.T) {
	logs := &logBuffer{}
	clk := clock.NewFake(time.Now())
	p := newPebbleLogger(slog.New(slog.NewTextHandler(logs, nil)), clk)
	for range 1000 {
		p.Errorf("background error: %s", "no space left on device")
	}
	if n := logs.count("background error"); n != logBurst {
		t.Fatalf("%d lines for 1000 errors, want %d", n, logBurst)
	}
	clk.Advance(logWindow)
	p.Errorf("background error: %s", "no space left on device")
	if !strings.Contains(logs.String(), fmt.Sprintf("suppressed_similar=%d", 1000-logBurst)) {
		t.Fatalf("no count of suppressed lines:\n%s", logs)
	}
}

// BenchmarkDiskFullRecovery measures, on the real clock, how long after
// space is freed the first send is accepted again, for a client that
// retries every millisecond: the wait for the guard's next check (at most
// diskCheckInterval, half of it on average) and the ballast's re-creation.
func BenchmarkDiskFullRecovery(b *testing.B) {
	fs := newQuotaFS(1 << 30)
	e, err := Open(context.Background(), Options{Dir: testDir, FS: fs, DiskReserve: testReserve})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	if _, _, err := e.CreateQueue(ctx, engine.Queue{Account: "acct", Name: "q"}); err != nil {
		b.Fatal(err)
	}
	msg := []engine.NewMessage{{Body: "x"}}
	var total time.Duration
	for b.Loop() {
		fs.setFree(1 << 20)
		e.CheckDiskSpace()
		// Space comes back at a moment unrelated to the guard's ticks.
		time.Sleep(rand.N(diskCheckInterval))
		fs.setFree(1 << 30)
		began := time.Now()
		for {
			_, err := e.Send(ctx, "acct", "q", msg)
			if err == nil {
				break
			}
			if !errors.Is(err, engine.ErrStoreFull) {
				b.Fatal(err)
			}
			time.Sleep(time.Millisecond)
		}
		total += time.Since(began)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-first-write")
}
