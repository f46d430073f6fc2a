package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/internal/testenv"
	"ringlab/server/hostsrc"
	"ringlab/server/labsrc"
	"ringlab/server/metrics"
	"ringlab/server/promexp"
	"ringlab/server/simsrc"
	"ringlab/server/twinsrc"
)

// dashboardPath is the Grafana dashboard docs/prometheus.md ships.
var dashboardPath = filepath.Join("..", "..", "docs", "grafana", "ringlab.json")

// dashboardQueries returns every PromQL query of the dashboard: its
// panels' targets and its variables'.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	require.NoError(t, err)
	var d struct {
		Title      string `json:"title"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(b, &d), "the dashboard is JSON")
	require.NotEmpty(t, d.Title)
	var out []string
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Targets, "panel %q has queries", p.Title)
		for _, tg := range p.Targets {
			require.NotEmpty(t, tg.Expr, "panel %q", p.Title)
			out = append(out, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(map[string]any); ok && v.Type == "query" {
			out = append(out, q["query"].(string))
		}
	}
	return out
}

var (
	metricRef = regexp.MustCompile(`\bringlab_[A-Za-z0-9_]+`)
	byClause  = regexp.MustCompile(`\bby \(([^)]*)\)`)
	matcher   = regexp.MustCompile(`([a-z_]+)\s*(=~|!=|=)`)
)

// exportedFamilies collects the metric families and label names that
// the collectors of srcs export.
func exportedFamilies(t *testing.T, families, labels map[string]bool, srcs ...metrics.Source) {
	t.Helper()
	for _, src := range srcs {
		reg := prometheus.NewPedanticRegistry()
		require.NoError(t, reg.Register(promexp.New(src)))
		got, err := reg.Gather()
		require.NoError(t, err, src.Info().Name)
		for _, f := range got {
			families[f.GetName()] = true
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = true
				}
			}
		}
	}
}

// TestGrafanaDashboardMetricsExist: every metric the dashboard queries is
// one that a source of `ringlab serve` exports, found by scraping the
// sources (the engine, the host's interfaces, a twin, a lab as root, and
// the names a host source gives page_pool statistics on a kernel with
// CONFIG_PAGE_POOL_STATS, which this one may lack); every label it
// groups or filters by is one they carry.
func TestGrafanaDashboardMetricsExist(t *testing.T) {
	queries := dashboardQueries(t)
	used := map[string]bool{}
	usedLabels := map[string]bool{}
	for _, q := range queries {
		for _, m := range metricRef.FindAllString(q, -1) {
			used[m] = true
		}
		for _, g := range byClause.FindAllStringSubmatch(q, -1) {
			for _, l := range strings.Split(g[1], ",") {
				usedLabels[strings.TrimSpace(l)] = true
			}
		}
		for _, g := range matcher.FindAllStringSubmatch(q, -1) {
			usedLabels[g[1]] = true
		}
	}
	require.NotEmpty(t, used)

	families := map[string]bool{}
	labels := map[string]bool{"job": true, "instance": true} // Prometheus's own
	for _, preset := range []string{"default", "xdp-drop", "cpumap"} {
		src, err := simsrc.New(preset, nowClock)
		require.NoError(t, err)
		exportedFamilies(t, families, labels, src)
	}
	ifaces, err := hostsrc.Interfaces()
	require.NoError(t, err)
	for _, ifname := range ifaces {
		src, err := hostsrc.OpenMetrics(ifname)
		require.NoError(t, err)
		exportedFamilies(t, families, labels, src)
		src.Close()
	}
	twin, err := twinsrc.OpenWith(func() metrics.Registry { return metrics.Registry{"host": hostsrc.OpenMetrics} })("host:lo")
	require.NoError(t, err)
	exportedFamilies(t, families, labels, twin)
	twin.Close()
	// A host source's page_pool statistics, as it names them when the
	// kernel has them (hostsrc.Sample.Counters, the source's one
	// flattening).
	withStats := hostsrc.Sample{PagePools: []hostsrc.PagePool{{ID: 1, Stats: &hostsrc.PagePoolStats{}}}}
	totals, _ := withStats.Counters()
	for name := range totals {
		families[promexp.MetricName(name)] = true
	}

	var missing []string
	for m := range used {
		if !families[m] {
			missing = append(missing, m)
		}
	}
	if len(missing) > 0 {
		// What only a lab exports (its verdict map, its socket's UDP
		// counters) needs one, and root.
		testenv.RequireRoot(t)
		lab, err := labsrc.Open("xdp_drop,count=1000")
		require.NoError(t, err)
		exportedFamilies(t, families, labels, lab)
		lab.Close()
	}
	missing = missing[:0]
	for m := range used {
		if !families[m] {
			missing = append(missing, m)
		}
	}
	sort.Strings(missing)
	assert.Empty(t, missing, "metrics the dashboard queries that no source exports")
	var unknown []string
	for l := range usedLabels {
		if !labels[l] {
			unknown = append(unknown, l)
		}
	}
	slices.Sort(unknown)
	assert.Empty(t, unknown, "labels the dashboard uses that no source carries")
	t.Logf("the dashboard queries %d metrics in %d queries", len(used), len(queries))
}

// nowClock is the wall clock of a sim source sampled once.
func nowClock() time.Time { return time.Now() }
