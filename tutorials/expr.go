package tutorials

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The expression language of check, answer and show: numbers, "strings",
// names (counters by their kernel names, rq0.num_free, pages.buddy, a
// mark's mark.rx_packets ...), + - * / with the usual precedence, unary
// minus, parentheses, one comparison (< <= > >= == !=) and a few
// functions. It is deliberately tiny: no variables are assigned, nothing
// loops, and every error says where in the expression it is.

// Kind is the type of a value.
type Kind uint8

// Value kinds. KindAny is only a static type: a name whose type is known
// when it is looked up.
const (
	KindAny Kind = iota
	KindNumber
	KindString
	KindBool
)

func (k Kind) String() string {
	switch k {
	case KindNumber:
		return "number"
	case KindString:
		return "string"
	case KindBool:
		return "boolean"
	}
	return "any"
}

// Value is a number, a string or a boolean.
type Value struct {
	Kind Kind
	Num  float64
	Str  string
	Bool bool
}

// Num returns a number value.
func Num(f float64) Value { return Value{Kind: KindNumber, Num: f} }

// Str returns a string value.
func Str(s string) Value { return Value{Kind: KindString, Str: s} }

// Bool returns a boolean value.
func Bool(b bool) Value { return Value{Kind: KindBool, Bool: b} }

// String formats a value as the transcripts print it: integers exactly,
// other numbers with four significant digits.
func (v Value) String() string {
	switch v.Kind {
	case KindNumber:
		return FormatNumber(v.Num)
	case KindString:
		return strconv.Quote(v.Str)
	case KindBool:
		if v.Bool {
			return "true"
		}
		return "false"
	}
	return "?"
}

// FormatNumber prints integers exactly and other numbers with four
// significant digits.
func FormatNumber(f float64) string {
	switch {
	case math.IsNaN(f), math.IsInf(f, 0):
		return strconv.FormatFloat(f, 'g', -1, 64)
	case f == math.Trunc(f) && math.Abs(f) < 1<<53:
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', 4, 64)
}

// Env resolves names and the functions that read the world.
type Env interface {
	// Lookup returns the value of a name, or an error saying why there is
	// none (unknown name, nothing has run yet).
	Lookup(name string) (Value, error)
	// Call runs a function that needs the environment (published, map).
	// The arguments have been checked against the function's signature.
	Call(name string, args []Value) (Value, error)
}

// ErrExpr is wrapped by every expression syntax error.
var ErrExpr = errors.New("expression")

// ExprError is a syntax or type error at a byte offset of the expression.
type ExprError struct {
	Expr string
	Pos  int
	Msg  string
}

func (e *ExprError) Error() string {
	return fmt.Sprintf("%s at column %d of %q", e.Msg, e.Pos+1, e.Expr)
}

// Unwrap makes errors.Is(err, ErrExpr) hold.
func (e *ExprError) Unwrap() error { return ErrExpr }

// Expr is a parsed expression.
type Expr struct {
	src  string
	root node
}

// String returns the expression as written.
func (e *Expr) String() string { return e.src }

// Type is the expression's static type (KindAny when it is a bare name).
func (e *Expr) Type() Kind { return e.root.typ() }

// Names lists the names the expression reads, in order of appearance,
// each once.
func (e *Expr) Names() []string {
	var out []string
	seen := map[string]bool{}
	walk(e.root, func(n node) {
		if id, ok := n.(*identNode); ok && !seen[id.name] {
			seen[id.name] = true
			out = append(out, id.name)
		}
	})
	return out
}

// usesFunc reports whether the expression calls the function name.
func (e *Expr) usesFunc(name string) bool {
	found := false
	walk(e.root, func(n node) {
		if c, ok := n.(*callNode); ok && c.name == name {
			found = true
		}
	})
	return found
}

// Eval evaluates the expression.
func (e *Expr) Eval(env Env) (Value, error) { return e.root.eval(env) }

// Explain evaluates the expression and also returns its operands' values,
// "100032 == 100032" for a comparison, for a transcript.
func (e *Expr) Explain(env Env) (Value, string, error) {
	switch n := e.root.(type) {
	case *binNode:
		if n.op.comparison() {
			l, err := n.l.eval(env)
			if err != nil {
				return Value{}, "", err
			}
			r, err := n.r.eval(env)
			if err != nil {
				return Value{}, "", err
			}
			v, err := n.apply(l, r)
			if err != nil {
				return Value{}, "", err
			}
			return v, l.String() + " " + n.op.String() + " " + r.String(), nil
		}
	case *callNode:
		args, err := n.evalArgs(env)
		if err != nil {
			return Value{}, "", err
		}
		v, err := n.apply(env, args)
		if err != nil {
			return Value{}, "", err
		}
		parts := make([]string, len(args))
		for i, a := range args {
			parts[i] = a.String()
		}
		return v, n.name + "(" + strings.Join(parts, ", ") + ")", nil
	}
	v, err := e.root.eval(env)
	if err != nil {
		return Value{}, "", err
	}
	return v, v.String(), nil
}

// ParseExpr parses an expression.
func ParseExpr(src string) (*Expr, error) {
	p := &exprParser{src: src}
	if err := p.lex(); err != nil {
		return nil, err
	}
	root, err := p.comparison()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, p.errAt(t.pos, "unexpected %s", t.describe())
	}
	return &Expr{src: src, root: root}, nil
}

// ParseCondition parses an expression that must be true or false: a
// comparison or a boolean function such as between().
func ParseCondition(src string) (*Expr, error) {
	e, err := ParseExpr(src)
	if err != nil {
		return nil, err
	}
	if e.Type() != KindBool {
		return nil, &ExprError{Expr: src, Pos: 0, Msg: "want a comparison (< <= > >= == !=) or a boolean function (between, within), got a " + e.Type().String()}
	}
	return e, nil
}

// ---- parser ----

type binOp uint8

const (
	opAdd binOp = iota
	opSub
	opMul
	opDiv
	opLT
	opLE
	opGT
	opGE
	opEQ
	opNE
)

var opNames = [...]string{"+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!="}

func (o binOp) String() string   { return opNames[o] }
func (o binOp) comparison() bool { return o >= opLT }

func lookupOp(s string) (binOp, bool) {
	for i, n := range opNames {
		if n == s {
			return binOp(i), true
		}
	}
	return 0, false
}

func (p *exprParser) comparison() (node, error) {
	l, err := p.sum()
	if err != nil {
		return nil, err
	}
	t := p.peek()
	if t.kind != tokOp {
		return l, nil
	}
	op, ok := lookupOp(t.text)
	if !ok || !op.comparison() {
		return l, nil
	}
	p.next()
	r, err := p.sum()
	if err != nil {
		return nil, err
	}
	if t2 := p.peek(); t2.kind == tokOp {
		if op2, ok := lookupOp(t2.text); ok && op2.comparison() {
			return nil, p.errAt(t2.pos, "comparisons do not chain: use between(x, lo, hi)")
		}
	}
	n := &binNode{op: op, l: l, r: r, pos: t.pos}
	if err := n.check(p); err != nil {
		return nil, err
	}
	return n, nil
}

func (p *exprParser) sum() (node, error) { return p.leftAssoc(p.term, "+", "-") }

func (p *exprParser) term() (node, error) { return p.leftAssoc(p.unary, "*", "/") }

// leftAssoc parses operand (op operand)* for the given operators, folding
// to the left: a - b - c is (a - b) - c.
func (p *exprParser) leftAssoc(operand func() (node, error), ops ...string) (node, error) {
	l, err := operand()
	if err != nil {
		return nil, err
	}
	for p.isAnyOp(ops) {
		t := p.next()
		op, _ := lookupOp(t.text)
		r, err := operand()
		if err != nil {
			return nil, err
		}
		n := &binNode{op: op, l: l, r: r, pos: t.pos}
		if err := n.check(p); err != nil {
			return nil, err
		}
		l = n
	}
	return l, nil
}

func (p *exprParser) isAnyOp(ops []string) bool {
	for _, o := range ops {
		if p.isOp(o) {
			return true
		}
	}
	return false
}

func (p *exprParser) unary() (node, error) {
	if p.isOp("-") {
		t := p.next()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		if k := x.typ(); k != KindNumber && k != KindAny {
			return nil, p.errAt(t.pos, "cannot negate a %s", k)
		}
		return &negNode{x: x}, nil
	}
	return p.primary()
}

func (p *exprParser) primary() (node, error) {
	t := p.next()
	switch t.kind {
	case tokNum:
		return &litNode{v: Num(t.num), text: t.text}, nil
	case tokStr:
		return &litNode{v: Str(t.text), text: strconv.Quote(t.text)}, nil
	case tokIdent:
		if p.isOp("(") {
			return p.call(t)
		}
		return &identNode{name: t.text}, nil
	case tokOp:
		if t.text == "(" {
			x, err := p.comparison()
			if err != nil {
				return nil, err
			}
			if !p.isOp(")") {
				return nil, p.errAt(p.peek().pos, "want ')', got %s", p.peek().describe())
			}
			p.next()
			return &parenNode{x: x}, nil
		}
	}
	return nil, p.errAt(t.pos, "want a number, a name or '(', got %s", t.describe())
}

func (p *exprParser) call(name token) (node, error) {
	fn, ok := funcs[name.text]
	if !ok {
		return nil, p.errAt(name.pos, "unknown function %s (known: %s)", name.text, strings.Join(funcNames(), ", "))
	}
	p.next() // (
	var args []node
	if !p.isOp(")") {
		for {
			a, err := p.comparison()
			if err != nil {
				return nil, err
			}
			args = append(args, a)
			if p.isOp(",") {
				p.next()
				continue
			}
			break
		}
	}
	if !p.isOp(")") {
		return nil, p.errAt(p.peek().pos, "want ',' or ')' in %s(), got %s", name.text, p.peek().describe())
	}
	p.next()
	if len(args) < len(fn.args) || len(args) > len(fn.args)+len(fn.optional) {
		want := strconv.Itoa(len(fn.args))
		if len(fn.optional) > 0 {
			want = fmt.Sprintf("%d or %d", len(fn.args), len(fn.args)+len(fn.optional))
		}
		return nil, p.errAt(name.pos, "%s() takes %s arguments, got %d", name.text, want, len(args))
	}
	all := append(append([]Kind(nil), fn.args...), fn.optional...)
	for i, a := range args {
		if k := a.typ(); k != KindAny && k != all[i] {
			return nil, p.errAt(name.pos, "%s(): argument %d is a %s, want a %s", name.text, i+1, k, all[i])
		}
	}
	return &callNode{name: name.text, fn: fn, args: args}, nil
}

// ---- nodes ----

type node interface {
	eval(env Env) (Value, error)
	typ() Kind
}

func walk(n node, f func(node)) {
	f(n)
	switch n := n.(type) {
	case *binNode:
		walk(n.l, f)
		walk(n.r, f)
	case *negNode:
		walk(n.x, f)
	case *parenNode:
		walk(n.x, f)
	case *callNode:
		for _, a := range n.args {
			walk(a, f)
		}
	}
}

type litNode struct {
	v    Value
	text string
}

func (n *litNode) eval(Env) (Value, error) { return n.v, nil }
func (n *litNode) typ() Kind               { return n.v.Kind }

type identNode struct{ name string }

func (n *identNode) eval(env Env) (Value, error) {
	if env == nil {
		return Value{}, fmt.Errorf("%s: nothing to read names from", n.name)
	}
	return env.Lookup(n.name)
}
func (n *identNode) typ() Kind { return KindAny }

type parenNode struct{ x node }

func (n *parenNode) eval(env Env) (Value, error) { return n.x.eval(env) }
func (n *parenNode) typ() Kind                   { return n.x.typ() }

type negNode struct{ x node }

func (n *negNode) eval(env Env) (Value, error) {
	v, err := n.x.eval(env)
	if err != nil {
		return Value{}, err
	}
	if v.Kind != KindNumber {
		return Value{}, fmt.Errorf("cannot negate %s", v)
	}
	return Num(-v.Num), nil
}
func (n *negNode) typ() Kind { return KindNumber }

type binNode struct {
	op   binOp
	l, r node
	pos  int
}

func (n *binNode) typ() Kind {
	if n.op.comparison() {
		return KindBool
	}
	return KindNumber
}

// check rejects what can be seen to be wrong before anything runs.
func (n *binNode) check(p *exprParser) error {
	lk, rk := n.l.typ(), n.r.typ()
	if !n.op.comparison() {
		for _, k := range []Kind{lk, rk} {
			if k != KindNumber && k != KindAny {
				return p.errAt(n.pos, "'%s' wants numbers, got a %s", n.op, k)
			}
		}
		return nil
	}
	if lk == KindBool || rk == KindBool {
		return p.errAt(n.pos, "cannot compare a boolean")
	}
	if lk != KindAny && rk != KindAny && lk != rk {
		return p.errAt(n.pos, "cannot compare a %s with a %s", lk, rk)
	}
	if (lk == KindString || rk == KindString) && n.op != opEQ && n.op != opNE {
		return p.errAt(n.pos, "strings compare only with == and !=")
	}
	return nil
}

func (n *binNode) eval(env Env) (Value, error) {
	l, err := n.l.eval(env)
	if err != nil {
		return Value{}, err
	}
	r, err := n.r.eval(env)
	if err != nil {
		return Value{}, err
	}
	return n.apply(l, r)
}

func (n *binNode) apply(l, r Value) (Value, error) {
	if n.op.comparison() {
		if l.Kind != r.Kind || l.Kind == KindBool {
			return Value{}, fmt.Errorf("cannot compare %s %s %s", l, n.op, r)
		}
		if l.Kind == KindString {
			switch n.op {
			case opEQ:
				return Bool(l.Str == r.Str), nil
			case opNE:
				return Bool(l.Str != r.Str), nil
			}
			return Value{}, fmt.Errorf("strings compare only with == and !=: %s %s %s", l, n.op, r)
		}
		a, b := l.Num, r.Num
		switch n.op {
		case opLT:
			return Bool(a < b), nil
		case opLE:
			return Bool(a <= b), nil
		case opGT:
			return Bool(a > b), nil
		case opGE:
			return Bool(a >= b), nil
		case opEQ:
			return Bool(a == b), nil
		default:
			return Bool(a != b), nil
		}
	}
	if l.Kind != KindNumber || r.Kind != KindNumber {
		return Value{}, fmt.Errorf("'%s' wants numbers: %s %s %s", n.op, l, n.op, r)
	}
	switch n.op {
	case opAdd:
		return Num(l.Num + r.Num), nil
	case opSub:
		return Num(l.Num - r.Num), nil
	case opMul:
		return Num(l.Num * r.Num), nil
	default:
		if r.Num == 0 {
			return Value{}, fmt.Errorf("division by zero: %s / %s", l, r)
		}
		return Num(l.Num / r.Num), nil
	}
}
