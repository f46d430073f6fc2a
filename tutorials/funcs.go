package tutorials

import (
	"fmt"
	"math"
	"sort"
)

// The functions of the expression language: pure ones computed here, and
// those that read the world (published, map) answered by the Env.

type function struct {
	args     []Kind
	optional []Kind
	result   Kind
	doc      string
	// pure computes the result; nil for functions the Env provides.
	pure func(args []Value) (Value, error)
}

var funcs = map[string]*function{
	"ratio": {args: []Kind{KindNumber, KindNumber}, result: KindNumber, doc: "a / b; an error when b is 0",
		pure: func(a []Value) (Value, error) {
			if a[1].Num == 0 {
				return Value{}, fmt.Errorf("ratio(%s, %s): the denominator is 0", a[0], a[1])
			}
			return Num(a[0].Num / a[1].Num), nil
		}},
	"share": {args: []Kind{KindNumber, KindNumber}, result: KindNumber, doc: "a / (a + b): a's share of the two; an error when both are 0",
		pure: func(a []Value) (Value, error) {
			if a[0].Num+a[1].Num == 0 {
				return Value{}, fmt.Errorf("share(%s, %s): both are 0", a[0], a[1])
			}
			return Num(a[0].Num / (a[0].Num + a[1].Num)), nil
		}},
	"min": {args: []Kind{KindNumber, KindNumber}, result: KindNumber, doc: "the smaller of a and b",
		pure: func(a []Value) (Value, error) { return Num(math.Min(a[0].Num, a[1].Num)), nil }},
	"max": {args: []Kind{KindNumber, KindNumber}, result: KindNumber, doc: "the larger of a and b",
		pure: func(a []Value) (Value, error) { return Num(math.Max(a[0].Num, a[1].Num)), nil }},
	"abs": {args: []Kind{KindNumber}, result: KindNumber, doc: "|a|",
		pure: func(a []Value) (Value, error) { return Num(math.Abs(a[0].Num)), nil }},
	"between": {args: []Kind{KindNumber, KindNumber, KindNumber}, result: KindBool, doc: "lo <= x <= hi",
		pure: func(a []Value) (Value, error) {
			if a[1].Num > a[2].Num {
				return Value{}, fmt.Errorf("between(%s, %s, %s): lo > hi", a[0], a[1], a[2])
			}
			return Bool(a[0].Num >= a[1].Num && a[0].Num <= a[2].Num), nil
		}},
	"within": {args: []Kind{KindNumber, KindNumber, KindNumber}, result: KindBool, doc: "x is within frac (0.2 = 20%) of target",
		pure: func(a []Value) (Value, error) {
			if a[2].Num < 0 {
				return Value{}, fmt.Errorf("within(%s, %s, %s): negative tolerance", a[0], a[1], a[2])
			}
			return Bool(math.Abs(a[0].Num-a[1].Num) <= a[2].Num*math.Abs(a[1].Num)), nil
		}},
	"published": {args: []Kind{KindString, KindString}, result: KindNumber,
		doc: "the published figure of a configuration and metric (docs/published.md), e.g. published(\"r1-page-pool\", \"goodput_gbps\")"},
	"map": {args: []Kind{KindString, KindNumber}, optional: []Kind{KindNumber}, result: KindNumber,
		doc: "the XDP program's map value at a key, as a u64 at a byte offset (default 0), summed over CPUs for per-CPU maps"},
}

func funcNames() []string {
	names := make([]string, 0, len(funcs))
	for n := range funcs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

type callNode struct {
	name string
	fn   *function
	args []node
}

func (n *callNode) typ() Kind { return n.fn.result }

func (n *callNode) evalArgs(env Env) ([]Value, error) {
	all := append(append([]Kind(nil), n.fn.args...), n.fn.optional...)
	args := make([]Value, len(n.args))
	for i, a := range n.args {
		v, err := a.eval(env)
		if err != nil {
			return nil, err
		}
		if v.Kind != all[i] {
			return nil, fmt.Errorf("%s(): argument %d is %s, want a %s", n.name, i+1, v, all[i])
		}
		args[i] = v
	}
	return args, nil
}

func (n *callNode) apply(env Env, args []Value) (Value, error) {
	if n.fn.pure != nil {
		return n.fn.pure(args)
	}
	if env == nil {
		return Value{}, fmt.Errorf("%s(): nothing to read from", n.name)
	}
	return env.Call(n.name, args)
}

func (n *callNode) eval(env Env) (Value, error) {
	args, err := n.evalArgs(env)
	if err != nil {
		return Value{}, err
	}
	return n.apply(env, args)
}
