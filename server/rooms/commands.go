package rooms

import (
	"bytes"
	"encoding/json"
	"regexp"

	"ringlab/server/wsmsg"
)

// Validator checks an instructor's command and returns it in canonical form,
// which is what is logged and broadcast. Its error should be a *wsmsg.Error
// naming the field at fault (relative to the command).
type Validator func(cmd json.RawMessage) (json.RawMessage, error)

// ScenarioValidator checks a room's scenario and returns it in canonical form.
type ScenarioValidator func(scenario json.RawMessage) (json.RawMessage, error)

// Command field limits of DefaultValidator.
const (
	maxSpeed     = 1000           // play speed factor, (0, maxSpeed]
	maxStepN     = 1_000_000      // events per step command
	maxSeekNs    = int64(1) << 62 // virtual time, ns
	maxTutorStep = 999            // tutorial steps are numbered from 0
	maxTutorQ    = 99             // a step's questions are numbered from 0
	maxSetString = 256            // bytes of a string parameter value
)

// namePattern is what a preset, parameter or tutorial name may look like.
var namePattern = regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,63}$`)

// The commands DefaultValidator accepts (docs/protocol.md).
type (
	presetCmd struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	setCmd struct {
		Type  string          `json:"type"`
		Param string          `json:"param"`
		Value json.RawMessage `json:"value"`
	}
	playCmd struct {
		Type  string   `json:"type"`
		Speed *float64 `json:"speed,omitempty"`
	}
	pauseCmd struct {
		Type string `json:"type"`
	}
	stepCmd struct {
		Type string `json:"type"`
		N    *int   `json:"n,omitempty"`
	}
	seekCmd struct {
		Type string `json:"type"`
		TNs  *int64 `json:"t_ns"`
	}
	tutorialStepCmd struct {
		Type     string `json:"type"`
		Tutorial string `json:"tutorial"`
		Step     *int   `json:"step"`
	}
	tutorialRevealCmd struct {
		Type     string `json:"type"`
		Tutorial string `json:"tutorial"`
		Step     *int   `json:"step"`
		Question *int   `json:"question"`
	}
)

// DefaultValidator accepts preset, set, play, pause, step, seek,
// tutorial_step and tutorial_reveal with their fields checked, and rejects
// anything else.
func DefaultValidator(raw json.RawMessage) (json.RawMessage, error) {
	typ, err := wsmsg.Type(raw)
	if err != nil {
		return nil, err
	}
	var v any
	switch typ {
	case "preset":
		c := presetCmd{}
		if err := wsmsg.Strict(raw, &c); err != nil {
			return nil, err
		}
		if !namePattern.MatchString(c.Name) {
			return nil, badName("name", c.Name)
		}
		v = c
	case "set":
		c := setCmd{}
		if err := wsmsg.Strict(raw, &c); err != nil {
			return nil, err
		}
		if !namePattern.MatchString(c.Param) {
			return nil, badName("param", c.Param)
		}
		if err := checkScalar(c.Value); err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		json.Compact(&buf, c.Value) // valid: Strict decoded it
		c.Value = buf.Bytes()
		v = c
	case "play":
		c := playCmd{}
		if err := wsmsg.Strict(raw, &c); err != nil {
			return nil, err
		}
		if c.Speed != nil && (*c.Speed <= 0 || *c.Speed > maxSpeed) {
			return nil, wsmsg.Errorf(wsmsg.CodeOutOfRange, "speed", "speed must be above 0 and at most %d, got %g", maxSpeed, *c.Speed)
		}
		v = c
	case "pause":
		c := pauseCmd{}
		if err := wsmsg.Strict(raw, &c); err != nil {
			return nil, err
		}
		v = c
	case "step":
		c := stepCmd{}
		if err := wsmsg.Strict(raw, &c); err != nil {
			return nil, err
		}
		if c.N != nil && (*c.N < 1 || *c.N > maxStepN) {
			return nil, wsmsg.Errorf(wsmsg.CodeOutOfRange, "n", "n must be between 1 and %d, got %d", maxStepN, *c.N)
		}
		v = c
	case "seek":
		c := seekCmd{}
		if err := wsmsg.Strict(raw, &c); err != nil {
			return nil, err
		}
		if c.TNs == nil {
			return nil, wsmsg.Errorf(wsmsg.CodeBadField, "t_ns", "seek needs t_ns, the virtual time in ns")
		}
		if *c.TNs < 0 || *c.TNs > maxSeekNs {
			return nil, wsmsg.Errorf(wsmsg.CodeOutOfRange, "t_ns", "t_ns must be between 0 and %d, got %d", maxSeekNs, *c.TNs)
		}
		v = c
	case "tutorial_step":
		c := tutorialStepCmd{}
		if err := wsmsg.Strict(raw, &c); err != nil {
			return nil, err
		}
		if err := checkTutorialStep(typ, c.Tutorial, c.Step, 0); err != nil {
			return nil, err
		}
		v = c
	case "tutorial_reveal":
		c := tutorialRevealCmd{}
		if err := wsmsg.Strict(raw, &c); err != nil {
			return nil, err
		}
		// Step 0 is the introduction: it asks nothing.
		if err := checkTutorialStep(typ, c.Tutorial, c.Step, 1); err != nil {
			return nil, err
		}
		if c.Question == nil {
			return nil, wsmsg.Errorf(wsmsg.CodeBadField, "question", "tutorial_reveal needs question")
		}
		if *c.Question < 0 || *c.Question > maxTutorQ {
			return nil, wsmsg.Errorf(wsmsg.CodeOutOfRange, "question", "question must be between 0 and %d, got %d", maxTutorQ, *c.Question)
		}
		v = c
	default:
		return nil, wsmsg.Errorf(wsmsg.CodeUnknownType, "type", "unknown command %q; commands are preset, set, play, pause, step, seek, tutorial_step and tutorial_reveal", typ)
	}
	return json.Marshal(v)
}

// checkTutorialStep checks the tutorial and step fields of the command typ:
// a tutorial name and a step from first to maxTutorStep.
func checkTutorialStep(typ, tutorial string, step *int, first int) error {
	if !namePattern.MatchString(tutorial) {
		return badName("tutorial", tutorial)
	}
	if step == nil {
		return wsmsg.Errorf(wsmsg.CodeBadField, "step", "%s needs step", typ)
	}
	if *step < first || *step > maxTutorStep {
		return wsmsg.Errorf(wsmsg.CodeOutOfRange, "step", "step must be between %d and %d, got %d", first, maxTutorStep, *step)
	}
	return nil
}

func badName(field, got string) *wsmsg.Error {
	return wsmsg.Errorf(wsmsg.CodeOutOfRange, field, "%s must match %s, got %q", field, namePattern, got)
}

// checkScalar accepts a JSON number, bool or string of at most maxSetString
// bytes.
func checkScalar(v json.RawMessage) error {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return wsmsg.Errorf(wsmsg.CodeBadField, "value", "set needs a value")
	}
	switch v[0] {
	case '"':
		if len(v) > maxSetString+2 {
			return wsmsg.Errorf(wsmsg.CodeOutOfRange, "value", "a string value has at most %d bytes", maxSetString)
		}
		return nil
	case 't', 'f', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return nil
	}
	return wsmsg.Errorf(wsmsg.CodeBadField, "value", "want a number, a string or true/false, got %s", kindOf(v[0]))
}

func kindOf(b byte) string {
	switch b {
	case '{':
		return "object"
	case '[':
		return "array"
	case 'n':
		return "null"
	}
	return "something else"
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
