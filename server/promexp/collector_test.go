package promexp

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/vocab"
	"ringlab/server/metrics"
)

// exposition serves src's collector through promhttp and returns the
// text a scrape reads.
func exposition(t *testing.T, src metrics.Source) []byte {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(New(src)))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	req, err := http.NewRequest("GET", srv.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/plain") // the text format, as promtool reads it
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return body
}

// scrape is exposition parsed with Prometheus's own text parser.
func scrape(t *testing.T, src metrics.Source) map[string]*dto.MetricFamily {
	t.Helper()
	body := exposition(t, src)
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(body))
	require.NoError(t, err, "%s", body)
	return families
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func TestCountersPerQueue(t *testing.T) {
	fake := metrics.NewFake("fake", 2)
	families := scrape(t, fake)

	up := families["ringlab_source_up"]
	require.NotNil(t, up)
	assert.Equal(t, 1.0, up.GetMetric()[0].GetGauge().GetValue())

	for _, name := range metrics.FakeCounters {
		fam := families[MetricName(name)]
		require.NotNil(t, fam, name)
		assert.Equal(t, dto.MetricType_COUNTER, fam.GetType(), name)
		d, ok := vocab.Lookup(name)
		require.True(t, ok, name)
		assert.Contains(t, fam.GetHelp(), d.Help[1:], "HELP comes from engine/vocab: %s", name)
		require.Len(t, fam.GetMetric(), 2, "one series per queue, no total: %s", name)
	}
	kicks := families["ringlab_rx_kicks_total"]
	got := map[string]float64{}
	for _, m := range kicks.GetMetric() {
		l := labels(m)
		assert.Equal(t, map[string]string{"source": "fake", "queue": l["queue"]}, l, "the kind and the queue: no device for a fake without one")
		got[l["queue"]] = m.GetCounter().GetValue()
	}
	// One Sample per scrape: rx_kicks grows by 3 per sample on queue 0.
	assert.Equal(t, map[string]float64{"0": 3, "1": 6}, got)
}

// fixed is a source with device-wide numbers only, like a host
// interface's sysfs statistics, under the labels and names it is given;
// and per-CPU ones when cpus is set.
type fixed struct {
	metrics.Fake
	info   metrics.SourceInfo
	totals map[string]uint64
	cpus   []map[string]uint64
}

func (s *fixed) Info() metrics.SourceInfo { return s.info }

func (s *fixed) Sample() (metrics.Sample, error) {
	return metrics.Sample{Totals: s.totals, CPUs: s.cpus}, nil
}

func newFixed(spec string, l metrics.Labels, totals map[string]uint64) *fixed {
	s := &fixed{info: metrics.SourceInfo{Name: spec, Labels: l}, totals: totals}
	for name := range totals {
		s.info.Counters = append(s.info.Counters, name)
	}
	return s
}

// TestConventions: families are named in snake_case and base units,
// typed by engine/vocab's kind, labelled by source kind and device (not
// the spec), each with HELP.
func TestConventions(t *testing.T) {
	src := newFixed("host:eth0", metrics.Labels{Kind: "host", Device: "eth0"}, map[string]uint64{
		"rx_packets": 42, "alloc-fast": 7, "rx_bytes": 9, "page_pool.inflight": 5, "page_pool.inflight_mem": 20480,
		"softnet.processed": 11, "ethtool_count": 20, "UdpInDatagrams": 3, "UdpRcvbufErrors": 1,
		"zone_lock_wait_ns": 2_500_000_000, "page_pools": 1, "peer_ifindex": 2,
	})
	families := scrape(t, src)
	for name, want := range map[string]struct {
		typ   dto.MetricType
		value float64
	}{
		"ringlab_rx_packets_total":             {dto.MetricType_COUNTER, 42},
		"ringlab_alloc_fast_total":             {dto.MetricType_COUNTER, 7},
		"ringlab_rx_bytes_total":               {dto.MetricType_COUNTER, 9},
		"ringlab_softnet_processed_total":      {dto.MetricType_COUNTER, 11},
		"ringlab_udp_in_datagrams_total":       {dto.MetricType_COUNTER, 3},
		"ringlab_udp_rcvbuf_errors_total":      {dto.MetricType_COUNTER, 1},
		"ringlab_zone_lock_wait_seconds_total": {dto.MetricType_COUNTER, 2.5},
		"ringlab_page_pool_inflight":           {dto.MetricType_GAUGE, 5},
		"ringlab_page_pool_inflight_mem_bytes": {dto.MetricType_GAUGE, 20480},
		"ringlab_page_pools":                   {dto.MetricType_GAUGE, 1},
		"ringlab_peer_ifindex":                 {dto.MetricType_GAUGE, 2},
		"ringlab_ethtool_statistics":           {dto.MetricType_GAUGE, 20},
	} {
		fam := families[name]
		require.NotNil(t, fam, name)
		assert.Equal(t, want.typ, fam.GetType(), name)
		require.Len(t, fam.GetMetric(), 1, name)
		m := fam.GetMetric()[0]
		l := map[string]string{"source": "host", "device": "eth0", "queue": QueueAll}
		if name == "ringlab_softnet_processed_total" {
			l["cpu"] = CPUAll   // a number engine/vocab has per CPU, here only the total
			delete(l, "device") // the machine's, not eth0's
		}
		assert.Equal(t, l, labels(m), name)
		v := m.GetCounter().GetValue()
		if want.typ == dto.MetricType_GAUGE {
			v = m.GetGauge().GetValue()
		}
		assert.Equal(t, want.value, v, name)
		assert.NotEmpty(t, fam.GetHelp(), name)
	}
	assert.Contains(t, families["ringlab_page_pool_inflight"].GetHelp(), "(pages)")
	assert.Contains(t, families["ringlab_zone_lock_wait_seconds_total"].GetHelp(), "(seconds)")
	assert.Contains(t, families["ringlab_alloc_fast_total"].GetHelp(), "not in ringlab's vocabulary")
	info := families["ringlab_source_info"]
	require.NotNil(t, info)
	assert.Equal(t, map[string]string{"source": "host", "device": "eth0", "spec": "host:eth0"}, labels(info.GetMetric()[0]), "the spec only in the info metric")
}

// TestLabelsStayWhenOptionsChange: two labs with different rates export
// the same series; only ringlab_source_info says which spec it was.
func TestLabelsStayWhenOptionsChange(t *testing.T) {
	l := metrics.Labels{Kind: "lab", Device: "lab-b", Program: "xdp_drop"}
	a := scrape(t, newFixed("lab:xdp_drop,rate=20000", l, map[string]uint64{"xdp_drop": 1}))
	b := scrape(t, newFixed("lab:xdp_drop,rate=50000", l, map[string]uint64{"xdp_drop": 2}))
	la, lb := labels(a["ringlab_xdp_drop_total"].GetMetric()[0]), labels(b["ringlab_xdp_drop_total"].GetMetric()[0])
	assert.Equal(t, map[string]string{"source": "lab", "device": "lab-b", "program": "xdp_drop", "queue": QueueAll}, la)
	assert.Equal(t, la, lb)
	assert.NotEqual(t, labels(a["ringlab_source_info"].GetMetric()[0]), labels(b["ringlab_source_info"].GetMetric()[0]))
}

// TestTwinPredictionsAreALabel: predicted_NAME is NAME's family with
// origin="predicted", typed as NAME is.
func TestTwinPredictionsAreALabel(t *testing.T) {
	src := newFixed("twin:host:eth0", metrics.Labels{Kind: "twin", Device: "eth0", Follows: "host"}, map[string]uint64{
		"rx_packets": 100, "predicted_rx_packets": 98, "socket_skbs": 4, "predicted_socket_skbs": 3, "twin_rebuilds": 1,
	})
	families := scrape(t, src)
	assert.NotContains(t, families, "ringlab_predicted_rx_packets_total")
	fam := families["ringlab_rx_packets_total"]
	require.NotNil(t, fam)
	got := map[string]float64{}
	for _, m := range fam.GetMetric() {
		l := labels(m)
		assert.Equal(t, "twin", l["source"])
		assert.Equal(t, "eth0", l["device"])
		got[l["origin"]] = m.GetCounter().GetValue()
	}
	assert.Equal(t, map[string]float64{"measured": 100, "predicted": 98}, got)
	assert.Contains(t, fam.GetHelp(), `origin="predicted"`)
	skbs := families["ringlab_socket_skbs"]
	require.NotNil(t, skbs)
	assert.Equal(t, dto.MetricType_GAUGE, skbs.GetType(), "a predicted gauge is a gauge")
	assert.Len(t, skbs.GetMetric(), 2)
	require.NotNil(t, families["ringlab_twin_rebuilds_total"])
}

// hostWithCPUs is a host source's softnet_stat: the sums, and CPUs 0
// and 2 (CPU 1 offline).
func hostWithCPUs(spec string, l metrics.Labels, extra map[string]uint64) *fixed {
	totals := map[string]uint64{"rx_packets": 9, "softnet.cpus": 2,
		"softnet.processed": 30, "softnet.dropped": 1, "softnet.time_squeeze": 7}
	for k, v := range extra {
		totals[k] = v
	}
	s := newFixed(spec, l, totals)
	s.cpus = []map[string]uint64{
		{"softnet.processed": 10, "softnet.dropped": 1, "softnet.time_squeeze": 5},
		{},
		{"softnet.processed": 20, "softnet.dropped": 0, "softnet.time_squeeze": 2},
	}
	return s
}

// TestCountersPerCPU: a number the source has per CPU is exported per
// CPU only, with a cpu label and queue="all", so that sum() over its
// family is the total; its family's other series, and the families of
// numbers engine/vocab has no per-CPU name for, keep their labels.
func TestCountersPerCPU(t *testing.T) {
	families := scrape(t, hostWithCPUs("host:eth0", metrics.Labels{Kind: "host", Device: "eth0"}, nil))
	for name, want := range map[string]map[string]float64{
		"ringlab_softnet_processed_total":    {"0": 10, "2": 20},
		"ringlab_softnet_dropped_total":      {"0": 1, "2": 0},
		"ringlab_softnet_time_squeeze_total": {"0": 5, "2": 2},
	} {
		fam := families[name]
		require.NotNil(t, fam, name)
		assert.Contains(t, fam.GetHelp(), `cpu="all"`, name)
		got := map[string]float64{}
		for _, m := range fam.GetMetric() {
			l := labels(m)
			assert.Equal(t, map[string]string{"source": "host", "queue": QueueAll, "cpu": l["cpu"]}, l, name)
			got[l["cpu"]] = m.GetCounter().GetValue()
		}
		assert.Equal(t, want, got, "%s: one series per online CPU, no total", name)
	}
	for _, name := range []string{"ringlab_rx_packets_total", "ringlab_softnet_cpus"} {
		fam := families[name]
		require.NotNil(t, fam, name)
		require.Len(t, fam.GetMetric(), 1, name)
		assert.NotContains(t, labels(fam.GetMetric()[0]), "cpu", "%s: no per-CPU name in engine/vocab, no cpu label", name)
	}
	assert.True(t, Family("softnet.time_squeeze").PerCPU)
	assert.True(t, Family("predicted_softnet.time_squeeze").PerCPU)
	assert.True(t, Family("ksoftirqd_wakeups").PerCPU)
	assert.False(t, Family("rx_packets").PerCPU)
	assert.False(t, Family("softnet.cpus").PerCPU)

	// A twin: the engine's prediction of the sum with cpu="all"; the
	// real CPUs are the host source's to export.
	twin := scrape(t, hostWithCPUs("twin:host:eth0", metrics.Labels{Kind: "twin", Device: "eth0", Follows: "host"},
		map[string]uint64{"predicted_softnet.time_squeeze": 3}))
	fam := twin["ringlab_softnet_time_squeeze_total"]
	require.NotNil(t, fam)
	got := map[[2]string]float64{}
	for _, m := range fam.GetMetric() {
		l := labels(m)
		assert.Equal(t, QueueAll, l["queue"])
		got[[2]string{l["origin"], l["cpu"]}] = m.GetCounter().GetValue()
	}
	assert.Equal(t, map[[2]string]float64{{OriginPredicted, CPUAll}: 3}, got)
}

// TestMachineWideExportedOnce: softnet_stat is the machine's. A host
// source exports it per CPU without a device label; a lab and a twin,
// which read the same file through a host source of their own, leave
// it out (a twin keeps its prediction), so that the four servers of
// docs/prometheus.md export the machine's softnet once, not under three
// devices.
func TestMachineWideExportedOnce(t *testing.T) {
	softnet := []string{"ringlab_softnet_processed_total", "ringlab_softnet_dropped_total",
		"ringlab_softnet_time_squeeze_total", "ringlab_softnet_cpus"}
	series := map[string]int{} // of each softnet family, over the sources
	for _, src := range []*fixed{
		hostWithCPUs("host:eth0", metrics.Labels{Kind: "host", Device: "eth0"}, nil),
		hostWithCPUs("lab:xdp_drop", metrics.Labels{Kind: "lab", Device: "lab-b", Program: "xdp_drop"}, nil),
		hostWithCPUs("twin:host:eth0", metrics.Labels{Kind: "twin", Device: "eth0", Follows: "host"}, nil),
	} {
		families := scrape(t, src)
		require.NotNil(t, families["ringlab_rx_packets_total"], "%s: its interface's numbers", src.Info().Name)
		for _, name := range softnet {
			for _, m := range families[name].GetMetric() {
				series[name]++
				assert.NotContains(t, labels(m), LabelDevice, "%s of %s: the machine's, not a device's", name, src.Info().Name)
				assert.Equal(t, "host", labels(m)[LabelSource], name)
			}
		}
	}
	assert.Equal(t, map[string]int{
		"ringlab_softnet_processed_total": 2, "ringlab_softnet_dropped_total": 2,
		"ringlab_softnet_time_squeeze_total": 2, "ringlab_softnet_cpus": 1,
	}, series, "once: the host source's, a series per online CPU")
}

// TestHelpSaysWhichQueues: a receive number's HELP speaks of receive
// queues, a send number's of send queues, a device's of neither.
func TestHelpSaysWhichQueues(t *testing.T) {
	families := scrape(t, newFixed("host:eth0", metrics.Labels{Kind: "host", Device: "eth0"}, map[string]uint64{
		"rx_packets": 1, "tx_packets": 1, "tx_kicks": 1, "rx_kicks": 1, "collisions": 1, "page_pools": 1, "tx_stop": 1,
		"softnet.cpus": 2,
	}))
	assert.NotContains(t, families["ringlab_softnet_cpus"].GetHelp(), "Per CPU", "a machine-wide number without per-CPU values")
	for name, want := range map[string]string{
		"ringlab_rx_packets_total": "Per receive queue", "ringlab_rx_kicks_total": "Per receive queue",
		"ringlab_tx_packets_total": "Per send queue", "ringlab_tx_kicks_total": "Per send queue",
		"ringlab_tx_stop_total":    "Per send queue",
		"ringlab_collisions_total": "Device-wide", "ringlab_page_pools": "Device-wide",
		"ringlab_softnet_cpus": "The machine's",
	} {
		fam := families[name]
		require.NotNil(t, fam, name)
		assert.Contains(t, fam.GetHelp(), want, name)
		if want != "Per receive queue" {
			assert.NotContains(t, fam.GetHelp(), "receive queue", name)
		}
	}
}

func TestFailingSourceIsDownNotAnError(t *testing.T) {
	fake := metrics.NewFake("fake", 1)
	fake.Fail(errors.New("gone"))
	families := scrape(t, fake)
	require.NotNil(t, families["ringlab_source_up"])
	assert.Equal(t, 0.0, families["ringlab_source_up"].GetMetric()[0].GetGauge().GetValue())
	assert.NotNil(t, families["ringlab_source_info"])
	assert.Len(t, families, 2, "no numbers without a sample")
}

func TestFamily(t *testing.T) {
	for in, want := range map[string]string{
		"rx_kicks":               "ringlab_rx_kicks_total",
		"rx_pp_recycle_cached":   "ringlab_rx_pp_recycle_cached_total",
		"recycle-released-ref":   "ringlab_recycle_released_ref_total",
		"tx_total":               "ringlab_tx_total",
		"UdpInDatagrams":         "ringlab_udp_in_datagrams_total",
		"UdpRcvbufErrors":        "ringlab_udp_rcvbuf_errors_total",
		"proto_count_udp":        "ringlab_proto_count_udp_total",
		"sim_time_ns":            "ringlab_sim_time_seconds_total",
		"time_us":                "ringlab_time_seconds_total",
		"page_pool.inflight_mem": "ringlab_page_pool_inflight_mem_bytes",
		"socket_truesize":        "ringlab_socket_truesize_bytes",
		"xdp_bytes_counted":      "ringlab_xdp_bytes_counted_total",
		"ethtool_count":          "ringlab_ethtool_statistics",
		"predicted_rx_packets":   "ringlab_rx_packets_total",
		"predicted_":             "ringlab_predicted_total",
		"rx_queue_0_xdp_packets": "ringlab_rx_queue_0_xdp_packets_total",
		"HTTPServerErrors":       "ringlab_http_server_errors_total",
	} {
		assert.Equal(t, want, MetricName(in), in)
	}
	f := Family("sim_time_ns")
	assert.Equal(t, 1e-9, f.Scale)
	assert.Equal(t, "seconds", f.Unit)
	assert.True(t, Family("predicted_rx_packets").Predicted)
}

// TestDropsAreOneFamilyWithAReason: the drops.NAME numbers (engine/drop's
// reasons) are one family, ringlab_drops_total, a series per reason with
// the reason label, the kernel's names as the kernel spells them; a twin's
// predicted drops are the same family with origin="predicted".
func TestDropsAreOneFamilyWithAReason(t *testing.T) {
	src := newFixed("twin:sim", metrics.Labels{Kind: "twin", Follows: "sim"}, map[string]uint64{
		"rx_packets": 10, "drops.FULL_RING": 7, "drops.xdp_drop": 3, "predicted_drops.FULL_RING": 6,
	})
	families := scrape(t, src)
	fam := families["ringlab_drops_total"]
	require.NotNil(t, fam)
	assert.Equal(t, dto.MetricType_COUNTER, fam.GetType())
	assert.Contains(t, fam.GetHelp(), "skb_drop_reason")
	assert.Contains(t, fam.GetHelp(), `reason="..."`)
	got := map[[2]string]float64{}
	for _, m := range fam.GetMetric() {
		l := labels(m)
		assert.Equal(t, QueueAll, l[LabelQueue])
		got[[2]string{l[LabelReason], l[LabelOrigin]}] = m.GetCounter().GetValue()
	}
	assert.Equal(t, map[[2]string]float64{
		{"FULL_RING", OriginMeasured}: 7, {"xdp_drop", OriginMeasured}: 3, {"FULL_RING", OriginPredicted}: 6,
	}, got)
	for name := range families {
		assert.NotContains(t, name, "full_ring", "no family of its own for a reason")
	}
	f := Family("drops.SOCKET_RCVBUFF")
	assert.Equal(t, "ringlab_drops_total", f.Metric)
	assert.Equal(t, "SOCKET_RCVBUFF", f.Reason)
	assert.Empty(t, Family("rx_drops").Reason, "rx_drops is the device's own counter, not a reason")
}
