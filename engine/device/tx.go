package device

import (
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/virtq"
)

// TX is the host side of one send queue: it takes the frames the driver
// posted (XDP_TX), sends them at its cost per frame and returns them on
// the used ring (handle_tx in drivers/vhost/net.c). Like RX it is caught
// up lazily. It raises no interrupt: virtio_net's XDP send queues run with
// callbacks off and reclaim completed buffers on the next transmit.
type TX struct {
	q      *virtq.Queue
	costs  *sim.Costs
	kind   string
	cursor sim.Time
	sleep  bool // found the ring empty: waits for a kick
	minGap sim.Duration
	Sent   uint64
	Errors uint64
	vcpu   *sim.CPU // the guest CPU whose vCPU shares the worker's host CPU (RX.SetSharedVCPU)
}

// SetSharedVCPU says that the vhost worker, which sends for this queue
// too, shares its host CPU with guest CPU c's vCPU (RX.SetSharedVCPU).
func (t *TX) SetSharedVCPU(c *sim.CPU) { t.vcpu = c }

// NewTX returns the host side of send queue q.
func NewTX(q *virtq.Queue, cfg Config, costs *sim.Costs) *TX {
	t := &TX{q: q, costs: costs, kind: cfg.Kind, sleep: true}
	if cfg.MaxPPS > 0 {
		t.minGap = sim.Duration(1e9 / cfg.MaxPPS)
	}
	q.DeviceSetAvailEventOnPop(cfg.AvailEventOnPop)
	return t
}

// Kick wakes the host when it sleeps; vhost's handle_tx starts by turning
// notifications off (vhost_disable_notify).
func (t *TX) Kick(at sim.Time) {
	if !t.sleep {
		return
	}
	t.sleep = false
	lat := t.costs.NICDoorbellLatency
	if t.kind == scenario.DeviceVhost {
		lat = t.costs.VhostWakeLatency
		t.q.DeviceDisableNotify()
	}
	if w := at.Add(lat); t.cursor < w {
		t.cursor = w
	}
}

// CatchUp sends every frame whose send ends by t.
func (t *TX) CatchUp(at sim.Time) {
	for !t.sleep {
		if broken, _ := t.q.Broken(); broken {
			return
		}
		if t.q.AvailIdx() == t.q.DeviceLastAvail() {
			// vhost_enable_notify: avail_event is the index it has seen.
			t.sleep = true
			t.q.DeviceEnableNotify()
			return
		}
		ci, err := t.q.DeviceChain(t.q.AvailEntry(t.q.DeviceLastAvail()))
		if err != nil {
			t.Errors++
			return
		}
		d := t.costs.NICPacket
		if t.kind == scenario.DeviceVhost {
			d = t.costs.VhostPacket + sim.Duration((ci.Readable+63)/64)*t.costs.VhostCopy64
		}
		if d < t.minGap {
			d = t.minGap
		}
		end := t.cursor.Add(d)
		if end > at {
			return
		}
		head, ok := t.q.DevicePop()
		if !ok {
			t.Errors++
			return
		}
		t.q.DevicePushUsed(uint32(head), 0)
		if t.vcpu != nil && t.kind == scenario.DeviceVhost {
			t.vcpu.Steal(t.cursor, end)
		}
		t.cursor = end
		t.Sent++
	}
}
