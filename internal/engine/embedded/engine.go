// Package embedded is the default queue engine: memory decides, Pebble
// remembers. Each queue keeps an in-memory index (ready list, timer heap,
// age order, seq map) that answers every call; every change is written to
// Pebble as one batch per call, and startup rebuilds the indexes from it.
// An in-memory store keeps its message records in a Go table instead
// (bodies.go).
// FIFO queues add groups, deduplication and receive attempts (fifo.go).
//
// Lock order, outermost first:
//
//	Engine.closeMu (read) → Engine.adminMu → queue.mu → task.mu → Engine.mu, Engine.taskMu
//
// and queue.bodies.mu (bodies.go), taken last, for the record it reads or
// writes only.
//
// closeMu is read-held by every call while it touches the store (never while
// a receive waits) and write-held by Close. adminMu serialises queue create
// and delete. queue.mu guards one queue's index and description; batches
// whose order matters are entered into Pebble's commit pipeline under it,
// and the fsync is awaited after it is released, so concurrent calls share
// WAL syncs. No call ever holds two queue locks: a dead-letter move or a
// move task takes messages out of one queue under its lock, lets go, and
// puts them into the other under that one's lock (see redrive.go and
// movetask.go). task.mu guards one move task's state and orders the writes
// of its record. Engine.mu guards the name and ARN maps, Engine.taskMu the
// active task counts; neither is held while taking another lock. A call on
// one queue takes closeMu, adminMu and queue.mu through withQueue (op.go).
package embedded

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/handle"
)

// Options configure Open.
type Options struct {
	// Dir is the store's directory; unused when InMemory.
	Dir string
	// InMemory keeps the store in memory (tests).
	InMemory bool
	Clock    clock.Clock
	Logger   *slog.Logger
	// NoSync acknowledges writes before they reach the disk. By default
	// every acknowledged write has been fsynced.
	NoSync bool
	// DiskReserve is the room kept free on the store's volume (see
	// diskspace.go): below it writes fail with engine.ErrStoreFull until
	// space is freed. Zero means DefaultDiskReserve; negative turns the
	// guard off.
	DiskReserve int64
	// FS is the filesystem under Dir; nil is the operating system's.
	FS vfs.FS
	// StrictRecovery refuses to open a store whose newest write-ahead log
	// ends in records recovery would drop (a torn or damaged tail),
	// instead of logging the loss and going on.
	StrictRecovery bool
	// HoldMoveTasks keeps the move tasks found RUNNING from moving until
	// the first OnMovedByTask, so that its hook is told of every move; by
	// default they resume at once.
	HoldMoveTasks bool
	// Waits turns SQS's 60-second waits off; the zero value keeps them.
	Waits engine.Waits
	// Gather is how long a long poll woken by an arrival waits for the
	// next one before it answers (see gatherMore); zero answers at once.
	// ferry serve uses DefaultGather.
	Gather time.Duration

	// walGrows (tests) leaves a fresh write-ahead log to grow as Pebble
	// writes it, instead of allocating it whole (walfile_linux.go).
	walGrows bool
}

// DefaultGather keeps the wake-up of a lone message well under a
// millisecond while a steady flow fills receives (see gatherMore).
const DefaultGather = 500 * time.Microsecond

// gatherWindows bounds a whole gather, in windows: the first message of an
// answer waits at most that long for the others.
const gatherWindows = 4

// The store's memory: memTableSize is room for large message batches
// without a flush each; blockCacheSize holds the blocks receives read
// (the bodies at a backlog's head and the index blocks that find them),
// on top of the memtables Pebble charges to the same cache.
const (
	memTableSize   = 64 << 20
	blockCacheSize = 32 << 20
)

// Ids (queue ids, message seqs, receive generations) are epoch<<epochShift
// plus a counter, the epoch being bumped durably at every open: ids are
// never reused across restarts without writing a counter per operation.
const (
	epochShift = 40
	maxEpoch   = 1<<(64-epochShift) - 1
)

// Engine is the embedded Backend.
type Engine struct {
	db     *pebble.DB
	clock  clock.Clock
	log    *slog.Logger
	sync   bool
	waits  engine.Waits
	gather time.Duration // Options.Gather
	signer *handle.Signer
	// secretMu serialises the first creation of a secret (cluster.go).
	secretMu sync.Mutex
	// recordMu serialises the writes of records, so that a conditional
	// write's check and write are one step (records.go).
	recordMu sync.Mutex
	// seqs are the SNS FIFO topics' sequences (sequence.go).
	seqs sequences
	// firstID is the first id of this run's epoch.
	firstID uint64

	closeMu sync.RWMutex
	closed  bool

	adminMu     sync.Mutex
	nextQueueID uint64              // guarded by adminMu
	deleted     map[qname]time.Time // guarded by adminMu

	mu     sync.RWMutex
	queues map[qname]*queue
	arns   map[string]*queue // by Queue.ARN, for move tasks

	taskMu sync.Mutex
	// active counts the RUNNING and CANCELLING tasks of each account.
	active map[string]int // guarded by taskMu
	// maxActive is engine.MaxActiveMoveTasks; tests lower it.
	maxActive int
	stopping  bool          // guarded by taskMu; set once Close begins
	quit      chan struct{} // closed when Close begins: runners return
	runners   sync.WaitGroup

	// onMoved is the OnMovedByTask hook, read by runners at every step.
	onMoved atomic.Pointer[func(account, queue string, m *engine.NewMessage)]
	// held are the tasks Open found RUNNING until resumeTasks starts them;
	// guarded by taskMu.
	held []*task

	// beforeSendCommit, when set (tests only), runs between a send's seq
	// allocation and its commit.
	beforeSendCommit func()
	// beforeDeleteSync, when set (tests only), runs between a delete's
	// entry into the commit pipeline and its wait for the sync.
	beforeDeleteSync func()
	// beforeClose, when set (tests only), runs in the first Close once
	// the move tasks have stopped and no call is in the store, before the
	// queues and the store close.
	beforeClose func()
	// memory: the store is in memory, without a WAL (Options.InMemory).
	memory bool
	// space refuses writes while the volume is nearly full; nil in memory
	// or with the guard off.
	space *spaceGuard
	// dir holds the data directory's locks (nil in memory).
	dir *openedDir
	// syncedCommits counts the commits that waited for a WAL sync: over
	// the syncs Pebble made (ferry_store_wal_syncs_total) it is how many
	// requests each fsync covered.
	syncedCommits atomic.Uint64
	// heldBytes is the size of the records queues hold (held.go).
	heldBytes atomic.Int64
}

type qname struct{ account, name string }

var _ engine.Store = (*Engine)(nil)

// Open opens (or creates) the store and rebuilds every queue's index.
func Open(ctx context.Context, opts Options) (*Engine, error) {
	e := &Engine{
		clock:     opts.Clock,
		log:       opts.Logger,
		sync:      !opts.NoSync,
		waits:     opts.Waits,
		gather:    max(opts.Gather, 0),
		deleted:   make(map[qname]time.Time),
		queues:    make(map[qname]*queue),
		arns:      make(map[string]*queue),
		active:    make(map[string]int),
		maxActive: engine.MaxActiveMoveTasks,
		quit:      make(chan struct{}),
	}
	if e.clock == nil {
		e.clock = clock.Real{}
	}
	var err error
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	po := &pebble.Options{
		Logger:             newPebbleLogger(e.log, e.clock),
		FormatMajorVersion: pebble.FormatNewest,
		MemTableSize:       memTableSize,
		// Pebble charges its memtables (up to two of them, and large
		// batches) to the block cache: with its default 8 MiB, two 64 MiB
		// memtables left no room for a single block, and every body a
		// receive read cost a file read and a decompression, the index
		// blocks' included.
		CacheSize: 2*memTableSize + blockCacheSize,
		// Named, though it is Pebble's default, because a store records
		// its merger and must be opened with the same one: message
		// histories are appended to by merges (history.go).
		Merger: pebble.DefaultMerger,
	}
	// Blocks stay at Pebble's 4 KiB: a receive or a move task reads each
	// message with a point lookup, which decompresses a whole block when
	// it misses the cache. 32 KiB blocks made a start with 1M messages a
	// quarter faster (1.0 s against 1.4 s) but move tasks 20% slower.
	dir := opts.Dir
	if opts.InMemory {
		// Nothing in memory survives a stop, so a write-ahead log and
		// waits for its syncs would buy nothing: each commit would still
		// copy its batch into the log and hand it to Pebble's flusher.
		po.FS = vfs.NewMem()
		po.DisableWAL = true
		e.memory, e.sync = true, false
		dir = ""
	} else if dir == "" {
		return nil, errors.New("embedded: Options.Dir is required unless InMemory")
	}
	var db *pebble.DB
	if e.memory {
		db, err = pebble.Open(dir, po)
	} else {
		db, err = e.openDisk(opts, po)
	}
	if err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	e.db = db
	if err := e.boot(ctx); err != nil {
		e.closeQueues()
		_ = db.Close()
		_ = e.dir.release()
		return nil, err
	}
	if e.space != nil {
		e.space.start()
	}
	e.held = e.loadedRunning()
	if !opts.HoldMoveTasks {
		e.resumeTasks()
	}
	return e, nil
}

// boot loads or creates the MAC key, starts a new epoch and rebuilds the
// indexes.
func (e *Engine) boot(ctx context.Context) error {
	b := e.db.NewBatch()
	defer b.Close()
	key, err := e.get(keyMAC)
	if err != nil {
		return err
	}
	if key == nil {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return fmt.Errorf("embedded: make handle key: %w", err)
		}
		if err := b.Set(keyMAC, key, nil); err != nil {
			return fmt.Errorf("embedded: store handle key: %w", err)
		}
	} else if len(key) < 16 {
		return fmt.Errorf("embedded: handle key: %w", errCorrupt)
	}
	e.signer = handle.NewSigner(key)

	var epoch uint64
	v, err := e.get(keyEpoch)
	if err != nil {
		return err
	}
	if v != nil {
		if len(v) != 8 {
			return fmt.Errorf("embedded: epoch: %w", errCorrupt)
		}
		epoch = binary.BigEndian.Uint64(v)
	}
	epoch++
	if epoch > maxEpoch {
		return errors.New("embedded: id space exhausted")
	}
	if err := b.Set(keyEpoch, binary.BigEndian.AppendUint64(nil, epoch), nil); err != nil {
		return fmt.Errorf("embedded: store epoch: %w", err)
	}
	// The epoch must be durable before any id of it is handed out (even
	// with NoSync); in memory nothing is, and there is no WAL to sync.
	wo := pebble.Sync
	if e.memory {
		wo = pebble.NoSync
	}
	if err := b.Commit(wo); err != nil {
		return fmt.Errorf("embedded: store epoch: %w", err)
	}
	e.firstID = epoch<<epochShift + 1
	e.nextQueueID = e.firstID
	return e.load(ctx)
}

func (e *Engine) get(key []byte) ([]byte, error) {
	v, closer, err := e.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("embedded: read %x: %w", key, err)
	}
	defer closer.Close()
	return slices.Clone(v), nil
}

// Close stops the move task runners (each finishes the batch it is
// writing; a RUNNING task resumes at the next Open), wakes every waiting
// receive (they return empty), stops the timers, flushes and closes the
// store. Calls
// made after Close fail with engine.ErrClosed.
func (e *Engine) Close() error {
	e.taskMu.Lock()
	if !e.stopping {
		e.stopping = true
		close(e.quit)
	}
	e.taskMu.Unlock()
	// Before closeMu: a runner finishing its batch needs to enter.
	e.runners.Wait()

	e.closeMu.Lock()
	defer e.closeMu.Unlock()
	if e.closed {
		return nil
	}
	if e.beforeClose != nil {
		e.beforeClose()
	}
	e.closed = true
	e.closeQueues()
	if e.space != nil {
		e.space.stop()
	}
	// Written out now, the memtable need not be replayed from the WAL at
	// the next Open: a cleanly stopped store does not depend on its log,
	// whose tail recovery would forgive a cut or a bad copy. A flush costs
	// a few milliseconds and makes the next Open no slower.
	if err := e.db.Flush(); err != nil {
		e.log.Error("flush store on close", "err", err)
	}
	if err := e.db.Close(); err != nil {
		_ = e.dir.release()
		return fmt.Errorf("embedded: close store: %w", err)
	}
	if err := e.dir.release(); err != nil {
		return fmt.Errorf("embedded: unlock data directory: %w", err)
	}
	return nil
}

func (e *Engine) closeQueues() {
	e.mu.RLock()
	qs := slices.Collect(maps.Values(e.queues))
	e.mu.RUnlock()
	for _, q := range qs {
		q.mu.Lock()
		q.stopTimerLocked()
		q.wakeAllLocked()
		q.mu.Unlock()
	}
}

// enter marks a call as using the store; Close waits for it to leave.
func (e *Engine) enter() error {
	e.closeMu.RLock()
	if e.closed {
		e.closeMu.RUnlock()
		return engine.ErrClosed
	}
	return nil
}

func (e *Engine) leave() { e.closeMu.RUnlock() }

func (e *Engine) now() int64 { return e.clock.Now().UnixNano() }

func (e *Engine) lookup(account, name string) (*queue, error) {
	e.mu.RLock()
	q := e.queues[qname{account, name}]
	e.mu.RUnlock()
	if q == nil {
		return nil, engine.ErrQueueNotFound
	}
	return q, nil
}

// lookupARN finds a queue by its ARN; nil if none has it.
func (e *Engine) lookupARN(arn string) *queue {
	if arn == "" {
		return nil
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.arns[arn]
}

// applyOrdered enters b into the commit pipeline: its place in the store's
// order is fixed when this returns, so callers do it under the queue lock.
// awaitDurable then waits, outside the lock, for the shared WAL sync.
func (e *Engine) applyOrdered(b *pebble.Batch) error {
	var err error
	if e.sync {
		e.syncedCommits.Add(1)
		err = e.db.ApplyNoSyncWait(b, pebble.Sync)
	} else {
		err = e.db.Apply(b, pebble.NoSync)
	}
	if err != nil {
		return fmt.Errorf("embedded: write: %w", err)
	}
	return nil
}

func (e *Engine) awaitDurable(b *pebble.Batch) error {
	var err error
	if e.sync {
		err = b.SyncWait()
	}
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("embedded: sync: %w", err)
	}
	return nil
}

// writeOptions are those of a commit that must be durable when it
// returns; every call is such a commit, and is counted.
func (e *Engine) writeOptions() *pebble.WriteOptions {
	if e.sync {
		e.syncedCommits.Add(1)
		return pebble.Sync
	}
	return pebble.NoSync
}

// syncBarrier returns once everything already in the commit pipeline is
// durable.
func (e *Engine) syncBarrier() error {
	if !e.sync {
		return nil
	}
	e.syncedCommits.Add(1)
	if err := e.db.LogData(nil, pebble.Sync); err != nil {
		return fmt.Errorf("embedded: sync: %w", err)
	}
	return nil
}

// pebbleLogger sends the store's log lines to slog. Error lines are
// rate-limited: a store that fails the same way in a loop (Pebble retries
// a failed flush at once) must not flood the log.
type pebbleLogger struct {
	l   *slog.Logger
	lim *logLimiter
}

func newPebbleLogger(l *slog.Logger, clk clock.Clock) pebbleLogger {
	return pebbleLogger{l, &logLimiter{clock: clk}}
}

func (p pebbleLogger) Infof(format string, args ...any) {
	if p.l.Enabled(context.Background(), slog.LevelDebug) {
		p.l.Debug("store: " + fmt.Sprintf(format, args...))
	}
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	ok, suppressed := p.lim.allow()
	if !ok {
		return
	}
	if suppressed > 0 {
		p.l.Error("store: "+fmt.Sprintf(format, args...), "suppressed_similar", suppressed)
		return
	}
	p.l.Error("store: " + fmt.Sprintf(format, args...))
}

// Fatalf is called when the store cannot go on: a WAL or MANIFEST write
// failed, after which the memtable and the log disagree. Acknowledging
// further writes would lie, so the process exits; a restart replays the
// WAL, which holds every acknowledged write. The disk space guard keeps a
// full disk from getting here; what still does is an I/O error Ferry
// cannot judge, and exiting is the safe answer to that.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	p.l.Error("store: fatal: " + fmt.Sprintf(format, args...))
	os.Exit(1)
}
