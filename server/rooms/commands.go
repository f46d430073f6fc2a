package rooms

import (
	"bytes"
	"encoding/json"
	"errors"

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

// checkScenario accepts nothing (the page's default scenario), a preset
// ({"preset": NAME}) or a scenario that engine/scenario's validator takes
// (docs/scenario.md), whose world a browser tab can hold: at most budget
// bytes as scenario.MemoryEstimate counts them. It returns the scenario
// compacted.
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
	var sc scenario.Scenario
	var preset struct {
		Preset string `json:"preset"`
	}
	if proto.Strict(raw, &preset) == nil {
		s, err := scenario.LookupPreset(preset.Preset)
		if err != nil {
			return nil, proto.Errorf(proto.CodeNotFound, "preset", "%v", err)
		}
		sc = s
	} else {
		// Names exactly and once (engine/scenario's decoder takes "Seed"
		// for "seed" and the last of two), then the engine's validator.
		var exact scenario.Scenario
		if err := proto.Strict(raw, &exact); err != nil {
			return nil, err
		}
		s, err := scenario.DecodeBytes(raw)
		if err != nil {
			if fe, ok := errors.AsType[*scenario.FieldError](err); ok {
				return nil, proto.Errorf(proto.CodeBadField, fe.Field, "%s", fe.Reason)
			}
			return nil, proto.Errorf(proto.CodeBadField, "", "%v", err)
		}
		sc = s
	}
	if est := sc.MemoryEstimate(); est > budget {
		return nil, proto.Errorf(proto.CodeLimitExceeded, "", "this world needs about %d MiB in every student's browser tab; a room's world has at most %d MiB (memory_pages, ring sizes, queues and CPUs make it)", est>>20, budget>>20)
	}
	return buf.Bytes(), nil
}

// scenarioBytes is the MemoryEstimate of a room's scenario (checked when
// the room was made; the page's default for none, MaxWorldBytes for one
// that no longer builds).
func scenarioBytes(raw json.RawMessage) int64 {
	raw = bytes.TrimSpace(raw)
	var preset struct {
		Preset string `json:"preset"`
	}
	var sc scenario.Scenario
	var err error
	switch {
	case len(raw) == 0 || string(raw) == "null":
		def := play.DefaultConfig()
		sc, err = def.Build()
	case proto.Strict(raw, &preset) == nil:
		sc, err = scenario.LookupPreset(preset.Preset)
	default:
		sc, err = scenario.DecodeBytes(raw)
	}
	if err != nil {
		return MaxWorldBytes
	}
	return sc.MemoryEstimate()
}
