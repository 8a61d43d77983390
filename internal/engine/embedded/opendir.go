package embedded

import (
	"cmp"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/wal"
)

// Errors of Open about the data directory; errors.Is tells them apart.
var (
	// ErrDirInUse: another Ferry (or another program) has the directory
	// open.
	ErrDirInUse = errors.New("data directory in use")
	// ErrNoManifest: the directory holds store files but no valid
	// manifest, so Pebble would take it for a new store and delete them.
	ErrNoManifest = errors.New("store files without a manifest")
	// ErrLossyRecovery: with Options.StrictRecovery, the newest
	// write-ahead log ends in records that recovery would drop.
	ErrLossyRecovery = errors.New("recovery would drop logged records")
)

// dirError is an error whose message says it all, matching kind (one of
// the sentinels above) and, when set, the error behind it.
type dirError struct {
	msg  string
	kind error
	err  error
}

func (e *dirError) Error() string   { return e.msg }
func (e *dirError) Unwrap() []error { return []error{e.kind, e.err} }

// lockFileName is Ferry's lock on the data directory. Pebble's LOCK is
// Pebble's and says nothing about who holds it; this one holds the pid of
// the Ferry that has the directory open.
const lockFileName = "ferry.lock"

// openedDir holds the locks of an open data directory; release it after
// the store is closed.
type openedDir struct {
	ferry *dirLock
	store *pebble.Lock
}

func (d *openedDir) release() error {
	if d == nil {
		return nil
	}
	var err error
	if d.store != nil {
		err = d.store.Close()
	}
	if d.ferry != nil {
		err = errors.Join(err, d.ferry.release())
	}
	return err
}

// openDisk opens the on-disk store of opts. Before Pebble touches a file
// it refuses a directory that another Ferry uses, one whose store files
// lack a valid manifest, and, with StrictRecovery, a newest write-ahead
// log whose recovery would drop records; without it, that loss is logged.
// The disk space guard prepares (gives up its ballast) only once the
// directory is locked and checked: a refused start changes nothing.
func (e *Engine) openDisk(opts Options, po *pebble.Options) (*pebble.DB, error) {
	fs, dir := cmp.Or(opts.FS, vfs.Default), opts.Dir
	d, err := lockDataDir(fs, dir)
	if err != nil {
		return nil, err
	}
	db, err := e.openLocked(fs, dir, po, d.store, opts)
	if err != nil {
		_ = d.release()
		return nil, err
	}
	e.dir = d
	return db, nil
}

func (e *Engine) openLocked(fs vfs.FS, dir string, po *pebble.Options, pl *pebble.Lock, opts Options) (*pebble.DB, error) {
	exists, err := checkManifest(fs, dir)
	if err != nil {
		return nil, err
	}
	if exists {
		if err := checkWAL(fs, dir, opts.StrictRecovery, e.log); err != nil {
			return nil, err
		}
	} else {
		e.log.Info("store: creating a new store", "dir", dir)
	}
	o := *po
	if o.FS, err = e.openSpace(fs, dir, cmp.Or(opts.DiskReserve, DefaultDiskReserve)); err != nil {
		return nil, err
	}
	if !opts.walGrows {
		o.FS = presizeWALs(o.FS)
	}
	o.Lock = pl
	// What was found to be a store must open as one, never be recreated.
	o.ErrorIfNotExists = exists
	db, err := pebble.Open(dir, &o)
	if pebble.IsCorruptionError(err) {
		return nil, fmt.Errorf("the store in %s is damaged (restore it from a backup): %w", dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open store in %s: %w", dir, err)
	}
	return db, nil
}

// lockDataDir creates dir if need be and takes Ferry's lock on it (on the
// operating system's filesystem, where it can name the holder) and
// Pebble's.
func lockDataDir(fs vfs.FS, dir string) (*openedDir, error) {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	d := &openedDir{}
	if fs == vfs.Default {
		fl, err := lockDir(dir)
		if err != nil {
			return nil, err
		}
		d.ferry = fl
	}
	// Pebble's own lock, taken now, keeps other programs out while the
	// directory is checked.
	pl, err := pebble.LockDirectory(dir, fs)
	if err != nil {
		_ = d.release()
		return nil, &dirError{
			msg:  fmt.Sprintf("data directory %s is in use by another process (its LOCK file is held): %v", dir, err),
			kind: ErrDirInUse, err: err,
		}
	}
	d.store = pl
	return d, nil
}

// checkManifest reports whether dir holds a store, and fails when it
// holds store files but no valid manifest: Pebble would take such a
// directory for a new store and delete the files. Ferry's own files (its
// lock, the sns directory) and Pebble's LOCK do not count.
func checkManifest(fs vfs.FS, dir string) (bool, error) {
	desc, err := pebble.Peek(dir, fs)
	if err != nil {
		return false, fmt.Errorf("read data directory %s: %w", dir, err)
	}
	if desc.Exists {
		if _, err := fs.Stat(desc.ManifestFilename); err == nil {
			return true, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return false, fmt.Errorf("read data directory %s: %w", dir, err)
		}
	}
	names, err := fs.List(dir)
	if err != nil {
		return false, fmt.Errorf("read data directory %s: %w", dir, err)
	}
	slices.Sort(names)
	var found []string
	for _, name := range names {
		if isStoreFile(name) {
			found = append(found, name)
		}
	}
	if len(found) == 0 {
		return false, nil
	}
	missing := "no marker.manifest.* file"
	if desc.Exists {
		missing = fmt.Sprintf("its manifest marker names %s, which is missing", filepath.Base(desc.ManifestFilename))
	}
	const show = 6
	list := strings.Join(found[:min(len(found), show)], ", ")
	if len(found) > show {
		list += fmt.Sprintf(" and %d more", len(found)-show)
	}
	return false, &dirError{
		msg: fmt.Sprintf("data directory %s holds store files (%s) but no valid manifest (%s); "+
			"starting would replace the store with an empty one and delete them, so nothing was changed: "+
			"restore the manifest marker and MANIFEST file from a backup, or point Ferry at an empty directory to start fresh",
			dir, list, missing),
		kind: ErrNoManifest,
	}
}

// isStoreFile reports whether name is one of Pebble's files that a store
// needs or that hold data: tables, blob files, logs, manifests, options
// and markers (not LOCK, not temporary files).
func isStoreFile(name string) bool {
	for _, suffix := range []string{".sst", ".blob", ".log"} {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	for _, prefix := range []string{"MANIFEST-", "OPTIONS-", "marker."} {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// walLoss is the end of a write-ahead log that recovery drops.
type walLoss struct {
	path    string
	size    int64 // of the file
	offset  int64 // end of the last whole record: replay stops here
	dropped int64 // bytes of this log's records from offset on
}

// checkWAL finds out whether recovery of the newest write-ahead log will
// stop before the end of what the log holds. Pebble replays that log
// until its first incomplete or unreadable record and, the newest log
// being the one a crash may leave torn, goes on without a word. A crash
// of the process leaves no torn record behind (the log is written whole
// records at a time), one of the machine only unsynced ones; a cut or
// damaged file loses acknowledged messages.
func checkWAL(fs vfs.FS, dir string, strict bool, log *slog.Logger) error {
	loss, err := newestWALLoss(fs, dir)
	if err != nil {
		return fmt.Errorf("read write-ahead log: %w", err)
	}
	if loss == nil {
		return nil
	}
	if strict {
		return &dirError{
			msg: fmt.Sprintf("write-ahead log %s ends in %d bytes of records that recovery would drop "+
				"(from offset %d of %d): an unacknowledged write cut short by a crash, or damage to the file; "+
				"strict recovery refuses to start and nothing was changed: restore the file from a backup, "+
				"or start without strict recovery to accept the loss",
				loss.path, loss.dropped, loss.offset, loss.size),
			kind: ErrLossyRecovery,
		}
	}
	log.Warn("store: recovery drops the end of the write-ahead log: an unacknowledged write cut short by a crash, or damage to the file",
		"file", loss.path, "dropped_bytes", loss.dropped, "offset", loss.offset, "size", loss.size)
	return nil
}

// newestWALLoss reads the newest write-ahead log as recovery will and,
// if recovery would stop early, measures what it would leave unread. It
// returns nil when the log ends cleanly, and also when recovery will
// fail on it anyway (Pebble reports corruption it can prove).
func newestWALLoss(fs vfs.FS, dir string) (*walLoss, error) {
	logs, err := wal.Scan(wal.Dir{FS: fs, Dirname: dir})
	if err != nil || len(logs) == 0 {
		return nil, err
	}
	ll := logs[len(logs)-1]
	r := ll.OpenForRead()
	defer r.Close()
	for {
		_, off, err := r.NextRecord()
		if err == nil {
			continue
		}
		if !errors.Is(err, record.ErrUnexpectedEOF) {
			// io.EOF is a clean end; other errors fail recovery itself.
			return nil, nil
		}
		return tailLoss(fs, off.PhysicalFile, uint32(ll.Num), off.Physical)
	}
}

// The log's wire format (pebble/v2/record): 32 KiB blocks of chunks that
// never cross a block; a chunk header is a CRC, a length, a type and, in
// the formats Ferry writes, the log's number (and a synced offset).
const (
	walBlockSize      = 32 << 10
	walHeaderRecycled = 11
	walHeaderSync     = 19
)

// tailLoss counts the bytes of log num's own chunks in path from offset
// (where replay stopped) on. What a log may hold past its last record
// after a crash is not lost data: zeros (preallocated or padding) and the
// chunks of the older log whose file it recycled, which carry another log
// number. Ours are the torn or damaged chunk at offset, whole chunks of
// ours (valid checksum) later in its block, and chunks of ours opening a
// later block (every block of a log opens with a chunk).
func tailLoss(fs vfs.FS, path string, num uint32, offset int64) (*walLoss, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	end := offset // of the last byte of ours
	buf := make([]byte, walBlockSize)
	first := offset &^ (walBlockSize - 1)
	for at := first; at < size; at += walBlockSize {
		n, err := f.ReadAt(buf, at)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		b := buf[:n]
		if at != first {
			if e := walkChunks(b, 0, num); e > 0 {
				end = at + int64(e)
			}
			continue
		}
		p := int(offset - at)
		e := walkChunks(b, p, num)
		if e > p {
			end = at + int64(e)
		} else if tail := b[p:]; len(tail) < walHeaderRecycled && at+int64(n) == size && !allZero(tail) {
			end = size // a header cut short at the end of the file
		}
		for q := max(e, p) + 1; q+walHeaderRecycled <= len(b); q++ {
			if chunkValid(b, q, num) {
				e := walkChunks(b, q, num)
				end = at + int64(e)
				q = e - 1
			}
		}
	}
	if end <= offset {
		return nil, nil
	}
	return &walLoss{path: path, size: size, offset: offset, dropped: end - offset}, nil
}

// chunkAt parses the header at b[p:] if it is a chunk of log num,
// returning where its payload starts and ends (ends may lie past b: the
// chunk is cut short).
func chunkAt(b []byte, p int, num uint32) (begin, end int, ok bool) {
	if p+walHeaderRecycled > len(b) {
		return 0, 0, false
	}
	var hdr int
	switch t := b[p+6]; {
	case t >= 5 && t <= 8:
		hdr = walHeaderRecycled
	case t >= 9 && t <= 12:
		hdr = walHeaderSync
	default:
		return 0, 0, false
	}
	if le32(b[p+7:]) != num {
		return 0, 0, false
	}
	length := int(b[p+4]) | int(b[p+5])<<8
	return p + hdr, p + hdr + length, true
}

// walkChunks follows the chunks of log num from b[p:], returning the end
// of the last one (p if there is none there).
func walkChunks(b []byte, p int, num uint32) int {
	for {
		_, end, ok := chunkAt(b, p, num)
		if !ok {
			return p
		}
		if end >= len(b) {
			return len(b)
		}
		p = end
	}
}

// chunkValid reports whether a whole chunk of log num with a valid
// checksum starts at b[p:].
func chunkValid(b []byte, p int, num uint32) bool {
	begin, end, ok := chunkAt(b, p, num)
	if !ok || begin > len(b) || end > len(b) {
		return false
	}
	return le32(b[p:]) == walCRC(b[p+6:end])
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// pidOf reads the pid a lock file holds; 0 if it holds none.
func pidOf(f *os.File) int {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

func inUse(dir string, pid int) error {
	who := "another Ferry"
	if pid > 0 {
		who = fmt.Sprintf("another Ferry (pid %d)", pid)
	}
	return &dirError{
		msg:  fmt.Sprintf("data directory %s is in use by %s; stop it, or give this one another data directory", dir, who),
		kind: ErrDirInUse,
	}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// walCRC is a chunk's checksum as the log writer computes it (a masked
// CRC-32C, as in LevelDB).
func walCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}
