//go:build !unix

package embedded

// dirLock is empty where flock is missing: Pebble's LOCK alone keeps a
// second Ferry out, and its error cannot name the holder.
type dirLock struct{}

func lockDir(string) (*dirLock, error) { return &dirLock{}, nil }

func (*dirLock) release() error { return nil }
