package tutorials

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docExample is the complete lesson of docs/writing-tutorials.md.
func docExample(t *testing.T) []byte {
	t.Helper()
	doc, err := os.ReadFile("../docs/writing-tutorials.md")
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)\n````markdown\n(.*?\n)````\n").FindSubmatch(doc)
	require.NotNil(t, m, "the docs' example is a ````markdown block")
	return m[1]
}

// TestWritingTutorialsExample: the lesson docs/writing-tutorials.md shows
// parses as a lesson and every check of it holds.
func TestWritingTutorialsExample(t *testing.T) {
	text := docExample(t)
	l, err := ParseLesson("twenty-packets.md", text)
	require.NoError(t, err)
	assert.Equal(t, "Twenty packets", l.Title)
	assert.Equal(t, LessonName(text), l.Name)
	require.Len(t, l.Steps, 2)
	assert.True(t, l.Steps[1].Continues, "step 2 continues step 1's world")
	r := Run(l, Options{})
	assert.Zero(t, r.Failed, "%v", r.Failures())
	assert.Equal(t, 3, r.Checks, "an answer and two checks")
	// The docs say it fits in a link.
	assert.Less(t, len(PackLesson(text)), 32<<10)
}

func TestLessonName(t *testing.T) {
	a, b := []byte("one text"), []byte("one text.")
	assert.Regexp(t, `^lesson-[0-9a-f]{12}$`, LessonName(a))
	assert.Equal(t, LessonName(a), LessonName([]byte("one text")), "the same text, the same name")
	assert.NotEqual(t, LessonName(a), LessonName(b))
	assert.True(t, IsLesson(LessonName(a)))
	assert.False(t, IsLesson("descriptor-journey"))
}

// TestParseLessonRefuses: each kind of bad input gets an error naming the
// file and the line at fault.
func TestParseLessonRefuses(t *testing.T) {
	good := string(docExample(t))
	for _, tc := range []struct{ name, text, want string }{
		{"binary", "---\ntitle: x\n\x00\x01", "l.md:3: not Markdown text: control byte 0x00 at byte 13"},
		{"not UTF-8", "---\ntitle: caf\xe9\n", "l.md:2: not Markdown text: byte 0xe9 is not UTF-8 at byte 14"},
		{"a PNG", "\x89PNG\r\n\x1a\n", "l.md:1: not Markdown text: byte 0x89 is not UTF-8 at byte 0"},
		{"empty", " \n\n", "l.md:1: empty"},
		{"too large", strings.Repeat("#", MaxLessonBytes+1), "l.md:1: 262145 bytes: a lesson has at most 262144 bytes (256 KiB)"},
		{"plain Markdown", "# Notes\n\nSome text.\n", "l.md:1: a tutorial starts with front matter"},
		{"unknown directive", strings.Replace(good, "mark before", "remember before", 1), `l.md:29: unknown directive "remember"`},
		{"a check with no comparison", strings.Replace(good, "check rq0.num_free <= rq0.size", "check rq0.num_free", 1), "l.md:32: check: want a comparison"},
		{"a check of an unknown function", strings.Replace(good, "check rq0.num_free <= rq0.size", "check avg(rq0.num_free) > 0", 1), "l.md:32: check: unknown function avg"},
		{"a string compared by size", strings.Replace(good, "check rq0.num_free <= rq0.size", `check mode < "big"`, 1), "l.md:32: check: strings compare only with == and !="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseLesson("l.md", []byte(tc.text))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	// Tabs, form feeds and CRLF line ends are text.
	_, err := ParseLesson("l.md", []byte(strings.ReplaceAll(good, "\n", "\r\n")))
	assert.NoError(t, err)
}

func TestPackLesson(t *testing.T) {
	text := docExample(t)
	p := PackLesson(text)
	assert.Regexp(t, `^[A-Za-z0-9_-]+$`, p, "fits a URL's fragment and JSON as it is")
	assert.Less(t, len(p), len(text), "deflated")
	assert.Equal(t, p, PackLesson(text), "the same text packs the same")
	back, err := UnpackLesson(p)
	require.NoError(t, err)
	assert.Equal(t, text, back)

	_, err = UnpackLesson("not base64!")
	assert.ErrorContains(t, err, "base64")
	_, err = UnpackLesson("AAAA")
	assert.ErrorContains(t, err, "deflated")
	// A bomb: a few hundred bytes that inflate past the limit.
	bomb := PackLesson([]byte(strings.Repeat("a", MaxLessonBytes+1)))
	assert.Less(t, len(bomb), 2000)
	_, err = UnpackLesson(bomb)
	assert.ErrorContains(t, err, "inflates past")
	_, err = UnpackLesson(strings.Repeat("A", MaxPackedLesson+1))
	assert.ErrorContains(t, err, "at most")
}

// TestShippedTutorialsAreLessons: the ten pass a lesson's checks and
// pack into a link and a room's command.
func TestShippedTutorialsAreLessons(t *testing.T) {
	srcs, err := Sources()
	require.NoError(t, err)
	for _, s := range srcs {
		_, err := ParseLesson(s.File, s.Data)
		assert.NoError(t, err, s.File)
		assert.Less(t, len(PackLesson(s.Data)), 32<<10, s.File)
	}
}

// TestCheckNames: a name no world of the step has is found before the
// step runs, at its line, with the closest name; the shipped tutorials
// and the docs' lesson read only names their worlds have.
func TestCheckNames(t *testing.T) {
	good := string(docExample(t))
	l, err := ParseLesson("l.md", []byte(good))
	require.NoError(t, err)
	assert.NoError(t, CheckNames(l))
	bad := strings.Replace(good, "check rq0.num_free <= rq0.size", "check rq0.num_fre <= rq0.size", 1)
	bad = strings.Replace(bad, "show rx_packets, rq0.num_free", "show rx_packetz, rq0.num_free", 1)
	l, err = ParseLesson("l.md", []byte(bad))
	require.NoError(t, err, "it parses: only the world knows its names")
	err = CheckNames(l)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "l.md:19: show: no world of this tutorial has a figure named rx_packetz (did you mean rx_packets?)")
	assert.Contains(t, err.Error(), "l.md:32: check: no world of this tutorial has a figure named rq0.num_fre (did you mean rq0.num_free?)")
	assert.NotContains(t, err.Error(), "before.", "a mark's names are bound")

	all, err := All()
	require.NoError(t, err)
	for _, tt := range all {
		assert.NoError(t, CheckNames(tt), tt.File)
	}
}
