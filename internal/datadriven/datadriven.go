// Package datadriven runs transcript tests: a testdata file of commands,
// each with its input and the output it must give, in the format of
// cockroachdb/datadriven that etcd's raft is tested with:
//
//	# a comment
//	command key=value key=(a,b)
//	input lines
//	----
//	expected output
//
// An output with blank lines is fenced with a second "----" line before
// and after it. `go test -update` rewrites every file with the outputs the
// code gives, so a change of behaviour is a readable diff of the file.
package datadriven

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the transcripts in testdata with the outputs the code gives")

// TestData is one command of a transcript.
type TestData struct {
	Pos      string // file:line of the command
	Cmd      string
	CmdArgs  []CmdArg
	Input    string // the lines between the command and "----"
	Expected string
}

// CmdArg is key=value or key=(v1,v2): Vals holds the values.
type CmdArg struct {
	Key  string
	Vals []string
}

// Arg returns the first value of key and whether the command has it.
func (d *TestData) Arg(key string) (string, bool) {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			if len(a.Vals) == 0 {
				return "", true
			}
			return a.Vals[0], true
		}
	}
	return "", false
}

// Fatalf fails the test naming the command's position.
func (d *TestData) Fatalf(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Fatalf("%s: %s", d.Pos, fmt.Sprintf(format, args...))
}

// Walk runs f on every file of dir (sorted), each as a subtest named
// after the file.
func Walk(t *testing.T, dir string, f func(t *testing.T, path string)) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".txt") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		path := filepath.Join(dir, n)
		t.Run(strings.TrimSuffix(n, ".txt"), func(t *testing.T) { f(t, path) })
	}
}

// RunTest runs the transcript at path: f gives each command's output.
// With -update the file is rewritten with those outputs; otherwise every
// output must equal the file's.
func RunTest(t *testing.T, path string, f func(t *testing.T, d *TestData) string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parse(path, string(raw))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, b := range blocks {
		if b.data == nil {
			out.WriteString(b.text)
			continue
		}
		d := b.data
		got := f(t, d)
		if got != "" && !strings.HasSuffix(got, "\n") {
			got += "\n"
		}
		out.WriteString(b.text)
		writeOutput(&out, got)
		if !*update && got != d.Expected {
			t.Errorf("%s: %s\nwant:\n%s\ngot:\n%s", d.Pos, b.head, indent(d.Expected), indent(got))
		}
	}
	if *update {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func writeOutput(b *strings.Builder, got string) {
	if strings.Contains(got, "\n\n") || strings.HasPrefix(got, "\n") {
		b.WriteString("----\n----\n")
		b.WriteString(got)
		b.WriteString("----\n----\n")
	} else {
		b.WriteString("----\n")
		b.WriteString(got)
	}
}

func indent(s string) string {
	if s == "" {
		return "  (nothing)\n"
	}
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}

// block is a run of the file: comments and blank lines kept as they are
// (data nil), or a command with its input (text: the command and input
// lines, up to and including nothing of the output).
type block struct {
	text string
	head string
	data *TestData
}

func parse(path, src string) ([]block, error) {
	lines := strings.SplitAfter(src, "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	var out []block
	var plain strings.Builder
	flush := func() {
		if plain.Len() > 0 {
			out = append(out, block{text: plain.String()})
			plain.Reset()
		}
	}
	for i := 0; i < len(lines); {
		line := strings.TrimRight(lines[i], "\n")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			plain.WriteString(lines[i])
			i++
			continue
		}
		flush()
		pos := fmt.Sprintf("%s:%d", path, i+1)
		d := &TestData{Pos: pos}
		var err error
		if d.Cmd, d.CmdArgs, err = parseCommand(line); err != nil {
			return nil, fmt.Errorf("%s: %v", pos, err)
		}
		var text strings.Builder
		text.WriteString(lines[i])
		i++
		var input []string
		for ; i < len(lines) && strings.TrimRight(lines[i], "\n") != "----"; i++ {
			input = append(input, strings.TrimRight(lines[i], "\n"))
			text.WriteString(lines[i])
		}
		if i == len(lines) {
			return nil, fmt.Errorf("%s: %s: no ---- after the input", pos, d.Cmd)
		}
		i++ // ----
		d.Input = strings.Join(input, "\n")
		var exp strings.Builder
		if i < len(lines) && strings.TrimRight(lines[i], "\n") == "----" {
			// Fenced: up to the closing ----, ----.
			i++
			for ; i < len(lines); i++ {
				if strings.TrimRight(lines[i], "\n") == "----" && i+1 < len(lines) && strings.TrimRight(lines[i+1], "\n") == "----" {
					i += 2
					break
				}
				exp.WriteString(lines[i])
			}
		} else {
			for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
				exp.WriteString(lines[i])
			}
		}
		d.Expected = exp.String()
		if d.Expected != "" && !strings.HasSuffix(d.Expected, "\n") {
			d.Expected += "\n"
		}
		out = append(out, block{text: text.String(), head: line, data: d})
	}
	flush()
	return out, nil
}

// parseCommand reads "cmd k=v k=(a,b) flag".
func parseCommand(line string) (string, []CmdArg, error) {
	fields, err := splitFields(line)
	if err != nil {
		return "", nil, err
	}
	var args []CmdArg
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			args = append(args, CmdArg{Key: f})
			continue
		}
		a := CmdArg{Key: k}
		if strings.HasPrefix(v, "(") && strings.HasSuffix(v, ")") {
			inner := v[1 : len(v)-1]
			if inner != "" {
				a.Vals = strings.Split(inner, ",")
			}
		} else {
			a.Vals = []string{v}
		}
		args = append(args, a)
	}
	return fields[0], args, nil
}

// splitFields splits on spaces outside parentheses.
func splitFields(line string) ([]string, error) {
	var out []string
	depth, start := 0, -1
	for i, r := range line {
		switch {
		case r == '(':
			depth++
		case r == ')':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unbalanced ) in %q", line)
			}
		case r == ' ' && depth == 0:
			if start >= 0 {
				out = append(out, line[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced ( in %q", line)
	}
	if start >= 0 {
		out = append(out, line[start:])
	}
	return out, nil
}
