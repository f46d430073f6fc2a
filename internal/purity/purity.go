// Package purity checks that Go code stays pure: no forbidden imports,
// no goroutines, no wall clock, no global randomness (Check), and no
// forbidden package among a package's dependencies (Deps). The engine's
// test (engine/purity_test.go) and the controller's (play/purity_test.go)
// use it, each with its own list.
package purity

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Forbidden are the imports pure code may not have: I/O, the wall clock,
// goroutine synchronisation, the browser and the screen. An entry ending
// in "/" forbids every package under it.
var Forbidden = []string{
	"github.com/hajimehoshi/ebiten/",
	"github.com/gorilla/",
	"net/http",
	"syscall/js",
	"os/exec",
	"os",
	"net",
	"syscall",
	"time",
	"sync",
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

func forbidden(p string, list []string) bool {
	for _, bad := range list {
		if p == bad || strings.HasSuffix(bad, "/") && (strings.HasPrefix(p, bad) || p == strings.TrimSuffix(bad, "/")) {
			return true
		}
	}
	return false
}

// Check reads every non-test Go file under root (testdata and files built
// only for linux left out) and fails on an import of list, a go
// statement, a call of time.Now or of the global math/rand/v2 generator.
// It returns how many files it read.
func Check(t *testing.T, root string, list []string) int {
	t.Helper()
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			return err
		}
		if linuxOnly(f) {
			return nil
		}
		files++
		randName := ""
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if forbidden(p, list) {
				t.Errorf("%s imports %q: this code must stay pure", fset.Position(imp.Pos()), p)
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
				t.Errorf("%s starts a goroutine: this code is driven by one caller", fset.Position(g.Pos()))
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
				t.Errorf("%s calls time.Now: time is virtual here", fset.Position(sel.Pos()))
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// linuxOnly reports whether a file is built only for linux (code that
// loads programs into the real kernel may live beside the engine but is
// not part of what the browser runs).
func linuxOnly(f *ast.File) bool {
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

// Deps fails when pkg's dependencies, outside the standard library,
// import a package of list or are one (`go list -deps`, for the given
// GOOS and GOARCH, "" for the host's). The standard library is left out:
// on js/wasm its syscall and time use syscall/js themselves. It skips
// without the go command.
func Deps(t *testing.T, pkg, goos, goarch string, list []string) {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("skipped: the go command is not on PATH")
	}
	cmd := exec.Command(gobin, "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}} {{join .Imports \",\"}}", pkg)
	if goos != "" {
		cmd.Env = append(cmd.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[1] == "true" {
			continue
		}
		if forbidden(f[0], list) {
			t.Errorf("%s depends on %s", pkg, f[0])
		}
		if len(f) > 2 {
			for _, imp := range strings.Split(f[2], ",") {
				if forbidden(imp, list) {
					t.Errorf("%s depends on %s, which imports %s", pkg, f[0], imp)
				}
			}
		}
	}
}
