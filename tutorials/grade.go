package tutorials

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Grading a prediction, by the kind its question declares (predict.go).
// A number question's answer is a condition on a figure
// (`answer rq0.posted_buffers == 53`, `answer between(ratio(a, b), 15, 17)`):
// its first operand is what the reader predicts. When the step has run,
// the answer's Key keeps the engine's value of that operand and the
// condition with the other operands evaluated; Grade puts the reader's
// prediction in the operand's place and says how it fares. A yes/no or
// choice answer's Key keeps the reply the engine confirmed; a text
// answer's Key grades nothing and shows what the reader wrote.

// Key is how an answer grades a prediction.
type Key struct {
	Kind    string   `json:"kind"`              // yesno, choice, number or text
	Unit    string   `json:"unit,omitempty"`    // number: the unit of the figure asked for
	Options []string `json:"options,omitempty"` // choice
	Subject string   `json:"subject"`           // number, text: the answer's first operand; yesno, choice: its condition
	Truth   Value    `json:"truth"`             // the engine's value of it (yesno, choice: the reply)
	Said    string   `json:"truth_text"`        // Truth as the reader reads it
	Detail  string   `json:"detail,omitempty"`  // the condition's operands as the engine had them
	Op      string   `json:"op,omitempty"`      // number: ==, !=, <, <=, >, >=, between or within
	Args    []Value  `json:"args,omitempty"`    // number: the other operands' values, in order
}

// answerKey is the key of answer d, which has run into it.
func (s *Session) answerKey(d *Directive, it *Item) (Key, bool) {
	if it.Status != StatusOK && it.Status != StatusFail {
		return Key{}, false
	}
	switch d.Kind {
	case PredictYesNo, PredictChoice:
		return Key{Kind: d.Kind, Options: d.Options, Subject: d.Exprs[0], Truth: Str(d.Reply), Said: d.Reply, Detail: it.Detail}, true
	case PredictText:
		said := "holds"
		if it.Status != StatusOK {
			said = "does not hold"
		}
		return Key{Kind: d.Kind, Subject: d.Exprs[0], Truth: Bool(it.Status == StatusOK), Said: said, Detail: it.Detail}, true
	}
	k, ok, err := answerKey(d.exprs[0], s)
	if err != nil || !ok {
		return Key{}, false
	}
	k.Kind, k.Unit, k.Detail = PredictNumber, d.Unit, it.Detail
	return k, true
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
	Verdict string `json:"verdict"` // right, close, wrong, unreadable, or noted (text)
	Truth   string `json:"truth"`   // the engine's value
	Say     string `json:"say"`     // a sentence for the reader
	// Answer is the prediction in one form, the same for every way of
	// saying it ("yes" for Y and true, the option as declared, the number
	// in the question's unit, text trimmed and in lower case): what the
	// class's histogram counts. Empty when the prediction is unreadable.
	Answer string `json:"answer"`
}

// Grade grades prediction, as the reader typed it or picked it, against k.
func (k Key) Grade(prediction string) Grade {
	g := Grade{Truth: k.Truth.String()}
	if err := k.check(); err != nil {
		g.Verdict = "unreadable"
		g.Say = fmt.Sprintf("This answer cannot grade a prediction: %v.", err)
		return g
	}
	p := strings.Join(strings.Fields(prediction), " ")
	if p == "" {
		g.Verdict = "unreadable"
		g.Say = fmt.Sprintf("No prediction. %s", k.engineSays())
		return g
	}
	switch k.Kind {
	case PredictText:
		g.Truth = k.Said
		g.Verdict = "noted"
		g.Answer = strings.ToLower(p)
		g.Say = fmt.Sprintf("You wrote: %s. %s", strconv.Quote(p), k.engineSays())
		return g
	case PredictYesNo, PredictChoice:
		g.Truth = k.Said
		reply, err := k.reply(p)
		if err != nil {
			g.Verdict = "unreadable"
			g.Say = fmt.Sprintf("%s: %v. %s", strconv.Quote(p), err, k.engineSays())
			return g
		}
		g.Answer = reply
		if reply == k.Said {
			g.Verdict = "right"
			g.Say = fmt.Sprintf("Right: you said %s. %s", reply, k.engineSays())
		} else {
			g.Verdict = "wrong"
			g.Say = fmt.Sprintf("Not this time: you said %s. %s", reply, k.engineSays())
		}
		return g
	}
	guess, err := parsePrediction(p, k.Truth.Kind, k.Unit)
	if err != nil {
		g.Verdict = "unreadable"
		g.Say = fmt.Sprintf("%s: %v. The engine's %s is %s.", strconv.Quote(p), err, k.Subject, k.inUnit(k.Truth))
		return g
	}
	holds, err := k.holds(guess)
	if err != nil {
		g.Verdict = "unreadable"
		g.Say = fmt.Sprintf("%v. The engine's %s is %s.", err, k.Subject, k.inUnit(k.Truth))
		return g
	}
	said := k.inUnit(guess)
	g.Answer = k.number(guess)
	truth := k.inUnit(k.Truth)
	switch {
	case holds:
		g.Verdict = "right"
		g.Say = fmt.Sprintf("Right: you said %s; the engine's %s is %s.", said, k.Subject, truth)
	case k.Op == "==" && guess.Kind == KindNumber && k.Truth.Kind == KindNumber && near(guess.Num, k.Truth.Num):
		g.Verdict = "close"
		g.Say = fmt.Sprintf("Close: you said %s; the engine's %s is %s (%.0f%% off).", said, k.Subject, truth,
			100*math.Abs(guess.Num-k.Truth.Num)/math.Abs(k.Truth.Num))
	default:
		g.Verdict = "wrong"
		g.Say = fmt.Sprintf("Not this time: you said %s; the engine's %s is %s%s.", said, k.Subject, truth, k.wanted())
	}
	return g
}

// check bounds a key (the page sends it back to be graded).
func (k Key) check() error {
	switch k.Kind {
	case PredictYesNo, PredictText, PredictNumber:
	case PredictChoice:
		if len(k.Options) < 2 || len(k.Options) > MaxOptions {
			return fmt.Errorf("a choice has 2 to %d options", MaxOptions)
		}
		for _, o := range k.Options {
			if len(o) > MaxOptionLen {
				return fmt.Errorf("an option has at most %d bytes", MaxOptionLen)
			}
		}
	default:
		return fmt.Errorf("kind %q is none of yesno, choice, number, text", k.Kind)
	}
	if len(k.Unit) > MaxUnitLen || len(k.Said) > MaxOptionLen+MaxUnitLen+64 || len(k.Detail) > 1024 {
		return fmt.Errorf("a key's unit or truth is too long")
	}
	return nil
}

// engineSays is the engine's answer to a yes/no, choice or text question.
func (k Key) engineSays() string {
	why := k.Subject
	if k.Detail != "" {
		why += " (" + k.Detail + ")"
	}
	switch k.Kind {
	case PredictYesNo, PredictChoice:
		return fmt.Sprintf("The engine says %s: %s.", k.Said, why)
	case PredictNumber:
		return fmt.Sprintf("The engine's %s is %s.", k.Subject, k.inUnit(k.Truth))
	}
	return fmt.Sprintf("The engine: %s.", why)
}

// reply reads a yes/no or one of the options.
func (k Key) reply(p string) (string, error) {
	if k.Kind == PredictYesNo {
		switch strings.ToLower(p) {
		case "yes", "y", "true":
			return "yes", nil
		case "no", "n", "false":
			return "no", nil
		}
		return "", fmt.Errorf("want yes or no")
	}
	if i := optionIndex(k.Options, p); i >= 0 {
		return k.Options[i], nil
	}
	return "", fmt.Errorf("want one of %s", strings.Join(k.Options, ", "))
}

// inUnit writes a number in the question's unit ("53 buffers", "2.5 x",
// "40%" for a share of 0.4).
func (k Key) inUnit(v Value) string {
	if v.Kind != KindNumber || k.Unit == "" {
		return v.String()
	}
	switch k.Unit {
	case "%", "x":
		return k.number(v) + k.Unit
	}
	return k.number(v) + " " + k.Unit
}

// number is the histogram's form of a number: in the question's unit,
// without it.
func (k Key) number(v Value) string {
	if v.Kind != KindNumber {
		return v.String()
	}
	if k.Unit == "%" {
		return FormatNumber(100 * v.Num)
	}
	return FormatNumber(v.Num)
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
		return fmt.Sprintf(" (the answer: between %s and %s)", k.inUnit(k.Args[0]), k.inUnit(k.Args[1]))
	case "within":
		return fmt.Sprintf(" (the answer: within %s of %s)", percent(k.Args[1]), k.inUnit(k.Args[0]))
	case "==":
		return ""
	}
	return fmt.Sprintf(" (the answer: %s %s %s)", k.Subject, k.Op, k.inUnit(k.Args[0]))
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
// 1_024, 2.5e3, 12k, 1.5M, 40% for 0.4), the question's unit after it or
// not ("53 buffers", "3x"); with the unit %, a bare number is a
// percentage (40 for 0.4). A word when the answer is a string (compared
// without case), or yes/no/true/false for a boolean.
func parsePrediction(s string, want Kind, unit string) (Value, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Value{}, fmt.Errorf("no prediction")
	}
	switch want {
	case KindString:
		return Str(strings.Trim(strings.ToLower(s), `"'`)), nil
	case KindBool:
		switch strings.ToLower(s) {
		case "yes", "true", "y":
			return Bool(true), nil
		case "no", "false", "n":
			return Bool(false), nil
		}
		return Value{}, fmt.Errorf("want yes or no")
	}
	t := strings.NewReplacer(",", "", "_", "", " ", "").Replace(s)
	if u := strings.ReplaceAll(unit, " ", ""); u != "" && u != "%" && len(t) > len(u) && strings.EqualFold(t[len(t)-len(u):], u) {
		t = t[:len(t)-len(u)]
	}
	if unit == "x" || unit == "times" {
		t = strings.TrimSuffix(strings.TrimSuffix(t, "×"), "x")
	}
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "%"):
		mult, t = 0.01, strings.TrimSuffix(t, "%")
	case unit == "%":
		mult = 0.01
	case strings.HasSuffix(t, "k") || strings.HasSuffix(t, "K"):
		mult, t = 1e3, t[:len(t)-1]
	case strings.HasSuffix(t, "M"):
		mult, t = 1e6, t[:len(t)-1]
	case strings.HasSuffix(t, "G"):
		mult, t = 1e9, t[:len(t)-1]
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		switch unit {
		case "":
		case "x":
			return Value{}, fmt.Errorf("want a number (a ratio: 3 or 3x)")
		case "%":
			return Value{}, fmt.Errorf("want a number (a percentage: 40 or 40%%)")
		default:
			return Value{}, fmt.Errorf("want a number (%s)", unit)
		}
		return Value{}, fmt.Errorf("want a number")
	}
	return Num(f * mult), nil
}
