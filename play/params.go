package play

import (
	"errors"
	"fmt"

	"ringlab/engine/scenario"
)

// ErrParam is wrapped by every error of a parameter, a state read from a
// link and a message or command the controller refuses.
var ErrParam = errors.New("play: bad parameter")

// Param describes one parameter the page offers: a knob of the scenario
// (engine/scenario's table: its key, as in links, set commands and
// `ringlab run --set`, a label, and options or a hint).
type Param = scenario.Knob

// On and Off are the values of the switch parameters.
const (
	On  = scenario.On
	Off = scenario.Off
)

// XDPNone is the xdp parameter's value for no program.
const XDPNone = scenario.XDPNone

// objectPrefix marks an xdp parameter that names a loaded object.
const objectPrefix = scenario.ObjectPrefix

// Params lists the parameters in the order the page shows them.
func Params() []Param { return scenario.Knobs() }

// ParamKeys lists the keys of Params in order.
func ParamKeys() []string { return scenario.KnobKeys() }

// GetParam returns the value of a parameter in s.
func GetParam(s *scenario.Scenario, key string) (string, error) {
	v, err := scenario.GetKnob(s, key)
	return v, paramErr(err)
}

// SetParam sets one parameter of s, with the consequences the kernel
// forces (scenario.SetKnob). It checks the value's form; whether the
// whole scenario holds together is s.Validate's job.
func SetParam(s *scenario.Scenario, key, value string) error {
	return paramErr(scenario.SetKnob(s, key, value))
}

// paramErr is a knob's error as the page says it.
func paramErr(err error) error {
	var ke *scenario.KnobError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ke) && ke.Unknown:
		return fmt.Errorf("%w: unknown parameter %q (known: %v)", ErrParam, ke.Key, ParamKeys())
	case errors.As(err, &ke):
		return fmt.Errorf("%w: %s", ErrParam, ke.Detail())
	}
	return fmt.Errorf("%w: %v", ErrParam, err)
}
