package tutorials

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mapEnv is an Env over a fixed set of names.
type mapEnv map[string]Value

func (m mapEnv) Lookup(name string) (Value, error) {
	if v, ok := m[name]; ok {
		return v, nil
	}
	return Value{}, fmt.Errorf("unknown name %s", name)
}

func (m mapEnv) Call(name string, args []Value) (Value, error) {
	if name == "published" {
		return Num(9.74), nil
	}
	return Value{}, fmt.Errorf("no %s here", name)
}

var testEnv = mapEnv{
	"rx_packets":            Num(1000),
	"rx_xdp_drops":          Num(1000),
	"rx_kicks":              Num(4),
	"zero":                  Num(0),
	"rq0.num_free":          Num(8),
	"mode":                  Str("mergeable"),
	"warm.rx_packets":       Num(200),
	"rx_pp_recycle_cached":  Num(850),
	"rx_pp_recycle_ring":    Num(150),
	"scenario.traffic.size": Num(64),
}

func TestExprEval(t *testing.T) {
	tests := []struct {
		expr string
		want Value
	}{
		{"1 + 2 * 3", Num(7)},
		{"(1 + 2) * 3", Num(9)},
		{"10 - 4 - 3", Num(3)},
		{"12 / 4 / 3", Num(1)},
		{"-3 + 5", Num(2)},
		{"--3", Num(3)},
		{"1_000_000 / 1e3", Num(1000)},
		{".5 * 4", Num(2)},
		{"2.5e-1 * 8", Num(2)},
		{"rx_packets - warm.rx_packets", Num(800)},
		{"rx_xdp_drops == rx_packets", Bool(true)},
		{"rx_kicks != 4", Bool(false)},
		{"rq0.num_free <= 8", Bool(true)},
		{"rq0.num_free < 8", Bool(false)},
		{"rq0.num_free >= 9", Bool(false)},
		{"rq0.num_free > -1", Bool(true)},
		{"mode == \"mergeable\"", Bool(true)},
		{"mode != \"small\"", Bool(true)},
		{"ratio(rx_pp_recycle_cached, rx_pp_recycle_ring + rx_pp_recycle_cached)", Num(0.85)},
		{"share(rx_pp_recycle_cached, rx_pp_recycle_ring)", Num(0.85)},
		{"min(3, rx_kicks)", Num(3)},
		{"max(3, rx_kicks)", Num(4)},
		{"abs(zero - 2)", Num(2)},
		{"between(rx_kicks, 4, 4)", Bool(true)},
		{"between(rx_kicks, 5, 6)", Bool(false)},
		{"within(9.5, 10, 0.05)", Bool(true)},
		{"within(9.4, 10, 0.05)", Bool(false)},
		{"within(0, 0, 0)", Bool(true)},
		{"published(\"r1-page-pool\", \"goodput_gbps\") > 9", Bool(true)},
		{"(rx_kicks < 5)", Bool(true)},
		{"\"a\\\"b\" == \"a\\\"b\"", Bool(true)},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			e, err := ParseExpr(tc.expr)
			require.NoError(t, err)
			got, err := e.Eval(testEnv)
			require.NoError(t, err)
			require.Equal(t, tc.want.Kind, got.Kind)
			if tc.want.Kind == KindNumber {
				assert.InDelta(t, tc.want.Num, got.Num, 1e-12)
			} else {
				assert.Equal(t, tc.want, got)
			}
		})
	}
}

func TestExprSyntaxErrors(t *testing.T) {
	tests := []struct {
		expr    string
		wantCol int
		wantMsg string
	}{
		{"", 1, "want a number, a name or '('"},
		{"1 +", 4, "want a number, a name or '('"},
		{"rx_packets = 3", 12, "'=' is not a comparison"},
		{"1 < 2 < 3", 7, "comparisons do not chain"},
		{"(1 + 2", 7, "want ')'"},
		{"1 2", 3, "unexpected number 2"},
		{"ratio(1)", 1, "ratio() takes 2 arguments, got 1"},
		{"ratio(1, 2, 3)", 1, "takes 2 arguments"},
		{"map(\"m\")", 1, "map() takes 2 or 3 arguments"},
		{"nosuch(1)", 1, "unknown function nosuch"},
		{"ratio(1 2)", 9, "want ',' or ')' in ratio()"},
		{"\"open", 1, "unterminated string"},
		{"rx_packets.", 1, "bad name"},
		{"a..b", 1, "bad name"},
		{"3x", 2, "a number cannot run into a name"},
		{"1_", 1, "bad number"},
		{"1e", 1, "bad number"},
		{"rx_packets @ 2", 12, "unexpected character '@'"},
		{"\"a\" + 1", 5, "'+' wants numbers, got a string"},
		{"-\"a\"", 1, "cannot negate a string"},
		{"\"a\" < \"b\"", 5, "strings compare only with == and !="},
		{"1 == \"a\"", 3, "cannot compare a number with a string"},
		{"(1 < 2) == (2 < 3)", 9, "cannot compare a boolean"},
		{"(1 < 2) + 1", 9, "'+' wants numbers, got a boolean"},
		{"ratio(\"a\", 1)", 1, "argument 1 is a string, want a number"},
		{"published(1, 2)", 1, "argument 1 is a number, want a string"},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			_, err := ParseExpr(tc.expr)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrExpr))
			var ee *ExprError
			require.True(t, errors.As(err, &ee))
			assert.Equal(t, tc.wantCol, ee.Pos+1, "column in %v", err)
			assert.Contains(t, err.Error(), tc.wantMsg)
		})
	}
}

func TestParseCondition(t *testing.T) {
	for _, ok := range []string{"a == b", "between(a, 1, 2)", "within(a, b, 0.1)", "(a < b)"} {
		_, err := ParseCondition(ok)
		assert.NoError(t, err, ok)
	}
	for _, bad := range []string{"a", "a + 1", "ratio(a, b)", "\"s\""} {
		_, err := ParseCondition(bad)
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "want a comparison")
	}
}

func TestExprEvalErrors(t *testing.T) {
	tests := []struct {
		expr, want string
	}{
		{"rx_packets / zero", "division by zero"},
		{"ratio(rx_packets, zero)", "the denominator is 0"},
		{"share(zero, zero)", "both are 0"},
		{"between(1, 3, 2)", "lo > hi"},
		{"within(1, 1, -1)", "negative tolerance"},
		{"nosuch + 1", "unknown name nosuch"},
		{"mode + 1", "'+' wants numbers"},
		{"mode < 3", "cannot compare"},
		{"-mode", "cannot negate"},
		{"ratio(mode, 1)", "argument 1 is \"mergeable\", want a number"},
		{"map(\"m\", 0)", "no map here"},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			e, err := ParseExpr(tc.expr)
			require.NoError(t, err)
			_, err = e.Eval(testEnv)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestExprExplain(t *testing.T) {
	tests := []struct {
		expr, detail string
		want         bool
	}{
		{"rx_xdp_drops == rx_packets", "1000 == 1000", true},
		{"ratio(rx_pp_recycle_cached, rx_packets) >= 0.9", "0.85 >= 0.9", false},
		{"between(rx_kicks, 1, 8)", "between(4, 1, 8)", true},
		{"mode == \"small\"", `"mergeable" == "small"`, false},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			e, err := ParseCondition(tc.expr)
			require.NoError(t, err)
			v, detail, err := e.Explain(testEnv)
			require.NoError(t, err)
			assert.Equal(t, tc.want, v.Bool)
			assert.Equal(t, tc.detail, detail)
		})
	}
}

func TestExprNames(t *testing.T) {
	e, err := ParseExpr("ratio(rx_packets, warm.rx_packets) + rx_packets * mode.x")
	require.NoError(t, err)
	assert.Equal(t, []string{"rx_packets", "warm.rx_packets", "mode.x"}, e.Names())
	assert.Equal(t, "ratio(rx_packets, warm.rx_packets) + rx_packets * mode.x", e.String())
}

func TestFormatNumber(t *testing.T) {
	tests := map[float64]string{
		0: "0", 16: "16", -3: "-3", 100032: "100032", 1e15: "1000000000000000",
		0.85: "0.85", 7.4791: "7.479", 1.0 / 3: "0.3333", 15626.3: "1.563e+04",
		math.Inf(1): "+Inf", math.NaN(): "NaN",
	}
	for in, want := range tests {
		assert.Equal(t, want, FormatNumber(in), "%v", in)
	}
	assert.Equal(t, `"x"`, Str("x").String())
	assert.Equal(t, "true", Bool(true).String())
}
