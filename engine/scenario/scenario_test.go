package scenario

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultIsValid(t *testing.T) {
	s := Default()
	require.NoError(t, s.Validate())
	assert.Equal(t, ModeMergeable, s.Mode())
}

func TestDecodeErrorsNameTheField(t *testing.T) {
	tests := []struct {
		name, json, field string
	}{
		{"unknown top-level field", `{"ringsize": 8}`, "ringsize"},
		{"unknown nested field", `{"traffic": {"sise": 64}}`, "sise"},
		{"wrong type", `{"ring_size": "big"}`, "ring_size"},
		{"wrong nested type", `{"traffic": {"size": "64"}}`, "traffic.size"},
		{"ring not a power of two", `{"ring_size": 100}`, "ring_size"},
		{"ring too large", `{"ring_size": 65536}`, "ring_size"},
		{"zero cpus", `{"cpus": 0}`, "cpus"},
		{"bad buffer source", `{"driver": {"buffer_source": "slab"}}`, "driver.buffer_source"},
		{"premapped without pool", `{"driver": {"buffer_source": "page_frag", "dma": "premapped"}}`, "driver.dma"},
		{"frame larger than MTU", `{"traffic": {"size": 2000}}`, "traffic.size"},
		{"frame too small", `{"traffic": {"size": 20}}`, "traffic.size"},
		{"one bad size in a list", `{"traffic": {"sizes": [64, 128, 99999]}}`, "traffic.sizes[2]"},
		{"consumer cpu out of range", `{"consumer": {"cpu": 3}}`, "consumer.cpu"},
		{"xdp with an MTU past a page", `{"features": {"mrg_rxbuf": false}, "mtu": 9000, "driver": {"buffer_source": "page", "dma": "ring"}, "xdp": {"program": "xdp_drop"}}`, "mtu: 9000: virtnet_xdp_set"},
		{"xdp with guest gso and no ctrl_guest_offloads", `{"features": {"mrg_rxbuf": false, "guest_gso": true, "ctrl_guest_offloads": false, "guest_csum": false}, "driver": {"buffer_source": "page", "dma": "ring"}, "xdp": {"program": "xdp_drop"}}`, "features.guest_gso"},
		{"xdp with guest gso before 4.15", `{"kernel": "4.14", "features": {"mrg_rxbuf": false, "guest_gso": true, "guest_csum": false}, "driver": {"buffer_source": "page", "dma": "ring"}, "xdp": {"program": "xdp_drop"}}`, "features.guest_gso"},
		{"page_pool in big mode", `{"features": {"mrg_rxbuf": false, "guest_gso": true}}`, "driver.buffer_source"},
		{"cpumap cpu out of range", `{"xdp": {"program": "xdp_redirect_cpu", "cpumap_cpus": [4]}}`, "xdp.cpumap_cpus[0]"},
		{"gso without guest gso", `{"traffic": {"gso_size": 65000}}`, "traffic.gso_size"},
		{"negative cost", `{"costs": {"atomic": -1}}`, "costs.atomic"},
		{"bad device kind", `{"device": {"kind": "e1000"}}`, "device.kind"},
		{"vdpa without a wire rate", `{"device": {"kind": "vdpa"}}`, "device.kind"},
		{"bad avail_event rule", `{"device": {"avail_event": "qemu"}}`, "device.avail_event"},
		{"empty avail_event rule", `{"device": {"avail_event": ""}}`, "device.avail_event"},
		{"xdp with gso packets", `{"features": {"guest_gso": true}, "traffic": {"gso_size": 65535, "size": 9000, "proto": "tcp"}, "xdp": {"program": "xdp_pass"}}`, "xdp"},
		{"frame larger than a full ring", `{"ring_size": 8, "features": {"guest_gso": true}, "traffic": {"gso_size": 65535, "size": 65000, "proto": "tcp"}}`, "traffic.size"},
		{"rate and line rate", `{"traffic": {"rate_pps": 1000, "line_gbps": 10}}`, "traffic.line_gbps"},
		{"random sizes without sizes", `{"traffic": {"random_sizes": true}}`, "traffic.random_sizes"},
		{"netdev_budget zero", `{"sysctl": {"netdev_budget": 0}}`, "sysctl.netdev_budget"},
		{"netdev_budget_usecs negative", `{"sysctl": {"netdev_budget_usecs": -1}}`, "sysctl.netdev_budget_usecs"},
		{"hz not CONFIG_HZ's", `{"sched": {"hz": 500}}`, "sched.hz"},
		{"base slice too short", `{"sched": {"base_slice_ns": 1000}}`, "sched.base_slice_ns"},
		{"latency too long", `{"sched": {"latency_ns": 2000000000}}`, "sched.latency_ns"},
		{"a host CPU per vCPU or none", `{"cpus": 2, "host": {"vcpus": [0]}}`, "host.vcpus"},
		{"two vCPUs on one host CPU", `{"cpus": 2, "host": {"vcpus": [3, 3]}}`, "host.vcpus[1]"},
		{"host CPU out of range", `{"host": {"vhost": [1024]}}`, "host.vhost[0]"},
		{"a worker per queue or none", `{"queues": 1, "host": {"vhost": [0, 1]}}`, "host.vhost"},
		{"no vhost worker on a NIC", `{"device": {"kind": "nic"}, "host": {"vhost": [1]}}`, "host.vhost"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeBytes([]byte(tc.json))
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrInvalid), "%v does not wrap ErrInvalid", err)
			assert.Contains(t, err.Error(), tc.field)
		})
	}
}

// TestDeviceKindsAndRules: the three device kinds and both avail_event
// rules decode; a vdpa device takes a rate from the wire.
func TestDeviceKindsAndRules(t *testing.T) {
	for _, js := range []string{
		`{"device": {"kind": "vhost", "avail_event": "seen"}}`,
		`{"device": {"kind": "nic", "avail_event": "pop"}}`,
		`{"device": {"kind": "vdpa"}, "traffic": {"line_gbps": 25}}`,
		`{"device": {"kind": "vdpa", "avail_event": "pop"}, "traffic": {"rate_pps": 1000000}}`,
	} {
		_, err := DecodeBytes([]byte(js))
		assert.NoError(t, err, js)
	}
	assert.Equal(t, AvailEventSeen, Default().Device.AvailEvent)
}

func TestDecodeRejectsMalformedInput(t *testing.T) {
	for _, in := range []string{"", "{", "[]", `{"cpus": 1} {"cpus": 2}`, "null x"} {
		_, err := DecodeBytes([]byte(in))
		assert.ErrorIs(t, err, ErrInvalid, "input %q", in)
	}
}

func TestModeFollowsFeatures(t *testing.T) {
	tests := []struct {
		name string
		f    Features
		mtu  int
		want string
	}{
		{"mergeable wins", Features{MrgRxbuf: true, GuestGSO: true}, 9000, ModeMergeable},
		{"guest gso gives big", Features{GuestGSO: true}, 1500, ModeBig},
		{"jumbo device mtu gives big", Features{MTU: true}, 9000, ModeBig},
		// virtnet_probe reads the MTU only with VIRTIO_NET_F_MTU: one the
		// guest sets later does not choose big packets.
		{"jumbo mtu without VIRTIO_NET_F_MTU gives small", Features{}, 9000, ModeSmall},
		{"plain gives small", Features{MTU: true}, 1500, ModeSmall},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Default()
			s.Features, s.MTU = tc.f, tc.mtu
			assert.Equal(t, tc.want, s.Mode())
		})
	}
}

// virtnet_set_big_packets: DIV_ROUND_UP(mtu, PAGE_SIZE) pages since 6.1
// unless guest GSO is negotiated; MAX_SKB_FRAGS before 6.1. Negotiating
// VIRTIO_NET_F_CTRL_GUEST_OFFLOADS changes nothing (FIDELITY.md row 5:
// the engine used to post 17 pages for it).
func TestBigPacketsNumSkbFrags(t *testing.T) {
	s := Default()
	s.Features = Features{MTU: true}
	s.MTU = 9000
	assert.Equal(t, 3, s.BigPacketsNumSkbFrags())
	s.MTU = 1500
	assert.Equal(t, 1, s.BigPacketsNumSkbFrags())
	s.MTU = 9000
	s.Features.CtrlGuestOffloads = true
	assert.Equal(t, 3, s.BigPacketsNumSkbFrags(), "virtnet_check_guest_gso does not look at CTRL_GUEST_OFFLOADS")
	s.Features.GuestGSO = true
	assert.Equal(t, 17, s.BigPacketsNumSkbFrags(), "guest GSO negotiated: MAX_SKB_FRAGS")
	s.Features = Features{MTU: true}
	s.Kernel = "6.0"
	assert.Equal(t, 17, s.BigPacketsNumSkbFrags(), "before 6.1: MAX_SKB_FRAGS whatever the MTU")
	s.Kernel = "6.1"
	assert.Equal(t, 3, s.BigPacketsNumSkbFrags())
}

func TestKernelField(t *testing.T) {
	s, err := DecodeBytes([]byte(`{"kernel": "6.4"}`))
	require.NoError(t, err)
	assert.Equal(t, "6.4", s.KernelVersion().String())
	s, err = DecodeBytes([]byte(`{}`))
	require.NoError(t, err)
	assert.Equal(t, "7.0", s.Kernel, "the default is the newest kernel modelled")
	_, err = DecodeBytes([]byte(`{"kernel": "2.6.27"}`))
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "kernel: kernel version 2.6.27: the engine models 4.10 to 7.0")
	_, err = DecodeBytes([]byte(`{"kernel": "six"}`))
	assert.ErrorContains(t, err, "kernel: ")
	_, err = DecodeBytes([]byte(`{"driver": {"napi_local_recycle": true}}`))
	assert.ErrorContains(t, err, `napi_local_recycle: no longer a field: NAPI-local recycling is dated: set "kernel"`)
	_, err = DecodeBytes([]byte(`{"driver": {"legacy_big_packets": true}}`))
	assert.ErrorContains(t, err, `legacy_big_packets: no longer a field`)
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"cpus": 2, "traffic": {"size": 128}}`))
	f.Add([]byte(`{"xdp": {"program": "xdp_drop"}}`))
	f.Add([]byte(`{"ring_size": 0}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeBytes(b)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("decoded scenario does not validate: %v", err)
		}
	})
}

// xdp.frags needs virtio_net's multi-buffer XDP, 6.3+ (fab89bafa95b).
func TestXDPFragsNeedKernel63(t *testing.T) {
	s, err := LookupPreset("cpumap")
	require.NoError(t, err)
	s.XDP.Frags = true
	s.Kernel = "6.2"
	err = s.Validate()
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "xdp.frags", fe.Field)
	s.Kernel = "6.3"
	assert.NoError(t, s.Validate())
}

// FIDELITY row 9: virtio_net has a page_pool in small mode only from the
// 2026 series (7.0 here); before, a page_pool is the 2023 series, which
// creates one for mergeable buffers only (virtnet_find_vqs: "page pool
// only support mergeable mode"). Big mode never has one, on any kernel.
func TestPagePoolModesByKernel(t *testing.T) {
	for _, tc := range []struct {
		kernel, features, source string
		err                      []string
	}{
		{"7.0", `{"mrg_rxbuf": false}`, "page_pool", nil},
		{"7.0", `{"mrg_rxbuf": false}`, "page_pool_frag", nil},
		{"6.4", `{"mrg_rxbuf": true}`, "page_pool", nil},
		{"6.4", `{"mrg_rxbuf": false}`, "page_pool", []string{"driver.buffer_source", "small mode", "kernel 6.4", "2023 series", "7.0"}},
		{"6.18", `{"mrg_rxbuf": false}`, "page_pool_frag", []string{"driver.buffer_source", "kernel 6.18", "2023 series"}},
		{"6.4", `{"mrg_rxbuf": false}`, "page_frag", nil},
		{"7.0", `{"mrg_rxbuf": false, "guest_gso": true}`, "page_pool", []string{"driver.buffer_source", "not big"}},
		{"6.4", `{"mrg_rxbuf": false, "guest_gso": true}`, "page_pool", []string{"driver.buffer_source", "not big"}},
	} {
		t.Run(tc.kernel+" "+tc.features+" "+tc.source, func(t *testing.T) {
			dma := "premapped"
			if tc.source == "page_frag" {
				dma = "ring"
			}
			js := `{"kernel": "` + tc.kernel + `", "features": ` + tc.features + `, "driver": {"buffer_source": "` + tc.source + `", "dma": "` + dma + `"}}`
			_, err := DecodeBytes([]byte(js))
			if tc.err == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalid)
			for _, want := range tc.err {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
}

// tcp_rmem[2], TCP's default receive buffer limit (tcp_init's
// max_rshare): 6 MiB until 6.15, 32 MiB from 6.16 (572be9bf9d0d;
// FIDELITY N16). A scenario's own buffer wins on any kernel.
func TestTCPRmemByKernel(t *testing.T) {
	s, err := LookupPreset("r2-mtu9000-after")
	require.NoError(t, err)
	for kernel, want := range map[string]int{"6.1": 6 << 20, "6.15": 6 << 20, "6.16": 32 << 20, "7.0": 32 << 20} {
		s.Kernel = kernel
		s.Consumer.RcvbufBytes = 0
		assert.Equal(t, want, s.Rcvbuf(), "kernel %s", kernel)
		s.Consumer.RcvbufBytes = 1 << 20
		assert.Equal(t, 1<<20, s.Rcvbuf(), "kernel %s, set by the scenario", kernel)
	}
}

// virtnet_xdp_set (FIDELITY N3): from 5.0 a program is refused while
// GUEST_CSUM is negotiated without CTRL_GUEST_OFFLOADS; with it the
// guest's offloads go off, GUEST_CSUM included, so what the program
// passes reaches the stack unvalidated until 6.10, whose receive_buf
// keeps the device's DATA_VALID through the program. 4.x kept GUEST_CSUM
// on when it cleared the offloads.
func TestXDPTurnsGuestCsumOff(t *testing.T) {
	s, err := LookupPreset("r1-page-pool")
	require.NoError(t, err)
	require.True(t, s.Features.CtrlGuestOffloads, "QEMU offers ctrl_guest_offloads")
	s.Features.CtrlGuestOffloads = false
	err = s.Validate()
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "features.ctrl_guest_offloads", fe.Field)
	assert.Contains(t, err.Error(), "Can't set XDP while host is implementing GRO_HW/CSUM")
	s.Features.GuestCsum = false
	assert.NoError(t, s.Validate(), "without GUEST_CSUM there is nothing to turn off")

	for _, tc := range []struct {
		kernel    string
		xdp       bool
		validated bool
		why       string
	}{
		{"6.4", false, true, "no program: the device's DATA_VALID"},
		{"6.4", true, false, "6.4 clears GUEST_CSUM and zeroes the header under XDP"},
		{"5.15", true, false, "cleared from 5.0"},
		{"4.17", true, true, "4.x keeps GUEST_CSUM on"},
		{"6.10", true, true, "6.10 keeps DATA_VALID through the program"},
	} {
		s, err := LookupPreset("r1-page-pool")
		require.NoError(t, err)
		s.Kernel = tc.kernel
		if !tc.xdp {
			s.XDP = nil
		}
		assert.Equal(t, tc.validated, s.RxCsumValidated(), "%s, xdp %t: %s", tc.kernel, tc.xdp, tc.why)
	}
}

// vring_use_dma_api (FIDELITY D1): a virtio device uses the DMA API only
// with VIRTIO_F_ACCESS_PLATFORM, which QEMU leaves off by default and
// vDPA hardware negotiates; a hardware NIC's driver always maps. An IOMMU
// on a virtio device without it is bypassed: refused, naming the field.
func TestDMAAPIOnlyWithAccessPlatform(t *testing.T) {
	s := Default()
	assert.False(t, s.UsesDMAAPI(), "QEMU's default: iommu_platform=off")
	s.Driver.IOMMU = true
	err := s.Validate()
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "driver.iommu", fe.Field)
	s.Features.AccessPlatform = true
	assert.True(t, s.UsesDMAAPI())
	assert.NoError(t, s.Validate())

	r2, err := LookupPreset("r2-mtu9000-before")
	require.NoError(t, err)
	assert.True(t, r2.UsesDMAAPI(), "the mlx5 vDPA device offers ACCESS_PLATFORM")
	nic := Default()
	nic.Device.Kind = DeviceNIC
	assert.True(t, nic.UsesDMAAPI(), "a NIC's driver maps through the DMA API")
}

// The emulated IOMMU's fields (FIDELITY D2) build on one another: each
// refused without the one it refines, naming itself.
func TestEmulatedIOMMUFieldsNeedTheirBase(t *testing.T) {
	for _, tc := range []struct {
		field string
		set   func(d *Driver)
	}{
		{"driver.viommu", func(d *Driver) { d.VIOMMU = true }},
		{"driver.iommu_caching_mode", func(d *Driver) { d.IOMMU, d.IOMMUCachingMode = true, true }},
		{"driver.iommu_strict", func(d *Driver) { d.IOMMU, d.IOMMUStrict = true, true }},
	} {
		s := Default()
		s.Features.AccessPlatform = true
		tc.set(&s.Driver)
		var fe *FieldError
		require.ErrorAs(t, s.Validate(), &fe, tc.field)
		assert.Equal(t, tc.field, fe.Field)
	}
	s := Default()
	s.Features.AccessPlatform = true
	s.Driver.IOMMU, s.Driver.VIOMMU, s.Driver.IOMMUCachingMode, s.Driver.IOMMUStrict = true, true, true, true
	assert.NoError(t, s.Validate())
}

// virtnet_xdp_set refuses no receive mode (read at 4.10, 4.15, 5.9, 6.6
// and 7.0): in big mode, here from guest GSO at MTU 1500, the program
// attaches once CTRL_GUEST_OFFLOADS can turn the offloads off.
func TestXDPAttachesInBigMode(t *testing.T) {
	s, err := DecodeBytes([]byte(`{"features": {"mrg_rxbuf": false, "guest_gso": true}, "driver": {"buffer_source": "page", "dma": "ring"}, "xdp": {"program": "xdp_drop"}}`))
	require.NoError(t, err)
	assert.Equal(t, ModeBig, s.Mode())
}
