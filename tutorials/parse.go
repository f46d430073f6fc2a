package tutorials

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"ringlab/engine/scenario"
)

// maxErrors is how many problems Parse reports before it stops.
const maxErrors = 20

// ConfigScenario is the config name measure and compare use for the step's
// own scenario instead of a preset.
const ConfigScenario = "scenario"

var (
	stepHeading   = regexp.MustCompile(`^## Step ([0-9]+): (\S.*)$`)
	durationValue = regexp.MustCompile(`^([0-9]+) min$`)
	bindingName   = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	reproID       = regexp.MustCompile(`^R[0-9]+$`)
)

type parser struct {
	file string
	errs ErrorList
	t    *Tutorial
	// the recipe of the world after the previous step (nil before any).
	recipe *scenario.Recipe
	// binds are the names measure, compare, mark and host bind so far:
	// exact names (measure) and prefixes before a dot (the others).
	binds, prefixes map[string]bool
}

func (p *parser) errf(line int, format string, args ...any) {
	if len(p.errs) < maxErrors {
		p.errs = append(p.errs, &Error{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)})
	}
}

// Parse reads a tutorial. file names it in errors ("tutorials/03-x.md").
// Every problem found is returned as an ErrorList of file:line errors: bad
// front matter, a heading that is not "## Step N: title", an unterminated
// block, an unknown directive, a scenario field that does not validate, an
// expression that does not parse.
func Parse(file string, src []byte) (*Tutorial, error) {
	p := &parser{file: file, t: &Tutorial{File: file}, binds: map[string]bool{}, prefixes: map[string]bool{}}
	if !utf8.Valid(src) {
		p.errf(1, "not UTF-8 text")
		return nil, p.errs
	}
	text := strings.ReplaceAll(string(src), "\r\n", "\n")
	lines := strings.Split(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	body := p.frontMatter(lines)
	if body >= 0 {
		p.body(lines, body)
	}
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return p.t, nil
}

// frontMatter parses the block between the first two "---" lines and
// returns the index of the first body line, or -1 when there is no body
// to read.
func (p *parser) frontMatter(lines []string) int {
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "---" {
		p.errf(1, "a tutorial starts with front matter: a line \"---\", then title:, level:, duration:, learn:, then \"---\"")
		return -1
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "---" {
			end = i
			break
		}
	}
	if end < 0 {
		p.errf(1, "front matter is not closed: no second \"---\" line")
		return -1
	}
	t := p.t
	seen := map[string]int{}
	inLearn := false
	for i := 1; i < end; i++ {
		ln := i + 1
		raw := lines[i]
		s := strings.TrimSpace(raw)
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if strings.HasPrefix(s, "- ") || s == "-" {
			if !inLearn {
				p.errf(ln, "list item outside learn:")
				continue
			}
			item := strings.TrimSpace(strings.TrimPrefix(s, "-"))
			if item == "" {
				p.errf(ln, "empty learn: item")
				continue
			}
			t.Learn = append(t.Learn, item)
			continue
		}
		key, val, ok := strings.Cut(s, ":")
		if !ok {
			p.errf(ln, "want key: value in front matter, got %q", s)
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if strings.HasPrefix(val, `"`) {
			uq, err := strconv.Unquote(val)
			if err != nil {
				p.errf(ln, "%s: bad quoted value %s", key, val)
				continue
			}
			val = uq
		}
		if prev, dup := seen[key]; dup {
			p.errf(ln, "%s: given twice (first at line %d)", key, prev)
			continue
		}
		seen[key] = ln
		inLearn = false
		switch key {
		case "title":
			if val == "" {
				p.errf(ln, "title: empty")
			}
			t.Title = val
		case "level":
			if !contains(Levels, val) {
				p.errf(ln, "level: %q: want one of %s", val, strings.Join(Levels, ", "))
			}
			t.Level = val
		case "duration":
			m := durationValue.FindStringSubmatch(val)
			if m == nil {
				p.errf(ln, "duration: %q: want minutes, as in \"20 min\"", val)
				break
			}
			t.Duration = val
			t.Minutes, _ = strconv.Atoi(m[1])
			if t.Minutes < 1 || t.Minutes > 240 {
				p.errf(ln, "duration: %d min: want 1 to 240", t.Minutes)
			}
		case "learn":
			if val != "" {
				p.errf(ln, "learn: the items go on the following lines, each starting with \"- \"")
			}
			inLearn = true
		case "reproduces":
			for _, id := range strings.Split(val, ",") {
				id = strings.TrimSpace(id)
				if !reproID.MatchString(id) || !knownRepro(id) {
					p.errf(ln, "reproduces: %q is not a published measurement (%s)", id, strings.Join(reproIDs(), ", "))
					continue
				}
				t.Reproduces = append(t.Reproduces, id)
			}
		default:
			p.errf(ln, "unknown front matter key %q (known: title, level, duration, learn, reproduces)", key)
		}
	}
	for _, k := range []string{"title", "level", "duration", "learn"} {
		if _, ok := seen[k]; !ok {
			p.errf(end+1, "front matter has no %s:", k)
		}
	}
	if _, ok := seen["learn"]; ok && len(t.Learn) == 0 {
		p.errf(seen["learn"], "learn: has no items")
	}
	return end + 1
}

// fence reports whether s opens or closes a fenced code block, and its
// marker ("```" or "~~~", possibly longer) and info string.
func fence(s string) (marker, info string, ok bool) {
	t := strings.TrimLeft(s, " ")
	if len(s)-len(t) > 3 {
		return "", "", false
	}
	for _, c := range []byte{'`', '~'} {
		n := 0
		for n < len(t) && t[n] == c {
			n++
		}
		if n >= 3 {
			return t[:n], strings.TrimSpace(t[n:]), true
		}
	}
	return "", "", false
}

// body parses the intro and the steps.
func (p *parser) body(lines []string, start int) {
	t := p.t
	var prose []string // current prose (intro or step)
	var seg []string   // prose since the last ringlab block of the step
	var step *Step
	var openLine int
	var openMarker string
	var block []numbered // lines of an open ringlab block
	inRinglab, inOther := false, false

	flushSeg := func() {
		if text := strings.TrimSpace(strings.Join(seg, "\n")); text != "" && step != nil {
			step.Segments = append(step.Segments, Segment{Prose: text})
		}
		seg = seg[:0]
	}
	flush := func() {
		text := strings.TrimSpace(strings.Join(prose, "\n"))
		if step == nil {
			t.Intro = text
		} else {
			step.Prose = text
			flushSeg()
		}
		prose, seg = prose[:0], seg[:0]
	}
	addProse := func(s string) {
		prose = append(prose, s)
		seg = append(seg, s)
	}
	addBlock := func(block []numbered) {
		if step == nil {
			return
		}
		first := len(step.Directives)
		p.directives(step, block)
		if n := len(step.Directives) - first; n > 0 {
			idx := make([]int, n)
			for i := range idx {
				idx[i] = first + i
			}
			step.Segments = append(step.Segments, Segment{Directives: idx})
		}
	}
	endStep := func() {
		if step == nil {
			return
		}
		flush()
		p.finishStep(step)
		t.Steps = append(t.Steps, *step)
		step = nil
	}
	for i := start; i < len(lines); i++ {
		ln := i + 1
		s := lines[i]
		if inRinglab || inOther {
			if m, info, ok := fence(s); ok && info == "" && strings.HasPrefix(m, openMarker[:1]) && len(m) >= len(openMarker) {
				if inRinglab {
					addBlock(block)
					block = block[:0]
				} else {
					addProse(s)
				}
				inRinglab, inOther = false, false
				continue
			}
			if inRinglab {
				block = append(block, numbered{ln, s})
			} else {
				addProse(s)
			}
			continue
		}
		if m, info, ok := fence(s); ok {
			openLine, openMarker = ln, m
			lang, _, _ := strings.Cut(info, " ")
			if lang == "ringlab" {
				if step == nil {
					p.errf(ln, "a ringlab block before the first \"## Step 1: ...\" heading")
				}
				if info != "ringlab" {
					p.errf(ln, "a ringlab block takes no options after \"ringlab\" (got %q)", info)
				}
				inRinglab = true
				flushSeg()
				continue
			}
			inOther = true
			addProse(s)
			continue
		}
		if strings.HasPrefix(s, "## ") || s == "##" {
			m := stepHeading.FindStringSubmatch(s)
			if m == nil {
				p.errf(ln, "a level-2 heading must be \"## Step N: title\" (use ### inside a step), got %q", s)
				continue
			}
			n, _ := strconv.Atoi(m[1])
			endStep()
			if want := len(t.Steps) + 1; n != want {
				p.errf(ln, "step %d: want step %d here (steps are numbered 1, 2, 3 ... in order)", n, want)
			}
			if len(t.Steps) == 0 {
				flush()
			}
			step = &Step{Number: n, Title: strings.TrimSpace(m[2]), Line: ln}
			continue
		}
		if strings.HasPrefix(s, "# ") {
			p.errf(ln, "no level-1 headings: the title is in the front matter")
			continue
		}
		addProse(s)
	}
	if inRinglab || inOther {
		p.errf(openLine, "code block opened here is not closed (want a line %q)", openMarker)
		if inRinglab {
			addBlock(block)
		}
	}
	if step == nil {
		flush()
	}
	endStep()
	if len(t.Steps) == 0 {
		p.errf(len(lines), "no steps: a tutorial needs at least one \"## Step 1: title\"")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func knownRepro(id string) bool { return contains(reproIDs(), id) }

func reproIDs() []string {
	var out []string
	for _, r := range scenario.Reproductions() {
		if !contains(out, r.ID) {
			out = append(out, r.ID)
		}
	}
	return out
}
