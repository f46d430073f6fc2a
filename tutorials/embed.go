package tutorials

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// files holds the tutorials: NN-name.md, numbered in reading order.
// README.md (the format) is not a tutorial.
//
//go:embed [0-9][0-9]-*.md
var files embed.FS

// Dir is the directory the tutorial files live in, relative to the
// repository root; errors name files under it.
const Dir = "tutorials"

var fileName = regexp.MustCompile(`^([0-9][0-9])-([a-z0-9]+(?:-[a-z0-9]+)*)\.md$`)

// Source is one embedded tutorial file, unparsed.
type Source struct {
	Name   string // without number and .md
	Number int
	File   string // tutorials/NN-name.md
	Data   []byte
}

// Sources returns the embedded tutorial files in order.
func Sources() ([]Source, error) {
	return sourcesFrom(files)
}

func sourcesFrom(fsys fs.FS) ([]Source, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	var out []Source
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		m := fileName.FindStringSubmatch(e.Name())
		file := Dir + "/" + e.Name()
		if m == nil {
			return nil, &Error{File: file, Line: 1, Msg: "a tutorial file is named NN-name.md (two digits, lower-case words joined by -)"}
		}
		data, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, err
		}
		n, _ := strconv.Atoi(m[1])
		out = append(out, Source{Name: m[2], Number: n, File: file, Data: data})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	for i := 1; i < len(out); i++ {
		if out[i].Number == out[i-1].Number {
			return nil, &Error{File: out[i].File, Line: 1, Msg: fmt.Sprintf("number %02d is also %s", out[i].Number, out[i-1].File)}
		}
	}
	return out, nil
}

// Load parses one source.
func Load(src Source) (*Tutorial, error) {
	t, err := Parse(src.File, src.Data)
	if err != nil {
		return nil, err
	}
	t.Name, t.Number = src.Name, src.Number
	return t, nil
}

// All parses every embedded tutorial. It returns every tutorial that
// parsed and, joined, the errors of those that did not.
func All() ([]*Tutorial, error) {
	srcs, err := Sources()
	if err != nil {
		return nil, err
	}
	var out []*Tutorial
	var errs []error
	for _, s := range srcs {
		t, err := Load(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, t)
	}
	return out, errors.Join(errs...)
}

// Find returns the embedded tutorial called name: its name
// ("descriptor-journey"), its number ("1" or "01") or its file name
// ("01-descriptor-journey" or "01-descriptor-journey.md").
func Find(name string) (*Tutorial, error) {
	srcs, err := Sources()
	if err != nil {
		return nil, err
	}
	want := strings.TrimSuffix(strings.TrimPrefix(name, Dir+"/"), ".md")
	var names []string
	for _, s := range srcs {
		base := strings.TrimSuffix(strings.TrimPrefix(s.File, Dir+"/"), ".md")
		n, err := strconv.Atoi(want)
		if want == s.Name || want == base || err == nil && n == s.Number {
			return Load(s)
		}
		names = append(names, s.Name)
	}
	return nil, fmt.Errorf("no tutorial %q (tutorials: %s)", name, strings.Join(names, ", "))
}
