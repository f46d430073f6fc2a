// The engine is pure: it builds for linux and js/wasm alike and never
// touches the outside world. This test reads every Go file under engine/
// and fails on an import or a call that would break that.
package engine_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"

	"ringlab/internal/purity"
)

// TestEngineIsPure: no engine file imports I/O, the wall clock, sync,
// the browser or the screen, starts a goroutine, or uses the global
// random generator (internal/purity has the list).
func TestEngineIsPure(t *testing.T) {
	assert.Positive(t, purity.Check(t, ".", purity.Forbidden), "no engine files found")
}

func TestEngineBuildsForWasm(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("skipped: the go command is not on PATH")
	}
	cmd := exec.Command(gobin, "build", "./...")
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm", "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	assert.NoError(t, err, "GOOS=js GOARCH=wasm go build ./engine/...:\n%s", out)
}
