package virtq_test

import (
	"fmt"

	"ringlab/engine/virtq"
)

// ExampleQueue shows one receive buffer going round: the driver posts it
// and kicks, the device fills it and decides to interrupt, the driver takes
// it back.
func ExampleQueue() {
	q, err := virtq.New(4, virtq.Config{Name: "rx0", EventIdx: true})
	if err != nil {
		panic(err)
	}

	// Driver (virtio_net refill): post two 1518-byte buffers, then kick.
	_ = q.AddInbuf(virtq.SG{Addr: 0x10000, Len: 1518}, 1, 0)
	_ = q.AddInbuf(virtq.SG{Addr: 0x20000, Len: 1518}, 2, 0)
	fmt.Println("kick:", q.Kick(), "num_free:", q.NumFree())

	// Device: take the first buffer, write a 60-byte frame, return it.
	head, _ := q.DevicePop()
	chain, _ := q.DeviceChain(head)
	q.DevicePushUsed(uint32(head), 60)
	fmt.Println("head:", head, "writable:", chain.Writable, "interrupt:", q.DeviceNeedInterrupt())

	// Driver: the interrupt runs the callback, which reaps the buffer.
	if q.Interrupt() {
		token, n, _, _ := q.GetBuf()
		fmt.Println("token:", token, "len:", n, "used_event:", q.UsedEvent())
	}
	fmt.Println("num_free:", q.NumFree(), "slot 0:", q.Slot(0), "slot 1:", q.Slot(1))
	// Output:
	// kick: true num_free: 2
	// head: 0 writable: 1518 interrupt: true
	// token: 1 len: 60 used_event: 1
	// num_free: 3 slot 0: free slot 1: avail
}
