//go:build linux

package hostsrc

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/mdlayher/netlink"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"ringlab/internal/testenv"
)

// requireIf skips (fails in CI) when the host has no interface ifname.
func requireIf(t testing.TB, ifname string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(sysClassNet, ifname)); err != nil {
		testenv.Missing(t, "no "+ifname)
	}
}

// openT opens ifname and closes it when the test ends.
func openT(t testing.TB, ifname string) *Source {
	t.Helper()
	requireIf(t, ifname)
	s, err := Open(ifname)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}

// sysStatsNow reads /sys/class/net/IF/statistics the plain way.
func sysStatsNow(t *testing.T, ifname string) map[string]uint64 {
	t.Helper()
	dir := filepath.Join(sysClassNet, ifname, "statistics")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	m := make(map[string]uint64, len(entries))
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		require.NoError(t, err, e.Name())
		m[e.Name()] = v
	}
	return m
}

func TestReadSysStatsMatchesSysfs(t *testing.T) {
	testenv.RequireRoot(t)
	for _, ifname := range []string{"lo", "eth0"} {
		t.Run(ifname, func(t *testing.T) {
			s := openT(t, ifname)
			for i := 0; i < 2; i++ {
				before := sysStatsNow(t, ifname)
				smp, err := s.Read()
				require.NoError(t, err)
				after := sysStatsNow(t, ifname)

				assert.Equal(t, ifname, smp.Ifname)
				assert.NotZero(t, smp.Ifindex)
				assert.False(t, smp.Time.IsZero())
				require.Len(t, smp.Stats, len(before))
				for _, name := range []string{"rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_dropped"} {
					assert.Contains(t, smp.Stats, name)
				}
				for name, got := range smp.Stats {
					assert.LessOrEqual(t, before[name], got, "%s read %d: before ≤ source", name, i)
					assert.LessOrEqual(t, got, after[name], "%s read %d: source ≤ after", name, i)
				}
			}
		})
	}
}

func TestOpenIfindexMatchesSysfs(t *testing.T) {
	for _, ifname := range []string{"lo", "eth0"} {
		t.Run(ifname, func(t *testing.T) {
			s := openT(t, ifname)
			b, err := os.ReadFile(filepath.Join(sysClassNet, ifname, "ifindex"))
			require.NoError(t, err)
			want, err := strconv.Atoi(strings.TrimSpace(string(b)))
			require.NoError(t, err)
			smp, err := s.Read()
			require.NoError(t, err)
			assert.Equal(t, want, smp.Ifindex)
		})
	}
}

func TestLoHasNoDriver(t *testing.T) {
	testenv.RequireRoot(t)
	s := openT(t, "lo")
	smp, err := s.Read()
	require.NoError(t, err)
	assert.Empty(t, smp.Driver)
	assert.Empty(t, smp.Ethtool)
	assert.Contains(t, strings.Join(smp.Notes, "\n"), "ethtool: lo has no driver information")
	assert.Contains(t, strings.Join(smp.Notes, "\n"), "ethtool: lo has no driver statistics")

	again, err := s.Read()
	require.NoError(t, err)
	assert.Empty(t, again.Notes, "notes are reported once")
	assert.Equal(t, append(smp.Notes[:0:0], smp.Notes...), s.Notes())
}

// perQueue matches virtio_net's per-queue names: rx0_xdp_packets, tx0_kicks.
var perQueue = regexp.MustCompile(`^(rx|tx)[0-9]+_`)

func TestEth0VirtioNetEthtool(t *testing.T) {
	testenv.RequireRoot(t)
	s := openT(t, "eth0")
	first, err := s.Read()
	require.NoError(t, err)
	if first.Driver != "virtio_net" {
		testenv.Missing(t, "eth0 is driven by "+strconv.Quote(first.Driver)+", not virtio_net")
	}
	names := make(map[string]bool)
	for _, c := range first.Ethtool {
		names[c.Name] = true
	}
	for _, want := range []string{"rx_drops", "rx_xdp_packets", "rx_xdp_tx", "rx_xdp_redirects", "rx_xdp_drops", "rx_kicks", "tx_kicks", "rx0_xdp_packets", "rx0_kicks", "tx0_kicks"} {
		assert.True(t, names[want], "eth0 ethtool counters lack %s; have %v", want, first.Ethtool)
	}
	queues := 0
	for _, c := range first.Ethtool {
		if perQueue.MatchString(c.Name) {
			queues++
		}
	}
	assert.NotZero(t, queues, "no per-queue counters")

	second, err := s.Read()
	require.NoError(t, err)
	require.Len(t, second.Ethtool, len(first.Ethtool))
	for i, c := range second.Ethtool {
		assert.Equal(t, first.Ethtool[i].Name, c.Name, "driver order is stable")
		assert.GreaterOrEqual(t, c.Value, first.Ethtool[i].Value, "%s went backwards", c.Name)
	}
	t.Logf("eth0 ethtool counters: %v", second.Ethtool)
}

// kernelHasPagePoolStats asks netlink directly, without the Source.
func kernelHasPagePoolStats(t *testing.T) bool {
	t.Helper()
	n, err := openNetdev()
	if errors.Is(err, errNoNetdevFamily) {
		testenv.Missing(t, "kernel has no netlink netdev family")
	}
	require.NoError(t, err)
	defer n.close()
	_, err = n.dump(cmdPagePoolStatsGet)
	if errors.Is(err, unix.EOPNOTSUPP) {
		return false
	}
	require.NoError(t, err)
	return true
}

func TestPagePools(t *testing.T) {
	testenv.RequireRoot(t)
	hasStats := kernelHasPagePoolStats(t)
	for _, ifname := range []string{"lo", "eth0"} {
		t.Run(ifname, func(t *testing.T) {
			s := openT(t, ifname)
			statsNotes := 0
			for i := 0; i < 5; i++ {
				smp, err := s.Read()
				require.NoError(t, err)
				for _, n := range smp.Notes {
					if n == notePPStatsOff {
						statsNotes++
					}
					assert.NotContains(t, n, "page_pool: ", "page-pool-get must work here")
				}
				for _, p := range smp.PagePools {
					assert.Equal(t, smp.Ifindex, p.Ifindex)
					assert.NotZero(t, p.ID)
					assert.Equal(t, hasStats, p.Stats != nil)
				}
				t.Logf("read %d: %d page pools %+v", i, len(smp.PagePools), smp.PagePools)
			}
			if hasStats {
				assert.Zero(t, statsNotes)
			} else {
				assert.Equal(t, 1, statsNotes, "the CONFIG_PAGE_POOL_STATS note comes exactly once")
				assert.Contains(t, s.Notes(), notePPStatsOff)
			}
		})
	}
}

// TestIoctlLayouts guards the structures handed to SIOCETHTOOL.
func TestIoctlLayouts(t *testing.T) {
	assert.Equal(t, unsafe.Sizeof(unix.Ifreq{}), unsafe.Sizeof(ifreqData{}), "sizeof(struct ifreq)")
	assert.Equal(t, uintptr(unix.IFNAMSIZ), unsafe.Offsetof(ifreqData{}.data), "ifr_data follows ifr_name")
	assert.Equal(t, uintptr(8), unsafe.Offsetof(ethtoolSsetInfo{}.ssetMask), "ethtool_sset_info.sset_mask")
	assert.Equal(t, uintptr(16), unsafe.Offsetof(ethtoolSsetInfo{}.data), "ethtool_sset_info.data")
}

func TestDecodeQueueStats(t *testing.T) {
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(attrQstatsIfindex, 4)
	ae.Uint32(attrQstatsQueueType, queueTypeTx)
	ae.Uint32(attrQstatsQueueID, 3)
	ae.Uint64(attrQstatsFirst+2, 1<<33) // tx-packets in 8 bytes
	ae.Uint32(attrQstatsFirst+25, 2)    // tx-stop in 4
	ae.Uint32(200, 9)                   // a newer kernel's: not read
	b, err := ae.Encode()
	require.NoError(t, err)
	q, ifindex, err := decodeQueueStats(b)
	require.NoError(t, err)
	assert.Equal(t, 4, ifindex)
	assert.Equal(t, QueueStats{Type: "tx", ID: 3, Counters: []Counter{{"tx_packets", 1 << 33}, {"tx_stop", 2}}}, q)

	ae = netlink.NewAttributeEncoder()
	ae.Uint32(attrQstatsIfindex, 4)
	ae.Uint32(attrQstatsQueueType, 7)
	ae.Uint32(attrQstatsQueueID, 0)
	b, err = ae.Encode()
	require.NoError(t, err)
	_, _, err = decodeQueueStats(b)
	assert.ErrorContains(t, err, "queue type 7")
}

// TestQstatsThisMachine reads eth0's queues with netlink qstats-get
// where the kernel has it (6.9): every queue sysfs lists, packets
// included, and the receive queues' packets within sysfs's total; where
// it has not, one note says so. lo has no queue statistics: a note says
// so too.
func TestQstatsThisMachine(t *testing.T) {
	s := openT(t, "eth0")
	smp, err := s.Read()
	require.NoError(t, err)
	t.Logf("qstats of eth0: %+v", smp.Queues)
	if slices.Contains(s.Notes(), noteQstatsOff) {
		assert.Empty(t, smp.Queues)
		t.Skip("this kernel has no qstats-get (the note says so)")
	}
	rxq, err := filepath.Glob("/sys/class/net/eth0/queues/rx-*")
	require.NoError(t, err)
	txq, err := filepath.Glob("/sys/class/net/eth0/queues/tx-*")
	require.NoError(t, err)
	var rx, tx int
	var rxPackets uint64
	for _, q := range smp.Queues {
		switch q.Type {
		case "rx":
			rx++
			for _, c := range q.Counters {
				if c.Name == "rx_packets" {
					rxPackets += c.Value
				}
			}
		case "tx":
			tx++
		}
	}
	assert.Equal(t, len(rxq), rx, "a reply per receive queue")
	assert.Equal(t, len(txq), tx, "a reply per send queue")
	assert.NotZero(t, rxPackets, "eth0 received packets")
	after, err := s.Read()
	require.NoError(t, err)
	assert.LessOrEqual(t, rxPackets, after.Stats["rx_packets"], "the queues' packets are within the device's")
	_, queues := after.Counters()
	require.NotEmpty(t, queues)
	assert.NotZero(t, queues[0]["rx_packets"], "queue 0's packets, for the per-queue panel")

	lo := openT(t, "lo")
	_, err = lo.Read()
	require.NoError(t, err)
	assert.Contains(t, lo.Notes(), noteQstatsNone("lo"))
}

func TestDecodePagePool(t *testing.T) {
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(attrPoolID, 7) // a "uint" the kernel sent in 4 bytes
	ae.Uint32(attrPoolIfindex, 4)
	ae.Uint32(attrPoolNAPIID, 8193)
	ae.Uint64(attrPoolInflight, 1<<33) // and one in 8
	ae.Uint32(attrPoolInflightMem, 4096)
	ae.Uint32(attrPoolDetachTime, 120)
	ae.Uint32(99, 1) // an attribute from a newer kernel
	b, err := ae.Encode()
	require.NoError(t, err)
	p, err := decodePagePool(b)
	require.NoError(t, err)
	assert.Equal(t, PagePool{ID: 7, Ifindex: 4, NAPIID: 8193, Inflight: 1 << 33, InflightMem: 4096, DetachTime: 120}, p)

	ae = netlink.NewAttributeEncoder()
	ae.Bytes(attrPoolID, []byte{1, 2})
	b, err = ae.Encode()
	require.NoError(t, err)
	_, err = decodePagePool(b)
	assert.ErrorContains(t, err, "2 bytes, want a 4- or 8-byte uint")
}

func TestDecodePagePoolStats(t *testing.T) {
	ae := netlink.NewAttributeEncoder()
	ae.Nested(attrStatsInfo, func(nae *netlink.AttributeEncoder) error {
		nae.Uint64(attrPoolID, 42)
		nae.Uint32(attrPoolIfindex, 4)
		return nil
	})
	for i := uint16(attrStatsAllocFast); i <= attrStatsReleasedRefcnt; i++ {
		ae.Uint64(i, uint64(i)*10)
	}
	b, err := ae.Encode()
	require.NoError(t, err)
	id, st, err := decodePagePoolStats(b)
	require.NoError(t, err)
	assert.Equal(t, uint64(42), id)
	assert.Equal(t, &PagePoolStats{
		AllocFast: 80, AllocSlow: 90, AllocSlowHighOrder: 100, AllocEmpty: 110, AllocRefill: 120, AllocWaive: 130,
		RecycleCached: 140, RecycleCacheFull: 150, RecycleRing: 160, RecycleRingFull: 170, RecycleReleasedRefcnt: 180,
	}, st)
}

// onlineCPUs parses /sys/devices/system/cpu/online ("0-1", "0,2-3").
func onlineCPUs(t *testing.T) []int {
	t.Helper()
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	require.NoError(t, err)
	var cpus []int
	for _, r := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, found := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		require.NoError(t, err)
		z := a
		if found {
			z, err = strconv.Atoi(hi)
			require.NoError(t, err)
		}
		for c := a; c <= z; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

func TestSoftnetThisMachine(t *testing.T) {
	s := openT(t, "lo")
	smp, err := s.Read()
	require.NoError(t, err)
	want := onlineCPUs(t)
	require.Len(t, smp.Softnet, len(want), "one softnet_stat line per online CPU")
	for i, c := range smp.Softnet {
		assert.GreaterOrEqual(t, c.Columns, 11)
		if c.Columns >= 13 {
			assert.Equal(t, want[i], c.CPU)
		}
	}
	again, err := s.Read()
	require.NoError(t, err)
	for i := range again.Softnet {
		assert.Less(t, again.Softnet[i].Processed-smp.Softnet[i].Processed, uint32(1<<31), "processed went backwards")
	}
}

// TestSoftnetPerCPUThisMachine: the host source's sample has the three
// counters of every online CPU (at its id from 5.10), summing to the
// softnet totals.
func TestSoftnetPerCPUThisMachine(t *testing.T) {
	src, err := OpenMetrics("lo")
	require.NoError(t, err)
	defer src.Close()
	smp, err := src.Sample()
	require.NoError(t, err)
	online := 0
	var processed, squeezed uint64
	for c, m := range smp.CPUs {
		if len(m) == 0 {
			continue // offline
		}
		online++
		for _, col := range softnetColumns {
			assert.Contains(t, m, col.name, "CPU %d (this kernel prints 13 columns or more)", c)
		}
		processed += m["softnet.processed"]
		squeezed += m["softnet.time_squeeze"]
	}
	assert.Equal(t, len(onlineCPUs(t)), online, "every online CPU")
	assert.Equal(t, smp.Totals["softnet.processed"], processed)
	assert.Equal(t, smp.Totals["softnet.time_squeeze"], squeezed)
}

func TestOpenBadNames(t *testing.T) {
	tests := []struct {
		name    string
		ifname  string
		is      error
		wantMsg string
	}{
		{"empty", "", ErrBadName, "interface name is empty"},
		{"path", "../etc", ErrBadName, `"../etc" contains '/'`},
		{"twenty bytes", "abcdefghijklmnopqrst", ErrBadName, "20 bytes, at most 15"},
		{"absent", "nosuchif0", ErrNoInterface, `interface "nosuchif0" is not in /sys/class/net`},
		{"not an interface", "bonding_masters", ErrNoInterface, `"bonding_masters" is not in /sys/class/net`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(tc.ifname)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.ErrorIs(t, err, tc.is)
			assert.Contains(t, err.Error(), tc.wantMsg)
			assert.True(t, strings.HasPrefix(err.Error(), "hostsrc: open: "), err.Error())
		})
	}
}

// linkState is what a change to the interface would show in sysfs.
func linkState(t *testing.T, ifname string) map[string]string {
	t.Helper()
	m := make(map[string]string)
	for _, f := range []string{"flags", "mtu", "tx_queue_len", "address", "operstate", "carrier_changes"} {
		b, err := os.ReadFile(filepath.Join(sysClassNet, ifname, f))
		require.NoError(t, err)
		m[f] = string(b)
	}
	return m
}

// TestReadOnlyLeavesEth0Alone guards the package's rule that it never changes
// an interface: eth0's flags and MTU are the same after Open, Read and Close.
func TestReadOnlyLeavesEth0Alone(t *testing.T) {
	requireIf(t, "eth0")
	before := linkState(t, "eth0")
	s, err := Open("eth0")
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		_, err := s.Read()
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	assert.Equal(t, before, linkState(t, "eth0"))
}

func TestReadAfterClose(t *testing.T) {
	s, err := Open("lo")
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close twice")
	_, err = s.Read()
	assert.ErrorIs(t, err, ErrClosed)
}

func TestInterfaces(t *testing.T) {
	names, err := Interfaces()
	require.NoError(t, err)
	assert.Contains(t, names, "lo")
	assert.IsNonDecreasing(t, names)
	for _, n := range names {
		assert.NoError(t, ValidateName(n))
	}
}

// TestHotPathsDoNotAllocate guards the per-Read cost: sysfs, softnet_stat and
// ETHTOOL_GSTATS reads reuse their buffers and the caller's Sample.
func TestHotPathsDoNotAllocate(t *testing.T) {
	testenv.RequireRoot(t)
	s := openT(t, "eth0")
	var smp Sample
	require.NoError(t, s.ReadInto(&smp))
	require.NotNil(t, s.eth)
	require.NotNil(t, s.softnet)
	cases := map[string]func(){
		"sysfs":   func() { _ = s.sys.read(smp.Stats) },
		"softnet": func() { smp.Softnet, _ = s.softnet.read(smp.Softnet) },
		"ethtool": func() { smp.Ethtool, _ = s.eth.read(smp.Ethtool) },
	}
	for name, f := range cases {
		assert.Zero(t, testing.AllocsPerRun(50, f), name)
	}
}

// BenchmarkReadEth0 measures one full Read of eth0. At 10 Hz the share of
// one core is ns/op × 10 / 1e9.
func BenchmarkReadEth0(b *testing.B) {
	s := openT(b, "eth0")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Read(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadIntoEth0 is BenchmarkReadEth0 reusing one Sample.
func BenchmarkReadIntoEth0(b *testing.B) {
	s := openT(b, "eth0")
	var smp Sample
	b.ReportAllocs()
	for b.Loop() {
		if err := s.ReadInto(&smp); err != nil {
			b.Fatal(err)
		}
	}
}
