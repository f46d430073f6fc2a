package tutorials

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"ringlab/engine"
	"ringlab/engine/scenario"
	"ringlab/engine/vocab"
)

// group prints one of show's groups.
func (s *Session) group(name string) ([]string, error) {
	if name == "scenario" {
		if s.scen == nil {
			return nil, errors.New("show scenario: no scenario yet")
		}
		return scenarioLines(s.scen), nil
	}
	w := s.world
	if w == nil {
		return nil, fmt.Errorf("show %s: nothing has run yet", name)
	}
	if s.figs == nil {
		s.figs = worldFigures(w)
	}
	var out []string
	kv := func(name string, v float64) { out = append(out, fmt.Sprintf("%s = %s", name, FormatNumber(v))) }
	switch name {
	case "counters", "page_pool", "queues", "pages":
		var r engine.Readout
		w.Read(&r, engine.PartTotals|engine.PartQueues|engine.PartPages)
		for _, f := range r.Figures {
			switch {
			case name == "counters" && f.Part == engine.PartTotals,
				name == "queues" && f.Part == engine.PartQueues,
				name == "pages" && f.Part == engine.PartPages && f.Value != 0:
			case name == "page_pool" && f.Part == engine.PartTotals:
				if d, _ := vocab.Lookup(f.Name); d.Group != vocab.GroupPagePool {
					continue
				}
			default:
				continue
			}
			kv(f.Name, f.Value)
		}
		if name == "pages" {
			sort.Strings(out) // by location's name
		}
	case "ring", "pools":
		prefix := "rq"
		if name == "pools" {
			prefix = "pool"
		}
		for _, k := range s.figs.sortedNames() {
			if strings.HasPrefix(k, prefix) && strings.Contains(k, ".") && k[len(prefix)] >= '0' && k[len(prefix)] <= '9' {
				out = append(out, fmt.Sprintf("%s = %s", k, s.figs[k]))
			}
		}
		if len(out) == 0 {
			out = append(out, "(no "+name+")")
		}
	case "program":
		if w.Prog == nil {
			return []string{"(no XDP program attached)"}, nil
		}
		insns := w.Prog.Instructions()
		out = append(out, fmt.Sprintf("%s: %d instructions, %d bytes", w.Scenario.XDP.Program, len(insns), insns.Size()))
		for _, l := range strings.Split(strings.TrimRight(fmt.Sprint(insns), "\n"), "\n") {
			out = append(out, "  "+l)
		}
	}
	return out, nil
}

// scenarioLines prints the fields of a scenario a reader cares about.
func scenarioLines(sc *scenario.Scenario) []string {
	out := []string{
		fmt.Sprintf("scenario %s on kernel %s: %s receive buffers, %d CPU(s), %d queue pair(s), ring %d, MTU %d",
			sc.Name, sc.KernelVersion(), sc.Mode(), sc.CPUs, sc.Queues, sc.RingSize, sc.MTU),
		fmt.Sprintf("features: mrg_rxbuf=%t guest_gso=%t ctrl_guest_offloads=%t event_idx=%t indirect_desc=%t mtu=%t",
			sc.Features.MrgRxbuf, sc.Features.GuestGSO, sc.Features.CtrlGuestOffloads, sc.Features.EventIdx, sc.Features.IndirectDesc, sc.Features.MTU),
		fmt.Sprintf("driver: buffer_source=%s dma=%s iommu=%t pool_size=%d",
			sc.Driver.BufferSource, sc.Driver.DMA, sc.Driver.IOMMU, sc.Driver.PoolSize),
		fmt.Sprintf("traffic: %d-byte %s frames, %d flow(s), rate %s pps (0 = as fast as the device goes); device %s",
			sc.Traffic.Size, sc.Traffic.Proto, sc.Traffic.Flows, FormatNumber(sc.Traffic.RatePPS), sc.Device.Kind),
	}
	if sc.XDP != nil {
		out = append(out, fmt.Sprintf("xdp: %s", sc.XDP.Program))
	}
	return out
}
