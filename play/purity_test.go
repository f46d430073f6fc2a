package play_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"

	"ringlab/internal/purity"
)

// TestControllerIsPure: the controller is plain Go like the engine it
// drives (no I/O, no wall clock, no goroutines), and nothing it depends
// on reaches the browser (syscall/js) or the screen (Ebitengine): it is
// tested natively and the wasm shell only bridges it.
func TestControllerIsPure(t *testing.T) {
	assert.Positive(t, purity.Check(t, ".", purity.Forbidden), "no controller files found")
	shell := []string{"syscall/js", "github.com/hajimehoshi/ebiten/"}
	purity.Deps(t, "ringlab/play", "", "", shell)
	purity.Deps(t, "ringlab/play", "js", "wasm", shell)
}

func TestControllerBuildsForWasm(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("skipped: the go command is not on PATH")
	}
	cmd := exec.Command(gobin, "build", ".")
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm", "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	assert.NoError(t, err, "GOOS=js GOARCH=wasm go build ./play:\n%s", out)
}
