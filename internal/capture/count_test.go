package capture

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"ringlab/engine/device"
	"ringlab/engine/kernel"
)

// TestCount: a replay's frames counted by fate, verdict and reason,
// verdicts only of frames the program ran on, and no empty maps of
// verdicts or reasons when there are none.
func TestCount(t *testing.T) {
	v := kernel.Version{Major: 7, Minor: 0}
	fates := []device.Fate{
		{Outcome: device.OutcomeReceived},
		{Outcome: device.OutcomeXDP, Action: 2}, // XDP_PASS
		{Outcome: device.OutcomeXDP, Action: 1}, // XDP_DROP
		{Outcome: device.OutcomeXDP, Action: 1},
		{Outcome: device.OutcomeXDP, Action: 3, Failed: true}, // XDP_TX the driver could not carry out
		{Outcome: device.OutcomePending},
	}
	c := Count(fates, v)
	assert.Equal(t, map[string]int{"delivered": 2, "dropped": 3, "pending": 1}, c.Fates)
	assert.Equal(t, map[string]int{"XDP_PASS": 1, "XDP_DROP": 2, "XDP_TX": 1}, c.Verdicts)
	assert.Equal(t, 2, c.Reasons["xdp_drop"])
	total := 0
	for _, n := range c.Reasons {
		total += n
	}
	assert.Equal(t, 2, total, "only the XDP_DROPs have a reason: %v", c.Reasons)

	none := Count(fates[:1], v)
	assert.Equal(t, map[string]int{"delivered": 1}, none.Fates)
	assert.Nil(t, none.Verdicts)
	assert.Nil(t, none.Reasons)
	assert.Equal(t, map[string]int{}, Count(nil, v).Fates)
}
