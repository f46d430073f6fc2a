package tutorials

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const frontMatter = `---
title: T
level: beginner
duration: 5 min
learn:
- one thing
---
`

// tut builds a tutorial file: the front matter, then body. The body's
// first line is line 8.
func tut(body string) string { return frontMatter + body }

const goodStep = "## Step 1: s\n\n```ringlab\npreset default\ncheck rx_packets >= 0\n```\n"

func TestParseGood(t *testing.T) {
	src := tut(`Intro text.

## Step 1: Start

Before.

` + "```ringlab" + `
preset default   # a comment
set ring_size=32
set traffic={"size": 128, "proto": "udp"}
question number(packets) "How # many?"
run packets=10
show rx_packets, ratio(rx_packets, 2), ring
answer rx_packets >= 10
check rq0.size == 32 \
      # a comment on a continued line is fine
` + "```" + `

After.

` + "```c" + `
## not a heading inside code
` + "```" + `

## Step 2: Continue

` + "```ringlab" + `
run duration=1ms
mark m
measure x = scenario delivered_gbps warmup=1ms window=2ms
compare default small-ring delivered_gbps as c
host lo
check m.rx_packets > 0
` + "```" + `
`)
	tt, err := Parse("tutorials/00-x.md", []byte(src))
	require.NoError(t, err)
	assert.Equal(t, "T", tt.Title)
	assert.Equal(t, 5, tt.Minutes)
	assert.Equal(t, []string{"one thing"}, tt.Learn)
	assert.Equal(t, "Intro text.", tt.Intro)
	require.Len(t, tt.Steps, 2)

	s1 := tt.Steps[0]
	assert.Equal(t, "Start", s1.Title)
	assert.Equal(t, 10, s1.Line)
	require.NotNil(t, s1.Scenario)
	assert.Equal(t, 32, s1.Scenario.RingSize)
	assert.Equal(t, 128, s1.Scenario.Traffic.Size)
	assert.Equal(t, 1, s1.Scenario.Traffic.Flows, "set on an object merges, keeping the other fields")
	assert.False(t, s1.Continues)
	ops := []string{}
	for _, d := range s1.Directives {
		ops = append(ops, d.Op)
	}
	assert.Equal(t, []string{"preset", "set", "set", "question", "run", "show", "answer", "check"}, ops)
	assert.Equal(t, 15, s1.Directives[0].Line)
	assert.Equal(t, "How # many?", s1.Directives[3].Question)
	assert.Equal(t, uint64(10), s1.Directives[4].Packets)
	assert.Equal(t, []string{"rx_packets", "ratio(rx_packets, 2)", "ring"}, s1.Directives[5].Exprs)
	assert.Equal(t, "check rq0.size == 32", s1.Directives[7].Text, "continuation joined, comment removed")
	assert.Equal(t, 22, s1.Directives[7].Line)
	require.Len(t, s1.Segments, 3)
	assert.Equal(t, "Before.", s1.Segments[0].Prose)
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, s1.Segments[1].Directives)
	assert.Contains(t, s1.Segments[2].Prose, "After.")
	assert.Contains(t, s1.Segments[2].Prose, "## not a heading inside code")
	assert.NotContains(t, s1.Prose, "preset default")

	s2 := tt.Steps[1]
	assert.Nil(t, s2.Scenario)
	assert.True(t, s2.Continues)
	assert.Equal(t, int64(1e6), s2.Directives[0].DurationNS)
	m := s2.Directives[2]
	assert.Equal(t, "x", m.Name)
	assert.Equal(t, ConfigScenario, m.Config)
	assert.Equal(t, int64(1e6), m.WarmupNS)
	assert.Equal(t, int64(2e6), m.WindowNS)
	c := s2.Directives[3]
	assert.Equal(t, "c", c.Name)
	assert.Equal(t, "small-ring", c.ConfigB)
	assert.Equal(t, "lo", s2.Directives[4].Iface)
	assert.Equal(t, "host", s2.Directives[4].Name)

	// The parsed form is plain data: it survives JSON.
	raw, err := json.Marshal(tt)
	require.NoError(t, err)
	var back Tutorial
	require.NoError(t, json.Unmarshal(raw, &back))
	assert.Equal(t, tt.Steps[0].Scenario, back.Steps[0].Scenario)
	assert.Equal(t, tt.Steps[1].Directives[3].ConfigB, back.Steps[1].Directives[3].ConfigB)
	assert.Equal(t, tt.Steps[0].Segments, back.Steps[0].Segments)
}

func TestParseQuotedTitleAndReproduces(t *testing.T) {
	src := "---\ntitle: \"A: B\"\nlevel: advanced\nduration: 10 min\nreproduces: R1, R3\nlearn:\n  - x\n---\n" + goodStep
	tt, err := Parse("f.md", []byte(src))
	require.NoError(t, err)
	assert.Equal(t, "A: B", tt.Title)
	assert.Equal(t, []string{"R1", "R3"}, tt.Reproduces)
}

// TestParseErrors feeds malformed tutorials and wants each problem at its
// file and line.
func TestParseErrors(t *testing.T) {
	block := func(lines ...string) string {
		return "## Step 1: s\n\n```ringlab\n" + strings.Join(lines, "\n") + "\n```\n"
	}
	tests := []struct {
		name string
		src  string
		line int
		msg  string
	}{
		{"no front matter", "# Title\n", 1, "starts with front matter"},
		{"empty file", "", 1, "starts with front matter"},
		{"front matter not closed", "---\ntitle: x\n", 1, "front matter is not closed"},
		{"unknown key", "---\ntitle: x\nauthor: me\n---\n", 3, `unknown front matter key "author"`},
		{"bad level", "---\ntitle: x\nlevel: expert\n---\n", 3, `level: "expert": want one of beginner`},
		{"bad duration", "---\ntitle: x\nduration: 20 minutes\n---\n", 3, `want minutes, as in "20 min"`},
		{"duplicate key", "---\ntitle: x\ntitle: y\n---\n", 3, "given twice (first at line 2)"},
		{"learn with a value", "---\nlearn: stuff\n---\n", 2, "the items go on the following lines"},
		{"item outside learn", "---\ntitle: x\n- item\n---\n", 3, "list item outside learn:"},
		{"missing title", "---\nlevel: beginner\nduration: 5 min\nlearn:\n- a\n---\n" + goodStep, 6, "front matter has no title:"},
		{"no learn items", "---\ntitle: t\nlevel: beginner\nduration: 5 min\nlearn:\n---\n" + goodStep, 5, "learn: has no items"},
		{"unknown reproduction", "---\ntitle: t\nlevel: beginner\nduration: 5 min\nreproduces: R9\nlearn:\n- a\n---\n" + goodStep, 5, `"R9" is not a published measurement`},
		{"bad quoted value", "---\ntitle: \"x\n---\n", 2, "bad quoted value"},
		{"no steps", tut("Just prose.\n"), 8, "no steps"},
		{"level-1 heading", tut("# Big\n" + goodStep), 8, "no level-1 headings"},
		{"other level-2 heading", tut("## Background\n" + goodStep), 8, `a level-2 heading must be "## Step N: title"`},
		{"step numbered wrong", tut("## Step 2: s\n\n```ringlab\npreset default\ncheck rx_packets >= 0\n```\n"), 8, "step 2: want step 1 here"},
		{"step skipped", tut(goodStep + "## Step 3: t\n\n```ringlab\ncheck rx_packets >= 0\n```\n"), 14, "step 3: want step 2 here"},
		{"block before a step", tut("```ringlab\npreset default\n```\n" + goodStep), 8, "a ringlab block before the first"},
		{"block with options", tut("## Step 1: s\n```ringlab x\npreset default\ncheck rx_packets >= 0\n```\n"), 9, "takes no options"},
		{"unclosed ringlab block", tut("## Step 1: s\n```ringlab\npreset default\ncheck rx_packets >= 0\n"), 9, "code block opened here is not closed"},
		{"unclosed code block", tut(goodStep + "\n```sh\nls\n"), 15, "code block opened here is not closed"},
		{"step without block", tut("## Step 1: s\nprose\n"), 8, "step 1 has no ringlab block"},
		{"step without check", tut(block("preset default", "run packets=10")), 8, "step 1 has no check or answer"},
		{"unknown directive", tut(block("preset default", "frobnicate 3", "check rx_packets >= 0")), 12, `unknown directive "frobnicate"`},
		{"unknown preset", tut(block("preset nope", "check rx_packets >= 0")), 11, `no preset named "nope"`},
		{"preset with two names", tut(block("preset a b", "check rx_packets >= 0")), 11, "want one preset name"},
		{"set unknown field", tut(block("preset default", "set traffic.sise=100", "check rx_packets >= 0")), 12, `traffic.sise: the scenario has no field "sise"`},
		{"set invalid value", tut(block("preset default", "set ring_size=100", "check rx_packets >= 0")), 12, `ring_size="100": want a power of two`},
		{"set wrong type", tut(block("preset default", "set .ring_size=\"big\"", "check rx_packets >= 0")), 12, "ring_size: want int"},
		{"set bad knob value", tut(block("preset default", "set ring_size=\"big\"", "check rx_packets >= 0")), 12, `ring_size="big": not a whole number`},
		{"set through a number", tut(block("preset default", "set mtu.x=1", "check rx_packets >= 0")), 12, "mtu is not an object"},
		{"set without value", tut(block("preset default", "set mtu", "check rx_packets >= 0")), 12, "want set field.path=value"},
		{"set without scenario", tut(block("set mtu=9000", "check rx_packets >= 0")), 11, "no scenario yet: start with preset NAME"},
		{"preset after run", tut(block("preset default", "run packets=1", "preset default", "check rx_packets >= 0")), 13, "preset after other directives"},
		{"set after check", tut(block("preset default", "check rx_packets >= 0", "set mtu=9000")), 13, "set after other directives"},
		{"two presets", tut(block("preset default", "preset xdp-drop", "check rx_packets >= 0")), 12, "a step has one preset"},
		{"run without scenario", tut(block("run packets=1", "check rx_packets >= 0")), 8, "no step so far has a scenario"},
		{"run with nothing", tut(block("preset default", "run", "check rx_packets >= 0")), 12, "want exactly one of packets=N"},
		{"run with two options", tut(block("preset default", "run packets=1 events=2", "check rx_packets >= 0")), 12, "want exactly one of"},
		{"run unknown option", tut(block("preset default", "run seconds=1", "check rx_packets >= 0")), 12, `unknown option "seconds"`},
		{"run too many packets", tut(block("preset default", "run packets=1000000000", "check rx_packets >= 0")), 12, "at most 2000000"},
		{"run bad duration", tut(block("preset default", "run duration=5", "check rx_packets >= 0")), 12, "want a positive duration"},
		{"run too long", tut(block("preset default", "run duration=2s", "check rx_packets >= 0")), 12, "at most 200ms"},
		{"run zero packets", tut(block("preset default", "run packets=0", "check rx_packets >= 0")), 12, "want a positive whole number"},
		{"trace without events", tut(block("preset default", "run packets=3 trace", "check rx_packets >= 0")), 12, "trace lists each event: only with events=N"},
		{"trace too long", tut(block("preset default", "run events=65 trace", "check rx_packets >= 0")), 12, "N at most 64"},
		{"check not a condition", tut(block("preset default", "check rx_packets + 1")), 12, "want a comparison"},
		{"check syntax", tut(block("preset default", "check rx_packets >")), 12, "at column 13"},
		{"check empty", tut(block("preset default", "check")), 12, "want a condition"},
		{"show empty", tut(block("preset default", "show", "check rx_packets >= 0")), 12, "show: want expressions"},
		{"show bad expression", tut(block("preset default", "show rx_packets, (", "check rx_packets >= 0")), 12, "show: "},
		{"question unquoted", tut(block("preset default", "question number(packets) why?", "answer rx_packets >= 0")), 12, "want the question in double quotes"},
		{"question empty", tut(block("preset default", "question yesno \" \"", "answer yes because rx_packets >= 0")), 12, "question: empty"},
		{"answer without question", tut(block("preset default", "answer rx_packets >= 0")), 12, "answer without a question"},
		{"question without answer", tut(block("preset default", "question text \"q\"", "check rx_packets >= 0")), 12, "question without an answer"},
		{"two questions", tut(block("preset default", "question text \"a\"", "question text \"b\"", "answer rx_packets >= 0")), 13, "the question at line 12 has no answer"},
		// A prediction's kind: declared, well formed, and its answer of the
		// same kind.
		{"question without kind", tut(block("preset default", "question \"how many?\"", "answer rx_packets >= 0")), 12, "say what kind of prediction it asks for"},
		{"question unknown kind", tut(block("preset default", "question guess \"how many?\"", "answer rx_packets >= 0")), 12, "want question yesno"},
		{"number without unit", tut(block("preset default", "question number \"how many?\"", "answer rx_packets >= 0")), 12, "say the unit of the figure asked for"},
		{"choice of one", tut(block("preset default", "question choice(big) \"which?\"", "answer big because mode == \"big\"")), 12, "want 2 to 8 options, got 1"},
		{"choice twice", tut(block("preset default", "question choice(big, Big) \"which?\"", "answer big because mode == \"big\"")), 12, `option "Big" given twice`},
		{"choice empty option", tut(block("preset default", "question choice(big,, small) \"which?\"", "answer big because mode == \"big\"")), 12, "none empty"},
		{"yesno with options", tut(block("preset default", "question yesno(a, b) \"moved?\"", "answer yes because rx_packets >= 0")), 12, "yesno takes no options"},
		{"yesno answer without reply", tut(block("preset default", "question yesno \"moved?\"", "answer rx_packets >= 0")), 13, "answer yes because CONDITION"},
		{"yesno answer maybe", tut(block("preset default", "question yesno \"moved?\"", "answer maybe because rx_packets >= 0")), 13, `reply is yes or no, not "maybe"`},
		{"choice answer not an option", tut(block("preset default", "question choice(small, big) \"which?\"", "answer mergeable because mode == \"mergeable\"")), 13, `"mergeable" is not an option of the question (small, big)`},
		{"number answer with reply", tut(block("preset default", "question number(packets) \"how many?\"", "answer yes because rx_packets >= 0")), 13, "no reply before because"},
		{"text answer with reply", tut(block("preset default", "question text \"when?\"", "answer soon because rx_packets >= 0")), 13, "not graded"},
		{"unterminated string", tut(block("preset default", "question \"open", "check rx_packets >= 0")), 12, "unterminated string"},
		{"mark bad name", tut(block("preset default", "mark Warm", "check rx_packets >= 0")), 12, "mark: want a name"},
		{"measure bad form", tut(block("preset default", "measure x default delivered_gbps", "check rx_packets >= 0")), 12, "want measure NAME = CONFIG METRIC"},
		{"measure bad metric", tut(block("preset default", "measure x = default speed", "check rx_packets >= 0")), 12, `unknown metric "speed"`},
		{"measure bad config", tut(block("preset default", "measure x = nope tx_mpps", "check rx_packets >= 0")), 12, `"nope" is neither "scenario"`},
		{"measure window too long", tut(block("preset default", "measure x = default tx_mpps window=150ms", "check rx_packets >= 0")), 12, "at most 100ms"},
		{"measure scenario without one", tut(block("measure x = scenario tx_mpps", "check x > 0")), 11, "no scenario yet"},
		{"compare missing metric", tut(block("preset default", "compare default xdp-drop", "check rx_packets >= 0")), 12, "want compare A B METRIC"},
		{"compare bad name", tut(block("preset default", "compare default xdp-drop tx_mpps as X", "check rx_packets >= 0")), 12, `bad name "X"`},
		{"compare bad option", tut(block("preset default", "compare default xdp-drop tx_mpps speed=1", "check rx_packets >= 0")), 12, `unknown option "speed"`},
		{"host bad form", tut(block("preset default", "host lo eth0", "check rx_packets >= 0")), 12, "want host IFACE [as NAME]"},
		{"host bad iface", tut(block("preset default", "host a/b", "check rx_packets >= 0")), 12, "not an interface name"},
		{"continued line reported at its first line", tut(block("preset default", "check rx_packets \\", "  >>= 0")), 12, "check: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("tutorials/99-bad.md", []byte(tc.src))
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrParse), "errors.Is(err, ErrParse): %v", err)
			var list ErrorList
			require.True(t, errors.As(err, &list), "%T", err)
			require.NotEmpty(t, list)
			first := list[0]
			assert.Equal(t, "tutorials/99-bad.md", first.File)
			assert.Equal(t, tc.line, first.Line, "line of %v", err)
			assert.Contains(t, first.Msg, tc.msg)
			assert.True(t, strings.HasPrefix(err.Error(), "tutorials/99-bad.md:"), err.Error())
		})
	}
}

// TestParseReportsEveryProblem wants all problems of a file, not just the
// first, each at its line.
func TestParseReportsEveryProblem(t *testing.T) {
	src := tut("## Step 1: s\n```ringlab\npreset default\nfoo\nrun packets=x\ncheck 1 +\n```\n")
	_, err := Parse("f.md", []byte(src))
	var list ErrorList
	require.True(t, errors.As(err, &list))
	var lines []int
	for _, e := range list {
		lines = append(lines, e.Line)
	}
	assert.Equal(t, []int{11, 12, 13, 8}, lines, "%v", err)
}

func TestParseNotUTF8(t *testing.T) {
	_, err := Parse("f.md", []byte{0xff, 0xfe})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "f.md:1: not UTF-8")
}

func TestParseCRLF(t *testing.T) {
	src := strings.ReplaceAll(tut(goodStep), "\n", "\r\n")
	tt, err := Parse("f.md", []byte(src))
	require.NoError(t, err)
	assert.Equal(t, "s", tt.Steps[0].Title)
}

func TestApplySetNullRemovesXDP(t *testing.T) {
	src := tut(block3("preset xdp-drop", "set xdp=null", "check rx_packets >= 0"))
	tt, err := Parse("f.md", []byte(src))
	require.NoError(t, err)
	assert.Nil(t, tt.Steps[0].Scenario.XDP)

	src = tut(block3("preset xdp-drop", `set xdp={"program": "xdp_pass"}`, "check rx_packets >= 0"))
	tt, err = Parse("f.md", []byte(src))
	require.NoError(t, err)
	assert.Equal(t, "xdp_pass", tt.Steps[0].Scenario.XDP.Program)
}

func TestScenarioCarriesOverSteps(t *testing.T) {
	src := tut(block3("preset default", "set mtu=9000", "check rx_packets >= 0") +
		"## Step 2: t\n```ringlab\nset ring_size=64\ncheck rx_packets >= 0\n```\n")
	tt, err := Parse("f.md", []byte(src))
	require.NoError(t, err)
	s2 := tt.Steps[1].Scenario
	require.NotNil(t, s2)
	assert.Equal(t, 9000, s2.MTU, "a set without preset starts from the previous step's scenario")
	assert.Equal(t, 64, s2.RingSize)
	assert.Equal(t, 16, tt.Steps[0].Scenario.RingSize, "the previous step's scenario is not changed")
}

func block3(lines ...string) string {
	return "## Step 1: s\n\n```ringlab\n" + strings.Join(lines, "\n") + "\n```\n"
}

func TestSplitTop(t *testing.T) {
	assert.Equal(t, []string{"a", " ratio(b, c)", ` "x,y"`, " d"}, splitTop(`a, ratio(b, c), "x,y", d`))
}

func TestSources(t *testing.T) {
	srcs, err := Sources()
	require.NoError(t, err)
	require.NotEmpty(t, srcs)
	for i, s := range srcs {
		assert.Equal(t, i+1, s.Number, "tutorials are numbered 1, 2, 3 ... without gaps")
		assert.True(t, strings.HasPrefix(s.File, "tutorials/"))
	}
	for _, name := range []string{"descriptor-journey", "1", "01", "01-descriptor-journey", "tutorials/01-descriptor-journey.md"} {
		tt, err := Find(name)
		require.NoError(t, err, name)
		assert.Equal(t, "descriptor-journey", tt.Name)
		assert.Equal(t, 1, tt.Number)
	}
	_, err = Find("nope")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "descriptor-journey")
}

// FuzzParse: any bytes as a tutorial file parse or give errors naming the
// file and a line, never a panic.
func FuzzParse(f *testing.F) {
	srcs, err := Sources()
	if err != nil {
		f.Fatal(err)
	}
	for _, src := range srcs {
		f.Add(src.Data)
	}
	f.Add([]byte("---\ntitle: x\n---\n## Step 1: a\n```ringlab\npreset default\ncheck rx_packets >= 0\n```\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tut, err := Parse("fuzz.md", b)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.md") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if tut == nil {
			t.Fatal("nil tutorial without an error")
		}
	})
}
