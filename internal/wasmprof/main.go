// Command wasmprof profiles the engine running in WebAssembly in headless
// Chromium: it serves a web directory, opens game.html?bench=engine (the
// xdp-drop preset as fast as it goes), samples the page with the DevTools
// CPU profiler and prints the functions by share of samples. Build the
// wasm without -s -w first, so the functions keep their names:
//
//	cp -r web /tmp/webprof
//	GOOS=js GOARCH=wasm go build -trimpath -o /tmp/webprof/main.wasm ./wasm
//	rm /tmp/webprof/main.wasm.gz
//	go run ./internal/wasmprof -dir /tmp/webprof
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/profiler"
	"github.com/chromedp/chromedp"

	"ringlab/internal/chromium"
)

func main() {
	dir := flag.String("dir", "web", "the web `directory` to serve, with an unstripped main.wasm")
	warm := flag.Duration("warmup", 3*time.Second, "run the engine this long before sampling")
	d := flag.Duration("seconds", 8*time.Second, "sample for this long")
	top := flag.Int("top", 40, "print this many functions")
	flag.Parse()
	if err := run(*dir, *warm, *d, *top); err != nil {
		log.Fatalf("wasmprof: %v", err)
	}
}

func run(dir string, warm, d time.Duration, top int) error {
	if _, err := os.Stat(dir + "/main.wasm"); err != nil {
		return err
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	profile, err := os.MkdirTemp("", "wasmprof")
	if err != nil {
		return err
	}
	defer os.RemoveAll(profile)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), chromium.Options(chromium.Path(), profile, 800, 600)...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, warm+d+2*time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/game.html?bench=engine")); err != nil {
		return err
	}
	for started := false; !started; {
		if started, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`!!window.ringlabBench`)); err != nil {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
	time.Sleep(warm)
	if _, err := chromedp.Call(ctx, profiler.Enable, cdp.Empty{}); err != nil {
		return err
	}
	if _, err := chromedp.Call(ctx, profiler.SetSamplingInterval, profiler.SetSamplingIntervalParams{Interval: 200}); err != nil {
		return err
	}
	if _, err := chromedp.Call(ctx, profiler.Start, cdp.Empty{}); err != nil {
		return err
	}
	time.Sleep(d)
	res, err := chromedp.Call(ctx, profiler.Stop, cdp.Empty{})
	if err != nil {
		return err
	}
	nodes := map[int64]*profiler.ProfileNode{}
	for _, n := range res.Profile.Nodes {
		nodes[n.ID] = n
	}
	self := map[string]int{}
	for _, id := range res.Profile.Samples {
		if n := nodes[id]; n != nil {
			self[n.CallFrame.FunctionName]++
		}
	}
	names := make([]string, 0, len(self))
	for k := range self {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return self[names[i]] > self[names[j]] })
	fmt.Printf("%d samples over %v, self time by function:\n", len(res.Profile.Samples), d)
	for i, n := range names {
		if i == top {
			break
		}
		fmt.Printf("%6.2f%%  %s\n", 100*float64(self[n])/float64(len(res.Profile.Samples)), n)
	}
	return nil
}
