package tutorials

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"ringlab/engine"
	"ringlab/engine/scenario"
)

// numbered is one line of a ringlab block and its line in the file.
type numbered struct {
	line int
	text string
}

// directives parses the lines of one ringlab block into step.
func (p *parser) directives(step *Step, block []numbered) {
	if step == nil {
		return
	}
	for i := 0; i < len(block); i++ {
		ln := block[i].line
		text := block[i].text
		// A line ending in a backslash continues on the next.
		for strings.HasSuffix(strings.TrimRight(text, " \t"), `\`) && i+1 < len(block) {
			text = strings.TrimSuffix(strings.TrimRight(text, " \t"), `\`) + " " + strings.TrimSpace(block[i+1].text)
			i++
		}
		text, err := stripComment(text)
		if err != nil {
			p.errf(ln, "%v", err)
			continue
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		d, err := parseDirective(text)
		if err != nil {
			p.errf(ln, "%v", err)
			continue
		}
		d.Line = ln
		step.Directives = append(step.Directives, d)
	}
}

// stripComment removes a # comment that is not inside a string.
func stripComment(s string) (string, error) {
	in := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if in {
				i++
			}
		case '"':
			in = !in
		case '#':
			if !in {
				return s[:i], nil
			}
		}
	}
	if in {
		return "", fmt.Errorf("unterminated string")
	}
	return s, nil
}

// parseDirective parses one directive line (comment and blanks removed).
func parseDirective(text string) (Directive, error) {
	op, rest, _ := strings.Cut(text, " ")
	rest = strings.TrimSpace(rest)
	d := Directive{Op: op, Text: text}
	switch op {
	case OpPreset:
		if rest == "" || strings.ContainsAny(rest, " \t") {
			return d, fmt.Errorf("preset: want one preset name")
		}
		if _, err := scenario.LookupPreset(rest); err != nil {
			return d, fmt.Errorf("preset: %v", err)
		}
		d.Name = rest
	case OpSet:
		path, val, ok := strings.Cut(rest, "=")
		path, val = strings.TrimSpace(path), strings.TrimSpace(val)
		if !ok || path == "" || val == "" {
			return d, fmt.Errorf("set: want set field.path=value, as in set traffic.rate_pps=1000000")
		}
		c, err := scenario.ParseChange(path + "=" + val) // as --set reads it
		if err != nil {
			return d, fmt.Errorf("set: %v", err)
		}
		d.Path, d.Value = c.Path, c.Value
	case OpRun:
		return parseRun(d, rest)
	case OpShow:
		if rest == "" {
			return d, fmt.Errorf("show: want expressions separated by commas, or one of the groups %s", strings.Join(groupNames(), ", "))
		}
		for _, item := range splitTop(rest) {
			item = strings.TrimSpace(item)
			if _, ok := showGroups[item]; ok {
				d.Exprs = append(d.Exprs, item)
				d.exprs = append(d.exprs, nil)
				continue
			}
			e, err := ParseExpr(item)
			if err != nil {
				return d, fmt.Errorf("show: %v", err)
			}
			d.Exprs = append(d.Exprs, item)
			d.exprs = append(d.exprs, e)
		}
	case OpCheck, OpAnswer:
		if op == OpAnswer {
			d.Reply, rest = splitReply(rest)
		}
		if rest == "" {
			return d, fmt.Errorf("%s: want a condition, as in %s rx_packets > 0", op, op)
		}
		e, err := ParseCondition(rest)
		if err != nil {
			return d, fmt.Errorf("%s: %v", op, err)
		}
		d.Exprs = []string{rest}
		d.exprs = []*Expr{e}
	case OpQuestion:
		return parseQuestion(d, rest)
	case OpMark:
		if !bindingName.MatchString(rest) {
			return d, fmt.Errorf("mark: want a name of lower-case letters, digits and _ (got %q)", rest)
		}
		d.Name = rest
	case OpMeasure:
		return parseMeasure(d, rest)
	case OpCompare:
		return parseCompare(d, rest)
	case OpHost:
		f := strings.Fields(rest)
		switch {
		case len(f) == 1:
			d.Iface, d.Name = f[0], "host"
		case len(f) == 3 && f[1] == "as":
			d.Iface, d.Name = f[0], f[2]
		default:
			return d, fmt.Errorf("host: want host IFACE [as NAME]")
		}
		if !bindingName.MatchString(d.Name) {
			return d, fmt.Errorf("host: bad name %q", d.Name)
		}
		if len(d.Iface) > 15 || strings.ContainsAny(d.Iface, "/:") {
			return d, fmt.Errorf("host: %q is not an interface name", d.Iface)
		}
	default:
		return d, fmt.Errorf("unknown directive %q (known: preset, set, run, show, check, question, answer, mark, measure, compare, host)", op)
	}
	return d, nil
}

func groupNames() []string {
	var out []string
	for g := range showGroups {
		out = append(out, g)
	}
	sort.Strings(out)
	return out
}

// splitTop splits s at commas outside parentheses and strings.
func splitTop(s string) []string {
	var out []string
	depth, in, start := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && c == '(':
			depth++
		case !in && c == ')':
			depth--
		case !in && c == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// keyValues parses "k=v k=v" options.
func keyValues(fields []string) (map[string]string, error) {
	out := map[string]string{}
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("want key=value, got %q", f)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s given twice", k)
		}
		out[k] = v
	}
	return out, nil
}

func parseDuration(key, v string, max int64) (int64, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%s: want a positive duration such as 2ms or 500us", key, v)
	}
	if d.Nanoseconds() > max {
		return 0, fmt.Errorf("%s=%s: at most %s", key, v, time.Duration(max))
	}
	return d.Nanoseconds(), nil
}

func parseCount(key, v string, max uint64) (uint64, error) {
	n, err := strconv.ParseUint(strings.ReplaceAll(v, "_", ""), 10, 64)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%s=%s: want a positive whole number", key, v)
	}
	if n > max {
		return 0, fmt.Errorf("%s=%s: at most %d", key, v, max)
	}
	return n, nil
}

func parseRun(d Directive, rest string) (Directive, error) {
	fields := strings.Fields(rest)
	for n := len(fields); n > 0; n = len(fields) {
		if fields[n-1] == "trace" && !d.Trace {
			d.Trace = true
		} else if fields[n-1] == "watch" && !d.Watch {
			d.Watch = true
		} else {
			break
		}
		fields = fields[:n-1]
	}
	kv, err := keyValues(fields)
	if err != nil {
		return d, fmt.Errorf("run: %v", err)
	}
	if len(kv) != 1 {
		return d, fmt.Errorf("run: want exactly one of packets=N, duration=D, events=N")
	}
	for k, v := range kv {
		switch k {
		case "packets":
			d.Packets, err = parseCount(k, v, MaxRunPackets)
		case "events":
			d.Events, err = parseCount(k, v, MaxRunEvents)
		case "duration":
			d.DurationNS, err = parseDuration(k, v, MaxRunDuration)
		default:
			err = fmt.Errorf("unknown option %q: want packets=N, duration=D or events=N", k)
		}
	}
	if err != nil {
		return d, fmt.Errorf("run: %v", err)
	}
	if d.Trace && (d.Events == 0 || d.Events > MaxTraceEvents) {
		return d, fmt.Errorf("run: trace lists each event: only with events=N, N at most %d", MaxTraceEvents)
	}
	if d.Watch && (d.DurationNS > 0 || d.Events > MaxWatchEvents || d.Packets > MaxWatchPackets) {
		return d, fmt.Errorf("run: watch plays the run in the browser at a speed to follow: only with events=N (at most %d) or packets=N (at most %d)", MaxWatchEvents, MaxWatchPackets)
	}
	return d, nil
}

// measureOptions reads warmup= and window=, defaulting to the
// reproduction's windows.
func measureOptions(d *Directive, fields []string) error {
	kv, err := keyValues(fields)
	if err != nil {
		return err
	}
	d.WarmupNS, d.WindowNS = int64(engine.ReproWarmup), int64(engine.ReproWindow)
	for k, v := range kv {
		switch k {
		case "warmup":
			d.WarmupNS, err = parseDuration(k, v, MaxMeasureNS)
		case "window":
			d.WindowNS, err = parseDuration(k, v, MaxMeasureNS)
		default:
			err = fmt.Errorf("unknown option %q: want warmup=D or window=D", k)
		}
		if err != nil {
			return err
		}
	}
	if d.WarmupNS+d.WindowNS > MaxMeasureNS {
		return fmt.Errorf("warmup + window is more than %s", time.Duration(MaxMeasureNS))
	}
	return nil
}

func checkConfig(name string) error {
	if name == ConfigScenario {
		return nil
	}
	if _, err := scenario.LookupPreset(name); err != nil {
		return fmt.Errorf("%q is neither %q (the step's scenario) nor a preset (%s)", name, ConfigScenario, strings.Join(scenario.PresetNames(), ", "))
	}
	return nil
}

// Metrics engine.Measure knows.
var Metrics = []string{"goodput_gbps", "delivered_gbps", "tx_mpps", "recycle_cached_share", "recycle_ring_share", "alloc_refill_per_mpkt"}

func checkMetric(m string) error {
	if !contains(Metrics, m) {
		return fmt.Errorf("unknown metric %q (known: %s)", m, strings.Join(Metrics, ", "))
	}
	return nil
}

func parseMeasure(d Directive, rest string) (Directive, error) {
	f := strings.Fields(rest)
	if len(f) < 4 || f[1] != "=" {
		return d, fmt.Errorf("measure: want measure NAME = CONFIG METRIC [warmup=D] [window=D]")
	}
	if !bindingName.MatchString(f[0]) {
		return d, fmt.Errorf("measure: bad name %q (lower-case letters, digits and _)", f[0])
	}
	d.Name, d.Config, d.Metric = f[0], f[2], f[3]
	if err := checkConfig(d.Config); err != nil {
		return d, fmt.Errorf("measure: %v", err)
	}
	if err := checkMetric(d.Metric); err != nil {
		return d, fmt.Errorf("measure: %v", err)
	}
	if err := measureOptions(&d, f[4:]); err != nil {
		return d, fmt.Errorf("measure: %v", err)
	}
	return d, nil
}

func parseCompare(d Directive, rest string) (Directive, error) {
	f := strings.Fields(rest)
	if len(f) < 3 {
		return d, fmt.Errorf("compare: want compare A B METRIC [as NAME] [warmup=D] [window=D]")
	}
	d.Config, d.ConfigB, d.Metric, d.Name = f[0], f[1], f[2], "compare"
	f = f[3:]
	if len(f) >= 2 && f[0] == "as" {
		d.Name = f[1]
		f = f[2:]
	}
	if !bindingName.MatchString(d.Name) {
		return d, fmt.Errorf("compare: bad name %q (lower-case letters, digits and _)", d.Name)
	}
	for _, c := range []string{d.Config, d.ConfigB} {
		if err := checkConfig(c); err != nil {
			return d, fmt.Errorf("compare: %v", err)
		}
	}
	if err := checkMetric(d.Metric); err != nil {
		return d, fmt.Errorf("compare: %v", err)
	}
	if err := measureOptions(&d, f); err != nil {
		return d, fmt.Errorf("compare: %v", err)
	}
	return d, nil
}

// finishStep checks a step's directives as a whole and resolves its
// scenario.
func (p *parser) finishStep(step *Step) {
	if len(step.Directives) == 0 {
		p.errf(step.Line, "step %d has no ringlab block: a step applies a scenario or runs, and checks something", step.Number)
		return
	}
	for _, d := range step.Directives {
		switch d.Op {
		case OpMeasure:
			p.binds[d.Name] = true
		case OpCompare, OpMark, OpHost:
			p.prefixes[d.Name] = true
		}
	}
	var (
		rec        *scenario.Recipe // the step's world: its preset, or the previous step's recipe, then its sets
		setLines   []int            // the line of each change of rec
		sawOther   bool             // a directive other than preset/set
		question   *Directive
		checks     int
		needsWorld bool
	)
	for i := range step.Directives {
		d := &step.Directives[i]
		switch d.Op {
		case OpPreset, OpSet:
			if sawOther {
				p.errf(d.Line, "%s after other directives: a step has one scenario, set before it runs (start a new step to change it)", d.Op)
				continue
			}
			if d.Op == OpPreset {
				if rec != nil {
					p.errf(d.Line, "preset: a step has one preset, before its set lines")
					continue
				}
				rec, setLines = &scenario.Recipe{Preset: d.Name}, nil
				continue
			}
			if rec == nil {
				if p.recipe == nil {
					p.errf(d.Line, "set: no scenario yet: start with preset NAME")
					continue
				}
				r := p.recipe.With()
				rec = &r
				setLines = make([]int, len(r.Changes)) // the previous steps' sets: at this line
				for j := range setLines {
					setLines[j] = d.Line
				}
			}
			rec.Changes = append(rec.Changes, scenario.Change{Path: d.Path, Value: d.Value})
			setLines = append(setLines, d.Line)
			continue
		case OpQuestion:
			if question != nil {
				p.errf(d.Line, "question: the question at line %d has no answer yet", question.Line)
			}
			question = d
		case OpAnswer:
			if question == nil {
				p.errf(d.Line, "answer without a question before it")
			} else if err := pairAnswer(question, d); err != nil {
				p.errf(d.Line, "%v", err)
			}
			question = nil
			checks++
		case OpCheck:
			checks++
		case OpRun:
			needsWorld = true
		case OpMeasure, OpCompare:
			if d.Config == ConfigScenario || d.ConfigB == ConfigScenario {
				if rec == nil && p.recipe == nil {
					p.errf(d.Line, "%s: no scenario yet: start with preset NAME", d.Op)
				}
			}
		}
		sawOther = true
	}
	if question != nil {
		p.errf(question.Line, "question without an answer in step %d", step.Number)
	}
	if checks == 0 {
		p.errf(step.Line, "step %d has no check or answer: say what the reader should see, and let the engine confirm it", step.Number)
	}
	if rec != nil {
		s, err := rec.Build()
		switch ce, ok := errors.AsType[*scenario.ChangeError](err); {
		case ok:
			p.errf(setLines[ce.Index], "set: %v", ce.Err)
		case err != nil:
			p.errf(step.Line, "preset: %v", err)
		default:
			step.Recipe, step.Scenario = rec, &s
			p.recipe = rec
		}
	} else if needsWorld || p.readsWorld(step) {
		if p.recipe == nil {
			p.errf(step.Line, "step %d runs or reads the world but no step so far has a scenario: start with preset NAME", step.Number)
		}
		step.Continues = true
	}
}

// readsWorld reports whether a step without run reads the world's
// figures (it then continues the previous step's world): a mark, a show
// group other than scenario, map(), or a name that no measure, compare,
// mark or host of the tutorial has bound.
func (p *parser) readsWorld(step *Step) bool {
	for _, d := range step.Directives {
		switch d.Op {
		case OpMark:
			return true
		case OpShow, OpCheck, OpAnswer:
			for i, e := range d.exprs {
				if e == nil {
					if d.Exprs[i] != "scenario" {
						return true
					}
					continue
				}
				if e.usesFunc("map") {
					return true
				}
				for _, n := range e.Names() {
					prefix, _, _ := strings.Cut(n, ".")
					if !p.binds[n] && !(strings.Contains(n, ".") && p.prefixes[prefix]) {
						return true
					}
				}
			}
		}
	}
	return false
}
