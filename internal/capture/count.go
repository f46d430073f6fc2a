package capture

import (
	"ringlab/engine/device"
	"ringlab/engine/kernel"
)

// Counts is how many of a replay's frames met each fate, each XDP
// verdict and each drop reason so far: what `ringlab run --pcap` prints
// and the page's capture state shows. A frame still on its way counts
// under the fate pending; Verdicts and Reasons are nil while empty.
type Counts struct {
	Fates    map[string]int `json:"fates"`
	Verdicts map[string]int `json:"verdicts,omitempty"`
	Reasons  map[string]int `json:"reasons,omitempty"`
}

// Count counts fates, the world's record of each frame
// (engine.World.Replay().Fates()), with their drop reasons named at
// kernel v: each frame's Fate, VerdictOf for a frame the program ran
// on, and Reason, as its Record has them.
func Count(fates []device.Fate, v kernel.Version) Counts {
	c := Counts{Fates: map[string]int{}}
	add := func(m *map[string]int, k string) {
		if k == "" {
			return
		}
		if *m == nil {
			*m = map[string]int{}
		}
		(*m)[k]++
	}
	for i := range fates {
		f := &fates[i]
		c.Fates[f.Fate()]++
		if f.Outcome == device.OutcomeXDP {
			add(&c.Verdicts, VerdictOf(f))
		}
		add(&c.Reasons, f.Reason(v))
	}
	return c
}
