// Package device is the host side of a virtio_net device: a backend per
// queue (vhost-net, a hardware NIC, or a vDPA hardware virtqueue) that
// takes available receive buffers, writes real packets into them
// (virtio_net_hdr_mrg_rxbuf, Ethernet, IP, UDP or TCP), returns them on
// the used ring (vhost-net in batches, hardware per frame) and interrupts
// as the ring's notification rules say, fed by a traffic generator.
//
// The backend is evaluated lazily: it keeps its own timeline and is caught
// up to a time T when the driver looks at the ring (CatchUp). Everything it
// would have done before T is done then, in order, with the times it would
// have happened at, so a NAPI poll that runs for 5 µs sees the packets that
// landed during those 5 µs and no others. No event is scheduled per packet;
// the world schedules one only for an interrupt the driver is waiting for
// (NextLanding) and the backend's wake-up after a kick.
//
// Only the first WindowSize bytes of a buffer are stored (the virtio_net
// header and the frame's first 256 bytes); the rest is generated on read.
// A vDPA hardware virtqueue has no host queue: it drops what it cannot
// place. A device is built from a Config, which ConfigOf decodes from
// the scenario once.
//
// In place of the generator, a Replay feeds a capture's frames
// (replay.go): each on the queue its flow hashes to, at its captured time
// or at a rate, its bytes as captured; a ReplayLog keeps every frame's
// Fate (dropped by the host, taken by the driver, its XDP verdict and
// what the program read and wrote, its fate and drop reason by name).
// docs/internals.md follows a frame from here to the application.
package device
