package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/kernel"
)

// The forms a definition takes in the files of the table, and the lines
// that name a function without defining it.
func TestDefLine(t *testing.T) {
	src := `/* virtnet_poll(napi, budget) in a comment */
static int virtnet_poll(struct napi_struct *napi, int budget);
static void refill_work(struct work_struct *work);
int x = virtnet_poll(&n, 64);
#define receive_big(a) do_it(a)
	virtnet_poll(napi, budget);
static const char *s = "static int virtnet_poll(int) {";
static int virtnet_poll(struct napi_struct *napi, int budget)
{
	return 0;
}
static struct sk_buff *receive_small(struct net_device *dev,
				     struct virtnet_info *vi,
				     unsigned int len)
{
}
static void
refill_work(struct work_struct *work)
{
}
void rmqueue_bulk(struct zone *zone)
	__must_hold(&zone->lock)
{
}
static int virtnet_poll_tx(struct napi_struct *napi, int budget)
{
}
EXPORT_SYMBOL(page_to_skb);
`
	b := blank([]byte(src))
	assert.Equal(t, 8, defLine(b, "virtnet_poll"), "the definition, not the comment, prototype, call, macro or string")
	assert.Equal(t, 12, defLine(b, "receive_small"), "a signature over three lines")
	assert.Equal(t, 18, defLine(b, "refill_work"), "the return type on the line above: the name's line")
	assert.Equal(t, 21, defLine(b, "rmqueue_bulk"), "an attribute between the list and the body")
	assert.Equal(t, 25, defLine(b, "virtnet_poll_tx"))
	assert.Zero(t, defLine(b, "receive_big"), "a macro is not a definition")
	assert.Zero(t, defLine(b, "page_to_skb"), "an export is not a definition")
	assert.Zero(t, defLine(b, "poll"), "part of a longer name")
}

// blank keeps every newline and offset.
func TestBlankKeepsLines(t *testing.T) {
	src := "a /* b\nc */ d \"e\\\"f\" 'g' // h\ni\n"
	b := blank([]byte(src))
	require.Len(t, b, len(src))
	assert.Equal(t, strings.Count(src, "\n"), strings.Count(string(b), "\n"))
	assert.Equal(t, "a     \n     d \"    \" ' '     \ni\n", string(b))
}

func TestPickTags(t *testing.T) {
	v := func(s string) kernel.Version {
		k, err := kernel.Parse(s)
		require.NoError(t, err)
		return k
	}
	releases := []kernel.Version{v("6.0"), v("6.1"), v("6.4"), v("6.19"), v("7.0")}
	got := pickTags([]string{"v6.1.190", "v6.1", "v6.1.9", "v6.4.3", "v6.4.12", "v6.19-rc2", "v6.19", "v7.0-rc1", "v7.0-rc3", "v2.6.32", "vx"}, releases)
	assert.Equal(t, map[kernel.Version]string{
		v("6.1"):  "v6.1",     // the release's own tag before any stable one
		v("6.4"):  "v6.4.12",  // else the newest stable tag, by number
		v("6.19"): "v6.19",    // not its release candidate
		v("7.0"):  "v7.0-rc3", // the newest tag, past 6.19
	}, got, "6.0 has no tag")
	assert.NotContains(t, pickTags([]string{"v6.19"}, releases), v("7.0"), "7.0 is not read at an older release's tag")
}

// The generator over a small git directory with four tags: the lines
// per tag, the renames (Was, Also) and a move (WasIn), runs over the
// releases in between, and the tags' commit subjects.
func TestGenerateFromGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	write := func(path, text string) {
		t.Helper()
		p := filepath.Join(dir, path)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	git("init", "-q")
	write("drivers/net/virtio_net.c", "static int virtnet_poll(int budget)\n{\n}\n")
	write("net/core/page_pool.c", "\nstruct page *page_pool_alloc_pages(struct page_pool *pool)\n{\n}\n")
	write("mm/page_alloc.c", "\n\nvoid page_frag_free(void *addr)\n{\n}\n")
	git("add", "-A")
	git("commit", "-qm", "one")
	git("tag", "v6.3")
	git("tag", "v6.4")
	write("drivers/net/virtio_net.c", "\nstatic int virtnet_poll(int budget)\n{\n}\n")
	git("commit", "-qam", "two")
	git("tag", "v6.5")
	write("net/core/page_pool.c", "netmem_ref page_pool_alloc_netmem(struct page_pool *pool)\n{\n}\nstruct page *page_pool_alloc_pages(struct page_pool *pool)\n{\n}\n")
	require.NoError(t, os.Remove(filepath.Join(dir, "mm/page_alloc.c")))
	write("mm/page_frag_cache.c", "void page_frag_free(void *addr)\n{\n}\n")
	git("add", "-A")
	git("commit", "-qm", "three")
	git("tag", "v6.12")

	src := gitSource{dir: dir}
	tags, err := src.tags()
	require.NoError(t, err)
	releases := kernel.Releases()
	picked := pickTags(tags, releases)
	funcs := kernel.Funcs()
	found, err := locate(src, funcs, releases, picked)
	require.NoError(t, err)
	v := func(s string) kernel.Version {
		k, err := kernel.Parse(s)
		require.NoError(t, err)
		return k
	}
	assert.Equal(t, []run{
		{from: v("6.3"), to: v("6.4"), at: place{file: "drivers/net/virtio_net.c", line: 1}},
		{from: v("6.5"), to: v("6.5"), at: place{file: "drivers/net/virtio_net.c", line: 2}},
		{from: v("6.12"), to: v("6.12"), at: place{file: "drivers/net/virtio_net.c", line: 2}},
	}, runs(found["virtnet_poll"], releases), "6.6 to 6.11 were not read: the run stops")
	assert.Equal(t, place{file: "net/core/page_pool.c", line: 2, as: "page_pool_alloc_pages"}, found["page_pool_alloc_netmems"][v("6.4")], "the older name")
	assert.Equal(t, place{file: "net/core/page_pool.c", line: 1, as: "page_pool_alloc_netmem"}, found["page_pool_alloc_netmems"][v("6.12")], "its other name (Also) before the older one's wrapper (Was)")
	assert.Equal(t, place{file: "mm/page_alloc.c", line: 3}, found["page_frag_free"][v("6.5")], "before it moved")
	assert.Equal(t, place{file: "mm/page_frag_cache.c", line: 1}, found["page_frag_free"][v("6.12")])
	assert.NotContains(t, found, "receive_big", "a function no file defines has no line")

	subjects := map[kernel.Version]string{}
	for r, tag := range picked {
		subjects[r], err = src.subject(tag)
		require.NoError(t, err)
	}
	assert.Equal(t, "three", subjects[v("6.12")])
	out, err := render(funcs, releases, picked, subjects, found)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(out), "// Code generated by scripts/funclines"), "the header names the generator")
	assert.Contains(t, string(out), `{Version{6, 3, 0}, Version{6, 4, 0}, "drivers/net/virtio_net.c", 1, ""},`)
	assert.Contains(t, string(out), `{6, 12, 0}: "v6.12", // three`)
}
