//go:build !unix

package rooms

import (
	"os"
	"path/filepath"
	"time"
)

// lockDir opens the store directory's lock file; without flock another
// process is not kept out.
func lockDir(dir string, _ time.Duration) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
}
