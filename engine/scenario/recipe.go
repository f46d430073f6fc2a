package scenario

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// A Recipe is a world as a person writes it down: a preset or a whole
// scenario, then changes in order, each a knob by name or a field by its
// JSON path (Apply). Links, rooms, tutorials and `ringlab run --set` all
// say "preset plus changes" with it, in one text form (String, ParseRecipe):
//
//	r2-mtu9000-after kernel=6.10 page_pool=off traffic.sizes=[64,1514]
//
// the base first (a preset's name, or scenario:BASE64URL of a scenario's
// JSON), then the changes separated by spaces, each spelled as --set
// takes it (ParseChange): KEY=VALUE, a leading dot for a raw path a knob
// shares its name with (.cpus=1), a value with a space written as a JSON
// string (description="a ring of 16"). A space inside a double-quoted
// string does not separate changes.
type Recipe struct {
	Preset   string    // a preset's name; "" with Scenario nil is DefaultPreset
	Scenario *Scenario // a whole scenario instead of a preset, or nil
	Changes  []Change  // in order
}

// DefaultPreset is the preset of a recipe that names none.
const DefaultPreset = "default"

// MaxChanges bounds a recipe's changes: a recipe comes from links and
// rooms' requests, and building one costs a pass over the scenario per
// change.
const MaxChanges = 64

// ScenarioPrefix begins the text form's base when it is a whole scenario:
// scenario:BASE64URL(JSON), unpadded.
const ScenarioPrefix = "scenario:"

// ChangeError is a recipe's change refused: its place (Index, from 0),
// its key and value as the text form spells them, and why.
type ChangeError struct {
	Index      int
	Key, Value string
	Err        error
}

func (e *ChangeError) Error() string {
	return fmt.Sprintf("change %d (%s=%s): %v", e.Index+1, e.Key, e.Value, e.Err)
}

func (e *ChangeError) Unwrap() error { return e.Err }

// ParseChange reads one change, KEY=VALUE, as --set takes it, and returns
// it in canonical form: a knob's value as a JSON string of its text
// (cpus=2 and cpus="2" are one change), a raw path's value compacted JSON
// (TextChange: a bare word is a string for a string field), its leading
// dot kept only where the path would otherwise be a knob. A raw value
// that is not JSON is refused here, naming the path.
func ParseChange(kv string) (Change, error) {
	path, text, ok := strings.Cut(kv, "=")
	if !ok || path == "" {
		return Change{}, fmt.Errorf("%q: want KEY=VALUE (cpus=2, traffic.size=128)", kv)
	}
	if _, err := splitPath(strings.TrimPrefix(path, ".")); err != nil {
		return Change{}, err
	}
	return canonical(TextChange(path, text))
}

// canonical is c in the form ParseChange returns.
func canonical(c Change) (Change, error) {
	if key, ok := knobChange(c); ok {
		return Change{Path: key, Value: jsonString(strings.ToValidUTF8(knobText(c.Value), "\uFFFD"))}, nil
	}
	path := strings.TrimPrefix(c.Path, ".")
	var buf bytes.Buffer
	if err := json.Compact(&buf, c.Value); err != nil {
		return Change{}, fmt.Errorf("%s: the value %s is not JSON: %v", path, c.Value, err)
	}
	out := Change{Path: path, Value: buf.Bytes()}
	if _, ok := knobChange(out); ok {
		out.Path = "." + path // the field, not the knob of its name
	}
	return out, nil
}

// jsonString is s as a JSON string.
func jsonString(s string) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// String is the change as --set and the text form spell it: the bare
// text where it reads back the same (cpus=2, kernel=6.10, page_pool=off),
// else the value as JSON (description="a ring of 16").
func (c Change) String() string {
	cc, err := canonical(c)
	if err != nil {
		return c.Path + "=" + string(c.Value)
	}
	var tries []string
	if _, ok := knobChange(cc); ok {
		t := knobText(cc.Value)
		tries = []string{cc.Path + "=" + t, cc.Path + "=" + string(jsonString(t))}
	} else {
		var str string
		if json.Unmarshal(cc.Value, &str) == nil {
			tries = append(tries, cc.Path+"="+str)
		}
		tries = append(tries, cc.Path+"="+string(cc.Value))
	}
	for _, t := range tries {
		if back, err := ParseChange(t); err == nil && back.Path == cc.Path && bytes.Equal(back.Value, cc.Value) && isToken(t) {
			return t
		}
	}
	return tries[len(tries)-1]
}

// keyValue is the change's key and value as String spells them.
func (c Change) keyValue() (string, string) {
	k, v, _ := strings.Cut(c.String(), "=")
	return k, v
}

// isToken reports whether t reads back as one token of the text form.
func isToken(t string) bool {
	toks, err := tokens(t)
	return err == nil && len(toks) == 1 && toks[0] == t
}

// tokens splits a recipe's text at white space outside double-quoted
// strings (in which a backslash escapes the next character).
func tokens(text string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in, open := false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case in && c == '\\' && i+1 < len(text):
			cur.WriteByte(c)
			i++
			cur.WriteByte(text[i])
			continue
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			if open {
				out = append(out, cur.String())
				cur.Reset()
				open = false
			}
			continue
		}
		cur.WriteByte(c)
		open = true
	}
	if in {
		return nil, fmt.Errorf("%q: a string is not closed", cur.String())
	}
	if open {
		out = append(out, cur.String())
	}
	return out, nil
}

// ParseRecipe reads a recipe's text form (Recipe, String). An error names
// what it could not read: the base, or a change by its place (a
// *ChangeError).
func ParseRecipe(text string) (Recipe, error) {
	toks, err := tokens(text)
	if err != nil {
		return Recipe{}, fmt.Errorf("recipe: %w", err)
	}
	if len(toks) == 0 {
		return Recipe{}, errors.New("recipe: empty: want a preset or scenario:BASE64URL, then KEY=VALUE changes")
	}
	r, err := parseBase(toks[0])
	if err != nil {
		return Recipe{}, err
	}
	if len(toks)-1 > MaxChanges {
		return Recipe{}, fmt.Errorf("recipe: %d changes: at most %d", len(toks)-1, MaxChanges)
	}
	for i, tok := range toks[1:] {
		c, err := ParseChange(tok)
		if err != nil {
			k, v, _ := strings.Cut(tok, "=")
			return Recipe{}, &ChangeError{Index: i, Key: k, Value: v, Err: err}
		}
		r.Changes = append(r.Changes, c)
	}
	return r, nil
}

// parseBase reads the first token of a recipe's text.
func parseBase(tok string) (Recipe, error) {
	if b64, ok := strings.CutPrefix(tok, ScenarioPrefix); ok {
		b, err := base64.RawURLEncoding.DecodeString(b64)
		if err != nil {
			return Recipe{}, fmt.Errorf("recipe: scenario: not base64url: %v", err)
		}
		s, err := DecodeBytes(b)
		if err != nil {
			return Recipe{}, fmt.Errorf("recipe: scenario: %w", err)
		}
		return Recipe{Scenario: &s}, nil
	}
	if strings.Contains(tok, "=") {
		return Recipe{}, fmt.Errorf("recipe: %q: a recipe begins with a preset or scenario:BASE64URL, then its changes", tok)
	}
	if !isPreset(tok) {
		_, err := LookupPreset(tok)
		return Recipe{}, fmt.Errorf("recipe: %w", err)
	}
	return Recipe{Preset: tok}, nil
}

func isPreset(name string) bool {
	for _, p := range Presets() {
		if p.Name == name {
			return true
		}
	}
	return false
}

// String is the recipe's text form (ParseRecipe reads it back).
func (r Recipe) String() string {
	var b strings.Builder
	b.WriteString(r.base())
	for _, c := range r.Changes {
		b.WriteByte(' ')
		b.WriteString(c.String())
	}
	return b.String()
}

func (r Recipe) base() string {
	switch {
	case r.Scenario != nil:
		js, _ := json.Marshal(r.Scenario) // a Scenario always encodes
		return ScenarioPrefix + base64.RawURLEncoding.EncodeToString(js)
	case r.Preset != "":
		return r.Preset
	}
	return DefaultPreset
}

// Base is the scenario the recipe starts from: a copy of its scenario, or
// its preset's.
func (r Recipe) Base() (Scenario, error) {
	if r.Scenario != nil {
		return *r.Scenario, nil
	}
	name := r.Preset
	if name == "" {
		name = DefaultPreset
	}
	return LookupPreset(name)
}

// Build makes the changes on the base in order and validates the result
// once (Apply). A change refused is a *ChangeError naming its place, key
// and value; when the result does not validate and the error names no
// change's field, the change blamed is one after which the base and the
// changes so far stop validating (found by bisection). A recipe has at
// most MaxChanges changes.
func (r Recipe) Build() (Scenario, error) {
	if len(r.Changes) > MaxChanges {
		return Scenario{}, fmt.Errorf("recipe: %d changes: at most %d", len(r.Changes), MaxChanges)
	}
	s, err := r.Base()
	if err != nil {
		return Scenario{}, err
	}
	if len(r.Changes) == 0 {
		if err := s.Validate(); err != nil {
			return Scenario{}, err
		}
		return s, nil
	}
	out, f := apply(s, r.Changes)
	if f == nil {
		return out, nil
	}
	at := f.at
	if at < 0 {
		// The whole fails; find k where the first k changes build and the
		// first k+1 do not.
		lo, hi := 0, len(r.Changes)-1 // the first hi+1 fail
		for lo < hi {
			mid := (lo + hi) / 2
			if _, g := apply(s, r.Changes[:mid+1]); g != nil {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		at = hi
	}
	k, v := r.Changes[at].keyValue()
	return Scenario{}, &ChangeError{Index: at, Key: k, Value: v, Err: f.err}
}

// With returns a copy of r with more changes after its own.
func (r Recipe) With(changes ...Change) Recipe {
	out := r
	out.Changes = append(append([]Change(nil), r.Changes...), changes...)
	return out
}

// recipeJSON is a recipe's JSON form.
type recipeJSON struct {
	Preset   string          `json:"preset,omitempty"`
	Scenario json.RawMessage `json:"scenario,omitempty"`
	Set      []string        `json:"set,omitempty"`
}

// MarshalJSON writes the recipe as {"preset": NAME, "set": [CHANGE, ...]}
// or {"scenario": {...}, "set": [...]}, each change as String spells it.
func (r Recipe) MarshalJSON() ([]byte, error) {
	var j recipeJSON
	if r.Scenario != nil {
		b, err := json.Marshal(r.Scenario)
		if err != nil {
			return nil, err
		}
		j.Scenario = b
	} else {
		j.Preset = r.base()
	}
	for _, c := range r.Changes {
		j.Set = append(j.Set, c.String())
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads MarshalJSON's form: exactly one of preset and
// scenario, and set. An error is a *FieldError naming the field at fault
// (preset, scenario.mtu, set.2).
func (r *Recipe) UnmarshalJSON(b []byte) error {
	var j recipeJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return jsonError(err)
	}
	var out Recipe
	hasScenario := len(j.Scenario) > 0 && string(j.Scenario) != "null"
	switch {
	case j.Preset != "" && hasScenario:
		return &FieldError{Field: "preset", Reason: "preset and scenario are exclusive"}
	case hasScenario:
		s, err := DecodeBytes(j.Scenario)
		if err != nil {
			if fe, ok := errors.AsType[*FieldError](err); ok {
				return &FieldError{Field: "scenario." + fe.Field, Reason: fe.Reason}
			}
			return &FieldError{Field: "scenario", Reason: err.Error()}
		}
		out.Scenario = &s
	case j.Preset == "":
		return &FieldError{Field: "preset", Reason: "want a preset or a scenario"}
	case !isPreset(j.Preset):
		_, err := LookupPreset(j.Preset)
		return &FieldError{Field: "preset", Reason: err.Error()}
	default:
		out.Preset = j.Preset
	}
	if len(j.Set) > MaxChanges {
		return &FieldError{Field: "set", Reason: fmt.Sprintf("%d changes: at most %d", len(j.Set), MaxChanges)}
	}
	for i, text := range j.Set {
		c, err := ParseChange(text)
		if err != nil {
			return &FieldError{Field: fmt.Sprintf("set.%d", i), Reason: err.Error()}
		}
		out.Changes = append(out.Changes, c)
	}
	*r = out
	return nil
}

// IsRecipeJSON reports whether a JSON object is a recipe's JSON form
// rather than a whole scenario's: it has preset, scenario or set, which
// no scenario has.
func IsRecipeJSON(b []byte) bool {
	var keys map[string]json.RawMessage
	if json.Unmarshal(b, &keys) != nil {
		return false
	}
	for k := range keys {
		if k == "preset" || k == "scenario" || k == "set" {
			return true
		}
	}
	return false
}

// DecodeRecipe reads a world given as JSON: nothing (null, the default
// preset), a recipe's JSON form (MarshalJSON), or a whole scenario (a
// scenario file is a recipe without changes).
func DecodeRecipe(b []byte) (Recipe, error) {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		return Recipe{Preset: DefaultPreset}, nil
	case IsRecipeJSON(b):
		var r Recipe
		err := json.Unmarshal(b, &r)
		return r, err
	}
	s, err := DecodeBytes(b)
	if err != nil {
		return Recipe{}, err
	}
	return Recipe{Scenario: &s}, nil
}
