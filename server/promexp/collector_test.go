package promexp

import (
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

// scrape serves src's collector through promhttp and parses the answer
// with Prometheus's own text parser.
func scrape(t *testing.T, src metrics.Source) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(New(src)))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytesReader(body))
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
		assert.Equal(t, "fake", l["source"])
		got[l["queue"]] = m.GetCounter().GetValue()
	}
	// One Sample per scrape: rx_kicks grows by 3 per sample on queue 0.
	assert.Equal(t, map[string]float64{"0": 3, "1": 6}, got)
}

// totalsOnly has device-wide counters only, like /sys/class/net statistics.
type totalsOnly struct{ metrics.Fake }

func (s *totalsOnly) Info() metrics.SourceInfo {
	return metrics.SourceInfo{Name: "host:eth0", Counters: []string{"rx_packets", "alloc-fast", "rx_bytes_total", "page_pool.inflight", "softnet.processed"}}
}

func (s *totalsOnly) Sample() (metrics.Sample, error) {
	return metrics.Sample{Totals: map[string]uint64{"rx_packets": 42, "alloc-fast": 7, "rx_bytes_total": 9, "page_pool.inflight": 5, "softnet.processed": 11}}, nil
}

func TestTotalsOnlyAndNames(t *testing.T) {
	families := scrape(t, &totalsOnly{})
	for name, want := range map[string]float64{"ringlab_rx_packets_total": 42, "ringlab_alloc_fast_total": 7, "ringlab_rx_bytes_total": 9, "ringlab_softnet_processed_total": 11} {
		fam := families[name]
		require.NotNil(t, fam, name)
		assert.Equal(t, dto.MetricType_COUNTER, fam.GetType(), name)
		require.Len(t, fam.GetMetric(), 1)
		m := fam.GetMetric()[0]
		assert.Equal(t, map[string]string{"source": "host:eth0", "queue": QueueAll}, labels(m))
		assert.Equal(t, want, m.GetCounter().GetValue())
	}
	// A gauge (engine/vocab's kind) is a gauge family, without _total.
	inflight := families["ringlab_page_pool_inflight"]
	require.NotNil(t, inflight)
	assert.Equal(t, dto.MetricType_GAUGE, inflight.GetType())
	assert.Equal(t, 5.0, inflight.GetMetric()[0].GetGauge().GetValue())
	assert.Contains(t, inflight.GetHelp(), "(pages)")
	assert.Contains(t, families["ringlab_alloc_fast_total"].GetHelp(), "not in ringlab's vocabulary")
}

func TestFailingSourceIsDownNotAnError(t *testing.T) {
	fake := metrics.NewFake("fake", 1)
	fake.Fail(errors.New("gone"))
	families := scrape(t, fake)
	require.NotNil(t, families["ringlab_source_up"])
	assert.Equal(t, 0.0, families["ringlab_source_up"].GetMetric()[0].GetGauge().GetValue())
	assert.Len(t, families, 1, "no counters without a sample")
}

func TestMetricName(t *testing.T) {
	for in, want := range map[string]string{
		"rx_kicks":             "ringlab_rx_kicks_total",
		"rx_pp_recycle_cached": "ringlab_rx_pp_recycle_cached_total",
		"recycle-released-ref": "ringlab_recycle_released_ref_total",
		"tx_total":             "ringlab_tx_total",
	} {
		assert.Equal(t, want, MetricName(in), in)
	}
}
