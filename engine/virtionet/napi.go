package virtionet

import (
	"ringlab/engine/sim"
	"ringlab/engine/softnet"
)

// scheduleNAPI is napi_schedule at t: the queue's instance goes on its
// CPU's poll list and NET_RX runs it (softnet), unless it is scheduled
// already.
func (d *Driver) scheduleNAPI(rq *RQ, t sim.Time) {
	if rq.napiOn {
		return
	}
	rq.napiOn = true
	rq.napi.ListOwner = rq.CPU.ID // ____napi_schedule
	d.env.Softnet.Schedule(d.napiBase+softnet.NAPIID(rq.Index), t)
}

// NAPIScheduled reports whether the queue's NAPI is on its CPU's poll list
// (scheduled or running): list_owner is then that CPU.
func (rq *RQ) NAPIScheduled() bool { return rq.napiOn }

// catchUp brings the host side of the queue to t. An interrupt it raises
// while NAPI owns the queue is taken and ignored (napi_schedule_prep fails);
// the CPU pays for it.
func (rq *RQ) catchUp(t sim.Time) {
	if rq.Dev.Starved() {
		return // a starved host does nothing until a kick: CatchUp is a no-op
	}
	irq, _ := rq.Dev.CatchUp(t)
	if irq && rq.napiOn {
		rq.Stats.IRQs++
		rq.VQ.Interrupt()
		rq.CPU.Charge(sim.SymVringInterrupt, rq.irqCost())
	}
}

// irqCost is taking the queue's interrupt: a bare-metal one from a NIC,
// an injected one in a guest (vhost, vdpa).
func (rq *RQ) irqCost() sim.Duration {
	if rq.d.injectedIRQ {
		return rq.CPU.Costs().IRQVirt
	}
	return rq.CPU.Costs().IRQ
}

// IRQLatency is the queue's interrupt delivery: from the device's signal
// to vring_interrupt running.
func (rq *RQ) IRQLatency() sim.Duration {
	if rq.d.injectedIRQ {
		return rq.CPU.Costs().IRQLatencyVirt
	}
	return rq.CPU.Costs().IRQLatency
}

// Poll is virtnet_poll of receive queue n on its CPU c, which NET_RX
// calls (napi_poll) with the instance's weight as budget.
func (d *Driver) Poll(c *sim.CPU, n softnet.NAPIID, budget int) int {
	rq := d.RQ[n-d.napiBase]
	c.Charge(sim.SymVirtnetPoll, c.Costs().NAPIPoll)
	rq.Stats.NAPIPolls++
	rq.xdpXmit = 0
	received := rq.receive(budget)
	if rq.xdpXmit&xmitRedir != 0 {
		// xdp_do_flush
		if d.env.Cpumap != nil {
			d.env.Cpumap.Flush(c)
		}
		if d.env.Devmap != nil {
			d.env.Devmap.Flush(c)
		}
	}
	if rq.xdpXmit&xmitTX != 0 {
		d.kickTX(c, d.SQ[c.ID%len(d.SQ)])
	}
	if received < budget {
		// virtqueue_napi_complete: napi_complete_done flushes GRO first.
		d.fail(rq.gro.FlushAll(c))
		opaque := rq.VQ.EnableCBPrepare()
		rq.napiOn = false
		rq.napi.ListOwner = -1 // napi_complete_done
		d.env.Softnet.Complete(n)
		if rq.VQ.Poll(opaque) {
			rq.VQ.DisableCB()
			d.scheduleNAPI(rq, c.Now())
		} else {
			rq.armIRQ(c.Now())
		}
	}
	if received >= budget {
		// Budget used up: the instance stays scheduled, and net_rx_action
		// polls it again; napi_poll flushes what GRO held since an earlier
		// jiffy (napi_gro_flush(n, HZ >= 1000)).
		d.fail(rq.gro.FlushOld(c, d.jiffy(c.Now())))
	}
	return received
}

// kickTX notifies send queue sq's host from c when the ring's rules say
// it waits for a kick (virtqueue_kick_prepare, virtqueue_notify): an MMIO
// write to a hardware device, a VM exit to vhost.
func (d *Driver) kickTX(c *sim.CPU, sq *SQ) {
	if !sq.VQ.KickPrepare() || !sq.VQ.Notify() {
		return
	}
	sq.Stats.Kicks++
	if d.nic {
		c.Charge(sim.SymVirtqueueNotify, c.Costs().KickMMIO)
	} else {
		c.Charge(sim.SymVirtqueueNotify, c.Costs().KickVMExit)
	}
	sq.Dev.Kick(c.Now())
}

// RefillThreshold is virtnet_receive's refill condition: it refills only
// when more than min(budget, ring size)/2 descriptors are free.
func (rq *RQ) RefillThreshold() int {
	return min(rq.d.budget, int(rq.VQ.Size())) / 2
}

// RefillQueued reports whether refill_work is queued (before 6.19).
func (rq *RQ) RefillQueued() bool { return rq.d.refillQueued }

// receive is virtnet_receive: up to budget packets, then refill when more
// than half of min(budget, ring) descriptors are free. When the refill
// cannot allocate (try_fill_recv with GFP_ATOMIC fails), since 6.19 it
// returns the whole budget, so that net_rx_action polls again and the
// next poll retries; before, it schedules refill_work (refillWork).
func (rq *RQ) receive(budget int) int {
	c := rq.CPU
	received := 0
	var b rxBuf
	for received < budget {
		if !rq.Dev.Starved() { // a starved host waits for a kick: nothing to catch up
			rq.catchUp(c.Now())
		}
		length, ctx, ok := rq.getBuf(&b)
		if !ok {
			break
		}
		if rq.d.replay && length >= HdrLen+EthHlen {
			rq.replayTaken(&b)
		}
		if rq.d.mergeable && length >= HdrLen+EthHlen {
			// receiveBuf's mergeable case, without the call.
			c.Charge(sim.SymReceiveBuf, c.Costs().RxPacket)
			rq.receiveMergeable(&b, length, ctx)
		} else {
			rq.receiveBuf(&b, length, ctx)
		}
		rq.Stats.Packets++ // virtnet_receive counts every buffer received
		received++
		if rq.d.env.Sim.Err() != nil {
			return received
		}
	}
	limit := budget
	if s := rq.VQ.Size(); s < limit {
		limit = s
	}
	if rq.VQ.NumFree() > limit/2 {
		if !rq.tryFillRecv() {
			if rq.d.refillInNAPI {
				return budget // "we must return budget to make sure the NAPI is repolled"
			}
			rq.d.scheduleRefill(c.ID, c.Now(), 0) // schedule_delayed_work(&vi->refill, 0)
		}
	}
	return received
}

// RefillRetry is refill_work's delay when a queue is still short of
// buffers: HZ/2 jiffies, half a second whatever CONFIG_HZ is (100, 250,
// 300 and 1000 are all even). The timer wheel may fire it up to one
// granule late (8 jiffies for a timeout of this length); the engine does
// not model that slack.
const RefillRetry = 500 * sim.Millisecond

// scheduleRefill is schedule_delayed_work(&vi->refill, delay) from CPU
// cpu at now: system_wq is per-CPU and the work goes to the queueing
// CPU's kworker, which runs after delay and a wake-up. A pending work is
// not queued twice.
func (d *Driver) scheduleRefill(cpu int, now sim.Time, delay sim.Duration) {
	if d.refillQueued {
		return
	}
	d.refillQueued = true
	c := d.env.Sim.CPU(cpu)
	d.env.Sim.Queue.Schedule(now.Add(delay+c.Costs().TaskWakeLatency), d.refillKind, uint64(cpu))
}

// refillWork is refill_work (before 6.19) in process context: for each
// receive queue, napi_disable, try_fill_recv with GFP_KERNEL,
// virtnet_napi_enable (which schedules NAPI once, in case the host used
// buffers meanwhile); if an allocation still failed, it queues itself
// again after HZ/2.
//
// GFP_KERNEL may sleep and reclaim; GFP_ATOMIC may not, but may dip into
// the reserves. The engine's page allocator has neither watermarks nor
// reclaim, so both see the same free lists: the process-context refill
// succeeds where the softirq one failed only because pages came back in
// between (the stack or another CPU freed them), never because reclaim
// found memory. Each queue is refilled on its own CPU: the kernel's
// worker runs on the CPU that queued it, which is that queue's NAPI CPU
// when there is one queue.
func (d *Driver) refillWork(now sim.Time, arg uint64) {
	d.refillQueued = false
	d.Refill.Runs++
	retry, end := false, now
	for _, rq := range d.RQ {
		c := rq.CPU
		c.BeginActivity(now, "refill_work")
		if !rq.tryFillRecv() {
			retry = true
		}
		if !rq.napiOn {
			// virtnet_napi_enable: virtqueue_napi_schedule.
			rq.VQ.DisableCB()
			d.scheduleNAPI(rq, c.Now())
		}
		if t := c.End(); t > end {
			end = t
		}
		if d.env.Sim.Err() != nil {
			return
		}
	}
	if retry {
		d.Refill.Retries++
		d.scheduleRefill(int(arg), end, RefillRetry)
	}
}

// armIRQ makes sure an interrupt event exists for the next packet the host
// will land while callbacks are enabled.
func (rq *RQ) armIRQ(now sim.Time) {
	if rq.irqArmed {
		return
	}
	at, ok := rq.Dev.NextLanding()
	if !ok {
		return
	}
	if at < now {
		at = now
	}
	rq.irqArmed, rq.armedAt = true, at
	rq.d.env.Sim.Queue.Schedule(at, rq.d.landKind, uint64(rq.Index))
}

// WakeRX is told that queue i's sender may send sooner than the host's
// armed landing knows: a stream's receiver reported something (a TCP ACK
// or window update opens its window). While NAPI owns the queue its poll
// catches the host up and re-arms when it completes; otherwise the
// landing is armed, or moved earlier (the later event, superseded, is
// ignored when it fires).
func (d *Driver) WakeRX(i int, now sim.Time) {
	rq := d.RQ[i]
	if rq.napiOn {
		return
	}
	at, ok := rq.Dev.NextLanding()
	if !ok {
		return
	}
	at = max(at, now)
	if rq.irqArmed && at >= rq.armedAt {
		return
	}
	rq.irqArmed, rq.armedAt = true, at
	d.env.Sim.Queue.Schedule(at, d.landKind, uint64(i))
}

// landing is the first phase of an interrupt on queue arg: the host lands
// the frames due by now and decides to signal by the ring's rules
// (vring_need_event); the signal reaches the guest later, in interrupt.
func (d *Driver) landing(now sim.Time, arg uint64) {
	rq := d.RQ[arg]
	if rq.irqArmed && now != rq.armedAt {
		return // superseded by an earlier landing (WakeRX)
	}
	rq.irqArmed = false
	irq, at := rq.Dev.CatchUp(now)
	if irq {
		d.env.Sim.Queue.Schedule(at.Add(rq.IRQLatency()), d.irqKind, arg)
		return
	}
	if !rq.napiOn {
		rq.armIRQ(now)
	}
}

// interrupt is the signal reaching the guest CPU of queue arg
// (vring_interrupt, skb_recv_done, virtqueue_napi_schedule).
func (d *Driver) interrupt(now sim.Time, arg uint64) {
	rq := d.RQ[arg]
	c := rq.CPU
	if rq.Dev.SharedVCPU() == c {
		// The worker runs on this vCPU's host CPU: the frames it wrote
		// since the landing are time the vCPU was not running, and the
		// interrupt is taken when it runs again (one signal covers them).
		rq.catchUp(now)
	}
	c.BeginActivity(now, "interrupt")
	c.Charge(sim.SymVringInterrupt, rq.irqCost())
	rq.Stats.IRQs++
	rq.VQ.Interrupt()
	if !rq.napiOn {
		rq.VQ.DisableCB()
		d.scheduleNAPI(rq, c.Now())
	}
	c.End()
}
