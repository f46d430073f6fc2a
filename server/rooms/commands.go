package rooms

import (
	"bytes"
	"encoding/json"
	"errors"

	"ringlab/play"
	"ringlab/server/wsmsg"
)

// Validator checks an instructor's command and returns it in canonical form,
// which is what is logged and broadcast. Its error should be a *wsmsg.Error
// naming the field at fault (relative to the command).
type Validator func(cmd json.RawMessage) (json.RawMessage, error)

// ScenarioValidator checks a room's scenario and returns it in canonical form.
type ScenarioValidator func(scenario json.RawMessage) (json.RawMessage, error)

// DefaultValidator checks a command with the playground's one codec
// (play.ParseCommand: preset, set, play, pause, step, seek, tutorial_step
// and tutorial_reveal, their fields and a room's limits) and returns its
// canonical form (play.EncodeCommand), the form every browser applies.
func DefaultValidator(raw json.RawMessage) (json.RawMessage, error) {
	in, err := play.ParseCommand(raw)
	if err != nil {
		if e, ok := errors.AsType[*play.CodecError](err); ok {
			return nil, wsmsg.Errorf(e.Code, e.Field, "%s", e.Msg)
		}
		return nil, wsmsg.Errorf(wsmsg.CodeInternal, "", "%v", err)
	}
	b, err := play.EncodeCommand(in)
	if err != nil {
		return nil, wsmsg.Errorf(wsmsg.CodeInternal, "", "%v", err)
	}
	return b, nil
}

// DefaultScenario accepts any JSON object (or nothing: the page's default
// scenario) and returns it compacted.
func DefaultScenario(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, wsmsg.Errorf(wsmsg.CodeBadField, "", "want an object")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, wsmsg.Errorf(wsmsg.CodeBadJSON, "", "%v", err)
	}
	return buf.Bytes(), nil
}
