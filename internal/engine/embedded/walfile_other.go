//go:build !linux

package embedded

import "github.com/cockroachdb/pebble/v2/vfs"

// walPresize is 0 where fallocate is missing: logs grow as they are
// written (walfile_linux.go).
const walPresize = 0

func presizeWALs(fs vfs.FS) vfs.FS { return fs }
