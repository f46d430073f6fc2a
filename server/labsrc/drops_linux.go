package labsrc

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"

	"ringlab/engine/vocab"
)

// dropWatch counts the real kernel's drops by reason in the lab's own
// namespaces: a program on the skb:kfree_skb tracepoint (a raw
// tracepoint: no tracefs needed) reads each freed skb's device, the
// device's network namespace and its inode (skb->dev->nd_net.net->ns.inum)
// and counts the drop reason when the namespace is one of the lab's, in a
// per-CPU array by the reason's value. A drop with no device (freed after
// the stack cleared skb->dev) is not counted. The offsets of those fields
// and the tracepoint's arguments come from the running kernel's BTF, so
// the program fits the kernel it runs on; the reasons' names come from its
// enum skb_drop_reason (5.17 and later), SKB_DROP_REASON_ stripped, as
// the tracepoint prints them. Subsystem reasons (past
// SKB_DROP_REASON_MAX) are not counted.
type dropWatch struct {
	counts *ebpf.Map
	prog   *ebpf.Program
	link   link.Link
	names  []string // by reason value; "" for values that are not drops
}

// kfreeSKBArgs finds, in the typedef of the raw tracepoint
// (btf_trace_kfree_skb: its first parameter is the tracepoint's data),
// which arguments are the skb and the reason.
func kfreeSKBArgs(spec *btf.Spec) (skbArg, reasonArg int, err error) {
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_kfree_skb", &td); err != nil {
		return 0, 0, fmt.Errorf("the kernel's BTF has no kfree_skb tracepoint: %w", err)
	}
	ptr, ok := btf.UnderlyingType(td.Type).(*btf.Pointer)
	if !ok {
		return 0, 0, errors.New("btf_trace_kfree_skb is not a function pointer")
	}
	proto, ok := btf.UnderlyingType(ptr.Target).(*btf.FuncProto)
	if !ok {
		return 0, 0, errors.New("btf_trace_kfree_skb is not a function pointer")
	}
	skbArg, reasonArg = -1, -1
	for i, p := range proto.Params {
		if i == 0 {
			continue
		}
		switch t := btf.UnderlyingType(p.Type).(type) {
		case *btf.Enum:
			if t.Name == "skb_drop_reason" {
				reasonArg = i - 1
			}
		case *btf.Pointer:
			if s, ok := btf.UnderlyingType(t.Target).(*btf.Struct); ok && s.Name == "sk_buff" && skbArg < 0 {
				skbArg = i - 1
			}
		}
	}
	if skbArg < 0 || reasonArg < 0 {
		return 0, 0, errors.New("the kfree_skb tracepoint carries no drop reason (kfree_skb_reason came in 5.17)")
	}
	return skbArg, reasonArg, nil
}

// memberOffset is the byte offset of the member called name in the
// struct or union t, looking into its anonymous members, and its type.
func memberOffset(t btf.Type, name string) (uint32, btf.Type, bool) {
	var members []btf.Member
	switch t := btf.UnderlyingType(t).(type) {
	case *btf.Struct:
		members = t.Members
	case *btf.Union:
		members = t.Members
	default:
		return 0, nil, false
	}
	for _, m := range members {
		if m.Name == name {
			return m.Offset.Bytes(), m.Type, true
		}
		if m.Name == "" {
			if off, typ, ok := memberOffset(m.Type, name); ok {
				return m.Offset.Bytes() + off, typ, true
			}
		}
	}
	return 0, nil, false
}

// pathOffset follows a path of members from the struct called root:
// ("net_device", "nd_net", "net") is the offset of nd_net.net.
func pathOffset(spec *btf.Spec, root string, path ...string) (uint32, error) {
	var s *btf.Struct
	if err := spec.TypeByName(root, &s); err != nil {
		return 0, fmt.Errorf("struct %s: %w", root, err)
	}
	var t btf.Type = s
	var off uint32
	for _, name := range path {
		o, typ, ok := memberOffset(t, name)
		if !ok {
			return 0, fmt.Errorf("struct %s has no %s", root, strings.Join(path, "."))
		}
		off, t = off+o, typ
	}
	return off, nil
}

// newDropWatch loads and attaches the program for the namespaces whose
// inodes are inums.
func newDropWatch(inums [2]uint64) (*dropWatch, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return nil, fmt.Errorf("the kernel's BTF: %w", err)
	}
	skbArg, reasonArg, err := kfreeSKBArgs(spec)
	if err != nil {
		return nil, err
	}
	var reasons *btf.Enum
	if err := spec.TypeByName("skb_drop_reason", &reasons); err != nil {
		return nil, fmt.Errorf("enum skb_drop_reason: %w", err)
	}
	n := 0
	for _, v := range reasons.Values {
		if v.Name == "SKB_DROP_REASON_MAX" {
			n = int(v.Value)
		}
	}
	if n <= 0 || n > 4096 {
		return nil, fmt.Errorf("enum skb_drop_reason: SKB_DROP_REASON_MAX is %d", n)
	}
	names := make([]string, n)
	for _, v := range reasons.Values {
		if name, ok := strings.CutPrefix(v.Name, "SKB_DROP_REASON_"); ok && int(v.Value) < n {
			names[v.Value] = name
		}
	}
	offDev, err := pathOffset(spec, "sk_buff", "dev")
	if err != nil {
		return nil, err
	}
	offNet, err := pathOffset(spec, "net_device", "nd_net", "net")
	if err != nil {
		return nil, err
	}
	offInum, err := pathOffset(spec, "net", "ns", "inum")
	if err != nil {
		return nil, err
	}
	for _, ino := range inums {
		if ino == 0 || ino > 1<<32-1 {
			return nil, fmt.Errorf("namespace inode %d", ino)
		}
	}

	d := &dropWatch{names: names}
	d.counts, err = ebpf.NewMap(&ebpf.MapSpec{Name: "lab_drops", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: uint32(n)})
	if err != nil {
		return nil, fmt.Errorf("drops map: %w", err)
	}
	// read copies 8 bytes at r3 + off into the stack at -16 with
	// bpf_probe_read_kernel and loads them into r3, or leaves.
	read := func(off uint32, size asm.Size) asm.Instructions {
		return asm.Instructions{
			asm.Add.Imm(asm.R3, int32(off)),
			asm.Mov.Reg(asm.R1, asm.RFP),
			asm.Add.Imm(asm.R1, -16),
			asm.Mov.Imm(asm.R2, int32(size.Sizeof())),
			asm.FnProbeReadKernel.Call(),
			asm.JNE.Imm(asm.R0, 0, "out"),
			asm.LoadMem(asm.R3, asm.RFP, -16, size),
		}
	}
	insns := asm.Instructions{
		asm.Mov.Imm(asm.R0, 0),
		asm.StoreMem(asm.RFP, -16, asm.R0, asm.DWord),
		asm.LoadMem(asm.R7, asm.R1, int16(8*skbArg), asm.DWord),
		asm.LoadMem(asm.R8, asm.R1, int16(8*reasonArg), asm.DWord),
		asm.JGE.Imm(asm.R8, int32(n), "out"),
		asm.Mov.Reg(asm.R3, asm.R7),
	}
	insns = append(insns, read(offDev, asm.DWord)...) // skb->dev
	insns = append(insns, asm.JEq.Imm(asm.R3, 0, "out"))
	insns = append(insns, read(offNet, asm.DWord)...) // dev->nd_net.net
	insns = append(insns, asm.JEq.Imm(asm.R3, 0, "out"))
	insns = append(insns, read(offInum, asm.Word)...) // net->ns.inum
	insns = append(insns,
		asm.JEq.Imm32(asm.R3, int32(uint32(inums[0])), "count"),
		asm.JNE.Imm32(asm.R3, int32(uint32(inums[1])), "out"),
		asm.StoreMem(asm.RFP, -4, asm.R8, asm.Word).WithSymbol("count"),
		asm.LoadMapPtr(asm.R1, d.counts.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord), // a per-CPU slot: no atomic needed
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
	d.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{Name: "lab_kfree_skb", Type: ebpf.RawTracepoint, License: "GPL", Instructions: insns})
	if err != nil {
		d.close()
		return nil, fmt.Errorf("kfree_skb program: %w", err)
	}
	d.link, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: "kfree_skb", Program: d.prog})
	if err != nil {
		d.close()
		return nil, fmt.Errorf("attach to kfree_skb: %w", err)
	}
	return d, nil
}

// read adds drops.NAME for every reason of the kernel's enum to tot: the
// drops counted so far in the lab's namespaces.
func (d *dropWatch) read(tot map[string]uint64) error {
	for v, name := range d.names {
		if name == "" || name == "NOT_DROPPED_YET" || name == "MAX" {
			continue
		}
		var per []uint64
		if err := d.counts.Lookup(uint32(v), &per); err != nil {
			return fmt.Errorf("lab: read drops[%d]: %w", v, err)
		}
		var sum uint64
		for _, x := range per {
			sum += x
		}
		tot[vocab.Drops(name)] = sum
	}
	return nil
}

// close detaches and unloads the program.
func (d *dropWatch) close() error {
	var errs []error
	if d.link != nil {
		errs = append(errs, d.link.Close())
	}
	if d.prog != nil {
		errs = append(errs, d.prog.Close())
	}
	if d.counts != nil {
		errs = append(errs, d.counts.Close())
	}
	return errors.Join(errs...)
}
