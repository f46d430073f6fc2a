package bpf

import (
	"bytes"
	"os"
	"testing"
	"time"
)

func TestZZHang(t *testing.T) {
	b, _ := os.ReadFile("/tmp/hang.o")
	st := time.Now()
	_, err := LoadELF(bytes.NewReader(b))
	t.Logf("%v %v", time.Since(st), err)
}
