package browsertest

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docLesson is the complete lesson of docs/writing-tutorials.md.
func docLesson(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "writing-tutorials.md"))
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)\n````markdown\n(.*?\n)````\n").FindSubmatch(doc)
	require.NotNil(t, m)
	return string(m[1])
}

// lessonFile writes text to a file of its own and returns its path.
func lessonFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	return p
}

// openLessons opens the Tutorials panel and its Load a lesson box.
func openLessons(p *page) {
	p.t.Helper()
	p.do(chromedp.Click("#tutorial-btn"))
	p.waitJS(`!document.getElementById("tutorial-panel").hidden`, 10*time.Second)
	p.do(chromedp.Click("#tut-lesson-btn"))
	p.waitJS(`!document.getElementById("tut-lesson").hidden`, 10*time.Second)
}

// upload gives the file input a file.
func upload(p *page, path string) {
	p.t.Helper()
	p.do(chromedp.SetUploadFiles("#tut-lesson-file", []string{path}))
}

// atStep waits until the panel shows step n of the lesson titled title
// with its checks holding (n > 0) or its introduction (n == 0).
func atStep(p *page, title string, n string) {
	p.t.Helper()
	cond := `document.getElementById("tut-h").textContent === "Lesson: ` + title + `" && document.getElementById("tutorial-panel").dataset.step === "` + n + `"`
	if n != "0" {
		cond += ` && document.getElementById("tutorial-panel").dataset.checks === "ok"`
	}
	deadline := time.Now().Add(60 * time.Second)
	for !eval[bool](p, cond) {
		if time.Now().After(deadline) {
			p.t.Fatalf("not at step %s of %q: heading %q, step %q, checks %q, error %q, body %.300q", n, title,
				eval[string](p, `document.getElementById("tut-h").textContent`),
				eval[string](p, `document.getElementById("tutorial-panel").dataset.step || ""`),
				eval[string](p, `document.getElementById("tutorial-panel").dataset.checks || ""`),
				eval[string](p, `document.getElementById("tut-lesson-error").textContent`),
				eval[string](p, `document.getElementById("tut-body").textContent`))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLessonFromFile: a lesson picked as a file is checked by the game
// and runs as the shipped tutorials do: its introduction, then its steps'
// worlds in pane A and their checks; its link carries its text.
func TestLessonFromFile(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "?preset=small-ring&speed=0")
	openLessons(p)
	upload(p, lessonFile(t, "twenty-packets.md", docLesson(t)))
	atStep(p, "Twenty packets", "0")
	assert.True(t, eval[bool](p, `document.getElementById("tut-lesson-error").hidden`))
	assert.Contains(t, eval[string](p, `document.getElementById("tut-select").selectedOptions[0].textContent`), "Lesson: Twenty packets")
	assert.Contains(t, eval[string](p, `document.getElementById("tut-body").textContent`), "counts every packet it receives")
	p.do(chromedp.Click("#tut-next"))
	atStep(p, "Twenty packets", "1")
	p.do(chromedp.Click(`.tut-opt[data-value="yes"]`), chromedp.Click(".tut-reveal"))
	p.waitJS(`document.getElementById("tut-q0-grade").dataset.verdict === "right"`, 20*time.Second)
	p.settle()
	assert.GreaterOrEqual(t, p.counter("rx_packets", 0), 20.0, "pane A shows the step's world")
	assert.Contains(t, eval[string](p, `document.getElementById("description").textContent`), "Lesson (Twenty packets), step 1")
	p.do(chromedp.Click("#tut-next"))
	atStep(p, "Twenty packets", "2")
	p.settle()
	assert.GreaterOrEqual(t, p.counter("rx_packets", 0), 40.0, "step 2 runs on")
	link := eval[string](p, `document.getElementById("tut-link").href`)
	u, err := url.Parse(link)
	require.NoError(t, err)
	assert.Equal(t, "step=2", u.RawQuery)
	assert.True(t, strings.HasPrefix(u.Fragment, "lesson="), "the link carries the text: %s", link)
	p.waitJS(`location.hash.startsWith("#lesson=") && location.search === "?step=2"`, 10*time.Second)
	screenshot(t, p.ctx, "lesson-from-file")
}

// TestLessonBadFiles: a file that is not a lesson is refused with the
// reason, and the line where there is one; the panel and pane A stay as
// they were.
func TestLessonBadFiles(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "?tutorial=descriptor-journey&step=1")
	p.waitJS(`document.getElementById("tutorial-panel").dataset.checks === "ok"`, 60*time.Second)
	p.settle()
	before := p.request(map[string]any{"type": "digest"})["digest"]
	p.do(chromedp.Click("#tut-lesson-btn"))
	good := docLesson(t)
	for _, tc := range []struct{ name, text, want string }{
		{"capture.md", "\xd4\xc3\xb2\xa1\x02\x00\x04\x00\x00\x00\x00\x00", "capture.md is not UTF-8 text (is it a binary file?)"},
		{"nul.md", "---\ntitle: x\x00\n", "nul.md:2: not Markdown text: control byte 0x00"},
		{"unknown.md", strings.Replace(good, "mark before", "frobnicate", 1), `unknown.md:29: unknown directive "frobnicate"`},
		{"check.md", strings.Replace(good, "check rq0.num_free <= rq0.size", "check rq0.num_free", 1), "check.md:32: check: want a comparison"},
		{"notes.md", "# Notes\n\nJust prose.\n", "notes.md:1: a tutorial starts with front matter"},
		{"huge.md", strings.Repeat("x", 256<<10+1), "huge.md is 262145 bytes: a lesson has at most 262144 (256 KiB)"},
	} {
		upload(p, lessonFile(t, tc.name, tc.text))
		p.waitJS(`document.getElementById("tut-lesson-error").textContent.includes(`+jsString(tc.name)+`)`, 20*time.Second)
		assert.Contains(t, eval[string](p, `document.getElementById("tut-lesson-error").textContent`), tc.want)
		assert.Equal(t, "descriptor-journey", eval[string](p, `document.getElementById("tut-select").value`), tc.name)
		assert.Equal(t, "Step 1: The ring at rest", eval[string](p, `document.getElementById("tut-step-title").textContent`), tc.name)
	}
	screenshot(t, p.ctx, "lesson-bad-file")
	p.settle()
	assert.Equal(t, before, p.request(map[string]any{"type": "digest"})["digest"], "pane A's world untouched")
	assert.Equal(t, 0, eval[int](p, `document.querySelectorAll('#tut-select option[data-lesson]').length`), "no lesson added")
}

func jsString(s string) string {
	b := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
	return `"` + b + `"`
}

// TestLessonFromURL: a lesson at a web address loads from this server,
// and from another that allows the read (CORS); one that does not, an
// address that is not http(s), and a 404 each get a clear error. The
// link carries the URL.
func TestLessonFromURL(t *testing.T) {
	t.Parallel()
	text := docLesson(t)
	ts := serverWith(t, func(mux *http.ServeMux) {
		mux.HandleFunc("GET /lessons/twenty.md", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
			w.Write([]byte(text))
		})
	})
	other := func(cors bool) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if cors {
				w.Header().Set("Access-Control-Allow-Origin", "*")
			}
			w.Write([]byte(strings.Replace(text, "title: Twenty packets", "title: Twenty packets, elsewhere", 1)))
		}))
		t.Cleanup(s.Close)
		return s
	}
	open := other(true)
	closed := other(false)

	p := openURL(t, browser(t), ts.URL+"/index.html?preset=small-ring&speed=0")
	openLessons(p)
	loadURL := func(addr string) {
		p.t.Helper()
		eval[chromedp.Void](p, `(() => { document.getElementById("tut-lesson-error").textContent = "";
			document.getElementById("tut-lesson").hidden = false;
			document.getElementById("tut-lesson-url").value = `+jsString(addr)+`;
			document.getElementById("tut-lesson-form").requestSubmit(); })()`)
	}
	errorSays := func(want string) {
		p.t.Helper()
		p.waitJS(`document.getElementById("tut-lesson-error").textContent !== ""`, 20*time.Second)
		assert.Contains(t, eval[string](p, `document.getElementById("tut-lesson-error").textContent`), want)
	}

	loadURL(closed.URL + "/lesson.md")
	errorSays("does not let this page read it")
	loadURL("ftp://example.org/lesson.md")
	errorSays("a lesson's address is http:// or https://, not ftp:")
	loadURL(ts.URL + "/lessons/missing.md")
	errorSays("the server answered 404")
	assert.Equal(t, "", eval[string](p, `document.getElementById("tut-select").value`), "nothing loaded")

	loadURL(open.URL + "/lesson.md")
	atStep(p, "Twenty packets, elsewhere", "0")
	loadURL(ts.URL + "/lessons/twenty.md")
	atStep(p, "Twenty packets", "0")
	p.do(chromedp.Click("#tut-next"))
	atStep(p, "Twenty packets", "1")
	u, err := url.Parse(eval[string](p, `document.getElementById("tut-link").href`))
	require.NoError(t, err)
	assert.Equal(t, ts.URL+"/lessons/twenty.md", u.Query().Get("lesson"), "the link carries the URL")
	assert.Equal(t, "1", u.Query().Get("step"))
	assert.Empty(t, u.Fragment)
	screenshot(t, p.ctx, "lesson-from-url")
}

// TestLessonLinkRoundTrip: the link of a lesson's step, from a file (its
// text in the fragment) or a URL, opens the same lesson at that step in
// another tab.
func TestLessonLinkRoundTrip(t *testing.T) {
	t.Parallel()
	text := docLesson(t)
	ts := serverWith(t, func(mux *http.ServeMux) {
		mux.HandleFunc("GET /lessons/twenty.md", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(text)) })
	})
	p := open(t, browser(t), ts.URL, "?preset=small-ring&speed=0")
	openLessons(p)
	upload(p, lessonFile(t, "twenty.md", text))
	atStep(p, "Twenty packets", "0")
	p.do(chromedp.Click("#tut-next"))
	atStep(p, "Twenty packets", "1")
	p.settle()
	digest := p.request(map[string]any{"type": "digest"})["digest"]
	link := eval[string](p, `document.getElementById("tut-link").href`)
	p.do(chromedp.Navigate("about:blank")) // its game stops

	// One more tab, navigated from page to page (each page runs a game:
	// a tab each would run them all at once).
	q := openURL(t, browser(t), link)
	atStep(q, "Twenty packets", "1")
	q.settle()
	assert.Equal(t, digest, q.request(map[string]any{"type": "digest"})["digest"], "the same world at the same step")

	again := func(addr string) {
		t.Helper()
		q.do(chromedp.Navigate("about:blank"))
		q = openURL(t, q.ctx, addr)
	}
	again(ts.URL + "/index.html?lesson=" + url.QueryEscape(ts.URL+"/lessons/twenty.md") + "&step=2")
	atStep(q, "Twenty packets", "2")

	// A damaged fragment is said to be one.
	again(ts.URL + "/index.html?step=1#lesson=%%%")
	q.waitJS(`document.getElementById("tut-lesson-error").textContent.includes("damaged")`, 60*time.Second)
	again(ts.URL + "/index.html?step=1#lesson=AAAA")
	q.waitJS(`document.getElementById("tut-lesson-error").textContent.includes("deflated")`, 60*time.Second)
}
