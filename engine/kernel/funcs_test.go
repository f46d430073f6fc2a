package kernel

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// noLine lists the functions of the table that some releases did not
// have, so that they have no line there by right: absent before Added,
// or from Removed on (zero: no bound). Each was checked in the sources
// the generator read (git grep of the name over the table's files);
// Added is the release it came in where Why names it, else the release
// after the last one read without it (vhost_net_signal_used, the _split
// functions, bq_xmit_all: after 4.17, by 5.12).
var noLine = map[string]struct {
	Added, Removed Version
	Why            string
}{
	"page_pool_alloc_netmems":        {Added: v(4, 18), Why: "page_pool came in 4.18; 4.17 has none of it"},
	"__page_pool_alloc_netmems_slow": {Added: v(4, 18), Why: "page_pool came in 4.18"},
	"page_pool_refill_alloc_cache":   {Added: v(4, 18), Why: "page_pool came in 4.18"},
	"page_pool_recycle_in_cache":     {Added: v(4, 18), Why: "page_pool came in 4.18"},
	"page_pool_recycle_in_ring":      {Added: v(4, 18), Why: "page_pool came in 4.18"},
	"page_pool_put_unrefed_netmem":   {Added: v(4, 18), Why: "page_pool came in 4.18 (as page_pool_put_page)"},
	"page_pool_return_netmem":        {Added: v(4, 18), Why: "page_pool came in 4.18"},
	"xdp_return_frame":               {Added: v(4, 18), Why: "XDP frames' return to their memory model came with page_pool, 4.18"},
	"page_pool_alloc_frag":           {Added: v(5, 15), Why: "page_pool's fragments came in 5.15: not in 5.12.9, in 5.15.16"},
	"skb_attempt_defer_free":         {Added: v(5, 19), Why: "remote skb frees deferred to their CPU from 5.19 (TCPDeferFree, 68822bdf76f1): not in 5.15.16, in 5.19"},
	"skb_defer_free_flush":           {Added: v(5, 19), Why: "remote skb frees deferred to their CPU from 5.19 (TCPDeferFree)"},
	"vhost_net_signal_used":          {Added: v(4, 18), Why: "not in 4.17, whose handle_rx calls vhost_add_used_and_signal_n itself; in 5.12.9"},
	"virtqueue_add_split":            {Added: v(4, 18), Why: "split out of virtqueue_add when the packed ring came: 4.17 has virtqueue_add, 5.12.9 the _split form"},
	"virtqueue_get_buf_ctx_split":    {Added: v(4, 18), Why: "4.17 has virtqueue_get_buf_ctx, 5.12.9 the _split form"},
	"virtqueue_kick_prepare_split":   {Added: v(4, 18), Why: "4.17 has virtqueue_kick_prepare, 5.12.9 the _split form"},
	"bq_xmit_all":                    {Added: v(4, 18), Why: "devmap's bulk queue is not in 4.17; in 5.12.9"},
	"virtnet_xdp_handler":            {Added: v(6, 5), Why: "split out of receive_small and receive_mergeable: not in 6.4.4, in 6.5"},
	"virtnet_rq_alloc":               {Added: v(6, 6), Why: "came with the premapped page_frag blocks (virtnet_rq_dma), 6.6: not in 6.5, in 6.10"},
	"refill_work":                    {Removed: v(6, 19), Why: "gone in 6.19, which retries a failed refill in NAPI (RefillRetryInNAPI): in 6.18.2, not in 6.19"},
	"pick_eevdf":                     {Added: v(6, 6), Why: "EEVDF came in 6.6: not in 6.5, in 6.6.9"},
}

func v(major, minor int) Version { return Version{Major: major, Minor: minor} }

// hasNoLine reports whether function f has no line at release at by
// right, and why.
func hasNoLine(f string, at Version) (string, bool) {
	n, ok := noLine[f]
	if !ok {
		return "", false
	}
	if n.Added != (Version{}) && at.Less(n.Added) || n.Removed != (Version{}) && at.AtLeast(n.Removed) {
		return n.Why, true
	}
	return "", false
}

// HasNoLineForTest is hasNoLine for the package's external tests.
var HasNoLineForTest = hasNoLine

// Lines read by hand (git show TAG:FILE, the tag the generator read
// each release at; 6.1 also in Debian's linux-source-6.1 6.1.190-1): a
// plain signature, a multi-line one, the older names (Was, Also), a
// function before it moved (WasIn), and an inline in a header.
func TestFuncLineSpotChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   Version
		file string
		line int
	}{
		{"virtnet_poll", v(6, 1), "drivers/net/virtio_net.c", 1703},
		{"virtnet_poll", v(4, 17), "drivers/net/virtio_net.c", 1271},
		{"virtnet_poll", v(7, 0), "drivers/net/virtio_net.c", 3071},
		{"receive_mergeable", v(6, 1), "drivers/net/virtio_net.c", 977},
		{"handle_rx", v(6, 1), "drivers/vhost/net.c", 1126},
		{"cpu_map_kthread_run", v(6, 1), "kernel/bpf/cpumap.c", 306},
		{"skb_defer_free_flush", v(6, 1), "net/core/dev.c", 6763},
		{"page_pool_alloc_netmems", v(6, 1), "net/core/page_pool.c", 460},       // page_pool_alloc_pages (Was)
		{"page_pool_alloc_netmems", v(6, 12), "net/core/page_pool.c", 577},      // page_pool_alloc_netmem (Also), not the page_pool_alloc_pages wrapper
		{"page_pool_put_unrefed_netmem", v(5, 15), "net/core/page_pool.c", 476}, // page_pool_put_page
		{"page_pool_put_unrefed_netmem", v(6, 4), "net/core/page_pool.c", 626},  // page_pool_put_defragged_page
		{"page_pool_put_unrefed_netmem", v(6, 10), "net/core/page_pool.c", 763}, // page_pool_put_unrefed_page
		{"page_frag_free", v(6, 1), "mm/page_alloc.c", 5881},                    // WasIn
		{"page_frag_free", v(6, 12), "mm/page_alloc.c", 4984},
		{"page_frag_free", v(6, 18), "mm/page_frag_cache.c", 164},
		{"free_unref_page_commit", v(6, 1), "mm/page_alloc.c", 3469},
		{"free_unref_page_commit", v(6, 18), "mm/page_alloc.c", 2813}, // free_frozen_page_commit (Also)
		{"bpf_prog_run_xdp", v(6, 1), "include/linux/filter.h", 796},  // WasIn
		{"bpf_prog_run_xdp", v(6, 10), "include/net/xdp.h", 507},
		{"net_rx_action", v(6, 1), "net/core/dev.c", 6785},
		{"run_ksoftirqd", v(6, 4), "kernel/softirq.c", 931},
		{"pick_eevdf", v(6, 6), "kernel/sched/fair.c", 969},
	} {
		file, line, ok := FuncLine(tc.name, tc.at)
		require.True(t, ok, "%s at %s", tc.name, tc.at)
		assert.Equal(t, tc.file, file, "%s at %s", tc.name, tc.at)
		assert.Equal(t, tc.line, line, "%s at %s", tc.name, tc.at)
	}
	_, _, ok := FuncLine("page_pool_alloc_pages", v(6, 1))
	assert.True(t, ok, "the older name finds the same entry")
	_, _, ok = FuncLine("no_such_function", v(6, 1))
	assert.False(t, ok)
}

// Every function of the table has a line at every release that was read,
// but those the release did not have yet.
func TestEveryFuncHasALineWhereRead(t *testing.T) {
	require.NotEmpty(t, releaseTags, "no release was read: run scripts/funclines")
	for _, v := range Releases() {
		if _, ok := SourceTag(v); !ok {
			continue
		}
		for _, f := range Funcs() {
			_, _, ok := FuncLine(f.Name, v)
			if why, none := hasNoLine(f.Name, v); none {
				assert.False(t, ok, "%s at %s: %s", f.Name, v, why)
				continue
			}
			assert.True(t, ok, "%s at %s has no line", f.Name, v)
		}
	}
}

// The runs are well formed: releases of the model, From not after To,
// none overlapping, every release in them read.
func TestFuncLineRuns(t *testing.T) {
	isRelease := map[Version]bool{}
	for _, v := range Releases() {
		isRelease[v] = true
	}
	for v := range releaseTags {
		assert.True(t, isRelease[v], "%s is read but not modelled", v)
	}
	for name, rs := range funcLines {
		_, ok := byName[name]
		assert.True(t, ok, "%s is not in the table", name)
		for i, r := range rs {
			assert.True(t, isRelease[r.From] && isRelease[r.To] && !r.To.Less(r.From), "%s: run %v", name, r)
			assert.Positive(t, r.Line, name)
			if i > 0 {
				assert.True(t, rs[i-1].To.Less(r.From), "%s: runs overlap", name)
			}
			for _, v := range Releases() {
				if !v.Less(r.From) && !r.To.Less(v) {
					_, read := releaseTags[v]
					assert.True(t, read, "%s: %s is in a run but was not read", name, v)
				}
			}
		}
	}
}

// SourceURL links the line at the tag read when it is known, Elixir's
// identifier search otherwise.
func TestSourceURL(t *testing.T) {
	v61 := Version{Major: 6, Minor: 1}
	tag, ok := SourceTag(v61)
	require.True(t, ok)
	_, line, ok := FuncLine("virtnet_poll", v61)
	require.True(t, ok)
	assert.Equal(t, fmt.Sprintf("https://elixir.bootlin.com/linux/%s/source/drivers/net/virtio_net.c#L%d", tag, line), SourceURL("virtnet_poll", v61))
	assert.Regexp(t, `^v6\.1(\.\d+)?$`, tag, "the release's tag or one of its stable tags")
	assert.Equal(t, "https://elixir.bootlin.com/linux/v6.1/A/ident/virtnet_rq_alloc", SourceURL("virtnet_rq_alloc", v61), "not in 6.1: the identifier search")
	for _, v := range Releases() {
		if _, read := SourceTag(v); read {
			continue
		}
		want := "https://elixir.bootlin.com/linux/v" + v.String() + "/A/ident/virtnet_poll"
		if v == Newest {
			want = "https://elixir.bootlin.com/linux/latest/A/ident/virtnet_poll"
		}
		assert.Equal(t, want, SourceURL("virtnet_poll", v), "%s was not read", v)
	}
}

// TestNameAt: a function is named as the release's source names it, and
// a release not read takes the name its read neighbours agree on.
func TestNameAt(t *testing.T) {
	for _, c := range []struct {
		v    Version
		want string
	}{
		{Version{Major: 6, Minor: 4}, "page_pool_alloc_pages"},    // read
		{Version{Major: 6, Minor: 3}, "page_pool_alloc_pages"},    // between 6.2 and 6.4
		{Version{Major: 6, Minor: 10}, "page_pool_alloc_pages"},   // read
		{Version{Major: 6, Minor: 11}, "page_pool_alloc_netmem"},  // read
		{Version{Major: 6, Minor: 15}, "page_pool_alloc_netmems"}, // between 6.14 and 6.18
		{Version{Major: 7, Minor: 0}, "page_pool_alloc_netmems"},
		{Version{Major: 4, Minor: 18}, "page_pool_alloc_pages"}, // before the first read (5.9)
	} {
		assert.Equal(t, c.want, NameAt("page_pool_alloc_netmems", c.v), "at %s", c.v)
	}
	assert.Equal(t, "virtnet_poll", NameAt("virtnet_poll", Version{Major: 6, Minor: 1}))
	assert.Equal(t, "no_such_function", NameAt("no_such_function", Version{Major: 6, Minor: 1}))
	assert.Equal(t, "https://elixir.bootlin.com/linux/v6.3/A/ident/page_pool_alloc_pages", SourceURL("page_pool_alloc_netmems", Version{Major: 6, Minor: 3}),
		"a release not read is searched for the name it had")
}
