// Package wasmbuild builds the browser engine the way `make wasm` does, into
// a directory of the caller's choosing, for tests that must not depend on a
// `make wasm` having run.
package wasmbuild

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Build writes main.wasm (GOOS=js GOARCH=wasm ./wasm of the module at
// root), main.wasm.gz and Go's wasm_exec.js into dir. The gzip level is the
// fastest: the served bytes decompress the same.
func Build(root, dir string) error { return BuildPackage(root, "./wasm", dir) }

// BuildPackage is Build for another GOOS=js main package pkg of the module
// (the browser tests' empty Ebitengine program).
func BuildPackage(root, pkg, dir string) error {
	wasm := filepath.Join(dir, "main.wasm")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", wasm, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return fmt.Errorf("go env GOROOT: %w", err)
	}
	js, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(goroot)), "lib", "wasm", "wasm_exec.js"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "wasm_exec.js"), js, 0o644); err != nil {
		return err
	}
	raw, err := os.ReadFile(wasm)
	if err != nil {
		return err
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if err != nil {
		return err
	}
	if _, err := zw.Write(raw); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "main.wasm.gz"), gz.Bytes(), 0o644)
}
