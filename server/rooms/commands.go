package rooms

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"ringlab/engine/scenario"
	"ringlab/play"
	"ringlab/proto"
)

// Validator checks an instructor's command and returns it in canonical form,
// which is what is logged and broadcast. Its error should be a *proto.Error
// naming the field at fault (relative to the command).
type Validator func(cmd json.RawMessage) (json.RawMessage, error)

// ScenarioValidator checks a room's scenario and returns it in canonical form.
type ScenarioValidator func(scenario json.RawMessage) (json.RawMessage, error)

// MinRoomSpeed is the slowest a play command may run a room: the page's
// slowest speed, an event a second. Slower (1e-300) stops the world in
// every browser as surely as a pause, without saying so.
const MinRoomSpeed = 1

// DefaultValidator checks a command with the playground's one codec
// (play.ParseCommand: preset, set, play, pause, step, seek, tutorial_step
// and tutorial_reveal, their fields and a room's limits) and returns its
// canonical form (play.EncodeCommand), the form every browser applies.
func DefaultValidator(raw json.RawMessage) (json.RawMessage, error) {
	in, err := play.ParseCommand(raw)
	if err != nil {
		if e, ok := errors.AsType[*proto.Error](err); ok {
			return nil, e
		}
		return nil, proto.Errorf(proto.CodeInternal, "", "%v", err)
	}
	if p, ok := in.(play.Play); ok && p.Speed != 0 && !(p.Speed >= MinRoomSpeed) {
		return nil, proto.Errorf(proto.CodeOutOfRange, "speed", "speed is events per second of wall time, from %d to %d (or none: the speed the room has), got %g", MinRoomSpeed, play.MaxRoomSpeed, p.Speed)
	}
	b, err := play.EncodeCommand(in)
	if err != nil {
		return nil, proto.Errorf(proto.CodeInternal, "", "%v", err)
	}
	return b, nil
}

// DefaultScenario checks a room's scenario as every page will build it,
// with the default budget of a browser tab (MaxWorldBytes).
func DefaultScenario(raw json.RawMessage) (json.RawMessage, error) {
	return checkScenario(raw, MaxWorldBytes)
}

// checkScenario accepts nothing (the page's default scenario), a recipe
// ({"preset": NAME, "set": [CHANGE, ...]} or {"scenario": {...}, "set":
// [...]}, scenario.Recipe's JSON form, each change as --set spells it)
// or a whole scenario that engine/scenario's validator takes
// (docs/scenario.md), whose world a browser tab can hold: at most budget
// bytes as scenario.MemoryEstimate counts them. It returns the recipe in
// canonical form (a bare preset is {"preset": NAME}, as before recipes),
// or the whole scenario compacted.
func checkScenario(raw json.RawMessage, budget int64) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, proto.Errorf(proto.CodeBadField, "", "want an object")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, proto.Errorf(proto.CodeBadJSON, "", "%v", err)
	}
	out := buf.Bytes()
	var rec scenario.Recipe
	if scenario.IsRecipeJSON(raw) {
		r, err := decodeRecipe(raw)
		if err != nil {
			return nil, err
		}
		rec = r
		if out, err = json.Marshal(rec); err != nil {
			return nil, proto.Errorf(proto.CodeInternal, "", "%v", err)
		}
	} else {
		// Names exactly and once (engine/scenario's decoder takes "Seed"
		// for "seed" and the last of two), then the engine's validator.
		var exact scenario.Scenario
		if err := proto.Strict(raw, &exact); err != nil {
			return nil, err
		}
		s, err := scenario.DecodeBytes(raw)
		if err != nil {
			return nil, fieldError(err)
		}
		rec = scenario.Recipe{Scenario: &s}
	}
	sc, err := rec.Build()
	if ce, ok := errors.AsType[*scenario.ChangeError](err); ok {
		return nil, proto.Errorf(proto.CodeBadField, fmt.Sprintf("set.%d", ce.Index), "%v", ce)
	} else if err != nil {
		return nil, fieldError(err)
	}
	if sc.XDP != nil && sc.XDP.Object != "" {
		return nil, proto.Errorf(proto.CodeBadField, "", "xdp=%s%s: an XDP object file does not travel with a room; students' pages have only the library's programs", scenario.ObjectPrefix, sc.XDP.Object)
	}
	if est := sc.MemoryEstimate(); est > budget {
		return nil, proto.Errorf(proto.CodeLimitExceeded, "", "this world needs about %d MiB in every student's browser tab; a room's world has at most %d MiB (memory_pages, ring sizes, queues and CPUs make it)", est>>20, budget>>20)
	}
	return out, nil
}

// decodeRecipe reads a recipe's JSON form, names exactly and once
// (proto's strict decoder), then as engine/scenario reads it.
func decodeRecipe(raw json.RawMessage) (scenario.Recipe, error) {
	var exact struct {
		Preset   string          `json:"preset"`
		Scenario json.RawMessage `json:"scenario"`
		Set      []string        `json:"set"`
	}
	if err := proto.Strict(raw, &exact); err != nil {
		return scenario.Recipe{}, err
	}
	if len(exact.Scenario) > 0 && string(exact.Scenario) != "null" {
		var sc scenario.Scenario
		if err := proto.Strict(exact.Scenario, &sc); err != nil {
			return scenario.Recipe{}, proto.AsError(err).WithFieldPrefix("scenario")
		}
	}
	if exact.Preset != "" && !slices.Contains(scenario.PresetNames(), exact.Preset) {
		_, err := scenario.LookupPreset(exact.Preset)
		return scenario.Recipe{}, proto.Errorf(proto.CodeNotFound, "preset", "%v", err)
	}
	r, err := scenario.DecodeRecipe(raw)
	if err != nil {
		return scenario.Recipe{}, fieldError(err)
	}
	return r, nil
}

// fieldError is an engine/scenario error as a refusal naming its field.
func fieldError(err error) error {
	if fe, ok := errors.AsType[*scenario.FieldError](err); ok {
		return proto.Errorf(proto.CodeBadField, fe.Field, "%s", fe.Reason)
	}
	return proto.Errorf(proto.CodeBadField, "", "%v", err)
}

// scenarioBytes is the MemoryEstimate of a room's scenario (checked when
// the room was made; the page's default for none, MaxWorldBytes for one
// that no longer builds).
func scenarioBytes(raw json.RawMessage) int64 {
	rec, err := scenario.DecodeRecipe(raw)
	if err != nil {
		return MaxWorldBytes
	}
	sc, err := rec.Build()
	if err != nil {
		return MaxWorldBytes
	}
	return sc.MemoryEstimate()
}
