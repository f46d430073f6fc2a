package tutorials

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryAnswerGrades: every question's answer in the tutorials has a
// key of its question's kind once its step has run. The engine's own
// reply or value grades right and another wrong; a yes/no question never
// reads a number as its reply; a text answer is noted, never graded.
func TestEveryAnswerGrades(t *testing.T) {
	if testing.Short() {
		// Every tutorial run whole: 40 s under the race detector, whose
		// pass is -short; make test's second pass runs it (a second).
		t.Skip("runs every tutorial whole; make test's second pass runs it")
	}
	all, err := All()
	require.NoError(t, err)
	kinds := map[string]int{}
	for _, tu := range all {
		s := NewSession(tu, Options{Cache: NewCache()})
		for !s.Done() {
			res := s.RunStep()
			for _, it := range res.Items {
				if it.Op != OpAnswer || it.Status != StatusOK {
					continue
				}
				require.NotNil(t, it.Key, "%s:%d: %s has no key", tu.File, it.Line, it.Text)
				k := *it.Key
				at := fmt.Sprintf("%s:%d: %s", tu.File, it.Line, it.Text)
				kinds[k.Kind]++
				switch k.Kind {
				case PredictYesNo:
					other := map[string]string{"yes": "no", "no": "yes"}[k.Said]
					require.NotEmpty(t, other, at)
					assert.Equal(t, "right", k.Grade(k.Said).Verdict, at)
					assert.Equal(t, "wrong", k.Grade(other).Verdict, at)
					assert.Equal(t, "unreadable", k.Grade("0").Verdict, at)
				case PredictChoice:
					assert.Equal(t, "right", k.Grade(strings.ToUpper(k.Said)).Verdict, at)
					for _, o := range k.Options {
						if o != k.Said {
							assert.Equal(t, "wrong", k.Grade(o).Verdict, at)
						}
					}
				case PredictNumber:
					assert.NotEmpty(t, k.Unit, at)
					g := k.Grade(k.number(k.Truth))
					assert.Equal(t, "right", g.Verdict, "%s: the engine's %s: %s", at, k.Truth, g.Say)
					if k.Op == "==" {
						assert.Equal(t, "wrong", k.Grade(FormatNumber(k.Truth.Num*3+1000)).Verdict, at)
					}
				case PredictText:
					assert.Equal(t, "noted", k.Grade("when it comes back").Verdict, at)
				default:
					t.Errorf("%s: kind %q", at, k.Kind)
				}
				assert.Equal(t, "unreadable", k.Grade("").Verdict)
			}
		}
	}
	assert.Greater(t, kinds[PredictNumber], 30, "number answers graded: %v", kinds)
	assert.Greater(t, kinds[PredictYesNo], 10, "yes/no answers graded: %v", kinds)
	assert.Greater(t, kinds[PredictChoice], 20, "choice answers graded: %v", kinds)
	assert.Greater(t, kinds[PredictText], 0, "text answers: %v", kinds)
}

func TestGrade(t *testing.T) {
	eq := Key{Kind: PredictNumber, Unit: "buffers", Subject: "rq0.posted_buffers", Truth: Num(53), Op: "==", Args: []Value{Num(53)}}
	for _, c := range []struct{ say, verdict, answer string }{
		{"53", "right", "53"}, {" 53 ", "right", "53"}, {"53 buffers", "right", "53"}, {"50", "close", "50"}, {"48", "close", "48"},
		{"47", "wrong", "47"}, {"1,024", "wrong", "1024"}, {"1k", "wrong", "1000"}, {"fifty", "unreadable", ""}, {"", "unreadable", ""},
	} {
		g := eq.Grade(c.say)
		assert.Equal(t, c.verdict, g.Verdict, "%q", c.say)
		assert.Equal(t, c.answer, g.Answer, "%q: the histogram's form", c.say)
	}
	assert.Equal(t, "Close: you said 50 buffers; the engine's rq0.posted_buffers is 53 buffers (6% off).", eq.Grade("50").Say)
	assert.Equal(t, `"fifty": want a number (buffers). The engine's rq0.posted_buffers is 53 buffers.`, eq.Grade("fifty").Say)

	share := Key{Kind: PredictNumber, Unit: "%", Subject: "recycle_cached_share", Truth: Num(0.42), Op: "between", Args: []Value{Num(0.3), Num(0.5)}}
	assert.Equal(t, "right", share.Grade("40%").Verdict, "a percentage of a share")
	assert.Equal(t, "right", share.Grade("40").Verdict, "in the unit %, 40 is 40%")
	assert.Equal(t, "40", share.Grade("40").Answer)
	assert.Equal(t, "wrong", share.Grade("60").Verdict)
	assert.Contains(t, share.Grade("60").Say, "between 30% and 50%", "the range in the question's unit")

	// "By how much": the ratio the question names, not the rate.
	ratio := Key{Kind: PredictNumber, Unit: "x", Subject: "ratio(drop.mpps, mpps)", Truth: Num(2.94), Op: "between", Args: []Value{Num(2), Num(4)}}
	for _, say := range []string{"3", "3x", "3 x", "3×"} {
		assert.Equal(t, "right", ratio.Grade(say).Verdict, "%q", say)
		assert.Equal(t, "3", ratio.Grade(say).Answer, "%q", say)
	}
	assert.Equal(t, "wrong", ratio.Grade("5.777").Verdict)

	within := Key{Kind: PredictNumber, Unit: "x", Subject: "r2.ratio", Truth: Num(1.01), Op: "within", Args: []Value{Num(1), Num(0.05)}}
	assert.Equal(t, "right", within.Grade("1").Verdict)
	assert.Equal(t, "wrong", within.Grade("2").Verdict)

	rate := Key{Kind: PredictNumber, Unit: "pps", Subject: "pps", Truth: Num(3.2e6), Op: ">", Args: []Value{Num(1e6)}}
	assert.Equal(t, "right", rate.Grade("1.5M").Verdict)
	assert.Equal(t, "wrong", rate.Grade("900k").Verdict)

	// Yes or no: the words, never a number.
	yn := Key{Kind: PredictYesNo, Subject: "rx_packets == 0", Truth: Str("no"), Said: "no", Detail: "0 == 0"}
	for _, c := range []struct{ say, verdict, answer string }{
		{"no", "right", "no"}, {"No", "right", "no"}, {" n ", "right", "no"}, {"false", "right", "no"},
		{"yes", "wrong", "yes"}, {"Y", "wrong", "yes"}, {"0", "unreadable", ""}, {"maybe", "unreadable", ""},
	} {
		g := yn.Grade(c.say)
		assert.Equal(t, c.verdict, g.Verdict, "%q", c.say)
		assert.Equal(t, c.answer, g.Answer, "%q", c.say)
	}
	assert.Equal(t, "Right: you said no. The engine says no: rx_packets == 0 (0 == 0).", yn.Grade("no").Say)

	// One of the named options, without case or extra spaces.
	ch := Key{Kind: PredictChoice, Options: []string{"the alloc cache", "the ptr_ring", "the page allocator"}, Subject: "rx_pp_recycle_cached == rx_xdp_drops",
		Truth: Str("the alloc cache"), Said: "the alloc cache"}
	assert.Equal(t, "right", ch.Grade("The  Alloc cache").Verdict)
	assert.Equal(t, "the alloc cache", ch.Grade("The  Alloc cache").Answer)
	assert.Equal(t, "wrong", ch.Grade("the ptr_ring").Verdict)
	assert.Equal(t, "unreadable", ch.Grade("the stack").Verdict)
	assert.Contains(t, ch.Grade("the stack").Say, "want one of the alloc cache, the ptr_ring, the page allocator")

	// Text is not graded: it is shown beside the engine's answer.
	tx := Key{Kind: PredictText, Subject: "rx_pp_recycle_cached + rx_pp_recycle_ring == tx_packets", Truth: Bool(true), Said: "holds", Detail: "19993 == 19993"}
	g := tx.Grade("When the host  has sent it")
	assert.Equal(t, "noted", g.Verdict)
	assert.Equal(t, "when the host has sent it", g.Answer)
	assert.True(t, strings.HasPrefix(g.Say, `You wrote: "When the host has sent it". `), g.Say)
	assert.Equal(t, `You wrote: "When the host has sent it". The engine: rx_pp_recycle_cached + rx_pp_recycle_ring == tx_packets (19993 == 19993).`, g.Say)

	// A key the page sent back malformed grades nothing.
	for _, bad := range []Key{
		{Kind: "guess"},
		{Kind: PredictChoice, Options: []string{"one"}},
		{Kind: PredictNumber, Unit: strings.Repeat("u", MaxUnitLen+1)},
	} {
		assert.Equal(t, "unreadable", bad.Grade("1").Verdict, "%+v", bad)
	}
}
