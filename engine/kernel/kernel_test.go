package kernel

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Version
		err  string
	}{
		{in: "6.4", want: Version{Major: 6, Minor: 4}},
		{in: "6.4.12", want: Version{Major: 6, Minor: 4}},
		{in: "4.17", want: Version{Major: 4, Minor: 17}},
		{in: "7.0", want: Version{Major: 7}},
		{in: "4.10", want: Version{Major: 4, Minor: 10}},
		{in: "2.6.27", err: "kernel version 2.6.27: the engine models 4.10 to 7.0"},
		{in: "4.9", err: "kernel version 4.9: the engine models 4.10 to 7.0"},
		{in: "7.1", err: "the engine models 4.10 to 7.0"},
		{in: "6", err: "want major.minor"},
		{in: "", err: "want major.minor"},
		{in: "6.x", err: `"x" is not a version number`},
		{in: "6.04", err: `"04" is not a version number`},
		{in: "6.4.1.2", err: "want major.minor"},
		{in: "-6.4", err: "is not a version number"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			v, err := Parse(tc.in)
			if tc.err != "" {
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrVersion)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, v)
		})
	}
}

func TestOrder(t *testing.T) {
	vs := []Version{{Major: 2, Minor: 6, Sub: 27}, {Major: 4, Minor: 10}, {Major: 4, Minor: 17}, {Major: 5, Minor: 17}, {Major: 6, Minor: 4}, {Major: 6, Minor: 10}, {Major: 7}}
	for i := range vs {
		for j := range vs {
			assert.Equal(t, i < j, vs[i].Less(vs[j]), "%s < %s", vs[i], vs[j])
			assert.Equal(t, i >= j, vs[i].AtLeast(vs[j]), "%s >= %s", vs[i], vs[j])
		}
	}
	assert.Equal(t, "2.6.27", vs[0].String())
	assert.Equal(t, "7.0", vs[6].String())
}

// Each dated behaviour switches on at the release the table names and not
// one release before; the premapping of page_frag blocks is off by default
// in 6.11 and 6.12 (111fc9f517cb in 6.11, 47008bb51c3e in 6.13).
func TestBehavioursByVersion(t *testing.T) {
	on := func(v string) Behaviours {
		k, err := Parse(v)
		require.NoError(t, err)
		return k.Behaviours()
	}
	assert.Equal(t, Behaviours{CpumapLocklessConsume: true, XDPClearsGuestGSO: true}, on("4.17"), "4.17 has only cpumap's lockless consumer and XDP's clearing of guest GSO (4.15)")
	assert.False(t, on("4.14").XDPClearsGuestGSO, "4.14 refuses XDP with guest GSO")
	assert.False(t, on("4.14").CpumapLocklessConsume, "no cpumap before 4.15")
	assert.True(t, on("4.15").CpumapLocklessConsume)
	assert.True(t, on("5.1").CpumapLocklessConsume)
	assert.False(t, on("5.2").CpumapLocklessConsume, "77361825bb01: ptr_ring_consume_batched takes consumer_lock")
	assert.False(t, on("5.8").CpumapLocklessConsume)
	assert.True(t, on("5.9").CpumapLocklessConsume, "__ptr_ring_consume_batched again")
	assert.False(t, on("5.12").PageToSKBBuild)
	assert.True(t, on("5.13").PageToSKBBuild)
	assert.False(t, on("5.16").PtrRingLocklessConsume)
	assert.True(t, on("5.17").PtrRingLocklessConsume)
	assert.False(t, on("5.17").TCPDeferFree, "5.17 and 5.18 defer to the socket, freed by the reader")
	assert.True(t, on("5.19").TCPDeferFree, "per-CPU lists from 5.19 (68822bdf76f1)")
	assert.False(t, on("5.18").PCPFreeHigh)
	assert.True(t, on("5.19").PCPFreeHigh)
	assert.False(t, on("6.6").PCPFreeCount)
	assert.True(t, on("6.7").PCPFreeCount)
	assert.False(t, on("6.15").PCPFreeCountHighMin)
	assert.True(t, on("6.16").PCPFreeCountHighMin)
	assert.False(t, on("6.0").BigPacketsSizedToMTU)
	assert.True(t, on("6.1").BigPacketsSizedToMTU)
	assert.False(t, on("6.3").CpumapSKBRecycle)
	assert.True(t, on("6.4").CpumapSKBRecycle)
	assert.False(t, on("6.4").NAPILocalSKB)
	assert.True(t, on("6.5").NAPILocalSKB)
	assert.False(t, on("6.5").NAPILocalSKBSoftirq)
	assert.True(t, on("6.6").NAPILocalSKBSoftirq)
	assert.False(t, on("6.5").PageFragPremap)
	assert.True(t, on("6.6").PageFragPremap)
	assert.False(t, on("6.9").NAPILocalAll)
	assert.True(t, on("6.10").NAPILocalAll)
	assert.True(t, on("6.10").PageFragPremap)
	assert.False(t, on("6.11").PageFragPremap)
	assert.False(t, on("6.12").PageFragPremap)
	assert.True(t, on("6.13").PageFragPremap)
	assert.False(t, on("6.5").TCPScalingRatio)
	assert.True(t, on("6.6").TCPScalingRatio)
	assert.False(t, on("6.17").UDPDeferFree)
	assert.True(t, on("6.18").UDPDeferFree)
	assert.False(t, on("6.18").SKBDeferMax128)
	assert.True(t, on("6.19").SKBDeferMax128)
	assert.False(t, on("6.18").RefillRetryInNAPI)
	assert.True(t, on("6.19").RefillRetryInNAPI)
	assert.False(t, on("6.19").VirtioNetPagePool)
	n := on("7.0")
	v := reflect.ValueOf(n)
	for i := 0; i < v.NumField(); i++ {
		assert.True(t, v.Field(i).Bool(), "the newest kernel has %s", v.Type().Field(i).Name)
	}
}

// Every field of Behaviours is in the table once, so Behaviours can set it.
func TestChangesCoverBehaviours(t *testing.T) {
	typ := reflect.TypeOf(Behaviours{})
	seen := map[string]int{}
	for _, c := range Changes() {
		seen[c.Name]++
		_, ok := typ.FieldByName(c.Name)
		assert.True(t, ok, "Changes names %s, which Behaviours lacks", c.Name)
		assert.NotEmpty(t, c.What)
		assert.NotEmpty(t, c.Function)
	}
	for i := 0; i < typ.NumField(); i++ {
		assert.Equal(t, 1, seen[typ.Field(i).Name], "Behaviours.%s in the table", typ.Field(i).Name)
	}
}

func TestBetween(t *testing.T) {
	var names []string
	for _, c := range Between(Version{Major: 6, Minor: 9}, Version{Major: 6, Minor: 10}) {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"NAPILocalAll", "XDPKeepsDataValid", "TCPDefaultRatioHalf"}, names, "what 6.10 changed")
	names = nil
	for _, c := range Between(Version{Major: 6, Minor: 10}, Version{Major: 6, Minor: 11}) {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"PageFragPremap"}, names, "6.11 switched premapping off by default")
	names = nil
	for _, c := range Between(Version{Major: 6, Minor: 12}, Version{Major: 6, Minor: 13}) {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"PageFragPremap"}, names, "6.13 switched it on again")
}

func TestReleases(t *testing.T) {
	rs := Releases()
	require.NotEmpty(t, rs)
	assert.Equal(t, Oldest, rs[0])
	assert.Equal(t, Newest, rs[len(rs)-1])
	assert.Contains(t, rs, Version{Major: 4, Minor: 20})
	assert.Contains(t, rs, Version{Major: 5, Minor: 0})
	assert.Contains(t, rs, Version{Major: 6, Minor: 19})
	for i := 1; i < len(rs); i++ {
		assert.True(t, rs[i-1].Less(rs[i]))
		v, err := Parse(rs[i].String())
		require.NoError(t, err)
		assert.Equal(t, rs[i], v)
	}
	_, err := Parse("4.21")
	assert.ErrorContains(t, err, "the 4 series ended with 4.20")
	_, err = Parse("6.20")
	assert.ErrorContains(t, err, "the 6 series ended with 6.19")
}
