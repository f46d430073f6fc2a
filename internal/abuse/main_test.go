package abuse

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// parallelTests is how many tests run at once unless -parallel is given:
// each waits more than it computes (the package's doc).
const parallelTests = 4

func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(parallelTests))
	}
	os.Exit(m.Run())
}
