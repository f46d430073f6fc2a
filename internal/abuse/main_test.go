package abuse

import (
	"flag"
	"os"
	"strconv"
	"testing"

	"ringlab/internal/testenv"
)

// parallelTests is how many tests run at once unless -parallel is given:
// each waits more than it computes (the package's doc). Under the race
// detector the suite's own floods and readers compute several times
// more, and four at once on two loaded cores starved them (a QR flood
// too slow to pass its burst, refusals spread over more log periods):
// there the default, GOMAXPROCS, holds.
const parallelTests = 4

func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given && !testenv.Race {
		flag.Set("test.parallel", strconv.Itoa(parallelTests))
	}
	os.Exit(m.Run())
}
