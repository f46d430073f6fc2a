package tutorials

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"ringlab/engine/scenario"
)

// applySet sets one field of a scenario through its JSON form and decodes
// it back with scenario.Decode, so unknown fields, wrong types and invalid
// values are refused with the field's name.
func applySet(s scenario.Scenario, path string, value json.RawMessage) (scenario.Scenario, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return s, err
	}
	var root any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		return s, err
	}
	var v any
	dec = json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return s, fmt.Errorf("value: %v", err)
	}
	segs := strings.Split(path, ".")
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
				next = map[string]any{}
				c[seg] = next
			}
			cur = next
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(c) {
				return s, fmt.Errorf("%s: want an index 0..%d", strings.Join(segs[:i+1], "."), len(c)-1)
			}
			if last {
				c[n] = v
				break
			}
			cur = c[n]
		default:
			return s, fmt.Errorf("%s is not an object", strings.Join(segs[:i], "."))
		}
	}
	out, err := json.Marshal(root)
	if err != nil {
		return s, err
	}
	ns, err := scenario.DecodeBytes(out)
	var fe *scenario.FieldError
	if errors.As(err, &fe) && fe.Reason == "unknown field" {
		return s, fmt.Errorf("%s: the scenario has no field %q", path, fe.Field)
	}
	return ns, err
}

// merge returns v written over old: objects merge key by key (so
// set traffic={"size": 128} keeps the other traffic fields), anything else
// replaces.
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
