package kernel

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// notYet lists the functions of the table that a release older than the
// one named did not have (their line is missing there by right): added
// by the commit named.
var notYet = map[string]struct {
	Since Version
	Why   string
}{
	"virtnet_rq_alloc":    {Version{Major: 6, Minor: 6}, "added with virtio_net's premapped page_frag blocks (virtnet_rq_dma), 6.6"},
	"virtnet_xdp_handler": {Version{Major: 6, Minor: 3}, "split out of receive_small and receive_mergeable in 6.3 (\"virtio_net: introduce virtnet_xdp_handler() to seprate the logic of run xdp\")"},
}

// Lines read by hand in the 6.1.190 source (the generator's input here),
// one per file kind: a plain signature, a multi-line one, an older name
// (Was), a function in another file than the table's (before a move),
// and an inline in a header.
func TestFuncLineSpotChecks(t *testing.T) {
	v61 := Version{Major: 6, Minor: 1}
	for _, tc := range []struct {
		name, file string
		line       int
	}{
		{"virtnet_poll", "drivers/net/virtio_net.c", 1703},
		{"receive_mergeable", "drivers/net/virtio_net.c", 977},
		{"handle_rx", "drivers/vhost/net.c", 1126},
		{"cpu_map_kthread_run", "kernel/bpf/cpumap.c", 306},
		{"skb_defer_free_flush", "net/core/dev.c", 6763},
		{"page_pool_alloc_netmems", "net/core/page_pool.c", 460},      // as page_pool_alloc_pages
		{"page_pool_put_unrefed_netmem", "net/core/page_pool.c", 627}, // as page_pool_put_defragged_page
		{"page_frag_free", "mm/page_alloc.c", 5881},                   // mm/page_frag_cache.c from 6.12
		{"free_unref_page_commit", "mm/page_alloc.c", 3469},
		{"bpf_prog_run_xdp", "include/linux/filter.h", 796},
	} {
		file, line, ok := FuncLine(tc.name, v61)
		require.True(t, ok, "%s at 6.1", tc.name)
		assert.Equal(t, tc.file, file, tc.name)
		assert.Equal(t, tc.line, line, tc.name)
	}
	_, _, ok := FuncLine("page_pool_alloc_pages", v61)
	assert.True(t, ok, "the older name finds the same entry")
	_, _, ok = FuncLine("no_such_function", v61)
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
			if ny, late := notYet[f.Name]; late && v.Less(ny.Since) {
				assert.False(t, ok, "%s at %s: %s", f.Name, v, ny.Why)
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

// NotYetForTest is notYet for the package's external tests.
var NotYetForTest = notYet
