// Command funclines writes engine/kernel/funclines_gen.go: for every
// function of engine/kernel's table and every release the engine models,
// the file and line of the function's definition at that release, read
// from a Linux git directory's tags.
//
//	go run ./scripts/funclines -git KERNEL_GIT_DIR
//
// A release X.Y is read at tag vX.Y, or, when the directory has no such
// tag, at its newest stable tag vX.Y.N (the link then goes to that tag).
// The newest release the engine models (kernel.Newest, net-next of early
// 2026) is read at its tag when there is one, else at the newest tag of
// the directory when that is past the last release before it (a
// release candidate of the next release); a release with no tag has no
// lines, and the page links Elixir's identifier search for it.
//
// A function is looked for under its name, then its other names
// (Func.Also: page_pool_put_unrefed_netmem was page_pool_put_unrefed_page,
// page_pool_put_defragged_page and page_pool_put_page), then its older
// name (Func.Was); in its file, then the file it moved from (Func.WasIn:
// page_frag_free lived in mm/page_alloc.c before 6.12), then the table's
// other files. A function that no file defines at a release has no line
// there.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"

	"ringlab/engine/kernel"
)

func main() {
	gitDir := flag.String("git", "", "a Linux git directory (bare, or a work tree) with release tags")
	out := flag.String("o", "engine/kernel/funclines_gen.go", "the file to write")
	flag.Parse()
	if *gitDir == "" {
		fmt.Fprintln(os.Stderr, "funclines: -git names the kernel's git directory")
		os.Exit(2)
	}
	src, err := generate(gitSource{dir: *gitDir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "funclines:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "funclines:", err)
		os.Exit(1)
	}
}

// source is what the generator reads: a directory's tags and a file at
// a tag.
type source interface {
	tags() ([]string, error)
	// file is the file at tag, ok false when the tag has no such file.
	file(tag, path string) (b []byte, ok bool, err error)
	// subject is the first line of the message of the commit tag names:
	// where that tree came from ("Linux 6.4" in the kernel's own history).
	subject(tag string) (string, error)
}

type gitSource struct{ dir string }

func (g gitSource) tags() ([]string, error) {
	out, err := exec.Command("git", "-C", g.dir, "tag", "-l", "v[0-9]*").Output()
	if err != nil {
		return nil, fmt.Errorf("git tag in %s: %w", g.dir, err)
	}
	return strings.Fields(string(out)), nil
}

func (g gitSource) file(tag, path string) ([]byte, bool, error) {
	obj := tag + ":" + path
	if err := exec.Command("git", "-C", g.dir, "cat-file", "-e", obj).Run(); err != nil {
		return nil, false, nil
	}
	b, err := exec.Command("git", "-C", g.dir, "cat-file", "blob", obj).Output()
	if err != nil {
		return nil, false, fmt.Errorf("git cat-file %s: %w", obj, err)
	}
	return b, true, nil
}

func (g gitSource) subject(tag string) (string, error) {
	out, err := exec.Command("git", "-C", g.dir, "log", "-1", "--format=%s", tag).Output()
	if err != nil {
		return "", fmt.Errorf("git log %s: %w", tag, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// tagVer is a tag's version: v6.4 (final), v6.4.12 (stable), v7.0-rc3.
type tagVer struct {
	major, minor, sub int
	rc                int // 0 for a release, else its candidate number
}

func parseTag(t string) (tagVer, bool) {
	s, ok := strings.CutPrefix(t, "v")
	if !ok {
		return tagVer{}, false
	}
	var v tagVer
	if base, rc, isRC := strings.Cut(s, "-rc"); isRC {
		n, err := strconv.Atoi(rc)
		if err != nil || n <= 0 {
			return tagVer{}, false
		}
		v.rc, s = n, base
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return tagVer{}, false
	}
	var n [3]int
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 {
			return tagVer{}, false
		}
		n[i] = x
	}
	v.major, v.minor, v.sub = n[0], n[1], n[2]
	if v.major < 3 || v.rc > 0 && v.sub > 0 {
		return tagVer{}, false // the 2.6 series is out of the engine's range
	}
	return v, true
}

// less orders tags: a release candidate before its release, a release
// before its stable releases.
func (a tagVer) less(b tagVer) bool {
	if a.major != b.major {
		return a.major < b.major
	}
	if a.minor != b.minor {
		return a.minor < b.minor
	}
	if (a.rc == 0) != (b.rc == 0) {
		return a.rc != 0
	}
	if a.rc != b.rc {
		return a.rc < b.rc
	}
	return a.sub < b.sub
}

// pickTags maps each release to the tag it is read at (releases without
// one are left out).
func pickTags(tags []string, releases []kernel.Version) map[kernel.Version]string {
	type tv struct {
		name string
		v    tagVer
	}
	var all []tv
	for _, t := range tags {
		if v, ok := parseTag(t); ok {
			all = append(all, tv{t, v})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v.less(all[j].v) })
	out := map[kernel.Version]string{}
	for i, r := range releases {
		best := ""
		for _, t := range all {
			if t.v.major != r.Major || t.v.minor != r.Minor || t.v.rc != 0 {
				continue
			}
			if t.v.sub == 0 {
				best = t.name
				break
			}
			best = t.name // sorted: the newest stable tag is the last
		}
		if best == "" && r == kernel.Newest && i > 0 && len(all) > 0 {
			prev := releases[i-1]
			last := all[len(all)-1]
			if (tagVer{major: prev.Major, minor: prev.Minor}).less(last.v) {
				best = last.name
			}
		}
		if best != "" {
			out[r] = best
		}
	}
	return out
}

// place is where a function is defined at one release.
type place struct {
	file string
	line int
	as   string // the name it had there when not its newest
}

// run is a stretch of consecutive releases read with the function at
// one place.
type run struct {
	from, to kernel.Version
	at       place
}

// locate finds every function at every release that has a tag.
func locate(src source, funcs []kernel.Func, releases []kernel.Version, tags map[kernel.Version]string) (map[string]map[kernel.Version]place, error) {
	var files []string
	for _, f := range funcs {
		files = append(files, f.File, f.WasIn)
	}
	files = dedup(files)
	found := map[string]map[kernel.Version]place{}
	for _, r := range releases {
		tag, ok := tags[r]
		if !ok {
			continue
		}
		text := map[string][]byte{}
		for _, p := range files {
			b, ok, err := src.file(tag, p)
			if err != nil {
				return nil, err
			}
			if ok {
				text[p] = blank(b)
			}
		}
		for _, f := range funcs {
			if at, ok := find(f, files, text); ok {
				if found[f.Name] == nil {
					found[f.Name] = map[kernel.Version]place{}
				}
				found[f.Name][r] = at
			}
		}
	}
	return found, nil
}

// find looks for f's definition: under its name, then its other names
// (Also), then its older one (Was); in its file, then the one it moved
// from (WasIn), then the table's others.
func find(f kernel.Func, files []string, text map[string][]byte) (place, bool) {
	names := dedup(append(append([]string{f.Name}, f.Also...), f.Was))
	order := dedup(append([]string{f.File, f.WasIn}, files...))
	for _, p := range order {
		b, ok := text[p]
		if !ok {
			continue
		}
		for _, n := range names {
			if l := defLine(b, n); l > 0 {
				at := place{file: p, line: l}
				if n != f.Name {
					at.as = n
				}
				return at, true
			}
		}
	}
	return place{}, false
}

// dedup drops empty and repeated strings, keeping the order.
func dedup(in []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// runs folds a function's places into runs over consecutive releases
// (a release without a tag, or without the function, ends a run).
func runs(at map[kernel.Version]place, releases []kernel.Version) []run {
	var out []run
	open := false
	for _, r := range releases {
		p, ok := at[r]
		if !ok {
			open = false
			continue
		}
		if open && out[len(out)-1].at == p {
			out[len(out)-1].to = r
			continue
		}
		out = append(out, run{from: r, to: r, at: p})
		open = true
	}
	return out
}

func generate(src source) ([]byte, error) {
	all, err := src.tags()
	if err != nil {
		return nil, err
	}
	releases := kernel.Releases()
	tags := pickTags(all, releases)
	funcs := kernel.Funcs()
	found, err := locate(src, funcs, releases, tags)
	if err != nil {
		return nil, err
	}
	subjects := map[kernel.Version]string{}
	for r, t := range tags {
		if subjects[r], err = src.subject(t); err != nil {
			return nil, err
		}
	}
	return render(funcs, releases, tags, subjects, found)
}

// oneLine keeps a commit subject to what a line comment can hold.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' {
			return ' '
		}
		return r
	}, s)
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}

func lit(v kernel.Version) string {
	return fmt.Sprintf("{%d, %d, %d}", v.Major, v.Minor, v.Sub)
}

func render(funcs []kernel.Func, releases []kernel.Version, tags, subjects map[kernel.Version]string, found map[string]map[kernel.Version]place) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by scripts/funclines from a Linux git directory; DO NOT EDIT.\n")
	b.WriteString("// Regenerate with: go run ./scripts/funclines -git KERNEL_GIT_DIR\n\n")
	b.WriteString("package kernel\n\n")
	b.WriteString("// releaseTags is the tag each release's lines were read at; a release\n")
	b.WriteString("// missing here was not read, and its functions have no line. Each\n")
	b.WriteString("// comment is the subject of the commit the tag named: where the tree\n")
	b.WriteString("// came from.\n")
	b.WriteString("var releaseTags = map[Version]string{\n")
	for _, r := range releases {
		if t, ok := tags[r]; ok {
			fmt.Fprintf(&b, "\t%s: %q, // %s\n", lit(r), t, oneLine(subjects[r]))
		}
	}
	b.WriteString("}\n\n")
	b.WriteString("// funcLines is each function's definition (by its newest name), in runs\n")
	b.WriteString("// of consecutive releases read with the same file and line.\n")
	b.WriteString("var funcLines = map[string][]lineRun{\n")
	for _, f := range funcs {
		rs := runs(found[f.Name], releases)
		if len(rs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\t%q: {\n", f.Name)
		for _, r := range rs {
			fmt.Fprintf(&b, "\t\t{Version%s, Version%s, %q, %d, %q},\n", lit(r.from), lit(r.to), r.at.file, r.at.line, r.at.as)
		}
		b.WriteString("\t},\n")
	}
	b.WriteString("}\n")
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("formatting the generated file: %w", err)
	}
	return out, nil
}
