// Package labsrc is the "lab" metric source: as root it builds a lab of two
// network namespaces of its own joined by a veth pair, attaches an XDP
// program from the engine's library to the receiving veth with cilium/ebpf,
// sends its own UDP flow through it, and reports the real verdict counts,
// the veth's counters and what the kernel says of its page pools. It only
// ever touches the namespaces and interfaces it created, and removes them on
// Close and, after a crash, when the next lab opens.
//
// The kernel's drops by reason in the lab's own namespaces come from a
// raw tracepoint program on skb:kfree_skb (drops_linux.go), its
// argument offsets read from the kernel's BTF. Its program's run count
// and time come from the kernel's BPF run-time stats
// (bpf_enable_runtime_stats), on only while the lab runs. docs/lab.md
// describes the lab, its counters and its cleanup.
package labsrc

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"ringlab/engine/bpf"
)

// Spec defaults and limits.
const (
	// DefaultProgram is what "lab" runs without a program: it passes every
	// frame and counts them per IP protocol.
	DefaultProgram = bpf.NameCountProto
	// DefaultRate is the sender's rate in packets per second.
	DefaultRate = 20_000
	// DefaultSize is the Ethernet frame size of the lab's packets in bytes
	// (no FCS), as the engine's traffic.size counts it.
	DefaultSize = 64
	// DefaultDuration bounds a sender that has no count.
	DefaultDuration = 10 * time.Minute

	// MaxRate bounds the requested rate. LAB.md measured about 280,000
	// packets per second of plain UDP writes on a 2-core machine; a higher
	// request is allowed and simply not reached.
	MaxRate = 1_000_000
	// MinSize is the Ethernet minimum without FCS (engine scenario.MinFrame).
	MinSize = 60
	// MaxSize is the veth MTU (1500) plus the Ethernet header.
	MaxSize = 1514
	// MaxCount bounds count=.
	MaxCount = 1_000_000_000
	// MaxDuration bounds duration=.
	MaxDuration = time.Hour
	// minDuration keeps duration= meaningful.
	minDuration = time.Millisecond

	// FlowPort is the UDP destination port of the lab's flow: the counting
	// program counts frames to this port as the lab's own and everything
	// else apart. FlowSrcPort is the sender's port.
	FlowPort    = 9999
	FlowSrcPort = 9998

	// headerBytes is Ethernet + IPv4 (no options) + UDP.
	headerBytes = 14 + 20 + 8
)

// ErrBadSpec is wrapped by every spec parsing error.
var ErrBadSpec = errors.New("bad lab spec")

// Programs lists the library programs a lab can run, in listing order.
// xdp_redirect_dev is left out: it redirects to an interface by ifindex, and
// the lab touches no interface but its own two.
var Programs = []string{
	bpf.NameCountProto, bpf.NamePass, bpf.NameDrop, bpf.NameTx,
	bpf.NameDropUDPPort, bpf.NameRedirectCPU,
}

// Config is a parsed spec: what the lab runs and sends.
type Config struct {
	// Program is the library program attached to the receiving veth.
	Program string
	// Rate is the sender's target in packets per second.
	Rate int
	// Size is each frame's Ethernet size in bytes (no FCS): 42 bytes of
	// Ethernet, IPv4 and UDP headers and Size-42 of payload.
	Size int
	// Count is how many packets the sender sends before it stops; 0 means
	// until Duration.
	Count uint64
	// Duration bounds the sender in time whatever Count says.
	Duration time.Duration
	// Port is the UDP destination port xdp_drop_udp_port drops (FlowPort
	// unless port= says otherwise); 0 for other programs.
	Port int
}

// DefaultConfig is what "lab" with no argument runs.
func DefaultConfig() Config {
	return Config{Program: DefaultProgram, Rate: DefaultRate, Size: DefaultSize, Duration: DefaultDuration}
}

// specKeys are the option names, in the order String prints them.
var specKeys = []string{"rate", "size", "count", "duration", "port"}

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadSpec, fmt.Sprintf(format, args...))
}

// ParseSpec parses what follows "lab:" in a source spec:
//
//	[PROGRAM][,rate=PPS][,size=BYTES][,count=N][,duration=D][,port=P]
//
// PROGRAM is one of Programs (DefaultProgram when absent); rate is packets
// per second (1..MaxRate), size the Ethernet frame size in bytes
// (MinSize..MaxSize), count the number of packets to send (1..MaxCount;
// without it the sender runs for duration), duration a Go duration
// (1ms..1h, default 10m) and port the UDP port xdp_drop_udp_port drops
// (only with that program; default FlowPort, the lab's own flow). Every
// option at most once; anything else is an error that says what is allowed.
func ParseSpec(arg string) (Config, error) {
	c := DefaultConfig()
	if arg == "" {
		return c, nil
	}
	parts := strings.Split(arg, ",")
	if !strings.Contains(parts[0], "=") {
		p := parts[0]
		if !slices.Contains(Programs, p) {
			if p == bpf.NameRedirectDev {
				return Config{}, bad("%s redirects to an interface by ifindex and the lab touches only its own veth pair; programs: %s", p, strings.Join(Programs, ", "))
			}
			return Config{}, bad("program %q is not one the lab runs; programs: %s", p, strings.Join(Programs, ", "))
		}
		c.Program = p
		parts = parts[1:]
	}
	seen := map[string]bool{}
	for _, part := range parts {
		key, val, ok := strings.Cut(part, "=")
		if !ok || key == "" || val == "" {
			return Config{}, bad("%q: want KEY=VALUE with KEY one of %s (the program, if any, comes first)", part, strings.Join(specKeys, ", "))
		}
		if seen[key] {
			return Config{}, bad("%s given twice", key)
		}
		seen[key] = true
		var err error
		switch key {
		case "rate":
			c.Rate, err = parseInt(key, val, 1, MaxRate)
		case "size":
			c.Size, err = parseInt(key, val, MinSize, MaxSize)
		case "count":
			var n int
			n, err = parseInt(key, val, 1, MaxCount)
			c.Count = uint64(n)
		case "duration":
			c.Duration, err = time.ParseDuration(val)
			if err != nil {
				err = bad("duration=%s: want a Go duration such as 30s or 5m", val)
			} else if c.Duration < minDuration || c.Duration > MaxDuration {
				err = bad("duration=%s: want %v..%v", val, minDuration, MaxDuration)
			}
		case "port":
			c.Port, err = parseInt(key, val, 1, 65535)
		default:
			err = bad("unknown option %q; options: %s", key, strings.Join(specKeys, ", "))
		}
		if err != nil {
			return Config{}, err
		}
	}
	if seen["port"] && c.Program != bpf.NameDropUDPPort {
		return Config{}, bad("port= only configures %s, not %s", bpf.NameDropUDPPort, c.Program)
	}
	if c.Program == bpf.NameDropUDPPort && c.Port == 0 {
		c.Port = FlowPort
	}
	return c, nil
}

func parseInt(key, val string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(val)
	if err != nil {
		return 0, bad("%s=%s: not a whole number", key, val)
	}
	if n < lo || n > hi {
		return 0, bad("%s=%d: want %d..%d", key, n, lo, hi)
	}
	return n, nil
}

// String returns the spec argument that parses back into c, every option
// spelled out: "xdp_drop,rate=20000,size=64,duration=10m0s".
func (c Config) String() string {
	var b strings.Builder
	b.WriteString(c.Program)
	fmt.Fprintf(&b, ",rate=%d,size=%d", c.Rate, c.Size)
	if c.Count > 0 {
		fmt.Fprintf(&b, ",count=%d", c.Count)
	}
	fmt.Fprintf(&b, ",duration=%s", c.Duration)
	if c.Program == bpf.NameDropUDPPort {
		fmt.Fprintf(&b, ",port=%d", c.Port)
	}
	return b.String()
}

// payloadBytes is the UDP payload that makes a frame of c.Size bytes.
func (c Config) payloadBytes() int { return c.Size - headerBytes }
