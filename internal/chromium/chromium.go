// Package chromium finds the Chromium that drives the playground in the
// browser tests and in `ringlab-bench`, and gives the flags every such
// browser runs with.
package chromium

import (
	"os"
	"os/exec"

	"github.com/chromedp/chromedp"
)

// PathEnv names a Chromium binary and overrides the search.
const PathEnv = "RINGLAB_CHROMIUM"

// Path returns the path of a Chromium binary, or "" when none is
// installed.
func Path() string {
	if p := os.Getenv(PathEnv); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Missing says what to do when Path finds nothing.
const Missing = "needs Chromium (apt-get install -y chromium, or " + PathEnv + "=/path/to/chromium)"

// Options are the flags of a headless Chromium at path with its profile in
// dir (an empty directory is a fresh profile: nothing cached) and a window
// of w x h CSS pixels. WebGL is software-rendered (no GPU).
func Options(path, dir string, w, h int) []chromedp.ExecAllocatorOption {
	return append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(w, h),
	)
}
