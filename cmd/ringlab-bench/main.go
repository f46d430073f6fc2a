// Command ringlab-bench runs the performance cases of BENCHMARKS.md and
// says which targets hold (internal/bench). It is a binary of its own so
// that the shipped ringlab does not link the browser driver (chromedp)
// the page's cases need.
package main

import (
	"os"

	"ringlab/internal/bench"
)

func main() {
	os.Exit(bench.Run(os.Args[1:], os.Stdout, os.Stderr))
}
