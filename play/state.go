package play

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"ringlab/engine/bpf"
	"ringlab/engine/scenario"
)

// KV is one parameter set by the person: a key of Params and its value.
type KV struct {
	Key   string
	Value string
}

// Config is one configuration: a preset or a whole scenario, then the
// parameters changed on top of it, in the order they were changed, and
// the XDP object loaded from disk, if any.
type Config struct {
	Preset   string             // a preset name, or "" when Scenario is set
	Scenario *scenario.Scenario // a scenario given whole (JSON), or nil
	Set      []KV               // parameters changed, in order; a key appears once
	// Object is an ELF object the person loaded; Set then holds
	// xdp=object:NAME, and ObjectName is NAME.
	Object     []byte
	ObjectName string
	// Capture is a capture file (pcap or pcapng) the person loaded,
	// named CaptureName, whose frames feed the device in place of the
	// generator, at CaptureRate packets per second (0: as captured).
	Capture     []byte
	CaptureName string
	CaptureRate float64
}

// State is everything a link carries: the configuration (two of them in
// compare mode, which run in lockstep on simulated time), the command log
// applied since the run started, and the playback speed.
type State struct {
	A     Config
	B     *Config // compare mode's second configuration, nil otherwise
	Log   Log
	Speed float64 // events per second of wall time; 0 as fast as it goes; <0 not given
}

// Limits of a state read from a URL.
const (
	MaxScenarioJSON = 16 << 10  // bytes of a scenario given whole
	MaxObject       = 256 << 10 // bytes of an XDP object carried in a link
	MaxSpeed        = 1e9
)

// DefaultConfig is the configuration a bare URL gets: the default preset.
func DefaultConfig() Config { return Config{Preset: "default"} }

// presetName is the preset the configuration starts from when it has no
// whole scenario.
func (c *Config) presetName() string {
	if c.Preset == "" {
		return "default"
	}
	return c.Preset
}

// Recipe is the configuration as engine/scenario writes a world down:
// its preset or scenario, then its parameters as changes in order (a
// parameter KV{K, V} is the change K=V, as --set spells it).
func (c *Config) Recipe() scenario.Recipe {
	r := scenario.Recipe{Preset: c.presetName(), Scenario: c.Scenario}
	if c.Scenario != nil {
		r.Preset = ""
	}
	for _, kv := range c.Set {
		ch, err := scenario.ParseChange(kv.Key + "=" + kv.Value)
		if err != nil {
			ch = scenario.TextChange(kv.Key, kv.Value) // refused by Build, naming it
		}
		r.Changes = append(r.Changes, ch)
	}
	return r
}

// configOf is the configuration of a recipe: its base, and its changes
// as parameters.
func configOf(r scenario.Recipe) Config {
	c := Config{Preset: r.Preset, Scenario: r.Scenario}
	if c.Preset == "" && c.Scenario == nil {
		c.Preset = scenario.DefaultPreset
	}
	for _, ch := range r.Changes {
		k, v, _ := strings.Cut(ch.String(), "=")
		c.Set = append(c.Set, KV{k, v})
		if name, ok := strings.CutPrefix(v, objectPrefix); ok && k == "xdp" {
			c.ObjectName = name
		}
	}
	return c
}

// Base returns the scenario the configuration starts from.
func (c *Config) Base() (scenario.Scenario, error) { return c.Recipe().Base() }

// Build returns the configuration's scenario, validated: its recipe
// built (scenario.Recipe.Build), a parameter refused said as the page
// says it.
func (c *Config) Build() (scenario.Scenario, error) {
	if c.usesObject() && c.Object == nil {
		return scenario.Scenario{}, fmt.Errorf("%w: xdp=%s: the object's bytes are missing (load the file again)", ErrParam, c.xdpValue())
	}
	s, err := c.Recipe().Build()
	if ce, ok := errors.AsType[*scenario.ChangeError](err); ok {
		if _, knob := errors.AsType[*scenario.KnobError](ce.Err); knob {
			return scenario.Scenario{}, paramErr(ce.Err)
		}
		return scenario.Scenario{}, ce.Err
	}
	return s, err
}

// xdpValue is the value of the configuration's last xdp parameter.
func (c *Config) xdpValue() string {
	for i := len(c.Set) - 1; i >= 0; i-- {
		if c.Set[i].Key == "xdp" {
			return c.Set[i].Value
		}
	}
	return ""
}

// ProgramSpec returns the loaded object's collection, or nil without one.
func (c *Config) ProgramSpec() (*bpf.CollectionSpec, error) {
	if c.Object == nil || !c.usesObject() {
		return nil, nil
	}
	spec, err := bpf.LoadELF(bytes.NewReader(c.Object))
	if err != nil {
		return nil, fmt.Errorf("XDP object %q: %w", c.ObjectName, err)
	}
	return spec, nil
}

func (c *Config) usesObject() bool { return strings.HasPrefix(c.xdpValue(), objectPrefix) }

// With returns a copy of c with key set to value (moved to the end of Set
// if it was set before). It checks that the result builds.
func (c Config) With(key, value string) (Config, error) {
	if !scenario.IsKnob(key) { // the page's parameters are the knobs; a link may carry any change
		return c, paramErr(&scenario.KnobError{Key: key, Value: value, Unknown: true})
	}
	out := c.clone()
	out.Set = out.Set[:0]
	for _, kv := range c.Set {
		if kv.Key != key {
			out.Set = append(out.Set, kv)
		}
	}
	out.Set = append(out.Set, KV{key, value})
	if key == "xdp" && !strings.HasPrefix(value, objectPrefix) {
		out.Object, out.ObjectName = nil, ""
	}
	if _, err := out.Build(); err != nil {
		return c, err
	}
	return out, nil
}

// WithObject returns a copy of c running the ELF object obj (named name)
// as its XDP program. The object must load.
func (c Config) WithObject(name string, obj []byte) (Config, error) {
	name = cleanName(name)
	out := c.clone()
	out.Object = append([]byte(nil), obj...)
	out.ObjectName = name
	if _, err := bpf.LoadELF(bytes.NewReader(out.Object)); err != nil {
		return c, fmt.Errorf("XDP object %q: %w", name, err)
	}
	o2, err := out.With("xdp", objectPrefix+name)
	if err != nil {
		return c, err
	}
	o2.Object, o2.ObjectName = out.Object, name
	return o2, nil
}

func (c Config) clone() Config {
	out := c
	out.Set = append([]KV(nil), c.Set...)
	if c.Scenario != nil {
		s := *c.Scenario
		out.Scenario = &s
	}
	return out
}

// Value returns the current value of a parameter in the configuration.
func (c *Config) Value(key string) (string, error) {
	s, err := c.Build()
	if err != nil {
		return "", err
	}
	return GetParam(&s, key)
}

// Encode writes the state as a URL query (without the "?"), keys in a fixed
// order, so equal states give equal links:
//
//	recipe=PRESET+KEY=VALUE+...  the configuration's recipe in its text
//	                             form (scenario.Recipe: a preset or
//	                             scenario:BASE64URL(JSON), then the
//	                             parameters changed in order, as --set
//	                             spells them), spaces as "+"
//	obj=BASE64URL(ELF)           a loaded XDP object
//	pcap=BASE64URL(FILE)         a loaded capture; pcap_name=NAME and
//	                             pcap_rate=PPS (when not as captured)
//	cmp=1                        compare mode; b.recipe, b.obj and b.pcap
//	                             describe the second configuration
//	log=e12.p1.t5000             the command log
//	speed=10                     events per second, 0 as fast as it goes
//
// DecodeState also reads the links written before recipes (preset=,
// scenario=, set=KEY:VALUE,...).
func (st State) Encode() string {
	var parts []string
	add := func(k, v string) { parts = append(parts, k+"="+escape(v)) }
	conf := func(prefix string, c *Config) {
		parts = append(parts, prefix+"recipe="+escapeRecipe(c.Recipe().String()))
		if c.Object != nil && c.usesObject() {
			add(prefix+"obj", base64.RawURLEncoding.EncodeToString(c.Object))
		}
		if c.Capture != nil {
			add(prefix+"pcap", base64.RawURLEncoding.EncodeToString(c.Capture))
			add(prefix+"pcap_name", c.CaptureName)
			if c.CaptureRate > 0 {
				add(prefix+"pcap_rate", strconv.FormatFloat(c.CaptureRate, 'g', -1, 64))
			}
		}
	}
	conf("", &st.A)
	if st.B != nil {
		parts = append(parts, "cmp=1")
		conf("b.", st.B)
	}
	if len(st.Log) > 0 {
		parts = append(parts, "log="+st.Log.String())
	}
	if st.Speed >= 0 {
		add("speed", strconv.FormatFloat(st.Speed, 'g', -1, 64))
	}
	return strings.Join(parts, "&")
}

// IgnoredKeys are query keys that belong to the page, not to the state:
// the benchmark mode, a workshop room to join and its invitation, the
// tutorial panel's tutorial (or lesson's URL) and step, and the embed
// mode.
var IgnoredKeys = map[string]bool{"bench": true, "room": true, "invite": true, "tutorial": true, "lesson": true, "step": true, "embed": true}

// DecodeState reads a query written by Encode (a leading "?" is allowed).
// It checks every value, and that each configuration builds; unknown keys
// are errors, except IgnoredKeys.
func DecodeState(query string) (State, error) {
	query = strings.TrimPrefix(query, "?")
	vals, err := url.ParseQuery(query)
	if err != nil {
		return State{}, fmt.Errorf("%w: query: %v", ErrParam, err)
	}
	st := State{Speed: -1}
	one := func(k string) (string, bool, error) {
		v, ok := vals[k]
		if !ok {
			return "", false, nil
		}
		if len(v) != 1 {
			return "", false, fmt.Errorf("%w: %s given %d times", ErrParam, k, len(v))
		}
		return v[0], true, nil
	}
	known := map[string]bool{"cmp": true, "log": true, "speed": true}
	conf := func(prefix string, def *Config) (Config, error) {
		for _, k := range configKeys {
			known[prefix+k] = true
		}
		var c Config
		text, hasRecipe, err := one(prefix + "recipe")
		if err != nil {
			return c, err
		}
		if hasRecipe {
			for _, k := range []string{"preset", "scenario", "set"} {
				if _, old := vals[prefix+k]; old {
					return c, fmt.Errorf("%w: %srecipe and %s%s are exclusive", ErrParam, prefix, prefix, k)
				}
			}
			if len(text) > MaxRecipeText {
				return c, fmt.Errorf("%w: %srecipe: longer than %d bytes", ErrParam, prefix, MaxRecipeText)
			}
			r, err := scenario.ParseRecipe(text)
			if err != nil {
				return c, fmt.Errorf("%w: %srecipe: %v", ErrParam, prefix, err)
			}
			c = configOf(r)
		} else if c, err = oldConfig(prefix, def, one); err != nil {
			return c, err
		}
		obj, hasObj, err := one(prefix + "obj")
		if err != nil {
			return c, err
		}
		if hasObj {
			if len(obj) > MaxObject*4/3+4 {
				return c, fmt.Errorf("%w: %sobj: longer than %d bytes", ErrParam, prefix, MaxObject)
			}
			if c.Object, err = base64.RawURLEncoding.DecodeString(obj); err != nil {
				return c, fmt.Errorf("%w: %sobj: not base64url: %v", ErrParam, prefix, err)
			}
			if !c.usesObject() {
				return c, fmt.Errorf("%w: %sobj given without xdp=object:NAME in %srecipe", ErrParam, prefix, prefix)
			}
		}
		pcap, hasPcap, err := one(prefix + "pcap")
		if err != nil {
			return c, err
		}
		pname, hasName, err := one(prefix + "pcap_name")
		if err != nil {
			return c, err
		}
		prate, hasRate, err := one(prefix + "pcap_rate")
		if err != nil {
			return c, err
		}
		switch {
		case hasPcap:
			if len(pcap) > MaxCapture*4/3+4 {
				return c, fmt.Errorf("%w: %spcap: longer than %d bytes", ErrParam, prefix, MaxCapture)
			}
			b, err := base64.RawURLEncoding.DecodeString(pcap)
			if err != nil {
				return c, fmt.Errorf("%w: %spcap: not base64url: %v", ErrParam, prefix, err)
			}
			rate := 0.0
			if hasRate {
				if rate, err = strconv.ParseFloat(prate, 64); err != nil || !(rate > 0 && rate <= 1e10) {
					return c, fmt.Errorf("%w: %spcap_rate: %q is not a rate of packets per second above 0, up to 1e10", ErrParam, prefix, prate)
				}
			}
			if c, err = c.WithCapture(pname, b, rate); err != nil {
				return c, err
			}
		case hasName || hasRate:
			return c, fmt.Errorf("%w: %spcap_name and %spcap_rate need %spcap", ErrParam, prefix, prefix, prefix)
		}
		if _, err := c.Build(); err != nil {
			_, rerr := c.Recipe().Build()
			if ce, ok := errors.AsType[*scenario.ChangeError](rerr); ok {
				return c, fmt.Errorf("%w: %srecipe: %v", ErrParam, prefix, ce) // which change of the link
			}
			return c, err
		}
		if _, err := c.ProgramSpec(); err != nil {
			return c, err
		}
		return c, nil
	}
	if st.A, err = conf("", &Config{Preset: "default"}); err != nil {
		return State{}, err
	}
	cmp, hasCmp, err := one("cmp")
	if err != nil {
		return State{}, err
	}
	if hasCmp && cmp != "1" {
		return State{}, fmt.Errorf("%w: cmp=%q: want 1", ErrParam, cmp)
	}
	if hasCmp {
		// B starts from A's base unless told otherwise.
		b, err := conf("b.", &st.A)
		if err != nil {
			return State{}, fmt.Errorf("compare: %w", err)
		}
		st.B = &b
	} else {
		for _, k := range configKeys {
			known["b."+k] = false
		}
	}
	logText, _, err := one("log")
	if err != nil {
		return State{}, err
	}
	if st.Log, err = ParseLog(logText); err != nil {
		return State{}, err
	}
	if sp, ok, err := one("speed"); err != nil {
		return State{}, err
	} else if ok {
		f, err := strconv.ParseFloat(sp, 64)
		if err != nil || f != f || f < 0 || f > MaxSpeed {
			return State{}, fmt.Errorf("%w: speed=%q: want 0 (as fast as it goes) .. %g events per second", ErrParam, sp, MaxSpeed)
		}
		st.Speed = f
	}
	for k := range vals {
		if !known[k] && !IgnoredKeys[k] {
			return State{}, fmt.Errorf("%w: unknown key %q in the link", ErrParam, k)
		}
	}
	return st, nil
}

// configKeys are the query keys of a configuration (after a prefix):
// the recipe, the object and the capture, and the keys of the links
// before recipes.
var configKeys = []string{"recipe", "obj", "pcap", "pcap_name", "pcap_rate", "preset", "scenario", "set"}

// MaxRecipeText bounds a link's recipe: a whole scenario and a few
// kilobytes of changes.
const MaxRecipeText = MaxScenarioJSON*4/3 + 4 + 4<<10

// oldConfig reads a configuration from a link written before recipes:
// preset=NAME or scenario=BASE64URL(JSON), then set=KEY:VALUE,KEY:VALUE.
func oldConfig(prefix string, def *Config, one func(string) (string, bool, error)) (Config, error) {
	var c Config
	preset, hasPreset, err := one(prefix + "preset")
	if err != nil {
		return c, err
	}
	sc, hasScenario, err := one(prefix + "scenario")
	if err != nil {
		return c, err
	}
	switch {
	case hasPreset && hasScenario:
		return c, fmt.Errorf("%w: %spreset and %sscenario are exclusive", ErrParam, prefix, prefix)
	case hasScenario:
		if len(sc) > MaxScenarioJSON*4/3+4 {
			return c, fmt.Errorf("%w: %sscenario: longer than %d bytes", ErrParam, prefix, MaxScenarioJSON)
		}
		b, err := base64.RawURLEncoding.DecodeString(sc)
		if err != nil {
			return c, fmt.Errorf("%w: %sscenario: not base64url: %v", ErrParam, prefix, err)
		}
		s, err := scenario.DecodeBytes(b)
		if err != nil {
			return c, fmt.Errorf("%sscenario: %w", prefix, err)
		}
		c.Scenario = &s
	case hasPreset:
		c.Preset = preset
	default:
		c.Preset, c.Scenario = def.Preset, def.Scenario
	}
	set, _, err := one(prefix + "set")
	if err != nil {
		return c, err
	}
	if set != "" {
		seen := map[string]bool{}
		for _, item := range strings.Split(set, ",") {
			k, v, ok := strings.Cut(item, ":")
			if !ok {
				return c, fmt.Errorf("%w: %sset: %q is not KEY:VALUE", ErrParam, prefix, item)
			}
			if seen[k] {
				return c, fmt.Errorf("%w: %sset: %s given twice", ErrParam, prefix, k)
			}
			seen[k] = true
			c.Set = append(c.Set, KV{k, v})
			if k == "xdp" && strings.HasPrefix(v, objectPrefix) {
				c.ObjectName = strings.TrimPrefix(v, objectPrefix)
			}
		}
	}
	return c, nil
}

// escapeRecipe writes a recipe's text in a query value: spaces as "+",
// the characters of KEY=VALUE, a path and a version kept plainly, the
// rest percent-encoded.
func escapeRecipe(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ':
			b.WriteByte('+')
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~=:,", c) >= 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// escape percent-encodes what a query value cannot hold, keeping the
// characters links show plainly.
func escape(s string) string {
	const keep = "-_.~"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(keep, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// cleanName keeps an object's file name to characters a link carries
// plainly (no ',' or ':', which separate parameters).
func cleanName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name) && b.Len() < 64; i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "object.o"
	}
	return b.String()
}
