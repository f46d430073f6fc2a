package tutorials

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Grading a prediction. A question's answer is a condition on a figure
// (`answer rq0.posted_buffers == 53`, `answer between(ratio(a, b), 15, 17)`,
// `answer mode == "big"`): its first operand is what the reader predicts.
// When the step has run, the answer's Key keeps the engine's value of that
// operand and the condition with the other operands evaluated; Grade puts
// the reader's prediction in the operand's place and says how it fares.

// Key is how an answer grades a prediction.
type Key struct {
	Subject string  `json:"subject"`    // the answer's first operand, as written
	Truth   Value   `json:"truth"`      // the engine's value of it
	Said    string  `json:"truth_text"` // Truth as the reader reads it
	Op      string  `json:"op"`         // ==, !=, <, <=, >, >=, between or within
	Args    []Value `json:"args"`       // the other operands' values, in order
}

// Tolerance is how far from the engine's value a numeric prediction of an
// `==` answer may be and still be close.
const Tolerance = 0.10

// answerKey evaluates e's key in env; ok is false when the condition has
// no operand to predict (a function other than between or within).
func answerKey(e *Expr, env Env) (k Key, ok bool, err error) {
	eval := func(n node) (Value, error) { return n.eval(env) }
	switch n := e.root.(type) {
	case *binNode:
		if !n.op.comparison() {
			return Key{}, false, nil
		}
		t, err := eval(n.l)
		if err != nil {
			return Key{}, false, err
		}
		r, err := eval(n.r)
		if err != nil {
			return Key{}, false, err
		}
		return Key{Subject: source(e.src, n.l), Truth: t, Said: t.String(), Op: n.op.String(), Args: []Value{r}}, true, nil
	case *callNode:
		if n.name != "between" && n.name != "within" {
			return Key{}, false, nil
		}
		args, err := n.evalArgs(env)
		if err != nil {
			return Key{}, false, err
		}
		return Key{Subject: source(e.src, n.args[0]), Truth: args[0], Said: args[0].String(), Op: n.name, Args: args[1:]}, true, nil
	}
	return Key{}, false, nil
}

// source is what n stands for in src, for the reader: the condition's
// text up to its operator or its first argument.
func source(src string, n node) string {
	s := strings.TrimSpace(src)
	if c, ok := n.(*identNode); ok {
		return c.name
	}
	for _, op := range []string{"==", "!=", "<=", ">=", "<", ">"} {
		if i := strings.Index(s, op); i > 0 {
			return strings.TrimSpace(s[:i])
		}
	}
	if i := strings.Index(s, "("); i > 0 {
		inner := s[i+1:]
		depth := 0
		for j, r := range inner {
			switch r {
			case '(':
				depth++
			case ')':
				depth--
			case ',':
				if depth == 0 {
					return strings.TrimSpace(inner[:j])
				}
			}
		}
	}
	return s
}

// Grade is how a prediction fared.
type Grade struct {
	Verdict string `json:"verdict"` // right, close, wrong, or unreadable
	Truth   string `json:"truth"`   // the engine's value
	Say     string `json:"say"`     // a sentence for the reader
}

// Grade grades prediction, as the reader typed it, against k.
func (k Key) Grade(prediction string) Grade {
	g := Grade{Truth: k.Truth.String()}
	guess, err := parsePrediction(prediction, k.Truth.Kind)
	if err != nil {
		g.Verdict = "unreadable"
		g.Say = fmt.Sprintf("%s: %v. The engine's %s is %s.", strconv.Quote(strings.TrimSpace(prediction)), err, k.Subject, g.Truth)
		return g
	}
	holds, err := k.holds(guess)
	if err != nil {
		g.Verdict = "unreadable"
		g.Say = fmt.Sprintf("%v. The engine's %s is %s.", err, k.Subject, g.Truth)
		return g
	}
	said := guess.String()
	switch {
	case holds:
		g.Verdict = "right"
		g.Say = fmt.Sprintf("Right: you said %s; the engine's %s is %s.", said, k.Subject, g.Truth)
	case k.Op == "==" && guess.Kind == KindNumber && k.Truth.Kind == KindNumber && near(guess.Num, k.Truth.Num):
		g.Verdict = "close"
		g.Say = fmt.Sprintf("Close: you said %s; the engine's %s is %s (%.0f%% off).", said, k.Subject, g.Truth,
			100*math.Abs(guess.Num-k.Truth.Num)/math.Abs(k.Truth.Num))
	default:
		g.Verdict = "wrong"
		g.Say = fmt.Sprintf("Not this time: you said %s; the engine's %s is %s%s.", said, k.Subject, g.Truth, k.wanted())
	}
	return g
}

// holds reports whether the condition holds with guess for the subject.
func (k Key) holds(guess Value) (bool, error) {
	num := func(i int) (float64, error) {
		if i >= len(k.Args) || k.Args[i].Kind != KindNumber {
			return 0, fmt.Errorf("the answer's %s needs a number", k.Op)
		}
		return k.Args[i].Num, nil
	}
	switch k.Op {
	case "between", "within":
		if guess.Kind != KindNumber {
			return false, fmt.Errorf("want a number")
		}
		a, err := num(0)
		if err != nil {
			return false, err
		}
		b, err := num(1)
		if err != nil {
			return false, err
		}
		if k.Op == "between" {
			return a <= guess.Num && guess.Num <= b, nil
		}
		return math.Abs(guess.Num-a) <= b*math.Abs(a), nil
	}
	if len(k.Args) != 1 {
		return false, fmt.Errorf("the answer compares with nothing")
	}
	if guess.Kind == KindString && k.Args[0].Kind == KindString && (k.Op == "==" || k.Op == "!=") {
		return strings.EqualFold(guess.Str, k.Args[0].Str) == (k.Op == "=="), nil
	}
	op, ok := lookupOp(k.Op)
	if !ok || !op.comparison() {
		return false, fmt.Errorf("an answer of %q cannot grade a prediction", k.Op)
	}
	v, err := (&binNode{op: op}).apply(guess, k.Args[0])
	if err != nil {
		return false, err
	}
	if k.Op == "==" && guess.Kind == KindNumber && k.Args[0].Kind == KindNumber {
		return exactly(guess.Num, k.Args[0].Num), nil
	}
	return v.Kind == KindBool && v.Bool, nil
}

// wanted says what the answer holds true, when it is not one value.
func (k Key) wanted() string {
	switch k.Op {
	case "between":
		return fmt.Sprintf(" (the answer: between %s and %s)", k.Args[0], k.Args[1])
	case "within":
		return fmt.Sprintf(" (the answer: within %s of %s)", percent(k.Args[1]), k.Args[0])
	case "==":
		return ""
	}
	return fmt.Sprintf(" (the answer: %s %s %s)", k.Subject, k.Op, k.Args[0])
}

func percent(v Value) string {
	if v.Kind != KindNumber {
		return v.String()
	}
	return FormatNumber(100*v.Num) + "%"
}

func exactly(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

func near(a, b float64) bool {
	return b != 0 && math.Abs(a-b) <= Tolerance*math.Abs(b)
}

// parsePrediction reads what the reader typed: a number (1024, 1,024,
// 1_024, 2.5e3, 12k, 1.5M, 40% for 0.4), or a word when the answer is a
// string (compared without case), or yes/no/true/false.
func parsePrediction(s string, want Kind) (Value, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Value{}, fmt.Errorf("no prediction")
	}
	switch want {
	case KindString:
		return Str(strings.Trim(strings.ToLower(s), `"'`)), nil
	case KindBool:
		switch strings.ToLower(s) {
		case "yes", "true", "y", "1":
			return Bool(true), nil
		case "no", "false", "n", "0":
			return Bool(false), nil
		}
		return Value{}, fmt.Errorf("want yes or no")
	}
	t := strings.NewReplacer(",", "", "_", "", " ", "").Replace(s)
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "%"):
		mult, t = 0.01, strings.TrimSuffix(t, "%")
	case strings.HasSuffix(t, "k") || strings.HasSuffix(t, "K"):
		mult, t = 1e3, t[:len(t)-1]
	case strings.HasSuffix(t, "M"):
		mult, t = 1e6, t[:len(t)-1]
	case strings.HasSuffix(t, "G"):
		mult, t = 1e9, t[:len(t)-1]
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return Value{}, fmt.Errorf("want a number")
	}
	return Num(f * mult), nil
}
