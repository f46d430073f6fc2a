package sim

// CPU is one simulated processor with its own timeline. Work on a CPU is
// bracketed by Begin and End; in between, Charge advances the CPU's cursor by
// the cost of each operation. A CPU never does two things at once: work that
// could start while it is busy starts when it is free.
//
// The zero value is not usable; CPUs come from New (Sim.CPU).
type CPU struct {
	ID int

	sim       *Sim
	cursor    Time     // where the current piece of work has got to
	busyUntil Time     // when the last piece of work ended
	busy      Duration // total time spent working, including spinning
	spin      Duration // part of busy spent waiting for locks
	transfers uint64   // cache lines this CPU pulled from another CPU
	activity  string   // what the CPU is doing, for inspection
	// prof is busy by symbol: every Charge adds to one row, so the rows
	// sum to busy. A fixed array: one add per charge, copied with the CPU.
	prof Profile
}

// Begin starts a piece of work that is ready at t, and returns when it
// actually starts: t, or later when the CPU is still busy.
func (c *CPU) Begin(t Time) Time {
	if t < c.busyUntil {
		t = c.busyUntil
	}
	c.cursor = t
	return t
}

// BeginActivity is Begin with a label saying what the work is ("napi poll",
// "cpumap kthread"), shown when a CPU is inspected.
func (c *CPU) BeginActivity(t Time, what string) Time {
	c.activity = what
	return c.Begin(t)
}

// Charge advances the cursor by d of busy time spent in the kernel
// function sym, and adds d to sym's row of the CPU's profile. Negative d
// is ignored. Every cost a CPU pays goes through Charge: the profile's
// rows sum to Busy.
func (c *CPU) Charge(sym Sym, d Duration) {
	if d <= 0 {
		return
	}
	c.cursor = c.cursor.Add(d)
	c.busy += d
	c.prof[sym&(profSlots-1)] += d
}

// Profile is the CPU's busy time so far by symbol (the simulated perf
// top's counts); its sum is Busy.
func (c *CPU) Profile() Profile { return c.prof }

// Now is the CPU's cursor: the time the current work has reached.
func (c *CPU) Now() Time { return c.cursor }

// End finishes the current piece of work and returns its end time.
func (c *CPU) End() Time {
	if c.cursor > c.busyUntil {
		c.busyUntil = c.cursor
	}
	return c.busyUntil
}

// BusyUntil is when the CPU finishes what it has been given.
func (c *CPU) BusyUntil() Time { return c.busyUntil }

// Busy is the total busy time so far (spinning included).
func (c *CPU) Busy() Duration { return c.busy }

// Spin is the part of Busy spent waiting for locks.
func (c *CPU) Spin() Duration { return c.spin }

// Transfers counts cache lines this CPU had to pull from another CPU.
func (c *CPU) Transfers() uint64 { return c.transfers }

// Activity is the label of the last work begun with BeginActivity.
func (c *CPU) Activity() string { return c.activity }

// Costs is the cost table of the CPU's simulation.
func (c *CPU) Costs() *Costs { return &c.sim.Costs }

// Utilisation is the busy share of the elapsed time, in [0, 1].
func (c *CPU) Utilisation(elapsed Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	u := float64(c.busy) / float64(elapsed)
	if u > 1 {
		u = 1
	}
	return u
}
