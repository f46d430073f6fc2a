package play

// A mode is the controller's place toward a workshop room, as a raft
// node's role is toward its group: a value with a step function of its
// own that sees the page's inputs before the run does, swapped by the
// room's welcome, by leaving, and by a student's detach and snap back:
//
//	local       no room: every input is the page's own
//	instructor  leads a room (instructor.go): the shared commands go to
//	            the room and are applied when their broadcast comes back
//	following   a student applying the room's log (student.go): nothing
//	            the page does takes its world off the room's
//	detached    a student exploring on its own while the room's log grows
//
// What every member keeps, the room's log and where it stands, is the
// controller's room; what only an instructor keeps (the seeks it sent)
// and what only a student keeps (its pace, its digests for the beacons)
// are the mode's.
type mode interface {
	// role is the role in the room, "" outside one.
	role() string
	// applies reports whether the room's log is applied as it comes.
	applies() bool
	// step takes an input before the run: taken false hands it to the
	// run as the page's own.
	step(c *Controller, in In, id int) (outs []Out, taken bool, err error)
	// apply applies one command of the room's log that the roles apply
	// differently: play, pause, seek, a tutorial's step and reveal.
	apply(c *Controller, seq uint64, in In) ([]Out, error)
	// landed is the work of command seq of the room's log done (a seek
	// when seek): the world is where every page's is.
	landed(c *Controller, seq uint64, seek bool) []Out
	// describe fills in the mode's part of the room's state.
	describe(st *RoomState)
}

// local is the mode outside a room.
type local struct{}

func (local) role() string  { return "" }
func (local) applies() bool { return false }

func (local) step(*Controller, In, int) ([]Out, bool, error) { return nil, false, nil }

// apply and landed are never called: a local run has no room log.
func (local) apply(*Controller, uint64, In) ([]Out, error) { return nil, nil }
func (local) landed(*Controller, uint64, bool) []Out       { return nil }
func (local) describe(*RoomState)                          {}

// inRoom reports whether the controller is in a room.
func (c *Controller) inRoom() bool { return c.mode.role() != "" }
