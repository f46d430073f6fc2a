package browsertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/profiler"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"ringlab/internal/testenv"
)

// threadKey names a thread of a Chromium process: the process's type
// (browser, renderer, gpu-process, utility) and the thread's name.
type threadKey struct{ proc, thread string }

// clockTicks is the unit of /proc's CPU times (USER_HZ).
const clockTicks = 100

// chromiumThreads reads the CPU time, in seconds, of every thread of the
// Chromium whose browser process is root and of its descendants, keyed by
// process id and thread id; names gives each its threadKey. A process's
// threads that exited are one more thread, "(exited threads)".
func chromiumThreads(root int) (cpu map[[2]int]float64, names map[[2]int]threadKey) {
	cpu, names = map[[2]int]float64{}, map[[2]int]threadKey{}
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := statFields(filepath.Join("/proc", e.Name(), "stat")); f != nil {
			parent[pid], _ = strconv.Atoi(f[1])
		}
	}
	inTree := func(pid int) bool {
		for p := pid; p > 1; p = parent[p] {
			if p == root {
				return true
			}
		}
		return false
	}
	for pid := range parent {
		if !inTree(pid) {
			continue
		}
		typ := "browser"
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
			// Chromium rewrites its processes' titles: one string.
			for _, a := range strings.FieldsFunc(string(b), func(r rune) bool { return r == 0 || r == ' ' }) {
				if v, ok := strings.CutPrefix(a, "--type="); ok {
					typ = v
				}
				if v, ok := strings.CutPrefix(a, "--utility-sub-type="); ok {
					typ += ":" + v[strings.LastIndex(v, ".")+1:]
				}
			}
		}
		total := 0.0
		if f := statFields(fmt.Sprintf("/proc/%d/stat", pid)); f != nil {
			total = ticks(f)
		}
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		sum := 0.0
		for _, t := range tasks {
			tid, _ := strconv.Atoi(t.Name())
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
			if err != nil {
				continue
			}
			s := string(b)
			name := s[strings.IndexByte(s, '(')+1 : strings.LastIndexByte(s, ')')]
			f := statFields(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
			if f == nil {
				continue
			}
			// Thread pools number their threads: one name for them all.
			name = strings.TrimRight(name, "0123456789/")
			cpu[[2]int{pid, tid}] = ticks(f)
			names[[2]int{pid, tid}] = threadKey{typ, name}
			sum += ticks(f)
		}
		cpu[[2]int{pid, -1}] = max(total-sum, 0)
		names[[2]int{pid, -1}] = threadKey{typ, "(exited threads)"}
	}
	return cpu, names
}

// statFields are the fields of a /proc stat file after the command's
// name (the first is the state), nil when it cannot be read.
func statFields(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// ticks is utime+stime of stat fields (statFields), in seconds.
func ticks(f []string) float64 {
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / clockTicks
}

// cpuSince is the CPU each threadKey spent between two chromiumThreads.
func cpuSince(before, after map[[2]int]float64, names map[[2]int]threadKey) map[threadKey]float64 {
	out := map[threadKey]float64{}
	for id, v := range after {
		out[names[id]] += v - before[id]
	}
	return out
}

// formatCPU is a table of the CPU by process and by thread, largest first.
func formatCPU(by map[threadKey]float64) string {
	procs := map[string]float64{}
	total := 0.0
	for k, v := range by {
		procs[k.proc] += v
		total += v
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "total %.2f s CPU\n", total)
	for _, p := range sortedKeys(procs) {
		if procs[p] < 0.05 {
			continue
		}
		fmt.Fprintf(&sb, "  %-28s %6.2f s\n", p, procs[p])
		threads := map[string]float64{}
		for k, v := range by {
			if k.proc == p {
				threads[k.thread] += v
			}
		}
		for _, th := range sortedKeys(threads) {
			if threads[th] >= 0.05 {
				fmt.Fprintf(&sb, "      %-24s %6.2f s\n", th, threads[th])
			}
		}
	}
	return sb.String()
}

func sortedKeys(m map[string]float64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b string) int {
		if m[a] > m[b] {
			return -1
		}
		if m[a] < m[b] {
			return 1
		}
		return strings.Compare(a, b)
	})
	return ks
}

// formatProfile sums a V8 CPU profile by function, self and inclusive (a
// function counted once per sample however deep it recurs), and by Go
// package (self): the top n of each.
func formatProfile(p *profiler.Profile, n int) string {
	byID := map[int64]*profiler.ProfileNode{}
	parent := map[int64]int64{}
	for _, nd := range p.Nodes {
		byID[nd.ID] = nd
		for _, c := range nd.Children {
			parent[c] = nd.ID
		}
	}
	self, incl, pkgs := map[string]float64{}, map[string]float64{}, map[string]float64{}
	total := 0.0
	for i, id := range p.Samples {
		if i+1 >= len(p.TimeDeltas) {
			break
		}
		d := float64(p.TimeDeltas[i+1]) / 1e6 // the sample lasts until the next
		name := funcName(byID[id])
		if name == "(idle)" {
			continue
		}
		total += d
		self[name] += d
		pkgs[goPackage(name)] += d
		seen := map[string]bool{}
		for x, ok := id, true; ok; x, ok = parent[x] {
			nm := funcName(byID[x])
			if !seen[nm] {
				seen[nm] = true
				incl[nm] += d
			}
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "main thread busy %.2f s (idle left out)\n", total)
	for _, t := range []struct {
		what string
		m    map[string]float64
	}{{"self by package", pkgs}, {"self by function", self}, {"inclusive by function", incl}} {
		fmt.Fprintf(&sb, "%s:\n", t.what)
		for i, k := range sortedKeys(t.m) {
			if i >= n {
				break
			}
			fmt.Fprintf(&sb, "  %7.3f s  %s\n", t.m[k], k)
		}
	}
	return sb.String()
}

func funcName(nd *profiler.ProfileNode) string {
	if nd == nil || nd.CallFrame == nil {
		return "?"
	}
	n := nd.CallFrame.FunctionName
	if n == "" {
		n = "(anonymous)"
	}
	if u := nd.CallFrame.URL; u != "" && !strings.HasPrefix(u, "wasm://") {
		n += " " + u[strings.LastIndexByte(u, '/')+1:]
	}
	return n
}

// goPackage is the Go package of a wasm function's name, or the name.
func goPackage(name string) string {
	if strings.Contains(name, " ") || strings.HasPrefix(name, "(") {
		if strings.HasSuffix(name, ".js") {
			return "js: " + name[strings.LastIndexByte(name, ' ')+1:]
		}
		return name
	}
	slash := strings.LastIndexByte(name, '/')
	if dot := strings.IndexByte(name[slash+1:], '.'); dot >= 0 {
		return name[:slash+1+dot]
	}
	return name
}

// TestLoadCPU measures where a page load's CPU goes: per Chromium process
// and thread (from /proc) from the navigation to the first frame and over
// the next seconds of play, and a V8 CPU profile of the page's main thread
// (the page, the game's frame and the wasm share it) summed by Go package
// and function. Each load is in a fresh browser. It measures rather than
// checks, so it runs only with RINGLAB_LOADS=N. RINGLAB_LOAD_DIRS as for
// TestLoadPhases compares builds (main.wasm built without -s keeps the
// function names the profile shows).
func TestLoadCPU(t *testing.T) {
	n := loadsWanted(t)
	path := testenv.RequireChromium(t)
	builds := loadBuilds(t, func() []loadBuild { return []loadBuild{{"ringlab", server(t).URL}} })
	play := 3 * time.Second
	if s := os.Getenv("RINGLAB_LOAD_PLAY"); s != "" {
		d, err := time.ParseDuration(s)
		require.NoError(t, err)
		play = d
	}
	for i := range n {
		for _, b := range builds {
			opts := userOptions(path, t.TempDir())
			// RINGLAB_LOAD_FLAGS=name=value;name=value adds Chromium flags.
			for _, f := range strings.Split(os.Getenv("RINGLAB_LOAD_FLAGS"), ";") {
				if k, v, ok := strings.Cut(f, "="); ok {
					opts = append(opts, chromedp.Flag(k, v))
				} else if f != "" {
					opts = append(opts, chromedp.Flag(f, true))
				}
			}
			actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
			ctx, cancel2 := chromedp.NewContext(actx)
			require.NoError(t, chromedp.Do(ctx), "start Chromium")
			root := chromedp.FromContext(ctx).Browser.Process().Pid
			// A page of the same origin first, so that the load under
			// test stays in the renderer the profiler is attached to.
			require.NoError(t, chromedp.Do(timeout(t, ctx, time.Minute), chromedp.Navigate(b.url+"/healthz")))
			prof := os.Getenv("RINGLAB_LOAD_PROFILE") != ""
			if prof {
				startProfile(t, ctx)
			}
			c0, _ := chromiumThreads(root)
			t0 := time.Now()
			v := measureLoad(t, ctx, b.url+"/index.html")
			c1, names1 := chromiumThreads(root)
			t1 := time.Now()
			var pr *profiler.Profile
			if prof {
				pr = stopProfile(t, ctx)
			}
			what := "play"
			if os.Getenv("RINGLAB_LOAD_PAUSE") != "" {
				// The span measured is the page at rest: paused, its
				// picture drawn.
				what = "rest"
				p := &page{t: t, ctx: ctx}
				p.pause()
				p.waitPicture()
				c1, _ = chromiumThreads(root)
			}
			pg := &page{t: t, ctx: ctx}
			drawnJS := `document.getElementById("game").contentWindow.ringlabDrawn || 0`
			d0 := eval[float64](pg, drawnJS)
			if prof {
				startProfile(t, ctx)
			}
			time.Sleep(play) // measuring a span, not waiting for a condition
			c2, names2 := chromiumThreads(root)
			d1 := eval[float64](pg, drawnJS)
			var pr2 *profiler.Profile
			if prof {
				pr2 = stopProfile(t, ctx)
			}
			t.Logf("%d %s: %s", i+1, b.name, formatLoad(v))
			t.Logf("%d %s: navigation to first frame (%.1f s wall):\n%s", i+1, b.name, t1.Sub(t0).Seconds(), formatCPU(cpuSince(c0, c1, names1)))
			t.Logf("%d %s: the next %s of %s (%.0f frames drawn):\n%s", i+1, b.name, play, what, d1-d0, formatCPU(cpuSince(c1, c2, names2)))
			if pr != nil {
				t.Logf("%d %s: V8 profile to the first frame:\n%s", i+1, b.name, formatProfile(pr, 25))
				t.Logf("%d %s: V8 profile of the %s:\n%s", i+1, b.name, what, formatProfile(pr2, 25))
			}
			cancel2()
			cancel()
		}
	}
}

// startProfile starts V8's CPU profiler in the tab (sampling every 0.5 ms).
func startProfile(t *testing.T, ctx context.Context) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, profiler.Enable, cdp.Empty{}); err != nil {
			return err
		}
		if _, err := cdp.Call(ctx, tg, profiler.SetSamplingInterval, profiler.SetSamplingIntervalParams{Interval: 500}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, profiler.Start, cdp.Empty{})
		return err
	})))
}

// stopProfile stops the profiler startProfile started and returns its
// profile.
func stopProfile(t *testing.T, ctx context.Context) *profiler.Profile {
	t.Helper()
	res, err := chromedp.Run(ctx, func(ctx context.Context, tg *chromedp.Target) (profiler.StopResult, error) {
		return cdp.Call(ctx, tg, profiler.Stop, cdp.Empty{})
	})
	require.NoError(t, err)
	return res.Profile
}
