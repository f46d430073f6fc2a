package drop

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/kernel"
	"ringlab/engine/vocab"
)

// coreReasons are values of enum skb_drop_reason in
// include/net/dropreason-core.h (net-next of early 2026), without the
// SKB_DROP_REASON_ prefix: those the engine uses, and their neighbours.
var coreReasons = map[string]bool{
	"NOT_SPECIFIED": true, "NO_SOCKET": true, "SOCKET_RCVBUFF": true, "PROTO_MEM": true,
	"SOCKET_BACKLOG": true, "CPU_BACKLOG": true, "XDP": true, "FULL_RING": true, "NOMEM": true,
	"QDISC_DROP": true, "TCP_OLD_DATA": true, "TCP_ZEROWINDOW": true, "TCP_OFO_DROP": true,
}

func TestNamesAreTheKernelsOrClearlyTheModels(t *testing.T) {
	lower := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	seen := map[string]Reason{}
	for r := Reason(1); r < NumReasons; r++ {
		in := Of(r)
		assert.Regexp(t, lower, in.Model, "a model's name is in lower case")
		assert.False(t, coreReasons[strings.ToUpper(in.Model)], "%s reads as the kernel's", in.Model)
		if in.KernelName != "" {
			assert.True(t, coreReasons[in.KernelName], "%s is not an skb_drop_reason", in.KernelName)
			assert.True(t, in.Since.AtLeast(kernel.Version{Major: 5, Minor: 17}), "skb_drop_reason came in 5.17")
			assert.True(t, IsKernel(in.KernelName))
		}
		assert.False(t, IsKernel(in.Model))
		for _, n := range []string{in.Model, in.KernelName} {
			if n == "" {
				continue
			}
			prev, dup := seen[n]
			assert.False(t, dup, "%s names %d and %d", n, prev, r)
			seen[n] = r
		}
		assert.NotEmpty(t, in.NoReason)
	}
}

// Every name is in the vocabulary, as an exact name of the drops group,
// and the group holds nothing else.
func TestEveryNameIsInTheVocabulary(t *testing.T) {
	names := map[string]bool{}
	for _, n := range Names() {
		names[vocab.Drops(n)] = true
		d, ok := vocab.Lookup(vocab.Drops(n))
		require.True(t, ok, "%s not in engine/vocab", vocab.Drops(n))
		assert.Equal(t, vocab.Drops(n), d.Name, "an exact entry, not a pattern")
		assert.Equal(t, vocab.GroupDrops, d.Group)
		assert.Equal(t, vocab.Counter, d.Kind)
		assert.Equal(t, "packets", d.Unit)
	}
	for _, d := range vocab.Table() {
		if d.Group == vocab.GroupDrops && d.Name != "drops.*" { // the pattern: a real kernel's other reasons
			assert.True(t, names[d.Name], "%s is no reason's name", d.Name)
		}
	}
}

func TestTheNameIsTheScenarioKernels(t *testing.T) {
	v := func(major, minor int) kernel.Version { return kernel.Version{Major: major, Minor: minor} }
	for _, tc := range []struct {
		r    Reason
		at   kernel.Version
		want string
	}{
		{UDPRcvbuf, v(7, 0), "SOCKET_RCVBUFF"},
		{UDPRcvbuf, v(5, 18), "SOCKET_RCVBUFF"},
		{UDPRcvbuf, v(5, 17), "udp_rcvbuf"}, // the enum, not yet this value
		{UDPRcvbuf, v(4, 19), "udp_rcvbuf"}, // no reason at all
		{TapFull, v(6, 1), "FULL_RING"},
		{TapFull, v(5, 15), "tap_queue_full"},
		{TCPRmem, v(6, 6), "PROTO_MEM"},
		{XDPDrop, v(7, 0), "xdp_drop"}, // native XDP frees no skb
		{None, v(7, 0), ""},
	} {
		assert.Equal(t, tc.want, Name(tc.r, tc.at), "%d at %s", tc.r, tc.at)
		if tc.want != "" {
			assert.Equal(t, vocab.Drops(tc.want), Counter(tc.r, tc.at))
		}
	}
	assert.Contains(t, Kernel(UDPRcvbuf, v(6, 1)), "__udp_queue_rcv_skb: kfree_skb_reason(skb, SKB_DROP_REASON_SOCKET_RCVBUFF)")
	assert.Contains(t, Kernel(UDPRcvbuf, v(5, 10)), "no reason before 5.17")
	assert.Contains(t, Kernel(TCPRmem, v(5, 15)), "__kfree_skb")
	assert.Contains(t, Kernel(XDPDrop, v(7, 0)), "SKB_DROP_REASON_XDP", "says what generic XDP would free it with")
}

func TestCountingAllocatesNothing(t *testing.T) {
	var c Counts
	at := kernel.Newest
	n := testing.AllocsPerRun(100, func() {
		c.Add(UDPRcvbuf)
		c.AddN(TapFull, 3)
		_ = Counter(TapFull, at)
	})
	assert.Zero(t, n)
	assert.Equal(t, uint64(4*101), c.Total()) // AllocsPerRun runs once more to warm up
}
