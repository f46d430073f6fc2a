package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Set returns s with the field at path set to value, a JSON text. path is
// the field's JSON path ("mtu", "traffic.size", "xdp.args.cpu",
// "traffic.sizes.0", "costs.dma_map_iommu"). The change goes through the
// scenario's JSON form and is decoded back with Decode, so unknown fields,
// wrong types and invalid values are refused, each error naming the path.
// An object merges key by key into the object it replaces (traffic={"size":
// 128} keeps the other traffic fields); anything else replaces.
//
// A field declared fitted (Fitted) that the change touches is no longer
// the fitted value: its entry is dropped.
func Set(s Scenario, path string, value json.RawMessage) (Scenario, error) {
	return Apply(s, Change{Path: path, Value: value})
}

// SetText is Set for a value typed on a command line: see TextChange.
func SetText(s Scenario, path, text string) (Scenario, error) {
	return Apply(s, TextChange(path, text))
}

// Change is one set: a field's JSON path and its new value (JSON).
type Change struct {
	Path  string
	Value json.RawMessage
}

// TextChange is the change PATH=TEXT typed on a command line (ringlab run
// --set). TEXT is JSON, except that for a field holding a string a text
// that is not a JSON string is the string itself: kernel=6.10 is "6.10"
// (as JSON it would be the number 6.1), driver.buffer_source=page_frag is
// "page_frag". mtu=9000 stays the number 9000. A leading dot (.kernel=6.10)
// reads the text as the field's, the same way.
func TextChange(path, text string) Change {
	if k, ok := FieldKind(strings.TrimPrefix(path, ".")); ok && k == reflect.String {
		var str string
		if err := json.Unmarshal([]byte(text), &str); err != nil {
			quoted, _ := json.Marshal(text)
			return Change{Path: path, Value: quoted}
		}
	}
	return Change{Path: path, Value: json.RawMessage(text)}
}

// Apply makes the changes in order, then validates the result once:
// changes that only make sense together (driver.buffer_source=page_frag
// with driver.dma=ring) can be made together. A change whose path is a
// knob's key (cpus, page_pool: Knobs) sets the knob, with its
// consequences (SetKnob); any other path sets that field of the JSON
// form alone, and a leading dot spells a raw path where a knob has the
// same name (.cpus=2 sets cpus and nothing else). An error names the
// path it comes from; Recipe.Build also names the change's place.
func Apply(s Scenario, changes ...Change) (Scenario, error) {
	out, f := apply(s, changes)
	if f == nil {
		return out, nil
	}
	if f.validation && !f.named {
		// Validation names another field (fewer cpus put consumer.cpu
		// out of range): say which changes caused it.
		return s, fmt.Errorf("%s: %w", strings.Join(f.paths, ", "), f.err)
	}
	return s, f.err
}

// applyFault is why apply failed: the error, the change at fault (at,
// -1 when none can be named) and the paths the changes set.
type applyFault struct {
	err        error
	at         int
	paths      []string
	validation bool // the result did not validate
	named      bool // the validation error begins with the path of change at
}

// apply makes the changes and validates the result; see Apply.
func apply(s Scenario, changes []Change) (Scenario, *applyFault) {
	cur := s
	var paths []string
	for i := 0; i < len(changes); {
		if key, ok := knobChange(changes[i]); ok {
			if err := SetKnob(&cur, key, knobText(changes[i].Value)); err != nil {
				return s, &applyFault{err: err, at: i}
			}
			paths = append(paths, key)
			i++
			continue
		}
		j := i + 1
		for j < len(changes) {
			if _, ok := knobChange(changes[j]); ok {
				break
			}
			j++
		}
		next, raw, at, err := applyRaw(cur, changes[i:j])
		if err != nil {
			if at >= 0 {
				at += i
			}
			return s, &applyFault{err: err, at: at, paths: raw}
		}
		cur, paths, i = next, append(paths, raw...), j
	}
	if err := cur.Validate(); err != nil {
		f := &applyFault{err: err, at: -1, paths: paths, validation: true}
		for i := len(paths) - 1; i >= 0; i-- {
			if strings.HasPrefix(err.Error(), paths[i]) {
				f.at, f.named = i, true
				break
			}
		}
		return s, f
	}
	for _, p := range paths {
		cur.Fitted = dropFitted(cur.Fitted, p)
	}
	return cur, nil
}

// knobChange reports whether c sets a knob, and which: a key with no dot
// that a knob has, and a value that is not a JSON object, array or null
// (xdp={...} and xdp=null are the field). A leading dot makes it a raw
// path.
func knobChange(c Change) (string, bool) {
	if strings.Contains(c.Path, ".") || !IsKnob(c.Path) {
		return "", false
	}
	if v := bytes.TrimSpace(c.Value); len(v) > 0 && (v[0] == '{' || v[0] == '[' || string(v) == "null") {
		return "", false
	}
	return c.Path, true
}

// knobText is a change's value as a knob takes it: a JSON string's text,
// or the text itself (on, 6.10, 128).
func knobText(v json.RawMessage) string {
	var str string
	if err := json.Unmarshal(v, &str); err == nil {
		return str
	}
	return string(v)
}

// applyRaw makes raw-path changes on s's JSON form, without validating
// the result; it returns the paths it set, and on error the index of the
// change at fault (-1 when the error names none of them).
func applyRaw(s Scenario, changes []Change) (Scenario, []string, int, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return s, nil, -1, err
	}
	var root any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		return s, nil, -1, err
	}
	paths := make([]string, 0, len(changes))
	for i, c := range changes {
		path := strings.TrimPrefix(c.Path, ".")
		if err := setPath(root, path, c.Value); err != nil {
			return s, nil, i, err
		}
		paths = append(paths, path)
	}
	out, err := json.Marshal(root)
	if err != nil {
		return s, nil, -1, err
	}
	ns, err := decodeUnchecked(bytes.NewReader(out))
	var fe *FieldError
	switch {
	case err == nil:
	case errors.As(err, &fe) && fe.Reason == "unknown field":
		for i := len(paths) - 1; i >= 0; i-- {
			if segs := strings.Split(paths[i], "."); containsSeg(segs, fe.Field) {
				return s, nil, i, fmt.Errorf("%s: the scenario has no field %q", paths[i], fe.Field)
			}
		}
		return s, nil, -1, fmt.Errorf("%s: the scenario has no field %q", strings.Join(paths, ", "), fe.Field)
	default:
		for i := len(paths) - 1; i >= 0; i-- {
			if strings.HasPrefix(err.Error(), paths[i]) {
				return s, nil, i, err
			}
		}
		return s, nil, -1, fmt.Errorf("%s: %w", strings.Join(paths, ", "), err)
	}
	return ns, paths, -1, nil
}

func containsSeg(segs []string, name string) bool {
	for _, s := range segs {
		if s == name {
			return true
		}
	}
	return false
}

// setPath writes value at path into root, the JSON form of a scenario.
func setPath(root any, path string, value json.RawMessage) error {
	segs, err := splitPath(path)
	if err != nil {
		return err
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("%s: the value %s is not JSON: %v", path, value, err)
	}
	if dec.More() {
		return fmt.Errorf("%s: the value %s is not JSON: more than one value", path, value)
	}
	cur := root
	for i, seg := range segs {
		last := i == len(segs)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				c[seg] = merge(c[seg], v)
				break
			}
			next, ok := c[seg]
			if !ok || next == nil {
				// An absent section (omitted when empty): an empty list
				// or object of the field's kind.
				if k, _ := FieldKind(strings.Join(segs[:i+1], ".")); k == reflect.Slice {
					next = []any{}
				} else {
					next = map[string]any{}
				}
				c[seg] = next
			}
			cur = next
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(c) {
				at := strings.Join(segs[:i], ".")
				if len(c) == 0 {
					return fmt.Errorf("%s: %s is empty: set the whole list (%s=[...])", path, at, at)
				}
				return fmt.Errorf("%s: want an index 0..%d of %s", path, len(c)-1, at)
			}
			if last {
				c[n] = v
				break
			}
			cur = c[n]
		default:
			return fmt.Errorf("%s: %s is not an object", path, strings.Join(segs[:i], "."))
		}
	}
	return nil
}

// FieldKind is the kind of value the field at a JSON path holds (reflect.
// String, Int64, Bool, Struct, Slice, Map ...), read from the Scenario
// type: it answers for fields a scenario leaves out (an absent xdp
// section's xdp.program). ok is false when no field has that path.
func FieldKind(path string) (reflect.Kind, bool) {
	segs, err := splitPath(path)
	if err != nil {
		return reflect.Invalid, false
	}
	t := reflect.TypeOf(Scenario{})
	for _, seg := range segs {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Struct:
			f, ok := fieldByJSONName(t, seg)
			if !ok {
				return reflect.Invalid, false
			}
			t = f.Type
		case reflect.Map:
			t = t.Elem()
		case reflect.Slice, reflect.Array:
			if _, err := strconv.Atoi(seg); err != nil {
				return reflect.Invalid, false
			}
			t = t.Elem()
		default:
			return reflect.Invalid, false
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind(), true
}

// fieldByJSONName finds the field of struct type t that encoding/json names
// name.
func fieldByJSONName(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		if tag == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func splitPath(path string) ([]string, error) {
	if path == "" {
		return nil, errors.New("set: empty path: want a field's JSON path (traffic.size)")
	}
	segs := strings.Split(path, ".")
	for _, seg := range segs {
		if seg == "" {
			return nil, fmt.Errorf("%s: empty segment in the path", path)
		}
	}
	return segs, nil
}

// merge returns v written over old: objects merge key by key, anything
// else replaces.
func merge(old, v any) any {
	o, ok1 := old.(map[string]any)
	n, ok2 := v.(map[string]any)
	if !ok1 || !ok2 {
		return v
	}
	for k, nv := range n {
		o[k] = merge(o[k], nv)
	}
	return o
}

// dropFitted removes the entries for fields a set of path changed: the
// field itself, the fields under it, and the field it is part of.
func dropFitted(fitted []Fit, path string) []Fit {
	if path == "fitted" || strings.HasPrefix(path, "fitted.") {
		return fitted
	}
	var out []Fit
	for _, f := range fitted {
		if f.Field == path || strings.HasPrefix(f.Field, path+".") || strings.HasPrefix(path, f.Field+".") {
			continue
		}
		out = append(out, f)
	}
	return out
}
