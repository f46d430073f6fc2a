package sim

// Fail records err as the simulation's first internal error: a broken
// engine invariant met by an event handler (a page freed twice, a
// descriptor the ring does not hold). The first sticks and later ones
// are dropped; the world stops before its next event (engine.World.Step
// reads Err once a step). A nil err records nothing, so a handler may
// write sim.Fail(f()) for a call whose error it has nothing else to do
// with. This is the one error sink of a world: components hold no error
// of their own.
func (s *Sim) Fail(err error) {
	if err != nil && s.err == nil {
		s.err = err
	}
}

// Err is the first error Fail recorded, or nil.
func (s *Sim) Err() error { return s.err }
