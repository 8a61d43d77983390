package embedded

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/ferrymq/ferry/internal/engine"
)

// Figures at scale: a restart with a million stored messages, receives
// behind a million-message backlog, the memory the index takes per message,
// an idle engine's heap and the long-poll wake-up latency. A million is the
// default; FERRY_BENCH_MESSAGES sets another count for quick runs.

func backlogSize() int {
	if s := os.Getenv("FERRY_BENCH_MESSAGES"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return 1_000_000
}

// fillQueue sends n messages of benchBatch's shape to queue q without
// fsync, in calls of up to 1000. Their bodies are random text, which the
// store cannot compress much, so scans read what real bodies would make
// them read.
func fillQueue(tb testing.TB, e *Engine, q string, n int) {
	tb.Helper()
	ctx := context.Background()
	one := benchBatch()[0]
	batch := make([]engine.NewMessage, 1000)
	raw := make([]byte, 192)
	for i := range batch {
		batch[i] = one
		_, _ = rand.Read(raw)
		batch[i].Body = base64.StdEncoding.EncodeToString(raw) // 256 bytes
	}
	for n > 0 {
		k := min(n, len(batch))
		if _, err := e.Send(ctx, acct, q, batch[:k]); err != nil {
			tb.Fatal(err)
		}
		n -= k
	}
}

// filledStores caches one filled store directory per message count for the
// whole run: filling a million messages takes longer than the benchmarks.
var filledStores struct {
	sync.Mutex
	dirs map[int]string
}

// filledStore returns a store directory holding queue "q" with n stored
// messages, the WAL already replayed once (as after any restart but the
// first after a crash). Callers must not change it.
func filledStore(b *testing.B, n int) string {
	b.Helper()
	filledStores.Lock()
	defer filledStores.Unlock()
	if dir, ok := filledStores.dirs[n]; ok {
		return dir
	}
	dir, err := os.MkdirTemp("", "ferry-bench-store-")
	if err != nil {
		b.Fatal(err)
	}
	e, err := Open(context.Background(), Options{Dir: dir, NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := e.CreateQueue(context.Background(), engine.Queue{Account: acct, Name: "q", Settings: settings()}); err != nil {
		b.Fatal(err)
	}
	fillQueue(b, e, "q", n)
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	e, err = Open(context.Background(), Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	if filledStores.dirs == nil {
		filledStores.dirs = make(map[int]string)
	}
	filledStores.dirs[n] = dir
	return dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range filledStores.dirs {
		_ = os.RemoveAll(dir)
	}
	os.Exit(code)
}

// heapInUse is the live Go heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkRestart: per op, Open on a store of a million messages until
// the engine answers (the indexes are rebuilt when Open returns; a Stats
// call proves it), then Close, which is not timed. The store's files are
// in the page cache after the first op. cpu-ms/op is the process's CPU
// time over the same span, the store's own goroutines included. B/msg is
// the Go heap the open engine holds per stored message: the index and the
// store's own Go structures.
func BenchmarkRestart(b *testing.B) {
	n := backlogSize()
	dir := filledStore(b, n)
	ctx := context.Background()
	var held uint64
	var cpu time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		base := heapInUse()
		cpu0 := cpuTime()
		b.StartTimer()
		e, err := Open(ctx, Options{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		st, err := e.Stats(ctx, acct, "q")
		if err != nil || st.Visible != int64(n) {
			b.Fatalf("stats %+v: %v", st, err)
		}
		b.StopTimer()
		cpu += cpuTime() - cpu0
		held = heapInUse() - base
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(held)/float64(n), "B/msg")
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
}

// cpuTime is the CPU time the process has used, user and system: on a
// shared machine a steadier figure than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkReceiveBacklog: receives of 10 (timed) on a queue that holds
// only what the run consumes, and on one behind a million-message backlog
// (the backlog is what the receives take first); the received messages are
// deleted between ops, untimed. Compare the two msgs/s.
func BenchmarkReceiveBacklog(b *testing.B) {
	for _, backlog := range []int{0, backlogSize()} {
		b.Run(fmt.Sprint("backlog=", backlog), func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			if backlog > 0 {
				if err := os.CopyFS(dir, os.DirFS(filledStore(b, backlog))); err != nil {
					b.Fatal(err)
				}
			}
			fill, err := Open(ctx, Options{Dir: dir, NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := fill.CreateQueue(ctx, engine.Queue{Account: acct, Name: "q", Settings: settings()}); err != nil {
				b.Fatal(err)
			}
			fillQueue(b, fill, "q", 10*(b.N+1))
			if err := fill.Close(); err != nil {
				b.Fatal(err)
			}
			e := openTest(b, Options{Dir: dir})
			hour := time.Hour
			handles := make([]string, 0, 10)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				got, err := e.Receive(ctx, acct, "q", engine.ReceiveRequest{Max: 10, Visibility: &hour})
				if err != nil || len(got) != 10 {
					b.Fatalf("received %d: %v", len(got), err)
				}
				b.StopTimer()
				handles = handles[:0]
				for _, m := range got {
					handles = append(handles, m.ReceiptHandle)
				}
				if _, err := e.Delete(ctx, acct, "q", handles); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(10*b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkIdleHeap: the Go heap an engine holds right after opening an
// empty on-disk store (the store's block cache and memtables are counted
// when they live on the Go heap).
func BenchmarkIdleHeap(b *testing.B) {
	ctx := context.Background()
	var held uint64
	for range b.N {
		dir := b.TempDir()
		base := heapInUse()
		e, err := Open(ctx, Options{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := e.CreateQueue(ctx, engine.Queue{Account: acct, Name: "q", Settings: settings()}); err != nil {
			b.Fatal(err)
		}
		held = heapInUse() - base
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(held)/(1<<20), "MiB")
}

// BenchmarkLongPollWake: per op, a receive already waiting on an empty
// queue is woken by a send of one message; the latency is from the send's
// call to the receive's return, and includes the send's fsync. The
// p50/p99/max metrics are that latency's distribution over the run.
func BenchmarkLongPollWake(b *testing.B) {
	for _, noSync := range []bool{false, true} {
		b.Run(fmt.Sprint("fsync=", !noSync), func(b *testing.B) {
			e := benchEngine(b, b.TempDir(), noSync)
			ctx := context.Background()
			msg := benchBatch()[:1]
			hour := time.Hour
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			for range b.N {
				b.StopTimer()
				type result struct {
					got []engine.Message
					at  time.Time
					err error
				}
				done := make(chan result, 1)
				go func() {
					got, err := e.Receive(ctx, acct, "q", engine.ReceiveRequest{Max: 10, Visibility: &hour, Wait: 20 * time.Second})
					done <- result{got, time.Now(), err}
				}()
				awaitWaiter(b, e, "q")
				b.StartTimer()
				t0 := time.Now()
				if _, err := e.Send(ctx, acct, "q", msg); err != nil {
					b.Fatal(err)
				}
				r := <-done
				b.StopTimer()
				if r.err != nil || len(r.got) != 1 {
					b.Fatalf("received %d: %v", len(r.got), r.err)
				}
				lat = append(lat, r.at.Sub(t0))
				if _, err := e.Delete(ctx, acct, "q", []string{r.got[0].ReceiptHandle}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			slices.Sort(lat)
			pct := func(p float64) float64 {
				return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds())
			}
			b.ReportMetric(pct(0.50), "p50-µs")
			b.ReportMetric(pct(0.99), "p99-µs")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
		})
	}
}

// BenchmarkReceiveDelete10Parallel: 16 callers (8 per core on 2 cores) each receive 10 and delete
// them per op; the deletes share fsyncs.
func BenchmarkReceiveDelete10Parallel(b *testing.B) {
	dir := b.TempDir()
	ctx := context.Background()
	fill := benchEngine(b, dir, true)
	fillQueue(b, fill, "q", 10*(b.N+16))
	if err := fill.Close(); err != nil {
		b.Fatal(err)
	}
	e := openTest(b, Options{Dir: dir})
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		hour := time.Hour
		handles := make([]string, 0, 10)
		for pb.Next() {
			got, err := e.Receive(ctx, acct, "q", engine.ReceiveRequest{Max: 10, Visibility: &hour})
			if err != nil || len(got) == 0 {
				b.Errorf("received %d: %v", len(got), err)
				return
			}
			handles = handles[:0]
			for _, m := range got {
				handles = append(handles, m.ReceiptHandle)
			}
			if _, err := e.Delete(ctx, acct, "q", handles); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(10*b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// The index entry's size decides the memory a large backlog takes; keep
// it in the 96-byte allocation class.
func TestMessageEntrySize(t *testing.T) {
	if s := unsafe.Sizeof(message{}); s > 96 {
		t.Fatalf("message is %d bytes, want at most 96", s)
	}
}

// BenchmarkProduceConsume10Parallel: 16 callers each send a batch of 10,
// then receive 10 (anyone's) and delete them, per op: producers and
// consumers at once, sharing fsyncs. msgs/s counts messages through
// (sent, received and deleted).
func BenchmarkProduceConsume10Parallel(b *testing.B) {
	produceConsume(b, benchEngine(b, b.TempDir(), false))
}

// BenchmarkProduceConsumeBacklog: the same on top of a backlog of 1,000
// and of FERRY_BENCH_MESSAGES (a million) stored messages, which the
// receives take first. A receive, send or delete that visited the backlog
// would show as a cpu-µs/msg growing with it; the two should be alike.
func BenchmarkProduceConsumeBacklog(b *testing.B) {
	for _, backlog := range []int{1_000, backlogSize()} {
		b.Run(fmt.Sprint("backlog=", backlog), func(b *testing.B) {
			dir := b.TempDir()
			if err := os.CopyFS(dir, os.DirFS(filledStore(b, backlog))); err != nil {
				b.Fatal(err)
			}
			produceConsume(b, openTest(b, Options{Dir: dir}))
		})
	}
}

// produceConsume runs 16 callers that each send a batch of 10 to queue
// "q", receive 10 and delete them, per op, and reports msgs/s and the
// process's CPU per message.
func produceConsume(b *testing.B, e *Engine) {
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(8)
	cpu0 := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		msgs := benchBatch()
		hour := time.Hour
		handles := make([]string, 0, 10)
		for pb.Next() {
			if _, err := e.Send(ctx, acct, "q", msgs); err != nil {
				b.Error(err)
				return
			}
			got, err := e.Receive(ctx, acct, "q", engine.ReceiveRequest{Max: 10, Visibility: &hour})
			if err != nil {
				b.Error(err)
				return
			}
			handles = handles[:0]
			for _, m := range got {
				handles = append(handles, m.ReceiptHandle)
			}
			if len(handles) > 0 {
				if _, err := e.Delete(ctx, acct, "q", handles); err != nil {
					b.Error(err)
					return
				}
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(10*b.N)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(10*b.N), "cpu-µs/msg")
}
