//go:build unix

package rooms

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockDir takes the store directory's lock (flock on DIR/lock), waiting
// at most wait for another process to give it up.
func lockDir(dir string, wait time.Duration) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, ErrStoreInUse
			}
			return nil, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
