package engine

import (
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
)

// cloneCase is a scenario a clone test runs.
type cloneCase struct {
	name string
	s    scenario.Scenario
}

// cloneCases are every preset, and what-ifs that reach state no preset
// does: page_frag with premapped DMA blocks (6.8's virtnet_rq_dma),
// frame sizes drawn at random, and a tcp_stream on a 6.8 kernel.
func cloneCases(t *testing.T) []cloneCase {
	var out []cloneCase
	for _, p := range scenario.Presets() {
		if testing.Short() && !shortPresets[p.Name] {
			continue
		}
		s, err := scenario.LookupPreset(p.Name)
		require.NoError(t, err)
		out = append(out, cloneCase{p.Name, s})
	}
	if testing.Short() {
		require.Len(t, out, len(shortPresets), "every preset of shortPresets exists")
		return out
	}
	variant := func(name, preset string, f func(*scenario.Scenario)) {
		s, err := scenario.LookupPreset(preset)
		require.NoError(t, err)
		f(&s)
		require.NoError(t, s.Validate(), name)
		out = append(out, cloneCase{name, s})
	}
	variant("default-6.8", "default", func(s *scenario.Scenario) { s.Kernel = "6.8" })
	variant("default-random-sizes", "default", func(s *scenario.Scenario) {
		s.Traffic.Size, s.Traffic.Sizes, s.Traffic.RandomSizes = 0, []int{64, 64, 512, 1514}, true
	})
	variant("r1-upstream-6.8", "r1-upstream", func(s *scenario.Scenario) { s.Kernel = "6.8" })
	return out
}

// shortPresets are the presets the sweeps cover under go test -short,
// one of each kind of run: UDP into mergeable page_pool buffers, a TCP
// stream through XDP and a cpumap, and a big-mode stream on vDPA
// hardware. make test sweeps every preset.
var shortPresets = map[string]bool{"default": true, "r1-page-pool": true, "r2-mtu9000-before": true}

// runTraced runs n events of w and returns what each did.
func runTraced(t *testing.T, w *World, n int) []TraceEvent {
	t.Helper()
	evs := make([]TraceEvent, 0, n)
	for range n {
		ev, ok := w.StepTraced()
		if !ok {
			break
		}
		evs = append(evs, ev)
	}
	require.NoError(t, w.Err())
	return evs
}

// TestCloneRunsTheSameEvents: for every preset, a clone taken after some
// events runs exactly the events its world runs next, counter for counter,
// although the world ran them first: running one does not touch the other.
func TestCloneRunsTheSameEvents(t *testing.T) {
	after, next := 5*traceCheckEvents/3, traceCheckEvents
	for _, cc := range cloneCases(t) {
		t.Run(cc.name, func(t *testing.T) {
			t.Parallel()
			w, err := New(cc.s)
			require.NoError(t, err)
			for range after {
				if !w.Step() {
					break
				}
			}
			require.NoError(t, w.Err())
			c, err := w.Clone()
			require.NoError(t, err)
			assert.Equal(t, w.Sim.Queue.Fired(), c.Sim.Queue.Fired())
			assert.Equal(t, w.Now(), c.Now())
			want := runTraced(t, w, next)
			got := runTraced(t, c, next)
			require.Len(t, got, len(want))
			for i := range want {
				if !assert.Equal(t, want[i], got[i], "event %d after the clone", i) {
					break
				}
			}
			assert.Equal(t, w.Stats(), c.Stats())
			assert.Equal(t, w.Summarize(), c.Summarize())
			var wp, cp PerfSample
			w.SamplePerf(&wp)
			c.SamplePerf(&cp)
			assert.Equal(t, wp, cp, "the clone charged each function what its world did")
		})
	}
}

// TestCloneOfACheckedWorld: the clone of a world checked after every event
// is checked too, and its checks hold while it runs on; so do they in the
// world after the clone ran.
func TestCloneOfACheckedWorld(t *testing.T) {
	for _, name := range []string{"default", "cpumap", "r1-page-pool-frag", "r2-mtu9000-after"} {
		s, err := scenario.LookupPreset(name)
		require.NoError(t, err)
		w, err := New(s)
		require.NoError(t, err)
		require.NoError(t, w.CheckEveryEvent(0))
		w.CheckLiveness(0)
		require.NoError(t, w.RunPackets(2000))
		c, err := w.Clone()
		require.NoError(t, err, name)
		require.NotNil(t, c.checker, name)
		require.NotNil(t, c.live, name)
		require.NoError(t, c.RunPackets(4000), name)
		require.NoError(t, c.CheckNow(), name)
		require.NoError(t, w.RunPackets(4000), name)
		require.NoError(t, w.CheckNow(), name)
		assert.Equal(t, w.Summarize(), c.Summarize(), name)
	}
}

// TestCloneAtTheStart: a clone of a world that ran nothing is that world.
func TestCloneAtTheStart(t *testing.T) {
	s, err := scenario.LookupPreset("default")
	require.NoError(t, err)
	w, err := New(s)
	require.NoError(t, err)
	c, err := w.Clone()
	require.NoError(t, err)
	assert.Equal(t, runTraced(t, w, 500), runTraced(t, c, 500))
}

// TestCloneSharesNoMemory walks everything a world and its clone reach
// (pointers, slices, maps, interfaces, through unexported fields) and
// fails on any memory both reach, but what both were built from (the
// scenario and the XDP object, which do not change): a field a CopyFrom
// forgot to make the clone's own shows up here by its path.
func TestCloneSharesNoMemory(t *testing.T) {
	for _, cc := range cloneCases(t) {
		t.Run(cc.name, func(t *testing.T) {
			t.Parallel()
			w, err := New(cc.s)
			require.NoError(t, err)
			require.NoError(t, w.RunPackets(traceCheckEvents))
			c, err := w.Clone()
			require.NoError(t, err)
			origin := newReach()
			origin.walk(reflect.ValueOf(&w.origin).Elem(), "origin")
			origin.walk(reflect.ValueOf(&w.Scenario).Elem(), "Scenario")
			origin.walk(reflect.ValueOf(&c.Scenario).Elem(), "Scenario")
			a, b := newReach(), newReach()
			a.walk(reflect.ValueOf(w), "w")
			b.walk(reflect.ValueOf(c), "c")
			shared := a.overlaps(b, origin)
			assert.Empty(t, shared, "memory the world and its clone share")
		})
	}
}

// region is a piece of memory a walk reached, and how.
type region struct {
	start, end uintptr
	path       string
}

type reach struct {
	regions []region
	seen    map[[2]uintptr]bool // (address, type) walked
	types   map[reflect.Type]uintptr
}

func newReach() *reach { return &reach{seen: map[[2]uintptr]bool{}, types: map[reflect.Type]uintptr{}} }

func (r *reach) typeID(t reflect.Type) uintptr {
	if id, ok := r.types[t]; ok {
		return id
	}
	id := uintptr(len(r.types) + 1)
	r.types[t] = id
	return id
}

func (r *reach) walk(v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		p, et := v.Pointer(), v.Type().Elem()
		key := [2]uintptr{p, r.typeID(et)}
		if r.seen[key] {
			return
		}
		r.seen[key] = true
		if et.Size() > 0 {
			r.regions = append(r.regions, region{p, p + et.Size(), path})
		}
		r.walk(v.Elem(), path)
	case reflect.Slice:
		if v.IsNil() || v.Cap() == 0 {
			return
		}
		p, et := v.Pointer(), v.Type().Elem()
		key := [2]uintptr{p, r.typeID(v.Type())}
		if r.seen[key] {
			return
		}
		r.seen[key] = true
		if size := et.Size() * uintptr(v.Cap()); size > 0 {
			r.regions = append(r.regions, region{p, p + size, path})
		}
		full := v.Slice3(0, v.Cap(), v.Cap())
		if hasRefs(et) {
			for i := range full.Len() {
				r.walk(full.Index(i), fmt.Sprintf("%s[%d]", path, i))
			}
		}
	case reflect.Array:
		if hasRefs(v.Type().Elem()) {
			for i := range v.Len() {
				r.walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if hasRefs(v.Field(i).Type()) {
				r.walk(v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		p := v.Pointer()
		key := [2]uintptr{p, r.typeID(v.Type())}
		if r.seen[key] {
			return
		}
		r.seen[key] = true
		r.regions = append(r.regions, region{p, p + 1, path})
		it := v.MapRange()
		for it.Next() {
			r.walk(it.Key(), path+"{key}")
			r.walk(it.Value(), fmt.Sprintf("%s[%v]", path, it.Key()))
		}
	case reflect.Interface:
		if !v.IsNil() {
			r.walk(v.Elem(), path+".("+v.Elem().Type().String()+")")
		}
	}
	// Funcs are not walked: a handler is a method of its own world's
	// component (the twin registers its own), and a closure's variables
	// cannot be reached by reflection. Strings do not change.
}

// hasRefs reports whether a value of type t can reach other memory.
func hasRefs(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return true
	case reflect.Array:
		return hasRefs(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasRefs(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// overlaps returns the paths of r's regions that overlap one of o's and
// none of except's.
func (r *reach) overlaps(o, except *reach) []string {
	sorted := func(rs []region) []region {
		rs = append([]region(nil), rs...)
		sort.Slice(rs, func(i, j int) bool { return rs[i].start < rs[j].start })
		return rs
	}
	hit := func(rs []region, x region) (region, bool) {
		i := sort.Search(len(rs), func(i int) bool { return rs[i].start >= x.end })
		for j := i - 1; j >= 0 && j >= i-64; j-- { // regions nest: look back a little
			if rs[j].end > x.start {
				return rs[j], true
			}
		}
		return region{}, false
	}
	os, ex := sorted(o.regions), sorted(except.regions)
	var out []string
	for _, x := range r.regions {
		if _, ok := hit(ex, x); ok {
			continue
		}
		if y, ok := hit(os, x); ok {
			out = append(out, x.path+" and "+y.path)
			if len(out) == 20 {
				break
			}
		}
	}
	return out
}

// BenchmarkClone is a checkpoint of the default preset a hundred thousand
// packets in, against BenchmarkCloneBuild, building the same world (the
// twin a clone starts from).
func BenchmarkClone(b *testing.B) {
	s, err := scenario.LookupPreset("default")
	require.NoError(b, err)
	w, err := New(s)
	require.NoError(b, err)
	require.NoError(b, w.RunPackets(100_000))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Clone(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCloneBuild(b *testing.B) {
	s, err := scenario.LookupPreset("default")
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := New(s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCloneCopy is BenchmarkClone into a world built already (a
// recycled checkpoint).
func BenchmarkCloneCopy(b *testing.B) {
	s, err := scenario.LookupPreset("default")
	require.NoError(b, err)
	w, err := New(s)
	require.NoError(b, err)
	require.NoError(b, w.RunPackets(100_000))
	c, err := New(s)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if err := c.CopyFrom(w); err != nil {
			b.Fatal(err)
		}
	}
}
