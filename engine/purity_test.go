// The engine is pure: it builds for linux and js/wasm alike and never
// touches the outside world. This test reads every Go file under engine/
// and fails on an import or a call that would break that.
package engine_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// forbiddenImports may not appear in non-test engine code.
var forbiddenImports = []string{
	"github.com/hajimehoshi/ebiten",
	"github.com/gorilla/",
	"net/http",
	"syscall/js",
	"os/exec",
	"os",
	"net",
	"syscall",
	"time",
	"math/rand", // the global generator; math/rand/v2 is checked by call
	"unsafe",
}

// globalRandFuncs are math/rand/v2's package-level functions that use the
// global generator. rand.New, rand.NewPCG and friends are allowed.
var globalRandFuncs = map[string]bool{
	"Int": true, "IntN": true, "Int32": true, "Int32N": true, "Int64": true,
	"Int64N": true, "Uint32": true, "Uint32N": true, "Uint64": true,
	"Uint64N": true, "UintN": true, "Uint": true, "Float32": true,
	"Float64": true, "Perm": true, "Shuffle": true, "NormFloat64": true,
	"ExpFloat64": true, "N": true,
}

func TestEngineIsPure(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if hasLinuxOnlyTag(f) {
			return nil
		}
		files++
		randName := ""
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbiddenImports {
				if p == bad || (strings.HasSuffix(bad, "/") && strings.HasPrefix(p, bad)) ||
					(bad == "github.com/hajimehoshi/ebiten" && strings.HasPrefix(p, bad)) {
					t.Errorf("%s imports %q: engine code must stay pure", fset.Position(imp.Pos()), p)
				}
			}
			if p == "math/rand/v2" {
				randName = "rand"
				if imp.Name != nil {
					randName = imp.Name.Name
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				t.Errorf("%s starts a goroutine: the engine is driven by one caller (which is also why make test runs the race detector on the server, not here)", fset.Position(g.Pos()))
			}
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			if randName != "" && x.Name == randName && globalRandFuncs[sel.Sel.Name] {
				t.Errorf("%s calls the global %s.%s: pass a seeded *rand.Rand", fset.Position(sel.Pos()), randName, sel.Sel.Name)
			}
			if x.Name == "time" && sel.Sel.Name == "Now" {
				t.Errorf("%s calls time.Now: engine time is virtual", fset.Position(sel.Pos()))
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	assert.Positive(t, files, "no engine files found")
}

// hasLinuxOnlyTag reports whether a file is built only for linux (code that
// loads programs into the real kernel may live beside the engine but is not
// part of what the browser runs).
func hasLinuxOnlyTag(f *ast.File) bool {
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, "//go:build") && strings.Contains(c.Text, "linux") && !strings.Contains(c.Text, "!linux") {
				return true
			}
		}
		if cg.Pos() > f.Package {
			break
		}
	}
	return false
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
