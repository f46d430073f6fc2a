package bpf

import (
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func errRet(e Errno) Action { return Action(uint32(e.ret())) }

func TestAdjustHead(t *testing.T) {
	// Calls bpf_xdp_adjust_head(ctx, off), then stores the first byte of the
	// (new) packet into the last byte, and returns the helper's result.
	build := func(off int32) asm.Instructions {
		return asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.Mov.Imm(asm.R2, off),
			asm.FnXdpAdjustHead.Call(),
			asm.Mov.Reg(asm.R7, asm.R0),
			asm.LoadMem(asm.R2, asm.R6, mdData, asm.Word),
			asm.LoadMem(asm.R3, asm.R6, mdDataEnd, asm.Word),
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, 1),
			asm.JGT.Reg(asm.R4, asm.R3, "out"),
			asm.LoadMem(asm.R5, asm.R2, 0, asm.Byte),
			asm.StoreMem(asm.R3, -1, asm.R5, asm.Byte),
			asm.Mov.Reg(asm.R0, asm.R7).WithSymbol("out"),
			asm.Return(),
		}
	}
	frame := make([]byte, 64)
	for i := range frame {
		frame[i] = byte(i + 1)
	}
	for _, tc := range []struct {
		name     string
		off      int32
		metalen  int
		want     Action
		wantData int
	}{
		{"pop ethernet header", 14, 0, 0, testHeadroom + 14},
		{"push a header", -14, 0, 0, testHeadroom - 14},
		{"push to the xdp_frame limit", XDPFrameSize - testHeadroom, 0, 0, XDPFrameSize},
		{"push into xdp_frame", XDPFrameSize - testHeadroom - 1, 0, errRet(EINVAL), testHeadroom},
		{"metadata counts against headroom", XDPFrameSize - testHeadroom, 8, errRet(EINVAL), testHeadroom},
		{"push with metadata", XDPFrameSize + 8 - testHeadroom, 8, 0, XDPFrameSize + 8},
		{"keep ETH_HLEN", 64 - 14, 0, 0, testHeadroom + 50},
		{"less than ETH_HLEN left", 64 - 13, 0, errRet(EINVAL), testHeadroom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := prog(t, build(tc.off))
			in := newInput(frame)
			in.DataMeta = in.Data - tc.metalen
			for i := 0; i < tc.metalen; i++ {
				in.Buf[in.DataMeta+i] = 0xa0 + byte(i)
			}
			in.Buf[in.Data-14] = 0xee // what a 14-byte push uncovers
			res := runOn(p, in)
			require.False(t, res.Fault.Faulted(), "%v", res.Fault)
			assert.Equal(t, tc.want, res.Action)
			assert.Equal(t, tc.wantData, res.Data)
			assert.Equal(t, testHeadroom+64, res.DataEnd)
			assert.Equal(t, tc.metalen, res.Data-res.DataMeta, "metadata moves with data")
			for i := 0; i < tc.metalen; i++ {
				assert.Equal(t, 0xa0+byte(i), in.Buf[res.DataMeta+i])
			}
			assert.Equal(t, in.Buf[res.Data], in.Buf[res.DataEnd-1], "the program sees the new data")
		})
	}
}

func TestAdjustTail(t *testing.T) {
	build := func(off int32) asm.Instructions {
		return asm.Instructions{
			asm.Mov.Imm(asm.R2, off),
			asm.FnXdpAdjustTail.Call(),
			asm.Return(),
		}
	}
	hardEnd := PageSize - SKBSharedInfoSize
	for _, tc := range []struct {
		name    string
		off     int32
		bufLen  int
		want    Action
		wantEnd int
	}{
		{"shrink", -10, PageSize, 0, testHeadroom + 54},
		{"shrink to ETH_HLEN", -50, PageSize, 0, testHeadroom + 14},
		{"shrink below ETH_HLEN", -51, PageSize, errRet(EINVAL), testHeadroom + 64},
		{"grow", 100, PageSize, 0, testHeadroom + 164},
		{"grow to the shared info", int32(hardEnd - testHeadroom - 64), PageSize, 0, hardEnd},
		{"grow into the shared info", int32(hardEnd - testHeadroom - 63), PageSize, errRet(EINVAL), testHeadroom + 64},
		{"frame larger than a page", -10, 2 * PageSize, errRet(EINVAL), testHeadroom + 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := prog(t, build(tc.off))
			in := newInput(make([]byte, 64))
			if tc.bufLen != PageSize {
				in.Buf = make([]byte, tc.bufLen)
			}
			for i := in.DataEnd; i < len(in.Buf); i++ {
				in.Buf[i] = 0xff
			}
			res := runOn(p, in)
			require.False(t, res.Fault.Faulted(), "%v", res.Fault)
			assert.Equal(t, tc.want, res.Action)
			assert.Equal(t, tc.wantEnd, res.DataEnd)
			for i := testHeadroom + 64; i < res.DataEnd; i++ {
				require.Zero(t, in.Buf[i], "grown byte %d is cleared", i)
			}
		})
	}
}

func TestRedirectHelpers(t *testing.T) {
	devmap, err := NewMap(&MapSpec{Name: "dev", Type: DevMap, KeySize: 4, ValueSize: 8, MaxEntries: 4}, 2)
	require.NoError(t, err)
	require.NoError(t, devmap.SetDevMapEntry(1, DevMapValue{Ifindex: 9}))
	cpumap, err := NewMap(&MapSpec{Name: "cpu", Type: CPUMap, KeySize: 4, ValueSize: 4, MaxEntries: 2}, 2)
	require.NoError(t, err)
	require.NoError(t, cpumap.SetCPUMapEntry(1, CPUMapValue{QSize: 8}))
	arr, err := NewMap(&MapSpec{Name: "arr", Type: Array, KeySize: 4, ValueSize: 4, MaxEntries: 1}, 2)
	require.NoError(t, err)

	redirectMap := func(m string, key, flags int32) asm.Instructions {
		return asm.Instructions{
			asm.LoadMapPtr(asm.R1, 0).WithReference(m),
			asm.Mov.Imm(asm.R2, key),
			asm.Mov.Imm(asm.R3, flags),
			asm.FnRedirectMap.Call(),
		}
	}
	redirect := func(ifindex, flags int32) asm.Instructions {
		return asm.Instructions{asm.Mov.Imm(asm.R1, ifindex), asm.Mov.Imm(asm.R2, flags), asm.FnRedirect.Call()}
	}
	cat := func(parts ...asm.Instructions) asm.Instructions {
		var out asm.Instructions
		for _, p := range parts {
			out = append(out, p...)
		}
		return append(out, asm.Return())
	}
	for _, tc := range []struct {
		name  string
		insns asm.Instructions
		want  Action
		redir Redirect
		fault FaultReason
	}{
		{"redirect ifindex", cat(redirect(7, 0)), XDPRedirect, Redirect{Kind: RedirectIfindex, Key: 7}, FaultNone},
		{"redirect with flags aborts", cat(redirect(7, 1)), XDPAborted, Redirect{}, FaultNone},
		{"devmap hit", cat(redirectMap("dev", 1, 0)), XDPRedirect, Redirect{Kind: RedirectMap, Map: devmap, Key: 1}, FaultNone},
		{"devmap miss falls back to pass", cat(redirectMap("dev", 2, int32(XDPPass))), XDPPass, Redirect{}, FaultNone},
		{"devmap miss falls back to tx", cat(redirectMap("dev", 2, int32(XDPTx))), XDPTx, Redirect{}, FaultNone},
		{"devmap key beyond max_entries", cat(redirectMap("dev", 100, int32(XDPDrop))), XDPDrop, Redirect{}, FaultNone},
		{"unknown flag aborts", cat(redirectMap("dev", 1, 1<<5)), XDPAborted, Redirect{}, FaultNone},
		{"devmap broadcast", cat(redirectMap("dev", 0, FlagBroadcast|FlagExcludeIngress)), XDPRedirect, Redirect{Kind: RedirectMap, Map: devmap, Key: 0, Flags: FlagBroadcast | FlagExcludeIngress}, FaultNone},
		{"cpumap hit", cat(redirectMap("cpu", 1, 0)), XDPRedirect, Redirect{Kind: RedirectMap, Map: cpumap, Key: 1}, FaultNone},
		{"cpumap miss", cat(redirectMap("cpu", 0, int32(XDPDrop))), XDPDrop, Redirect{}, FaultNone},
		{"cpumap has no broadcast", cat(redirectMap("cpu", 1, FlagBroadcast)), XDPAborted, Redirect{}, FaultNone},
		{"last call wins", cat(redirect(3, 0), redirectMap("cpu", 1, 0), redirectMap("dev", 1, 0)), XDPRedirect, Redirect{Kind: RedirectMap, Map: devmap, Key: 1}, FaultNone},
		{"a miss clears earlier targets", cat(redirectMap("dev", 1, 0), redirectMap("cpu", 0, int32(XDPPass))), XDPPass, Redirect{}, FaultNone},
		{"redirect_map on an array", cat(redirectMap("arr", 0, 0)), XDPAborted, Redirect{}, FaultMapType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := prog(t, tc.insns, devmap, cpumap, arr)
			res := runOn(p, newInput(make([]byte, 64)))
			assert.Equal(t, tc.fault, res.Fault.Reason, "%v", res.Fault)
			assert.Equal(t, tc.want, res.Action)
			assert.Equal(t, tc.redir, res.Redirect)
		})
	}
}

func TestTimeAndCPU(t *testing.T) {
	p := prog(t, asm.Instructions{
		asm.FnKtimeGetNs.Call(),
		asm.Mov.Reg(asm.R6, asm.R0),
		asm.FnGetSmpProcessorId.Call(),
		asm.LSh.Imm(asm.R0, 16),
		asm.Add.Reg(asm.R0, asm.R6),
		asm.Return(),
	})
	in := newInput(make([]byte, 64))
	in.CPU = 3
	now := uint64(0)
	in.Clock = ClockFunc(func() uint64 { now += 1000; return now })
	assert.Equal(t, Action(3<<16+1000), runOn(p, in).Action)
	assert.Equal(t, Action(3<<16+2000), runOn(p, in).Action)
	in.Clock = nil
	assert.Equal(t, Action(3<<16), runOn(p, in).Action)
}

// mapCall builds "key=k at fp-4, value at fp-16; r0 = fn(map, &key, &value, flags); return r0".
func mapCall(fn asm.BuiltinFunc, m string, key uint32, value uint64, flags int32) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Imm(asm.R2, int32(key)),
		asm.StoreMem(asm.R10, -4, asm.R2, asm.Word),
		asm.LoadImm(asm.R3, int64(value), asm.DWord),
		asm.StoreMem(asm.R10, -16, asm.R3, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference(m),
		asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, -4),
		asm.Mov.Reg(asm.R3, asm.R10), asm.Add.Imm(asm.R3, -16),
		asm.Mov.Imm(asm.R4, flags),
		fn.Call(),
		asm.Return(),
	}
}

func TestMapHelpers(t *testing.T) {
	spec := &CollectionSpec{Maps: []*MapSpec{
		{Name: "h", Type: Hash, KeySize: 4, ValueSize: 8, MaxEntries: 2},
		{Name: "a", Type: Array, KeySize: 4, ValueSize: 8, MaxEntries: 2},
		{Name: "pa", Type: PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 2},
		{Name: "dev", Type: DevMap, KeySize: 4, ValueSize: 4, MaxEntries: 2},
		{Name: "cpu", Type: CPUMap, KeySize: 4, ValueSize: 4, MaxEntries: 2},
	}}
	var maps []*Map
	byName := map[string]*Map{}
	for _, ms := range spec.Maps {
		m, err := NewMap(ms, 2)
		require.NoError(t, err)
		maps = append(maps, m)
		byName[ms.Name] = m
	}
	step := func(insns asm.Instructions, cpu int) Result {
		t.Helper()
		in := newInput(make([]byte, 64))
		in.CPU = cpu
		return runOn(prog(t, insns, maps...), in)
	}
	upd, del := asm.FnMapUpdateElem, asm.FnMapDeleteElem
	for i, tc := range []struct {
		insns asm.Instructions
		cpu   int
		want  Action
		fault FaultReason
	}{
		{mapCall(upd, "h", 1, 10, int32(UpdateExist)), 0, errRet(ENOENT), FaultNone},
		{mapCall(upd, "h", 1, 10, int32(UpdateNoExist)), 0, 0, FaultNone},
		{mapCall(upd, "h", 1, 11, int32(UpdateNoExist)), 0, errRet(EEXIST), FaultNone},
		{mapCall(upd, "h", 2, 20, int32(UpdateAny)), 0, 0, FaultNone},
		{mapCall(upd, "h", 3, 30, int32(UpdateAny)), 0, errRet(E2BIG), FaultNone},
		{mapCall(upd, "h", 1, 12, int32(UpdateExist)), 0, 0, FaultNone},
		{mapCall(upd, "h", 1, 12, 3), 0, errRet(EINVAL), FaultNone},
		{mapCall(del, "h", 2, 0, 0), 0, 0, FaultNone},
		{mapCall(del, "h", 2, 0, 0), 0, errRet(ENOENT), FaultNone},
		{mapCall(upd, "h", 3, 30, int32(UpdateAny)), 0, 0, FaultNone},
		{mapCall(upd, "a", 1, 5, int32(UpdateAny)), 0, 0, FaultNone},
		{mapCall(upd, "a", 2, 5, int32(UpdateAny)), 0, errRet(E2BIG), FaultNone},
		{mapCall(upd, "a", 0, 5, int32(UpdateNoExist)), 0, errRet(EEXIST), FaultNone},
		{mapCall(del, "a", 0, 0, 0), 0, errRet(EINVAL), FaultNone},
		{mapCall(upd, "pa", 1, 7, int32(UpdateAny)), 1, 0, FaultNone},
		{mapCall(upd, "pa", 1, 7, int32(UpdateAny)), 2, XDPAborted, FaultCPU},
		{mapCall(upd, "dev", 0, 1, int32(UpdateAny)), 0, XDPAborted, FaultMapType},
		{mapCall(del, "cpu", 0, 0, 0), 0, XDPAborted, FaultMapType},
		{mapCall(asm.FnMapLookupElem, "cpu", 0, 0, 0), 0, XDPAborted, FaultMapType},
	} {
		res := step(tc.insns, tc.cpu)
		assert.Equal(t, tc.fault, res.Fault.Reason, "step %d: %v", i, res.Fault)
		assert.Equal(t, tc.want, res.Action, "step %d", i)
	}
	h := byName["h"]
	assert.Len(t, h.Keys(), 2)
	v, err := h.Value(binary.LittleEndian.AppendUint32(nil, 1), 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(12), binary.LittleEndian.Uint64(v))
	v, err = byName["pa"].Value(binary.LittleEndian.AppendUint32(nil, 1), 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(7), binary.LittleEndian.Uint64(v))
	v, err = byName["pa"].Value(binary.LittleEndian.AppendUint32(nil, 1), 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(0), binary.LittleEndian.Uint64(v), "other CPUs untouched")
}

func TestDevMapLookupIsReadOnly(t *testing.T) {
	dev, err := NewMap(&MapSpec{Name: "dev", Type: DevMap, KeySize: 4, ValueSize: 4, MaxEntries: 2}, 1)
	require.NoError(t, err)
	require.NoError(t, dev.SetDevMapEntry(1, DevMapValue{Ifindex: 42}))
	lookup := asm.Instructions{
		asm.StoreImm(asm.R10, -4, 1, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference("dev"),
		asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R0, asm.R0, 0, asm.Word),
		asm.Return().WithSymbol("out"),
	}
	res := runOn(prog(t, lookup, dev), newInput(make([]byte, 64)))
	assert.Equal(t, Action(42), res.Action)

	write := append(asm.Instructions(nil), lookup[:5]...)
	write = append(write, asm.StoreImm(asm.R0, 0, 1, asm.Word), asm.Return())
	res = runOn(prog(t, write, dev), newInput(make([]byte, 64)))
	assert.Equal(t, FaultReadOnly, res.Fault.Reason)
}
