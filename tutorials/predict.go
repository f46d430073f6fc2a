package tutorials

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// A question says what kind of prediction it asks for, and its answer is
// graded by that kind:
//
//	question yesno "Has rx_packets moved?"
//	answer no because rx_packets == 0
//
//	question choice(the cache, the ptr_ring, the page allocator) "Where does each page go?"
//	answer the cache because rx_pp_recycle_cached == rx_xdp_drops
//
//	question number(buffers) "How many buffers fit in the ring?"
//	answer rq0.posted_buffers == 53
//
//	question text "When does the page return to the page_pool?"
//	answer rx_pp_recycle_cached + rx_pp_recycle_ring == tx_packets
//
// A yes/no or choice answer names the right reply and the condition the
// engine confirms it with; a number answer's first operand is the figure
// asked for, in the question's unit; a text answer is not graded: what
// the reader wrote is shown beside the engine's answer.

// Prediction kinds.
const (
	PredictYesNo  = "yesno"
	PredictChoice = "choice"
	PredictNumber = "number"
	PredictText   = "text"
)

// Bounds of a question's declaration (and of a key the page sends back).
const (
	MaxOptions   = 8
	MaxOptionLen = 40
	MaxUnitLen   = 32
)

var (
	kindDecl   = regexp.MustCompile(`^(yesno|text|choice|number)(?:\(([^()"]*)\))?(?:\s+(.*))?$`)
	replyWords = regexp.MustCompile(`^[\p{L}\p{N} _.'/+%-]+$`)
)

const kindHelp = `question yesno "TEXT", question choice(A, B, ...) "TEXT", question number(UNIT) "TEXT" or question text "TEXT"`

// parseQuestion reads `KIND "TEXT"` into d.
func parseQuestion(d Directive, rest string) (Directive, error) {
	if strings.HasPrefix(rest, `"`) {
		return d, fmt.Errorf("question: say what kind of prediction it asks for: %s", kindHelp)
	}
	m := kindDecl.FindStringSubmatch(rest)
	if m == nil {
		return d, fmt.Errorf("question: want %s", kindHelp)
	}
	kind, params, text := m[1], m[2], m[3]
	hasParams := strings.HasPrefix(rest[len(kind):], "(")
	q, err := strconv.Unquote(strings.TrimSpace(text))
	if err != nil || !strings.HasPrefix(text, `"`) {
		return d, fmt.Errorf("question: want the question in double quotes after its kind")
	}
	if strings.TrimSpace(q) == "" {
		return d, fmt.Errorf("question: empty")
	}
	d.Question, d.Kind = q, kind
	switch kind {
	case PredictYesNo, PredictText:
		if hasParams {
			return d, fmt.Errorf("question: %s takes no options (%s)", kind, kindHelp)
		}
	case PredictChoice:
		opts, err := parseOptions(params)
		if err != nil {
			return d, fmt.Errorf("question: choice: %v", err)
		}
		d.Options = opts
	case PredictNumber:
		unit := strings.TrimSpace(params)
		if unit == "" {
			return d, fmt.Errorf("question: number(UNIT): say the unit of the figure asked for (number(buffers), number(Gbit/s), number(x) for a ratio, number(%%) for a share)")
		}
		if len(unit) > MaxUnitLen {
			return d, fmt.Errorf("question: number: a unit of at most %d bytes", MaxUnitLen)
		}
		d.Unit = unit
	}
	return d, nil
}

func parseOptions(s string) ([]string, error) {
	var opts []string
	seen := map[string]bool{}
	for _, o := range strings.Split(s, ",") {
		o = strings.Join(strings.Fields(o), " ")
		switch {
		case o == "":
			return nil, fmt.Errorf("want choice(A, B, ...): options separated by commas, none empty")
		case len(o) > MaxOptionLen:
			return nil, fmt.Errorf("option %q is longer than %d bytes", o, MaxOptionLen)
		case !replyWords.MatchString(o):
			return nil, fmt.Errorf("option %q: letters, digits, spaces and _ . ' / + %% - only", o)
		case seen[strings.ToLower(o)]:
			return nil, fmt.Errorf("option %q given twice", o)
		}
		seen[strings.ToLower(o)] = true
		opts = append(opts, o)
	}
	if len(opts) < 2 || len(opts) > MaxOptions {
		return nil, fmt.Errorf("want 2 to %d options, got %d", MaxOptions, len(opts))
	}
	return opts, nil
}

// splitReply reads an answer's `REPLY because CONDITION`; reply is ""
// when the answer is a condition alone.
func splitReply(rest string) (reply, cond string) {
	before, after, ok := strings.Cut(rest, " because ")
	if !ok {
		return "", rest
	}
	before = strings.TrimSpace(before)
	if !replyWords.MatchString(before) {
		return "", rest
	}
	return strings.Join(strings.Fields(before), " "), strings.TrimSpace(after)
}

// pairAnswer checks an answer against its question's kind and copies the
// kind onto the answer (its key grades by it).
func pairAnswer(q, a *Directive) error {
	a.Kind, a.Unit, a.Options = q.Kind, q.Unit, q.Options
	switch q.Kind {
	case PredictYesNo:
		if a.Reply == "" {
			return fmt.Errorf("answer: a yesno question's answer is `answer yes because CONDITION` or `answer no because CONDITION`")
		}
		r := strings.ToLower(a.Reply)
		if r != "yes" && r != "no" {
			return fmt.Errorf("answer: a yesno question's reply is yes or no, not %q", a.Reply)
		}
		a.Reply = r
	case PredictChoice:
		if a.Reply == "" {
			return fmt.Errorf("answer: a choice question's answer is `answer OPTION because CONDITION`, OPTION one of %s", strings.Join(q.Options, ", "))
		}
		i := optionIndex(q.Options, a.Reply)
		if i < 0 {
			return fmt.Errorf("answer: %q is not an option of the question (%s)", a.Reply, strings.Join(q.Options, ", "))
		}
		a.Reply = q.Options[i]
	case PredictNumber:
		if a.Reply != "" {
			return fmt.Errorf("answer: a number question's answer is a condition on the figure asked for, first (answer rq0.posted_buffers == 53), with no reply before because")
		}
		if len(a.exprs) == 1 && !predictable(a.exprs[0]) {
			return fmt.Errorf("answer: a number question's answer compares the figure asked for: FIGURE == N, FIGURE < N, between(FIGURE, LO, HI) or within(FIGURE, TARGET, FRAC)")
		}
	case PredictText:
		if a.Reply != "" {
			return fmt.Errorf("answer: a text question is not graded: its answer is a condition alone")
		}
	default:
		return fmt.Errorf("answer: the question has no kind (%s)", kindHelp)
	}
	return nil
}

// predictable reports whether e has an operand to predict.
func predictable(e *Expr) bool {
	switch n := e.root.(type) {
	case *binNode:
		return n.op.comparison()
	case *callNode:
		return (n.name == "between" || n.name == "within") && len(n.args) > 0
	}
	return false
}

func optionIndex(opts []string, s string) int {
	s = strings.Join(strings.Fields(strings.Trim(strings.TrimSpace(s), `"'`)), " ")
	for i, o := range opts {
		if strings.EqualFold(o, s) {
			return i
		}
	}
	return -1
}

// checkQuestion checks a question decoded from JSON as parseQuestion
// would have read it.
func checkQuestion(d *Directive) error {
	var decl string
	switch d.Kind {
	case PredictYesNo, PredictText:
		decl = d.Kind
	case PredictChoice:
		decl = "choice(" + strings.Join(d.Options, ", ") + ")"
	case PredictNumber:
		decl = "number(" + d.Unit + ")"
	default:
		return fmt.Errorf("question: kind %q (%s)", d.Kind, kindHelp)
	}
	again, err := parseQuestion(Directive{}, decl+" "+strconv.Quote(d.Question))
	if err != nil {
		return err
	}
	if !slices.Equal(again.Options, d.Options) || again.Unit != d.Unit {
		return fmt.Errorf("question: options or unit not as the kind declares them")
	}
	return nil
}

// asks says what a question wants, for the reader; "" for another
// directive.
func asks(d *Directive) string {
	if d.Op != OpQuestion {
		return ""
	}
	switch d.Kind {
	case PredictYesNo:
		return "yes or no"
	case PredictChoice:
		return "one of: " + strings.Join(d.Options, ", ")
	case PredictNumber:
		if d.Unit == "%" {
			return "a percentage"
		}
		return "a number (" + d.Unit + ")"
	}
	return "in words"
}
