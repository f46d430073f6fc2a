package tutorials

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"ringlab/engine"
	"ringlab/engine/bpf"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
)

// HostFunc reads the counters of a real interface as flat names
// (rx_packets, ethtool.rx_kicks, page_pools ...). It is how a tutorial
// reads the host without the tutorials package doing I/O itself: the
// server provides one, a browser does not.
type HostFunc func(iface string) (map[string]float64, error)

// Options configure a Session.
type Options struct {
	// Host reads a real interface for the host directive; nil means the
	// host cannot be read here and host checks are skipped.
	Host HostFunc
	// Cache shares measurements between sessions; nil for none.
	Cache *Cache
}

// Cache remembers engine.MeasureUsage results. A measurement is a pure
// function of the scenario, metric and windows, so sessions may share
// one safely.
type Cache struct {
	mu sync.Mutex
	m  map[string]measured
}

// measured is what a measurement keeps: the metric's value and what
// limited the run over its window (engine.LimitOf).
type measured struct {
	v     float64
	limit engine.Limit
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{m: map[string]measured{}} }

func (c *Cache) measure(s scenario.Scenario, metric string, warmup, window int64) (measured, error) {
	var key string
	if c != nil {
		raw, err := json.Marshal(s)
		if err != nil {
			return measured{}, err
		}
		key = fmt.Sprintf("%s|%d|%d|%s", metric, warmup, window, raw)
		c.mu.Lock()
		v, ok := c.m[key]
		c.mu.Unlock()
		if ok {
			return v, nil
		}
	}
	m, err := engine.MeasureUsage(s, metric, sim.Duration(warmup), sim.Duration(window))
	if err != nil {
		return measured{}, err
	}
	v := measured{m.Value, m.Limit}
	if c != nil {
		c.mu.Lock()
		c.m[key] = v
		c.mu.Unlock()
	}
	return v, nil
}

// Status of a directive's result.
type Status string

// Statuses: a condition held, did not hold, could not be evaluated here
// (a host that cannot be read), or an action failed.
const (
	StatusOK    Status = "ok"
	StatusFail  Status = "fail"
	StatusSkip  Status = "skip"
	StatusError Status = "error"
)

// Item is what one directive did.
type Item struct {
	Line     int      `json:"line"`
	Op       string   `json:"op"`
	Text     string   `json:"text"`
	Status   Status   `json:"status,omitempty"`
	Detail   string   `json:"detail,omitempty"` // a condition's operands: "16 == 16"
	Output   []string `json:"output,omitempty"` // figures printed by show, run, measure, compare, host
	Error    string   `json:"error,omitempty"`
	Question string   `json:"question,omitempty"`
	Asks     string   `json:"asks,omitempty"` // question: the kind of prediction, for the reader ("yes or no", "a number of buffers")
	// Key grades a reader's prediction against an answer (grade.go).
	Key *Key `json:"key,omitempty"`
}

// StepResult is what a step did.
type StepResult struct {
	Number  int    `json:"number"`
	Title   string `json:"title"`
	Line    int    `json:"line"`
	Items   []Item `json:"items"`
	Checks  int    `json:"checks"` // checks and answers evaluated
	Failed  int    `json:"failed"` // conditions that did not hold and actions that failed
	Skipped int    `json:"skipped"`
}

// Session runs a tutorial step by step on the engine. Steps run in order:
// a step without a scenario of its own continues the previous step's
// world. The same tutorial gives the same results every time (the host
// directive aside).
type Session struct {
	t    *Tutorial
	opts Options
	next int

	scen    *scenario.Scenario
	world   *engine.World
	figs    Figures // of world; nil when stale
	bind    Figures // marks, measures, compares, host readings
	skipped map[string]string
	stopped error
}

// NewSession prepares a tutorial to run from its first step.
func NewSession(t *Tutorial, opts Options) *Session {
	return &Session{t: t, opts: opts, bind: Figures{}, skipped: map[string]string{}}
}

// Done reports whether every step has run.
func (s *Session) Done() bool { return s.next >= len(s.t.Steps) }

// Next is the index of the step RunStep runs next.
func (s *Session) Next() int { return s.next }

// World is the world the last step ran (nil before any).
func (s *Session) World() *engine.World { return s.world }

// skipError marks a name that cannot be read here (an unreadable host).
type skipError struct{ reason string }

func (e *skipError) Error() string { return e.reason }

// Lookup implements Env.
func (s *Session) Lookup(name string) (Value, error) {
	if v, ok := s.bind[name]; ok {
		return v, nil
	}
	asked := name
	name = canonical(name)
	if v, ok := s.bind[name]; ok {
		return v, nil
	}
	if prefix, _, ok := strings.Cut(name, "."); ok {
		if why, skip := s.skipped[prefix]; skip {
			return Value{}, &skipError{why}
		}
	}
	if s.world != nil {
		if s.figs == nil {
			s.figs = worldFigures(s.world)
		}
		if v, ok := s.figs[name]; ok {
			return v, nil
		}
	}
	names := s.bind.sortedNames()
	if s.figs != nil {
		names = append(names, s.figs.sortedNames()...)
	}
	msg := fmt.Sprintf("unknown name %s", asked)
	if s.world == nil {
		msg += " (nothing has run yet in this tutorial)"
	}
	if sug := suggest(asked, names); sug != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", sug)
	}
	return Value{}, errors.New(msg)
}

// Call implements Env for the functions that read the world.
func (s *Session) Call(name string, args []Value) (Value, error) {
	switch name {
	case "published":
		for _, r := range scenario.Reproductions() {
			if r.Config == args[0].Str && r.Metric == args[1].Str {
				return Num(r.Published), nil
			}
		}
		return Value{}, fmt.Errorf("published(%s, %s): not in the published table (ringlab reproduce lists it)", args[0], args[1])
	case "map":
		return s.mapValue(args)
	}
	return Value{}, fmt.Errorf("unknown function %s", name)
}

func (s *Session) mapValue(args []Value) (Value, error) {
	if s.world == nil || s.world.Prog == nil {
		return Value{}, fmt.Errorf("map(%s): no XDP program is attached", args[0])
	}
	key, off := args[1].Num, 0.0
	if len(args) > 2 {
		off = args[2].Num
	}
	if key < 0 || key != float64(uint32(key)) || off < 0 || off != float64(int(off)) {
		return Value{}, fmt.Errorf("map(%s, %s): want a whole key and offset", args[0], args[1])
	}
	for _, m := range s.world.Prog.Maps() {
		if m.Name() != args[0].Str {
			continue
		}
		k := binary.LittleEndian.AppendUint32(nil, uint32(key))
		cpus := 1
		if m.Type() == bpf.PerCPUArray {
			cpus = m.NumCPU()
		}
		var sum uint64
		for c := 0; c < cpus; c++ {
			v, err := m.Value(k, c)
			if err != nil {
				return Value{}, fmt.Errorf("map(%s): %v", args[0], err)
			}
			o := int(off)
			if o+8 > len(v) {
				return Value{}, fmt.Errorf("map(%s): offset %d + 8 is past the %d-byte value", args[0], o, len(v))
			}
			sum += binary.LittleEndian.Uint64(v[o:])
		}
		return Num(float64(sum)), nil
	}
	var names []string
	for _, m := range s.world.Prog.Maps() {
		names = append(names, m.Name())
	}
	return Value{}, fmt.Errorf("map(%s): the program has no such map (it has %v)", args[0], names)
}

// build makes a fresh world from the step's scenario.
func (s *Session) build(sc *scenario.Scenario) error {
	w, err := engine.New(*sc)
	if err != nil {
		return err
	}
	s.scen, s.world, s.figs = sc, w, nil
	return nil
}

// RunStep runs the next step and returns what it did: one Item per
// directive, in order. A failed action (the engine stopped, a world could
// not be built) stops the session: the steps after it report their
// directives skipped. After the last step it returns an empty result.
func (s *Session) RunStep() StepResult {
	if s.Done() {
		return StepResult{}
	}
	st := &s.t.Steps[s.next]
	s.next++
	res := StepResult{Number: st.Number, Title: st.Title, Line: st.Line}
	built := st.Scenario == nil
	var answers []int // indexes into res.Items, evaluated at the end
	for i := range st.Directives {
		d := &st.Directives[i]
		it := Item{Line: d.Line, Op: d.Op, Text: d.Text, Question: d.Question, Asks: asks(d)}
		if s.stopped != nil {
			it.Status, it.Error = StatusSkip, "not run: "+s.stopped.Error()
			res.Items = append(res.Items, it)
			continue
		}
		if !built && d.Op != OpPreset && d.Op != OpSet {
			built = true
			if err := s.build(st.Scenario); err != nil {
				s.fail(&it, err)
				res.Items = append(res.Items, it)
				continue
			}
		}
		switch d.Op {
		case OpRun:
			s.run(d, &it)
		case OpShow:
			s.show(d, &it)
		case OpCheck:
			s.cond(d.exprs[0], &it)
		case OpAnswer:
			answers = append(answers, len(res.Items))
		case OpMark:
			s.mark(d.Name, &it)
		case OpMeasure:
			s.measure(d, &it)
		case OpCompare:
			s.compare(d, &it)
		case OpHost:
			s.host(d, &it)
		}
		res.Items = append(res.Items, it)
	}
	if !built && s.stopped == nil {
		if err := s.build(st.Scenario); err != nil {
			it := Item{Line: st.Line, Op: "build", Text: "build the step's world"}
			s.fail(&it, err)
			res.Items = append(res.Items, it)
		}
	}
	for _, i := range answers {
		it := &res.Items[i]
		if s.stopped != nil {
			it.Status, it.Error = StatusSkip, "not run: "+s.stopped.Error()
			continue
		}
		d := s.directiveAt(st, it.Line)
		s.cond(d.exprs[0], it)
		if k, ok := s.answerKey(d, it); ok {
			it.Key = &k
		}
	}
	for _, it := range res.Items {
		switch it.Status {
		case StatusOK:
			res.Checks++
		case StatusFail, StatusError:
			if it.Op == OpCheck || it.Op == OpAnswer {
				res.Checks++
			}
			res.Failed++
		case StatusSkip:
			res.Skipped++
		}
	}
	return res
}

func (s *Session) directiveAt(st *Step, line int) *Directive {
	for i := range st.Directives {
		if st.Directives[i].Line == line {
			return &st.Directives[i]
		}
	}
	panic(fmt.Sprintf("tutorials: no directive at line %d", line))
}

// fail records a failed action and stops the session.
func (s *Session) fail(it *Item, err error) {
	it.Status, it.Error = StatusError, err.Error()
	s.stopped = fmt.Errorf("%s:%d failed", s.t.File, it.Line)
}

func (s *Session) run(d *Directive, it *Item) {
	w := s.world
	before := w.Received()
	err := d.Run().On(w, func(e engine.TraceEvent) { it.Output = append(it.Output, e.String()) })
	s.figs = nil
	if err != nil {
		s.fail(it, err)
		return
	}
	it.Output = append(it.Output, fmt.Sprintf("simulated time %s, %d packets received (%d in all)",
		fmtTime(int64(w.Now())), w.Received()-before, w.Received()))
}

func fmtTime(ns int64) string {
	return time.Duration(ns).String()
}

func (s *Session) show(d *Directive, it *Item) {
	for i, text := range d.Exprs {
		e := d.exprs[i]
		if e == nil {
			lines, err := s.group(text)
			if err != nil {
				s.evalError(it, err)
				return
			}
			it.Output = append(it.Output, lines...)
			continue
		}
		v, err := e.Eval(s)
		if err != nil {
			s.evalError(it, err)
			return
		}
		it.Output = append(it.Output, fmt.Sprintf("%s = %s", text, v))
	}
}

// evalError records an expression that could not be evaluated: skipped
// for an unreadable host, failed otherwise (a typo must not pass).
func (s *Session) evalError(it *Item, err error) {
	var se *skipError
	if errors.As(err, &se) {
		it.Status, it.Error = StatusSkip, se.reason
		return
	}
	it.Status, it.Error = StatusFail, err.Error()
}

func (s *Session) cond(e *Expr, it *Item) {
	v, detail, err := e.Explain(s)
	if err != nil {
		s.evalError(it, err)
		return
	}
	it.Detail = detail
	if v.Kind == KindBool && v.Bool {
		it.Status = StatusOK
	} else {
		it.Status = StatusFail
	}
}

func (s *Session) mark(name string, it *Item) {
	if s.world == nil {
		s.evalError(it, errors.New("mark: nothing has run yet"))
		return
	}
	if s.figs == nil {
		s.figs = worldFigures(s.world)
	}
	for k, v := range s.figs {
		s.bind[name+"."+k] = v
	}
	it.Output = append(it.Output, fmt.Sprintf("marked %d figures as %s.* at %s", len(s.figs), name, fmtTime(int64(s.world.Now()))))
}

func (s *Session) config(name string) (scenario.Scenario, error) {
	if name == ConfigScenario {
		if s.scen == nil {
			return scenario.Scenario{}, errors.New("no scenario yet")
		}
		return *s.scen, nil
	}
	return scenario.LookupPreset(name)
}

func (s *Session) measureOne(config, metric string, d *Directive) (measured, error) {
	sc, err := s.config(config)
	if err != nil {
		return measured{}, err
	}
	return s.opts.Cache.measure(sc, metric, d.WarmupNS, d.WindowNS)
}

func (s *Session) measure(d *Directive, it *Item) {
	m, err := s.measureOne(d.Config, d.Metric, d)
	if err != nil {
		s.fail(it, err)
		return
	}
	s.bind[d.Name] = Num(m.v)
	s.bind[d.Name+".limit"] = Str(m.limit.Kind)
	line := fmt.Sprintf("%s = %s %s = %s (warmup %s, window %s)", d.Name, d.Config, d.Metric, FormatNumber(m.v),
		fmtTime(d.WarmupNS), fmtTime(d.WindowNS))
	if p, ok := published(d.Config, d.Metric); ok {
		line += fmt.Sprintf("; published: %s %s", FormatNumber(p.Published), p.Unit)
	}
	it.Output = append(it.Output, line, fmt.Sprintf("%s.limit = %q: %s", d.Name, m.limit.Kind, m.limit.Why))
}

func published(config, metric string) (scenario.Reproduction, bool) {
	for _, r := range scenario.Reproductions() {
		if r.Config == config && r.Metric == metric {
			return r, true
		}
	}
	return scenario.Reproduction{}, false
}

func (s *Session) compare(d *Directive, it *Item) {
	ma, err := s.measureOne(d.Config, d.Metric, d)
	if err != nil {
		s.fail(it, err)
		return
	}
	mb, err := s.measureOne(d.ConfigB, d.Metric, d)
	if err != nil {
		s.fail(it, err)
		return
	}
	a, b := ma.v, mb.v
	n := d.Name
	s.bind[n+".a"], s.bind[n+".b"] = Num(a), Num(b)
	s.bind[n+".a_limit"], s.bind[n+".b_limit"] = Str(ma.limit.Kind), Str(mb.limit.Kind)
	ratio := "-"
	if a != 0 {
		s.bind[n+".ratio"] = Num(b / a)
		ratio = FormatNumber(b / a)
	}
	it.Output = append(it.Output,
		fmt.Sprintf("%s.a = %s %s = %s", n, d.Config, d.Metric, FormatNumber(a)),
		fmt.Sprintf("%s.b = %s %s = %s", n, d.ConfigB, d.Metric, FormatNumber(b)),
		fmt.Sprintf("%s.ratio = b / a = %s", n, ratio),
		fmt.Sprintf("%s.a_limit = %q, %s.b_limit = %q: %s; %s", n, ma.limit.Kind, n, mb.limit.Kind, ma.limit.Why, mb.limit.Why))
	pa, okA := published(d.Config, d.Metric)
	pb, okB := published(d.ConfigB, d.Metric)
	if okA && okB {
		s.bind[n+".published_a"], s.bind[n+".published_b"] = Num(pa.Published), Num(pb.Published)
		pr := "-"
		if pa.Published != 0 {
			s.bind[n+".published_ratio"] = Num(pb.Published / pa.Published)
			pr = FormatNumber(pb.Published / pa.Published)
		}
		it.Output = append(it.Output, fmt.Sprintf("published: %s -> %s %s, ratio %s (%s)",
			FormatNumber(pa.Published), FormatNumber(pb.Published), pa.Unit, pr, pa.Source))
	}
}

func (s *Session) host(d *Directive, it *Item) {
	if s.opts.Host == nil {
		s.skipped[d.Name] = fmt.Sprintf("the host's counters cannot be read here (host %s)", d.Iface)
		it.Status, it.Error = StatusSkip, s.skipped[d.Name]
		return
	}
	vals, err := s.opts.Host(d.Iface)
	if err != nil {
		s.skipped[d.Name] = fmt.Sprintf("host %s: %v", d.Iface, err)
		it.Status, it.Error = StatusSkip, s.skipped[d.Name]
		return
	}
	delete(s.skipped, d.Name)
	names := make([]string, 0, len(vals))
	for k := range vals {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		s.bind[d.Name+"."+k] = Num(vals[k])
	}
	it.Output = append(it.Output, fmt.Sprintf("read %d counters of %s as %s.*", len(vals), d.Iface, d.Name))
}

// Report is a whole tutorial's run.
type Report struct {
	Tutorial string       `json:"tutorial"`
	File     string       `json:"file"`
	Steps    []StepResult `json:"steps"`
	Checks   int          `json:"checks"`
	Failed   int          `json:"failed"`
	Skipped  int          `json:"skipped"`
}

// Run runs every step of a tutorial.
func Run(t *Tutorial, opts Options) *Report {
	r := &Report{Tutorial: t.Name, File: t.File}
	s := NewSession(t, opts)
	for !s.Done() {
		st := s.RunStep()
		r.Steps = append(r.Steps, st)
		r.Checks += st.Checks
		r.Failed += st.Failed
		r.Skipped += st.Skipped
	}
	return r
}

// Failures lists every failed check and action as file:line: problem.
func (r *Report) Failures() []string {
	var out []string
	for _, st := range r.Steps {
		for _, it := range st.Items {
			if it.Status != StatusFail && it.Status != StatusError {
				continue
			}
			msg := it.Text
			if it.Detail != "" {
				msg += " (" + it.Detail + ")"
			}
			if it.Error != "" {
				msg += ": " + it.Error
			}
			out = append(out, fmt.Sprintf("%s:%d: step %d: %s %s", r.File, it.Line, st.Number, it.Status, msg))
		}
	}
	return out
}
