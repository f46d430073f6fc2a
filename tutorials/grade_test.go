package tutorials

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryAnswerGrades: every question's answer in the nine tutorials
// has a key once its step has run; the engine's own value grades right,
// something far from it (for an exact answer) wrong, and text that is not
// a prediction unreadable.
func TestEveryAnswerGrades(t *testing.T) {
	all, err := All()
	require.NoError(t, err)
	keys := 0
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
				keys++
				assert.Equal(t, "right", k.Grade(k.Truth.String()).Verdict, "%s:%d: %s: the engine's %s", tu.File, it.Line, it.Text, k.Truth)
				if k.Op == "==" && k.Truth.Kind == KindNumber {
					assert.Equal(t, "wrong", k.Grade(FormatNumber(k.Truth.Num*3+1000)).Verdict, "%s:%d", tu.File, it.Line)
				}
				assert.Equal(t, "unreadable", k.Grade("").Verdict)
			}
		}
	}
	assert.Greater(t, keys, 40, "answers graded")
}

func TestGrade(t *testing.T) {
	eq := Key{Subject: "rq0.posted_buffers", Truth: Num(53), Op: "==", Args: []Value{Num(53)}}
	for _, c := range []struct{ say, verdict string }{
		{"53", "right"}, {" 53 ", "right"}, {"50", "close"}, {"48", "close"}, {"47", "wrong"},
		{"1,024", "wrong"}, {"fifty", "unreadable"}, {"", "unreadable"},
	} {
		assert.Equal(t, c.verdict, eq.Grade(c.say).Verdict, "%q", c.say)
	}
	assert.Equal(t, "Close: you said 50; the engine's rq0.posted_buffers is 53 (6% off).", eq.Grade("50").Say)

	share := Key{Subject: "recycle_cached_share", Truth: Num(0.42), Op: "between", Args: []Value{Num(0.3), Num(0.5)}}
	assert.Equal(t, "right", share.Grade("40%").Verdict, "a percentage of a share")
	assert.Equal(t, "wrong", share.Grade("0.6").Verdict)
	assert.Contains(t, share.Grade("0.6").Say, "between 0.3 and 0.5")

	within := Key{Subject: "r2.ratio", Truth: Num(1.01), Op: "within", Args: []Value{Num(1), Num(0.05)}}
	assert.Equal(t, "right", within.Grade("1").Verdict)
	assert.Equal(t, "wrong", within.Grade("2").Verdict)

	rate := Key{Subject: "mpps", Truth: Num(3.2e6), Op: ">", Args: []Value{Num(1e6)}}
	assert.Equal(t, "right", rate.Grade("1.5M").Verdict)
	assert.Equal(t, "wrong", rate.Grade("900k").Verdict)

	mode := Key{Subject: "mode", Truth: Str("big"), Op: "==", Args: []Value{Str("big")}}
	assert.Equal(t, "right", mode.Grade("Big").Verdict, "a choice, without case")
	assert.Equal(t, "wrong", mode.Grade("mergeable").Verdict)
}
