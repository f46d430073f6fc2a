package datadriven

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sample = `# echo prints its input, upper-cased with up=1
echo up=1 names=(a,b)
hello
----
HELLO
a,b

echo
two

lines
----
----
two

lines
----
----

# nothing comes back
echo
----
`

func TestParseAndRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sample.txt")
	require.NoError(t, os.WriteFile(path, []byte(sample), 0o644))
	var cmds []string
	RunTest(t, path, func(t *testing.T, d *TestData) string {
		cmds = append(cmds, d.Cmd)
		out := d.Input
		if _, ok := d.Arg("up"); ok {
			out = strings.ToUpper(out)
		}
		for _, a := range d.CmdArgs {
			if a.Key == "names" {
				out += "\n" + strings.Join(a.Vals, ",")
			}
		}
		return out
	})
	assert.Equal(t, []string{"echo", "echo", "echo"}, cmds)
}

func TestRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sample.txt")
	stale := strings.Replace(sample, "HELLO\n", "hello?\n", 1)
	require.NoError(t, os.WriteFile(path, []byte(stale), 0o644))
	*update = true
	defer func() { *update = false }()
	RunTest(t, path, func(t *testing.T, d *TestData) string {
		out := d.Input
		if _, ok := d.Arg("up"); ok {
			out = strings.ToUpper(out) + "\na,b"
		}
		return out
	})
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, sample, string(got), "the rewritten file has the outputs, comments and fences kept")
}

func TestParseErrors(t *testing.T) {
	for _, bad := range []string{"cmd\nno separator\n", "cmd a=(b\n----\n"} {
		_, err := parse("x.txt", bad)
		assert.Error(t, err, bad)
	}
}
