//go:build linux

package embedded

import (
	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// Every acknowledged write waits for an fdatasync of the write-ahead log.
// Pebble preallocates a new log's blocks with FALLOC_FL_KEEP_SIZE, so each
// sync still moves the file's size, and ext4 commits its journal for it:
// on a fresh log a sync cost a third more kernel time than one over
// blocks already written (docs/bench/durable.md). Pebble reuses a log
// only once its memtable is flushed, and never one from before an open, so
// after every start the first two logs (up to 128 MiB of records) are
// fresh. A fresh log is therefore allocated at its full size, which fixes
// its size for its life, and its blocks are written with zeros a step
// ahead of the records (zeroAheadFile): an unwritten extent would still be
// converted, and journalled, at the first sync of each 4 KiB block, which
// costs as much as the size change once a sync writes 4 KiB. A sync then
// writes over blocks already written, as in a recycled log, and the
// journal is committed once per step instead of once per sync. The zeros
// double the bytes written into a fresh log (a recycled one is not zeroed).
//
// Recovery reads the zeros past the last record as a recycled or
// preallocated log's tail (a zeroed chunk ends the log), which Pebble and
// checkWAL already accept; TestCrashRecovery kills writers over such logs.
const walPresize = memTableSize + memTableSize/10 // Pebble's preallocation

// walWriteCategory is the category Pebble creates its logs under.
const walWriteCategory vfs.DiskWriteCategory = "pebble-wal"

// presizeWALs wraps fs so that a write-ahead log it creates is allocated
// at walPresize bytes and zeroed ahead of its records.
func presizeWALs(fs vfs.FS) vfs.FS { return presizedWALFS{fs} }

type presizedWALFS struct{ vfs.FS }

func (fs presizedWALFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	if err != nil || c != walWriteCategory {
		return f, err
	}
	fd := f.Fd()
	if fd == vfs.InvalidFd {
		return f, nil
	}
	if err := unix.Fallocate(int(fd), 0, 0, walPresize); err != nil {
		// Only the saving is lost (the log grows as Pebble writes it),
		// but a fallocate cut short by a full disk may have moved the
		// size: the log is empty, and must stay so.
		_ = unix.Ftruncate(int(fd), 0)
		return f, nil
	}
	return &zeroAheadFile{File: f, limit: walPresize}, nil
}

// walZeroStep is how far ahead of the records a log's blocks are zeroed:
// one journal commit per step, and a step's write joins one sync.
const walZeroStep = 1 << 20

// zeroAheadFile writes zeros over a log's blocks up to a step ahead of
// the records Pebble appends, up to limit. Pebble writes a log from one
// goroutine, sequentially from offset 0, and only through Write. Zeros
// go only past the end of what was written, so they never cover a record;
// past the records a reader finds zeros, which end a log.
type zeroAheadFile struct {
	vfs.File
	limit  int64 // zero no further (the allocated size)
	off    int64 // end of the records written
	zeroed int64 // end of the zeros written; >= off while zeroing goes on
	failed bool  // a zero write failed: the log goes on without
	zeros  []byte
}

func (f *zeroAheadFile) Write(p []byte) (int, error) {
	end := f.off + int64(len(p))
	for !f.failed && f.zeroed < end && f.zeroed < f.limit {
		at := max(f.zeroed, f.off)
		n := min(walZeroStep, f.limit-at)
		if f.zeros == nil {
			f.zeros = make([]byte, walZeroStep)
		}
		if _, err := f.File.WriteAt(f.zeros[:n], at); err != nil {
			// The zeros past the records are harmless, however many
			// were written; the records are written as they would be.
			f.failed = true
			break
		}
		f.zeroed = at + n
	}
	n, err := f.File.Write(p)
	f.off += int64(n)
	return n, err
}

func (fs presizedWALFS) Unwrap() vfs.FS { return fs.FS }
