package bpf_test

import (
	"fmt"

	"ringlab/engine/bpf"
)

// A library program runs on a frame placed after XDP_PACKET_HEADROOM in a
// page-sized buffer; the per-CPU counters are read from Go.
func ExampleProgram_Run() {
	coll, err := bpf.NewCollection(bpf.ProgCountProto(), bpf.Options{NumCPU: 2})
	if err != nil {
		panic(err)
	}
	prog := coll.Program(bpf.NameCountProto)

	frame := make([]byte, 14+20+8)
	frame[12], frame[13] = 0x08, 0x00 // IPv4
	frame[14] = 0x45                  // version 4, ihl 5
	frame[14+9] = 17                  // UDP
	buf := make([]byte, bpf.PageSize)
	copy(buf[256:], frame)
	in := &bpf.Input{Buf: buf, Data: 256, DataEnd: 256 + len(frame), DataMeta: 256, CPU: 1}

	var res bpf.Result
	prog.Run(in, &res)
	udp, _ := coll.Maps["proto_count"].SumUint64(17)
	fmt.Println(res.Action, res.Insns, udp)
	// Output: XDP_PASS 23 1
}
