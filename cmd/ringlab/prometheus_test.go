package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
	"ringlab/internal/testenv"
	"ringlab/server/simsrc"
)

// Bounds of the Prometheus test. Prometheus applies its targets at its
// service discovery's first update, about 5 s after it starts (a period
// of its own, no flag changes it); the window then fills in promRateWindow.
// The window stays long against simsrc.MaxLag, which bounds its error on
// a loaded machine.
const (
	promScrapeInterval = 250 * time.Millisecond
	promRateWindow     = 3 * time.Second
	promDeadline       = 60 * time.Second // Prometheus's start, its first targets, a window of scrapes, the queries
)

// freePort returns a loopback port nothing listens on (for a program
// that takes its port on the command line).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startPrometheus runs Debian's prometheus with a temporary configuration
// and data directory, on loopback, scraping target every
// promScrapeInterval, until
// the test ends. It returns the base URL of its HTTP API. It skips (fails
// with RINGLAB_CI=1) when prometheus is not installed.
func startPrometheus(t *testing.T, target string) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		testenv.Missing(t, "prometheus is not installed (Debian's prometheus package: apt-get install -y prometheus)")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(conf, fmt.Appendf(nil, `global:
  scrape_interval: %s
  evaluation_interval: %s
scrape_configs:
  - job_name: ringlab
    static_configs:
      - targets: [%q]
`, promScrapeInterval, promScrapeInterval, target), 0o644))
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	ctx, cancel := context.WithTimeout(context.Background(), promDeadline+30*time.Second)
	cmd := exec.CommandContext(ctx, bin,
		"--config.file="+conf,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn")
	out, err := os.Create(filepath.Join(dir, "prometheus.log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		out.Close()
		if t.Failed() {
			b, _ := os.ReadFile(out.Name())
			t.Logf("prometheus's log:\n%s", b)
		}
	})
	return "http://" + addr
}

// promQuery runs an instant PromQL query and returns each series' labels
// and value.
func promQuery(base, query string) ([]promSeries, error) {
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, err
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", query, r.Error)
	}
	var out []promSeries
	for _, s := range r.Data.Result {
		v, err := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
		if err != nil {
			return nil, err
		}
		out = append(out, promSeries{s.Metric, v})
	}
	return out, nil
}

type promSeries struct {
	labels map[string]string
	value  float64
}

// TestPrometheusScrapesServe: a real Prometheus scrapes `ringlab serve`
// (the sim source) four times a second; once a window is full, PromQL's rate()
// over ringlab_rx_packets_total gives the preset's packet rate within
// 5 %, under the labels /metrics promises.
//
// Prometheus divides by its own (wall) clock, and on a loaded machine the
// engine may fall behind it: up to simsrc.MaxLag, and beyond that the
// source skips wall time instead of simulating it. The test asks the
// source what it skipped: with nothing skipped the 5 % holds; with some,
// the rate may read low by what was skipped and the lag, or high by a
// lag caught up, within the window, and no further.
func TestPrometheusScrapesServe(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short: waits some 8 s for a real Prometheus's scrapes (make test runs it)")
	}
	skipUnderRace(t)
	t.Parallel() // it mostly waits for Prometheus
	preset, err := scenario.LookupPreset(simsrc.DefaultPreset)
	require.NoError(t, err)
	want := preset.Traffic.PPS()
	reg, opened := watchedSim(t)
	base := startServeConfig(t, serveConfig{source: "sim", registry: reg})
	prom := startPrometheus(t, strings.TrimPrefix(base, "http://"))

	window := model.Duration(promRateWindow).String()
	query := `rate(ringlab_rx_packets_total[` + window + `])`
	// A full window holds this many scrapes.
	scrapes := float64(promRateWindow/promScrapeInterval + 1)
	start := time.Now()
	deadline := start.Add(promDeadline)
	var got []promSeries
	var lastErr error
	var first time.Duration
	for time.Now().Before(deadline) {
		time.Sleep(promScrapeInterval)
		n, err := promQuery(prom, `count_over_time(ringlab_source_up[1m])`)
		if first == 0 && err == nil && len(n) > 0 {
			first = time.Since(start)
		}
		if err != nil || len(n) == 0 || n[0].value < scrapes {
			lastErr = err
			continue
		}
		if got, lastErr = promQuery(prom, query); lastErr == nil && len(got) > 0 {
			break
		}
	}
	require.NoError(t, lastErr)
	require.NotEmpty(t, got, "no result for %s within %v", query, promDeadline)
	require.Len(t, got, 1, "one receive queue, one series")
	s := got[0]
	skipped := opened().Skipped() // in all, so at least within the window
	t.Logf("%s = %.1f packets/s (the preset offers %.0f): %v; the source skipped %v of wall time; first scrape after %v, the window full after %v",
		query, s.value, want, s.labels, skipped, first.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if skipped == 0 {
		assert.InEpsilon(t, want, s.value, 0.05)
	} else {
		low := (skipped + simsrc.MaxLag).Seconds() / promRateWindow.Seconds()
		high := simsrc.MaxLag.Seconds() / promRateWindow.Seconds()
		require.Less(t, low, 0.5, "the source skipped too much of the window to tell its rate")
		assert.GreaterOrEqual(t, s.value, want*(0.95-low), "the rate, less what was skipped and the lag")
		assert.LessOrEqual(t, s.value, want*(1.05+high), "the rate, and a lag caught up")
	}
	assert.Equal(t, "sim", s.labels["source"])
	assert.Equal(t, simsrc.DefaultPreset, s.labels["preset"])
	assert.Equal(t, "0", s.labels["queue"])
	assert.Equal(t, "ringlab", s.labels["job"])

	up, err := promQuery(prom, `up{job="ringlab"}`)
	require.NoError(t, err)
	require.Len(t, up, 1)
	assert.Equal(t, 1.0, up[0].value, "Prometheus scrapes the target without errors")
	info, err := promQuery(prom, `ringlab_source_info`)
	require.NoError(t, err)
	require.Len(t, info, 1)
	assert.Equal(t, "sim:"+simsrc.DefaultPreset, info[0].labels["spec"])

	// The Grafana dashboard's queries are PromQL this Prometheus takes,
	// with its variables as "All" gives them; the packets panel answers.
	vars := strings.NewReplacer(`$__rate_interval`, window, `$job`, ".*", `$source`, ".*", `$device`, ".*")
	answered := 0
	for _, q := range dashboardQueries(t) {
		if strings.HasPrefix(q, "label_values(") {
			continue // a Grafana function, not PromQL
		}
		res, err := promQuery(prom, vars.Replace(q))
		if assert.NoError(t, err, "dashboard query %s", q) && len(res) > 0 {
			answered++
		}
	}
	assert.Greater(t, answered, 5, "dashboard queries with a result on the sim source")
}
