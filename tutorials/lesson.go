package tutorials

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"strings"
	"unicode/utf8"

	"ringlab/engine"
	"ringlab/engine/scenario"
)

// A lesson is a tutorial that does not ship: a file in the format of this
// directory, written by a reader, loaded by the page from a file, a URL or
// a link, by a workshop room from its log, or checked by `ringlab
// tutorial check FILE`. It is checked by the same parser as the embedded
// ones, with a size limit and a look at its bytes first.

// MaxLessonBytes bounds a lesson's text: four times the longest tutorial
// that ships, and small enough to parse at once in a browser tab.
const MaxLessonBytes = 256 << 10

// LessonPrefix starts every lesson's name.
const LessonPrefix = "lesson-"

// LessonName is the name a lesson goes by wherever it is loaded:
// "lesson-" and the first 12 hex digits of the SHA-256 of its text, so
// that two pages (an instructor's and a student's, a link's sender and
// its reader) name the same text the same, and another text otherwise.
func LessonName(text []byte) string {
	sum := sha256.Sum256(text)
	return LessonPrefix + hex.EncodeToString(sum[:6])
}

// IsLesson reports whether name is a lesson's (LessonName) rather than an
// embedded tutorial's.
func IsLesson(name string) bool { return strings.HasPrefix(name, LessonPrefix) }

// ParseLesson checks a lesson's bytes and parses them as Parse does: at
// most MaxLessonBytes, text (UTF-8, no NUL or other control byte but tab,
// form feed, line feed and carriage return), then the tutorial format.
// Every error names file and the line at fault. The tutorial is named by
// LessonName and has no number.
func ParseLesson(file string, data []byte) (*Tutorial, error) {
	if len(data) > MaxLessonBytes {
		return nil, ErrorList{{File: file, Line: 1, Msg: fmt.Sprintf("%d bytes: a lesson has at most %d bytes (%d KiB)", len(data), MaxLessonBytes, MaxLessonBytes>>10)}}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, ErrorList{{File: file, Line: 1, Msg: "empty: a lesson is a Markdown file in the format of tutorials/README.md"}}
	}
	if off, why := notText(data); off >= 0 {
		line := 1 + bytes.Count(data[:off], []byte("\n"))
		return nil, ErrorList{{File: file, Line: line, Msg: fmt.Sprintf("not Markdown text: %s at byte %d (is this a binary file?)", why, off)}}
	}
	t, err := Parse(file, data)
	if err != nil {
		return nil, err
	}
	t.Name, t.Number = LessonName(data), 0
	return t, nil
}

// notText returns the offset of the first byte that text does not have,
// and what it is, or -1.
func notText(data []byte) (int, string) {
	for i := 0; i < len(data); {
		c := data[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' || c == 0x7f {
				return i, fmt.Sprintf("control byte 0x%02x", c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i, fmt.Sprintf("byte 0x%02x is not UTF-8", c)
		}
		i += n
	}
	return -1, ""
}

// MaxPackedLesson bounds a packed lesson (PackLesson) that UnpackLesson
// reads: a lesson of MaxLessonBytes that does not compress, in base64.
const MaxPackedLesson = (MaxLessonBytes+MaxLessonBytes/64+64)*4/3 + 4

// PackLesson is a lesson's text as a link or a room carries it: deflated
// (RFC 1951, raw, the best compression) and in unpadded URL-safe base64
// (RFC 4648 section 5), so that it fits in an address's fragment and in
// JSON without escapes. The same text always packs the same.
func PackLesson(text []byte) string {
	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, flate.BestCompression) // the level is valid
	w.Write(text)
	w.Close()
	return base64.RawURLEncoding.EncodeToString(b.Bytes())
}

// UnpackLesson reverses PackLesson, refusing what is not base64 or
// deflate, and a text that inflates past MaxLessonBytes (it stops
// reading there).
func UnpackLesson(packed string) ([]byte, error) {
	if len(packed) > MaxPackedLesson {
		return nil, fmt.Errorf("a packed lesson has at most %d characters, got %d", MaxPackedLesson, len(packed))
	}
	raw, err := base64.RawURLEncoding.DecodeString(packed)
	if err != nil {
		return nil, fmt.Errorf("a packed lesson is unpadded URL-safe base64: %v", err)
	}
	r := flate.NewReader(bytes.NewReader(raw))
	defer r.Close()
	text, err := io.ReadAll(io.LimitReader(r, MaxLessonBytes+1))
	if err != nil {
		return nil, fmt.Errorf("a packed lesson is deflated text: %v", err)
	}
	if len(text) > MaxLessonBytes {
		return nil, fmt.Errorf("a packed lesson inflates past %d bytes (%d KiB), the most a lesson has", MaxLessonBytes, MaxLessonBytes>>10)
	}
	return text, nil
}

// CheckNames finds, before anything runs, the names a tutorial's show,
// check and answer directives read that no world of its steps has and no
// mark, measure, compare or host of it binds: a misspelt counter
// (rx_packetz) that would otherwise fail only when its step runs. It
// reports each such name at its line, with the closest name a world has.
// A world is built (not run) only for a step that reads a name the
// worlds built so far lack, so a lesson costs a build or two; a name one
// step's world has and another's lacks (rq1.* with one queue) is left to
// the run, as is a step whose world cannot be built.
func CheckNames(t *Tutorial) error {
	binds, prefixes := map[string]bool{}, map[string]bool{}
	for _, st := range t.Steps {
		for _, d := range st.Directives {
			switch d.Op {
			case OpMeasure:
				binds[d.Name], binds[d.Name+".limit"] = true, true
			case OpCompare, OpMark, OpHost:
				prefixes[d.Name] = true
			}
		}
	}
	known := Figures{}
	built := map[*scenario.Scenario]bool{}
	var errs ErrorList
	var scen *scenario.Scenario
	for _, st := range t.Steps {
		if st.Scenario != nil {
			scen = st.Scenario
		}
		for _, d := range st.Directives {
			if d.Op != OpShow && d.Op != OpCheck && d.Op != OpAnswer {
				continue
			}
			for _, e := range d.exprs {
				if e == nil {
					continue // a show group
				}
				for _, n := range e.Names() {
					n = canonical(n) // time_ns reads sim_time_ns
					prefix, _, dotted := strings.Cut(n, ".")
					if binds[n] || dotted && prefixes[prefix] {
						continue
					}
					if _, ok := known[n]; !ok && scen != nil && !built[scen] {
						built[scen] = true
						if w, err := engine.New(*scen); err == nil {
							maps.Copy(known, worldFigures(w))
						}
					}
					if _, ok := known[n]; ok || len(known) == 0 {
						continue
					}
					msg := fmt.Sprintf("%s: no world of this tutorial has a figure named %s", d.Op, n)
					if sug := suggest(n, known.sortedNames()); sug != "" {
						msg += fmt.Sprintf(" (did you mean %s?)", sug)
					}
					if len(errs) < maxErrors {
						errs = append(errs, &Error{File: t.File, Line: d.Line, Msg: msg})
					}
				}
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
