// Package testenv lets a test ask for something the machine may lack (root,
// Chromium, network namespaces) and skip with the reason printed when it is
// absent. With RINGLAB_CI=1 in the environment, as .ci/run sets it, such a
// skip becomes a failure: CI always runs every test. Buffer collects a
// server's output while a test reads it.
package testenv

import (
	"os"
	"testing"

	"ringlab/internal/chromium"
)

// SkipUnderRace skips a test that runs only pure code (the engine, the
// controller) under the race detector, which has nothing of theirs to
// find and slows them some 25 times; why says what it runs. make test's
// second pass runs the test without the detector, so it is a skip, not a
// missing dependency, and RINGLAB_CI leaves it one.
func SkipUnderRace(t testing.TB, why string) {
	t.Helper()
	if Race {
		t.Skip("skipped under the race detector (" + why + "): make test runs it without it")
	}
}

// CIEnv is the environment variable that turns skips into failures.
const CIEnv = "RINGLAB_CI"

// InCI reports whether missing dependencies must fail rather than skip.
func InCI() bool { return os.Getenv(CIEnv) == "1" }

// Missing skips t, or fails it when InCI, saying what is missing and why the
// test needs it.
func Missing(t testing.TB, what string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s (%s=1, so this test may not skip)", what, CIEnv)
	}
	t.Skipf("skipped: %s (set %s=1 to make this a failure)", what, CIEnv)
}

// RequireRoot skips (or fails in CI) unless the test runs as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Missing(t, "needs root")
	}
}

// ChromiumPath returns the path of a Chromium binary, or "" when none is
// installed (chromium.Path: RINGLAB_CHROMIUM overrides the search).
func ChromiumPath() string { return chromium.Path() }

// RequireChromium returns the Chromium path, or skips (fails in CI) when
// none is installed.
func RequireChromium(t testing.TB) string {
	t.Helper()
	p := ChromiumPath()
	if p == "" {
		Missing(t, chromium.Missing)
	}
	return p
}
