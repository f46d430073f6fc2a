package bpf

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf/asm"
)

// The library: XDP programs written with cilium/ebpf/asm. The same
// instructions run in the interpreter and, through KernelSpec, in the real
// kernel, so each is written to pass the verifier: every packet access is
// preceded by a data_end check covering it, map values are checked for
// NULL, and the stack is written before it is read.

// Library program names.
const (
	NamePass        = "xdp_pass"
	NameDrop        = "xdp_drop"
	NameTx          = "xdp_tx"
	NameRedirectCPU = "xdp_redirect_cpu"
	NameRedirectDev = "xdp_redirect_dev"
	NameDropUDPPort = "xdp_drop_udp_port"
	NameCountProto  = "xdp_count_proto"
)

// Library defaults and the packet layout the programs parse (offsets from
// the start of the Ethernet header, no VLAN tags).
const (
	libraryLicense  = "GPL"
	defaultCPUQSize = 2048
	defaultDropPort = 9      // discard
	ethPIPv4        = 0x0008 // htons(ETH_P_IP) as a little-endian u16 load reads it
	ethPIPv6        = 0xdd86 // htons(ETH_P_IPV6) likewise
	ipprotoTCP      = 6
	ipprotoUDP      = 17
	goldenRatio32   = -1640531535 // 0x9e3779b1 as an int32 immediate
	offEthProto     = 12
	offIPv4         = EthHlen
	offIPv4Proto    = EthHlen + 9
	offIPv4Src      = EthHlen + 12
	offIPv4Dst      = EthHlen + 16
	offIPv4End      = EthHlen + 20
	offIPv6NextHdr  = EthHlen + 6
	offIPv6Src      = EthHlen + 8
	offIPv6End      = EthHlen + 40
)

// LibraryConfig configures the library programs that take parameters;
// each program reads only its own field.
type LibraryConfig struct {
	DropPort    uint16            // xdp_drop_udp_port
	RedirectCPU RedirectCPUConfig // xdp_redirect_cpu
	RedirectDev RedirectDevConfig // xdp_redirect_dev
}

// DefaultLibraryConfig is the configuration Library lists the programs with.
func DefaultLibraryConfig() LibraryConfig {
	return LibraryConfig{DropPort: defaultDropPort, RedirectCPU: RedirectCPUConfig{Mode: CPUHash, NumCPUs: 2}}
}

// libraryNames is the library in the order Library lists it.
var libraryNames = [...]string{NamePass, NameDrop, NameTx, NameRedirectCPU, NameRedirectDev, NameDropUDPPort, NameCountProto}

// LibraryProgram returns the library program called name, configured by
// cfg, or nil when the library has no program of that name.
func LibraryProgram(name string, cfg LibraryConfig) *CollectionSpec {
	switch name {
	case NamePass:
		return ProgPass()
	case NameDrop:
		return ProgDrop()
	case NameTx:
		return ProgTx()
	case NameRedirectCPU:
		return ProgRedirectCPU(cfg.RedirectCPU)
	case NameRedirectDev:
		return ProgRedirectDev(cfg.RedirectDev)
	case NameDropUDPPort:
		return ProgDropUDPPort(cfg.DropPort)
	case NameCountProto:
		return ProgCountProto()
	}
	return nil
}

// Library returns every library program with its default configuration,
// in a fixed order, for listings.
func Library() []*CollectionSpec {
	cfg := DefaultLibraryConfig()
	out := make([]*CollectionSpec, 0, len(libraryNames))
	for _, n := range libraryNames {
		out = append(out, LibraryProgram(n, cfg))
	}
	return out
}

func single(name, desc string, maps []*MapSpec, insns ...asm.Instruction) *CollectionSpec {
	insns[0] = insns[0].WithSymbol(name)
	return &CollectionSpec{
		Name:        name,
		Description: desc,
		Maps:        maps,
		Programs:    []*ProgramSpec{{Name: name, Instructions: insns, License: libraryLicense}},
	}
}

func ret(a Action) asm.Instructions {
	return asm.Instructions{asm.Mov.Imm(asm.R0, int32(a)), asm.Return()}
}

// ProgPass returns XDP_PASS for every frame.
func ProgPass() *CollectionSpec {
	return single(NamePass, "Pass every frame to the stack (XDP_PASS).", nil, ret(XDPPass)...)
}

// ProgDrop returns XDP_DROP for every frame.
func ProgDrop() *CollectionSpec {
	return single(NameDrop, "Drop every frame in the driver (XDP_DROP): the fastest path, the page is recycled at once.", nil, ret(XDPDrop)...)
}

// ProgTx swaps the Ethernet source and destination and sends the frame back
// out of the port it came in on; frames shorter than an Ethernet header
// pass.
func ProgTx() *CollectionSpec {
	insns := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, mdData, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, mdDataEnd, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, EthHlen),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R2, 0, asm.Word), // h_dest
		asm.LoadMem(asm.R6, asm.R2, 4, asm.Half),
		asm.LoadMem(asm.R7, asm.R2, 6, asm.Word), // h_source
		asm.LoadMem(asm.R8, asm.R2, 10, asm.Half),
		asm.StoreMem(asm.R2, 0, asm.R7, asm.Word),
		asm.StoreMem(asm.R2, 4, asm.R8, asm.Half),
		asm.StoreMem(asm.R2, 6, asm.R5, asm.Word),
		asm.StoreMem(asm.R2, 10, asm.R6, asm.Half),
		asm.Mov.Imm(asm.R0, int32(XDPTx)),
		asm.Return(),
		asm.Mov.Imm(asm.R0, int32(XDPPass)).WithSymbol("pass"),
		asm.Return(),
	}
	return single(NameTx, "Swap the Ethernet source and destination MACs and bounce the frame out of its own port (XDP_TX).", nil, insns...)
}

// parseL3 loads data and data_end into R2 and R3 and branches on the
// EtherType to v4 or v6 with the whole IP header checked against data_end;
// anything else (short frame, other EtherType) goes to other.
func parseL3(v4, v6, other string) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, mdData, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, mdDataEnd, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, EthHlen),
		asm.JGT.Reg(asm.R4, asm.R3, other),
		asm.LoadMem(asm.R5, asm.R2, offEthProto, asm.Half),
		asm.JEq.Imm(asm.R5, ethPIPv4, v4+"_hdr"),
		asm.JEq.Imm(asm.R5, ethPIPv6, v6+"_hdr"),
		asm.Ja.Label(other),

		asm.Mov.Reg(asm.R4, asm.R2).WithSymbol(v4 + "_hdr"),
		asm.Add.Imm(asm.R4, offIPv4End),
		asm.JGT.Reg(asm.R4, asm.R3, other),
		asm.Ja.Label(v4),

		asm.Mov.Reg(asm.R4, asm.R2).WithSymbol(v6 + "_hdr"),
		asm.Add.Imm(asm.R4, offIPv6End),
		asm.JGT.Reg(asm.R4, asm.R3, other),
		asm.Ja.Label(v6),
	}
}

// ProgCountProto counts frames per IP protocol (IPv4 protocol, IPv6 next
// header) in the per-CPU array "proto_count" (256 u64 counters indexed by
// protocol number) and passes every frame. Non-IP frames are not counted.
func ProgCountProto() *CollectionSpec {
	maps := []*MapSpec{{Name: "proto_count", Type: PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 256}}
	insns := parseL3("v4", "v6", "pass")
	insns = append(insns,
		asm.LoadMem(asm.R5, asm.R2, offIPv4Proto, asm.Byte).WithSymbol("v4"),
		asm.Ja.Label("count"),
		asm.LoadMem(asm.R5, asm.R2, offIPv6NextHdr, asm.Byte).WithSymbol("v6"),
		asm.StoreMem(asm.R10, -4, asm.R5, asm.Word).WithSymbol("count"),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.LoadMapPtr(asm.R1, 0).WithReference("proto_count"),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "pass"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
	)
	insns = append(insns, ret(XDPPass)...)
	insns[len(insns)-2] = insns[len(insns)-2].WithSymbol("pass")
	return single(NameCountProto, "Count frames per IP protocol in the per-CPU array proto_count (key = protocol number) and pass them.", maps, insns...)
}

// Layout of the xdp_drop_udp_port configuration value.
const (
	UDPDropPortOff    = 0 // u32, host byte order; 0 disables dropping
	UDPDropCounterOff = 8 // u64, frames dropped
	udpDropValueSize  = 16
)

// ProgDropUDPPort drops UDP datagrams (IPv4, and IPv6 without extension
// headers) whose destination port is the one configured in the array
// "udp_drop" (key 0: u32 port at UDPDropPortOff, u64 drop counter at
// UDPDropCounterOff), and passes everything else. port is the initial
// configuration.
func ProgDropUDPPort(port uint16) *CollectionSpec {
	val := make([]byte, udpDropValueSize)
	binary.LittleEndian.PutUint32(val[UDPDropPortOff:], uint32(port))
	maps := []*MapSpec{{
		Name: "udp_drop", Type: Array, KeySize: 4, ValueSize: udpDropValueSize, MaxEntries: 1,
		Contents: []MapKV{{Key: make([]byte, 4), Value: val}},
	}}
	insns := parseL3("v4", "v6", "pass")
	insns = append(insns,
		// IPv4: protocol UDP, then skip ihl*4 bytes of header.
		asm.LoadMem(asm.R5, asm.R2, offIPv4Proto, asm.Byte).WithSymbol("v4"),
		asm.JNE.Imm(asm.R5, ipprotoUDP, "pass"),
		asm.LoadMem(asm.R5, asm.R2, offIPv4, asm.Byte),
		asm.And.Imm(asm.R5, 0x0f),
		asm.LSh.Imm(asm.R5, 2),
		asm.Add.Imm(asm.R2, offIPv4),
		asm.Add.Reg(asm.R2, asm.R5),
		asm.Ja.Label("udp"),
		// IPv6: next header UDP directly after the fixed header.
		asm.LoadMem(asm.R5, asm.R2, offIPv6NextHdr, asm.Byte).WithSymbol("v6"),
		asm.JNE.Imm(asm.R5, ipprotoUDP, "pass"),
		asm.Add.Imm(asm.R2, offIPv6End),
		// R2 = UDP header.
		asm.Mov.Reg(asm.R4, asm.R2).WithSymbol("udp"),
		asm.Add.Imm(asm.R4, 8),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R6, asm.R2, 2, asm.Half), // dest, network order
		asm.HostTo(asm.BE, asm.R6, asm.Half),
		asm.StoreImm(asm.R10, -4, 0, asm.Word),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.LoadMapPtr(asm.R1, 0).WithReference("udp_drop"),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "pass"),
		asm.LoadMem(asm.R1, asm.R0, UDPDropPortOff, asm.Word),
		asm.JEq.Imm(asm.R1, 0, "pass"),
		asm.JNE.Reg(asm.R1, asm.R6, "pass"),
		asm.Mov.Imm(asm.R1, 1),
		asm.AddAtomic.Mem(asm.R0, asm.R1, asm.DWord, UDPDropCounterOff),
	)
	insns = append(insns, ret(XDPDrop)...)
	insns = append(insns, ret(XDPPass)...)
	insns[len(insns)-2] = insns[len(insns)-2].WithSymbol("pass")
	return single(NameDropUDPPort,
		fmt.Sprintf("Drop UDP (IPv4/IPv6) to the destination port in array udp_drop (now %d), counting drops there; pass the rest.", port),
		maps, insns...)
}

// CPUSelect is how xdp_redirect_cpu picks the target CPU.
type CPUSelect uint8

// CPU selection modes.
const (
	CPUFixed      CPUSelect = iota // always RedirectCPUConfig.CPU
	CPURoundRobin                  // a per-CPU counter cycling over the targets
	CPUHash                        // hash of IP addresses and TCP/UDP ports
)

func (s CPUSelect) String() string {
	switch s {
	case CPUFixed:
		return "fixed"
	case CPURoundRobin:
		return "round-robin"
	case CPUHash:
		return "flow-hash"
	}
	return fmt.Sprintf("CPUSelect(%d)", uint8(s))
}

// RedirectCPUConfig configures xdp_redirect_cpu.
type RedirectCPUConfig struct {
	Mode CPUSelect
	// CPU is the target of CPUFixed.
	CPU uint32
	// NumCPUs is the number of targets, cpumap keys 0..NumCPUs-1 (default 1).
	NumCPUs uint32
	// QSize is each target's ptr_ring size in the cpumap entries
	// (default 2048, at most 16384).
	QSize uint32
}

// ProgRedirectCPU redirects every frame into the cpumap "cpu_map" with
// bpf_redirect_map, choosing the key by cfg.Mode; a key with no entry
// passes the frame (the helper's fallback action XDP_PASS). Round robin
// keeps its position in the per-CPU array "rr_state", so each receiving
// CPU cycles on its own. The flow hash mixes the IPv4 or IPv6 addresses
// and, for TCP and UDP, the ports (IPv6 extension headers are not
// followed); non-IP frames hash to key 0.
func ProgRedirectCPU(cfg RedirectCPUConfig) *CollectionSpec {
	if cfg.NumCPUs == 0 {
		cfg.NumCPUs = 1
	}
	if cfg.QSize == 0 {
		cfg.QSize = defaultCPUQSize
	}
	cpumap := &MapSpec{Name: "cpu_map", Type: CPUMap, KeySize: 4, ValueSize: 4, MaxEntries: cfg.NumCPUs}
	for k := uint32(0); k < cfg.NumCPUs; k++ {
		cpumap.Contents = append(cpumap.Contents, MapKV{
			Key:   binary.LittleEndian.AppendUint32(nil, k),
			Value: binary.LittleEndian.AppendUint32(nil, cfg.QSize),
		})
	}
	maps := []*MapSpec{cpumap}
	redirect := asm.Instructions{ // key in R2
		asm.LoadMapPtr(asm.R1, 0).WithReference("cpu_map"),
		asm.Mov.Imm(asm.R3, int32(XDPPass)),
		asm.FnRedirectMap.Call(),
		asm.Return(),
	}
	var insns asm.Instructions
	switch cfg.Mode {
	case CPUFixed:
		insns = append(asm.Instructions{asm.Mov.Imm(asm.R2, int32(cfg.CPU))}, redirect...)
	case CPURoundRobin:
		maps = append(maps, &MapSpec{Name: "rr_state", Type: PerCPUArray, KeySize: 4, ValueSize: 4, MaxEntries: 1})
		insns = asm.Instructions{
			asm.StoreImm(asm.R10, -4, 0, asm.Word),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -4),
			asm.LoadMapPtr(asm.R1, 0).WithReference("rr_state"),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "pass"),
			asm.LoadMem(asm.R6, asm.R0, 0, asm.Word),
			asm.Mov.Reg(asm.R7, asm.R6),
			asm.Add.Imm(asm.R7, 1),
			asm.JLT.Imm(asm.R7, int32(cfg.NumCPUs), "store"),
			asm.Mov.Imm(asm.R7, 0),
			asm.StoreMem(asm.R0, 0, asm.R7, asm.Word).WithSymbol("store"),
			asm.Mov.Reg(asm.R2, asm.R6),
		}
		insns = append(insns, redirect...)
		insns = append(insns, ret(XDPPass)...)
		insns[len(insns)-2] = insns[len(insns)-2].WithSymbol("pass")
	default: // CPUHash
		insns = asm.Instructions{asm.Mov.Imm(asm.R6, 0)}
		insns = append(insns, parseL3("v4", "v6", "select")...)
		insns = append(insns,
			asm.LoadMem(asm.R6, asm.R2, offIPv4Src, asm.Word).WithSymbol("v4"),
			asm.LoadMem(asm.R5, asm.R2, offIPv4Dst, asm.Word),
			asm.Xor.Reg(asm.R6, asm.R5),
			asm.LoadMem(asm.R7, asm.R2, offIPv4Proto, asm.Byte),
			asm.LoadMem(asm.R5, asm.R2, offIPv4, asm.Byte),
			asm.And.Imm(asm.R5, 0x0f),
			asm.LSh.Imm(asm.R5, 2),
			asm.Add.Imm(asm.R2, offIPv4),
			asm.Add.Reg(asm.R2, asm.R5),
			asm.Ja.Label("ports"),
		)
		insns = append(insns, asm.LoadMem(asm.R6, asm.R2, offIPv6Src, asm.Word).WithSymbol("v6"))
		for off := int16(offIPv6Src + 4); off < offIPv6End; off += 4 {
			insns = append(insns,
				asm.LoadMem(asm.R5, asm.R2, off, asm.Word),
				asm.Xor.Reg(asm.R6, asm.R5))
		}
		insns = append(insns,
			asm.LoadMem(asm.R7, asm.R2, offIPv6NextHdr, asm.Byte),
			asm.Add.Imm(asm.R2, offIPv6End),
			// R2 = L4 header, R7 = protocol.
			asm.JEq.Imm(asm.R7, ipprotoTCP, "l4").WithSymbol("ports"),
			asm.JNE.Imm(asm.R7, ipprotoUDP, "select"),
			asm.Mov.Reg(asm.R4, asm.R2).WithSymbol("l4"),
			asm.Add.Imm(asm.R4, 4),
			asm.JGT.Reg(asm.R4, asm.R3, "select"),
			asm.LoadMem(asm.R5, asm.R2, 0, asm.Word), // source and dest ports
			asm.Xor.Reg(asm.R6, asm.R5),
			// key = mix(h) % NumCPUs
			asm.Mul.Imm32(asm.R6, goldenRatio32).WithSymbol("select"),
			asm.Mov.Reg32(asm.R5, asm.R6),
			asm.RSh.Imm32(asm.R5, 16),
			asm.Xor.Reg32(asm.R6, asm.R5),
			asm.Mod.Imm32(asm.R6, int32(cfg.NumCPUs)),
			asm.Mov.Reg(asm.R2, asm.R6),
		)
		insns = append(insns, redirect...)
	}
	return single(NameRedirectCPU,
		fmt.Sprintf("Redirect every frame to another CPU through cpumap cpu_map (%s over %d CPUs, qsize %d); the target CPU's kthread builds the skb.", cfg.Mode, cfg.NumCPUs, cfg.QSize),
		maps, insns...)
}

// RedirectDevConfig configures xdp_redirect_dev.
type RedirectDevConfig struct {
	// Key is the devmap slot every frame is redirected through.
	Key uint32
	// Ifindex, when not 0, is the device initially in slot Key.
	Ifindex uint32
	// MaxEntries is the devmap size (default 64).
	MaxEntries uint32
}

// ProgRedirectDev redirects every frame to the device in slot cfg.Key of the
// devmap "tx_port" with bpf_redirect_map; an empty slot passes the frame.
func ProgRedirectDev(cfg RedirectDevConfig) *CollectionSpec {
	if cfg.MaxEntries == 0 {
		cfg.MaxEntries = 64
	}
	devmap := &MapSpec{Name: "tx_port", Type: DevMap, KeySize: 4, ValueSize: 4, MaxEntries: cfg.MaxEntries}
	if cfg.Ifindex != 0 {
		devmap.Contents = []MapKV{{
			Key:   binary.LittleEndian.AppendUint32(nil, cfg.Key),
			Value: binary.LittleEndian.AppendUint32(nil, cfg.Ifindex),
		}}
	}
	insns := asm.Instructions{
		asm.Mov.Imm(asm.R2, int32(cfg.Key)),
		asm.LoadMapPtr(asm.R1, 0).WithReference("tx_port"),
		asm.Mov.Imm(asm.R3, int32(XDPPass)),
		asm.FnRedirectMap.Call(),
		asm.Return(),
	}
	return single(NameRedirectDev,
		fmt.Sprintf("Redirect every frame to the device in slot %d of devmap tx_port (ndo_xdp_xmit on that device); an empty slot passes the frame.", cfg.Key),
		[]*MapSpec{devmap}, insns...)
}
