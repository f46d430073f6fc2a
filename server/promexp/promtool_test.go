package promexp

import (
	"bytes"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/internal/testenv"
	"ringlab/server/hostsrc"
	"ringlab/server/labsrc"
	"ringlab/server/metrics"
	"ringlab/server/simsrc"
	"ringlab/server/twinsrc"
)

// Promtool returns the path of promtool, or skips (fails with
// RINGLAB_CI=1) when it is not installed.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		testenv.Missing(t, "promtool is not installed (Debian's prometheus package: apt-get install -y prometheus)")
	}
	return p
}

// checkMetrics runs `promtool check metrics` on src's exposition: no
// lint problem, no error.
func checkMetrics(t *testing.T, tool string, src metrics.Source) {
	t.Helper()
	body := exposition(t, src)
	cmd := exec.Command(tool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	assert.NoError(t, err, "promtool check metrics on %s:\n%s", src.Info().Name, out)
	assert.Empty(t, string(bytes.TrimSpace(out)), "promtool's findings on %s", src.Info().Name)
}

// TestPromtoolCheckMetrics: what every kind of source exports passes
// `promtool check metrics` without a finding: the test sources (per CPU
// too), the engine on several presets (XDP programs, cpumap on two CPUs,
// a TCP stream), the host's interfaces, a twin of one, and a lab as
// root.
func TestPromtoolCheckMetrics(t *testing.T) {
	tool := promtool(t)
	t.Run("fake", func(t *testing.T) { checkMetrics(t, tool, metrics.NewFake("fake", 2)) })
	t.Run("fixed", func(t *testing.T) {
		checkMetrics(t, tool, newFixed("host:eth0", metrics.Labels{Kind: "host", Device: "eth0"}, map[string]uint64{
			"ethtool_count": 1, "UdpInDatagrams": 3, "zone_lock_wait_ns": 5, "page_pool.inflight_mem": 4096, "predicted_": 1,
		}))
	})
	t.Run("per CPU", func(t *testing.T) {
		checkMetrics(t, tool, hostWithCPUs("host:eth0", metrics.Labels{Kind: "host", Device: "eth0"}, nil))
		checkMetrics(t, tool, hostWithCPUs("twin:host:eth0", metrics.Labels{Kind: "twin", Device: "eth0", Follows: "host"},
			map[string]uint64{"predicted_softnet.time_squeeze": 3}))
	})
	for _, preset := range []string{"default", "xdp-drop", "cpumap", "devmap", "r1-upstream", "r2-mtu9000-after"} {
		t.Run("sim:"+preset, func(t *testing.T) {
			src, err := simsrc.New(preset, nowFunc())
			require.NoError(t, err)
			checkMetrics(t, tool, src)
		})
	}
	if runtime.GOOS != "linux" {
		return
	}
	ifaces, err := hostsrc.Interfaces()
	require.NoError(t, err)
	for _, ifname := range ifaces {
		t.Run("host:"+ifname, func(t *testing.T) {
			src, err := hostsrc.OpenMetrics(ifname)
			require.NoError(t, err)
			defer src.Close()
			checkMetrics(t, tool, src)
		})
	}
	t.Run("twin:host:lo", func(t *testing.T) {
		reg := func() metrics.Registry { return metrics.Registry{"host": hostsrc.OpenMetrics} }
		src, err := twinsrc.OpenWith(reg)("host:lo")
		require.NoError(t, err)
		defer src.Close()
		checkMetrics(t, tool, src)
	})
	t.Run("lab:xdp_drop", func(t *testing.T) {
		testenv.RequireRoot(t)
		src, err := labsrc.Open("xdp_drop,count=1000")
		require.NoError(t, err)
		defer src.Close()
		checkMetrics(t, tool, src)
	})
}

// nowFunc is the wall clock for a sim source sampled once.
func nowFunc() func() time.Time { return time.Now }
