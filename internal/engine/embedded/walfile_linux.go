//go:build linux

package embedded

import (
	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// Every acknowledged write waits for an fdatasync of the write-ahead log.
// Pebble preallocates a new log's blocks with FALLOC_FL_KEEP_SIZE, so each
// sync still moves the file's size, and ext4 commits its journal for it:
// on a fresh log a sync cost about half as much kernel time again as one
// over blocks already written (docs/bench/durable.md). Pebble reuses a log
// only once its memtable is flushed, and never one from before an open, so
// after every start the first two logs (up to 128 MiB of records) are
// fresh. A fresh log is therefore allocated at its full size, which fixes
// its size for its life: a sync then converts at most one unwritten extent
// per 4 KiB block, and updates no size.
//
// Recovery reads the zeros past the last record as a recycled or
// preallocated log's tail (a zeroed chunk ends the log), which Pebble and
// checkWAL already accept; TestCrashRecovery kills writers over such logs.
const walPresize = memTableSize + memTableSize/10 // Pebble's preallocation

// walWriteCategory is the category Pebble creates its logs under.
const walWriteCategory vfs.DiskWriteCategory = "pebble-wal"

// presizeWALs wraps fs so that a write-ahead log it creates is allocated
// at walPresize bytes.
func presizeWALs(fs vfs.FS) vfs.FS { return presizedWALFS{fs} }

type presizedWALFS struct{ vfs.FS }

func (fs presizedWALFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	if err != nil || c != walWriteCategory {
		return f, err
	}
	if fd := f.Fd(); fd != vfs.InvalidFd {
		if err := unix.Fallocate(int(fd), 0, 0, walPresize); err != nil {
			// Only the saving is lost (the log grows as Pebble writes
			// it), but a fallocate cut short by a full disk may have
			// moved the size: the log is empty, and must stay so.
			_ = unix.Ftruncate(int(fd), 0)
		}
	}
	return f, nil
}

func (fs presizedWALFS) Unwrap() vfs.FS { return fs.FS }
