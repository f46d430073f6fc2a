package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docCommandLine is a ringlab command line in a code block of a document:
// "bin/ringlab run ...", "$ ringlab lab run ...", "sudo bin/ringlab ...".
var docCommandLine = regexp.MustCompile(`^\s*(?:\$ )?(?:sudo )?(?:\./)?(?:bin/)?ringlab (.*)$`)

// docCommandLines returns the ringlab command lines in the code blocks of
// the Markdown file at path, comments cut and continued lines joined,
// in order, each with where it is. Synopses with placeholders ([--for D]) are
// left out.
func docCommandLines(t *testing.T, path string) []docLine {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []docLine
	lines := strings.Split(string(b), "\n")
	inBlock := false
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "```") {
			inBlock = !inBlock
			continue
		}
		m := docCommandLine.FindStringSubmatch(lines[i])
		if !inBlock || m == nil {
			continue
		}
		where := path + ":" + strconv.Itoa(i+1)
		line := m[1]
		for strings.HasSuffix(strings.TrimSpace(stripComment(line)), `\`) && i+1 < len(lines) {
			line = strings.TrimSuffix(strings.TrimSpace(stripComment(line)), `\`) + " " + lines[i+1]
			i++
		}
		line = strings.TrimSpace(stripComment(line))
		if strings.Contains(line, "[") || strings.Contains(line, "   ") {
			continue // a synopsis, not a command line
		}
		out = append(out, docLine{where, strings.Fields(line)})
	}
	return out
}

type docLine struct {
	where string
	args  []string
}

func stripComment(s string) string {
	if i := strings.Index(s, " #"); i >= 0 {
		return s[:i]
	}
	return s
}

// TestDocCommandLines: every ringlab command line in the README's, the
// docs' and the tutorials' code blocks names a command, flags it has with
// values they take, and as many arguments as the command takes. They are
// parsed, not run.
func TestDocCommandLines(t *testing.T) {
	root := filepath.Join("..", "..")
	files := []string{filepath.Join(root, "README.md"), filepath.Join(root, "BENCHMARKS.md")}
	for _, glob := range []string{"docs/*.md", "tutorials/*.md", "web/*.md"} {
		m, err := filepath.Glob(filepath.Join(root, glob))
		require.NoError(t, err)
		files = append(files, m...)
	}
	seen := 0
	for _, f := range files {
		for _, l := range docCommandLines(t, f) {
			seen++
			args := l.args
			t.Run(l.where, func(t *testing.T) {
				r := newRoot(io.Discard, io.Discard)
				c, rest, err := r.Find(longDashes(r, args))
				require.NoError(t, err, "%q", args)
				if c.DisableFlagParsing {
					return
				}
				require.NoError(t, c.ParseFlags(rest), "%q", args)
				assert.NoError(t, c.ValidateArgs(c.Flags().Args()), "%q", args)
			})
		}
	}
	assert.Greater(t, seen, 20, "the README alone has twenty")

	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		// A scenario file beside --json: the comment must not read as if
		// --json named the file.
		if cmd := stripComment(l); strings.Contains(cmd, "ringlab run") && strings.Contains(cmd, "--json") && strings.Contains(cmd, ".json") {
			assert.Regexp(t, `--json (prints|gives|makes)`, l, "the README says what --json does, not that it reads the file")
		}
	}
}
