package embedded

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
)

// A full disk must never reach Pebble's WAL: a commit whose WAL write
// fails is fatal (pebbleLogger.Fatalf), and so is a MANIFEST write that
// fails during a flush or compaction. So, as CockroachDB does, Ferry keeps
// room on the data volume and refuses writes before it runs out:
//
//   - DiskReserve bytes are kept: half stays free, half is held in a
//     ballast file (ballastName) in the data directory.
//   - When less than the free half is left, every call that writes fails
//     fast with engine.ErrStoreFull (no new bytes enter the WAL) and the
//     ballast is deleted, which gives Pebble room to flush, compact and
//     reopen the store.
//   - When the whole reserve is free again (the ballast can be re-created
//     and the free half is still there), the ballast is re-created and
//     writes are accepted again. The gap between the two thresholds keeps
//     the guard from flapping.
//
// The hot path pays one atomic load (Engine.writable). The free space is
// read (one statfs) by the guard's goroutine: every diskCheckInterval,
// after every reserve/8 bytes Pebble has written, and at once when a write
// meets ENOSPC anyway (vfs.OnDiskFull, which also deletes the ballast and
// retries that write, the last line of defence).
const (
	// DefaultDiskReserve is Options.DiskReserve's default: a 64 MiB ballast,
	// the size of a memtable, so that its flush fits, and 64 MiB free.
	DefaultDiskReserve = 128 << 20
	diskCheckInterval  = time.Second
	ballastName        = "FERRY-BALLAST"
	// minOpenRoom is the room Pebble needs to open a store (a new WAL,
	// OPTIONS and MANIFEST files) and Ferry to write its epoch.
	minOpenRoom = 4 << 20
)

// spaceGuard watches the free space of the store's volume; see above.
type spaceGuard struct {
	fs      vfs.FS // the filesystem under Pebble's wrappers
	dir     string
	ballast string // its path
	half    int64  // the ballast's size, and the free space kept
	step    int64  // bytes written between two checks
	clock   clock.Clock
	log     *slog.Logger

	full    atomic.Bool  // writes are refused
	written atomic.Int64 // bytes written since the last check

	mu         sync.Mutex
	hasBallast bool          // guarded by mu
	avail      int64         // last seen free bytes; guarded by mu
	resumed    chan struct{} // closed when writes are accepted again; guarded by mu

	kick chan struct{}
	quit chan struct{}
	done chan struct{}
}

func newSpaceGuard(fs vfs.FS, dir string, reserve int64, clk clock.Clock, log *slog.Logger) *spaceGuard {
	half := reserve / 2
	return &spaceGuard{
		fs: fs, dir: dir, ballast: fs.PathJoin(dir, ballastName), half: half,
		step: max(half/4, 1<<20), clock: clk, log: log,
		resumed: closedChan(), kick: make(chan struct{}, 1),
		quit: make(chan struct{}), done: make(chan struct{}),
	}
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// wrap is the filesystem Pebble gets: it counts written bytes and, on
// ENOSPC, gives up the ballast and retries.
func (g *spaceGuard) wrap(fs vfs.FS) vfs.FS {
	return countingFS{FS: vfs.OnDiskFull(fs, g.onDiskFull), g: g}
}

// prepareOpen runs before pebble.Open, once the directory is locked and
// checked. It deletes the ballast, so that
// Pebble has room to open, replay and flush the WAL even on a full disk,
// and fails at once with a clear message when even that leaves too little.
// The first check after the open re-creates the ballast if there is room,
// or starts the store read-only.
func (g *spaceGuard) prepareOpen() error {
	if err := g.fs.Remove(g.ballast); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("embedded: remove ballast: %w", err)
	}
	du, err := g.fs.GetDiskUsage(g.dir) // the directory exists: openDisk made it
	if err != nil {
		return fmt.Errorf("embedded: disk usage of %s: %w", g.dir, err)
	}
	if avail := clampInt64(du.AvailBytes); avail < minOpenRoom {
		return fmt.Errorf("embedded: the data volume is full: %s free in %s, at least %s needed to open the store; free some space and start again",
			mib(avail), g.dir, mib(minOpenRoom))
	}
	return nil
}

// start checks once (so that the store starts read-only on a full disk)
// and then runs the checks in the background until stop.
func (g *spaceGuard) start() {
	g.check()
	go g.run()
}

func (g *spaceGuard) stop() {
	close(g.quit)
	<-g.done
}

func (g *spaceGuard) run() {
	defer close(g.done)
	for {
		// The volume's free space is the machine's, not broker time: the
		// wall clock under a controlled clock (clock.WallOf).
		t := clock.WallOf(g.clock).AfterFunc(diskCheckInterval, g.trigger)
		select {
		case <-g.kick:
		case <-g.quit:
			t.Stop()
			return
		}
		t.Stop()
		g.check()
	}
}

// trigger asks the guard's goroutine for a check, without waiting.
func (g *spaceGuard) trigger() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// wrote counts n bytes written by Pebble (its WAL, tables, manifest).
func (g *spaceGuard) wrote(n int) {
	if g.written.Add(int64(n)) >= g.step {
		g.written.Store(0)
		g.trigger()
	}
}

// check reads the free space and moves between accepting and refusing
// writes, with one log line at each change.
func (g *spaceGuard) check() {
	g.written.Store(0)
	du, err := g.fs.GetDiskUsage(g.dir)
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		// Keep the last state: an unknown free space is no reason to stop.
		g.log.Warn("store: cannot read the data volume's free space", "dir", g.dir, "err", err)
		return
	}
	avail := clampInt64(du.AvailBytes)
	g.avail = avail
	owed := int64(0) // room the ballast takes once it is back
	if !g.hasBallast {
		owed = g.half
	}
	if avail-owed >= g.half {
		if !g.hasBallast {
			if err := g.createBallast(); err != nil {
				g.refuseLocked(avail, fmt.Errorf("re-create ballast: %w", err))
				return
			}
		}
		if g.full.Load() {
			g.full.Store(false)
			close(g.resumed)
			g.log.Info("store: disk space is back, writes are accepted again", "dir", g.dir, "free", mib(avail))
		}
		return
	}
	g.refuseLocked(avail, nil)
}

// refuseLocked stops writes and gives up the ballast.
func (g *spaceGuard) refuseLocked(avail int64, cause error) {
	released := false
	if g.hasBallast {
		if err := g.fs.Remove(g.ballast); err != nil && !errors.Is(err, os.ErrNotExist) {
			g.log.Error("store: remove ballast", "path", g.ballast, "err", err)
		} else {
			g.hasBallast, released = false, true
		}
	}
	if g.full.Load() {
		return
	}
	g.resumed = make(chan struct{})
	g.full.Store(true)
	args := []any{"dir", g.dir, "free", mib(avail), "reserve", mib(2 * g.half), "ballast_released", released}
	if cause != nil {
		args = append(args, "err", cause)
	}
	g.log.Error("store: the data volume is nearly full, writes are refused until space is freed; reads go on", args...)
}

// onDiskFull runs when a write of Pebble's met ENOSPC, while Pebble's
// writes wait: it frees the ballast so that the write, retried once,
// succeeds. Cheap, as vfs.OnDiskFull asks.
func (g *spaceGuard) onDiskFull() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refuseLocked(0, errors.New("a store write met ENOSPC"))
}

// createBallast allocates the ballast's blocks (fallocate) or, where the
// filesystem cannot, writes them.
func (g *spaceGuard) createBallast() (err error) {
	f, err := g.fs.Create(g.ballast, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = g.fs.Remove(g.ballast)
		}
	}()
	if err := f.Preallocate(0, g.half); err != nil {
		zeros := make([]byte, 1<<20)
		for left := g.half; left > 0; left -= int64(len(zeros)) {
			if _, err := f.Write(zeros[:min(left, int64(len(zeros)))]); err != nil {
				return err
			}
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	g.hasBallast = true
	return nil
}

// resumedChan is closed once writes are accepted again (already closed
// while they are).
func (g *spaceGuard) resumedChan() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.resumed
}

func clampInt64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// countingFS tells the guard how much Pebble writes.
type countingFS struct {
	vfs.FS
	g *spaceGuard
}

func (fs countingFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.count(fs.FS.Create(name, c))
}

func (fs countingFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return fs.count(fs.FS.OpenReadWrite(name, c, opts...))
}

func (fs countingFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.count(fs.FS.ReuseForWrite(oldname, newname, c))
}

func (fs countingFS) Unwrap() vfs.FS { return fs.FS }

func (fs countingFS) count(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return countingFile{File: f, g: fs.g}, nil
}

type countingFile struct {
	vfs.File
	g *spaceGuard
}

func (f countingFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.g.wrote(n)
	return n, err
}

func (f countingFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	f.g.wrote(n)
	return n, err
}

// writable is the guard's answer on the hot path: nil, or
// engine.ErrStoreFull while the disk is nearly full.
func (e *Engine) writable() error {
	if g := e.space; g != nil && g.full.Load() {
		return engine.ErrStoreFull
	}
	return nil
}

// DiskFull reports whether the store refuses writes because its volume is
// nearly full (reads go on).
func (e *Engine) DiskFull() bool { return e.writable() != nil }

// CheckDiskSpace reads the volume's free space now rather than at the
// guard's next check, and returns once the guard has acted on it.
func (e *Engine) CheckDiskSpace() {
	if e.space != nil {
		e.space.check()
	}
}

// openSpace sets up the guard for an on-disk store, before pebble.Open:
// it returns the filesystem Pebble must use. A reserve of zero or less
// turns the guard off.
func (e *Engine) openSpace(fs vfs.FS, dir string, reserve int64) (vfs.FS, error) {
	if reserve <= 0 {
		return fs, nil
	}
	g := newSpaceGuard(fs, dir, reserve, e.clock, e.log)
	if err := g.prepareOpen(); err != nil {
		return nil, err
	}
	e.space = g
	return g.wrap(fs), nil
}

// logLimiter keeps a failing store from flooding the log: at most
// logBurst error lines per logWindow, and the count of those held back
// goes with the next line let through.
type logLimiter struct {
	clock clock.Clock

	mu         sync.Mutex
	windowEnd  time.Time
	lines      int
	suppressed int
}

const (
	logBurst  = 5
	logWindow = 10 * time.Second
)

// allow reports whether a line may be written now and how many were
// suppressed since the last one that was.
func (l *logLimiter) allow() (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	if !now.Before(l.windowEnd) {
		l.windowEnd, l.lines = now.Add(logWindow), 0
	}
	if l.lines >= logBurst {
		l.suppressed++
		return false, 0
	}
	l.lines++
	n := l.suppressed
	l.suppressed = 0
	return true, n
}
