//go:build unix

package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// dirLock is Ferry's flock on its lock file, which holds Ferry's pid. An
// flock belongs to the open file, so a second Open in the same process
// is refused as well.
type dirLock struct{ f *os.File }

func lockDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, inUse(dir, pidOf(f))
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("write lock file: %w", err)
	}
	return &dirLock{f: f}, nil
}

// release empties the lock file (no stale pid for the next holder's
// contenders to read) and lets go of the lock.
func (l *dirLock) release() error {
	err := l.f.Truncate(0)
	return errors.Join(err, l.f.Close())
}
