package abuse

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seedEnv sets the seed of the random damage.
const seedEnv = "RINGLAB_ABUSE_SEED"

// storeFiles lists the files of the rooms' store in a state directory,
// whatever the build keeps them in (one database, or a file per room), in
// a fixed order, without the lock and what an earlier start set aside.
func storeFiles(t *testing.T, dir string) []string {
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		n := d.Name()
		if n == "lock" || strings.Contains(n, ".damaged") || strings.Contains(n, ".torn") || strings.HasSuffix(n, ".tmp") {
			return nil
		}
		out = append(out, p)
		return nil
	}))
	return out
}

// storeSpan is the store's files seen as one run of bytes.
type storeSpan struct {
	files []string
	sizes []int64
	total int64
}

func spanOf(t *testing.T, dir string) storeSpan {
	var s storeSpan
	for _, f := range storeFiles(t, dir) {
		st, err := os.Stat(f)
		require.NoError(t, err)
		s.files = append(s.files, f)
		s.sizes = append(s.sizes, st.Size())
		s.total += st.Size()
	}
	return s
}

// flip inverts the byte at offset off of the span.
func (s storeSpan) flip(t *testing.T, off int64) {
	for i, n := range s.sizes {
		if off < n {
			b, err := os.ReadFile(s.files[i])
			require.NoError(t, err)
			b[off] ^= 0xff
			require.NoError(t, os.WriteFile(s.files[i], b, 0o600))
			return
		}
		off -= n
	}
}

// keep truncates the span to its first n bytes.
func (s storeSpan) keep(t *testing.T, n int64) {
	for i, size := range s.sizes {
		require.NoError(t, os.Truncate(s.files[i], min(size, max(n, 0))))
		n -= size
	}
}

// TestDamagedStore: a store with rooms and their logs, damaged while the
// server is down (random bytes flipped, cut to a third, cut to nothing).
// The server starts, never panics, restores every room the damage did
// not reach, and says which it set aside and where the file is kept: a
// truncated store is not taken for an empty one.
func TestDamagedStore(t *testing.T) {
	t.Parallel()
	nRooms := scale(6, 36)
	trials := scale(4, 20)
	const flips = 4
	s := startServer(t, "--rooms-per-addr", "64", "--room-creates", "64", "--room-creates-per-addr", "64")
	var ids []string
	for i := 0; i < nRooms; i++ {
		room, code := s.createRoom(`{"preset":"default"}`)
		require.Equal(t, http.StatusCreated, code)
		inst, _ := join(t, s, room, "instructor")
		for _, c := range []string{`{"type":"step","unit":"packet","n":5}`, `{"type":"pause"}`} {
			inst.command(c)
			r, ok := inst.reply(30 * time.Second)
			require.True(t, ok)
			require.Equal(t, "command", r.Type, "%s", r.Raw)
		}
		inst.c.Close()
		ids = append(ids, room.Room)
	}
	s.kill()
	pristine := s.state
	seed := time.Now().UnixNano()
	if v := os.Getenv(seedEnv); v != "" {
		var err error
		seed, err = strconv.ParseInt(v, 10, 64)
		require.NoError(t, err, seedEnv)
	}
	t.Logf("seed %d (%s=%d repeats this run)", seed, seedEnv, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 27))

	type outcome struct {
		started, panicked, said bool
		restored                int
		log                     string
	}
	run := func(damage func(span storeSpan)) outcome {
		dir := t.TempDir()
		require.NoError(t, os.CopyFS(dir, os.DirFS(pristine)))
		damage(spanOf(t, dir))
		srv := newServer(t, nil, "--state-dir", dir, "--rooms-per-addr", "64", "--room-creates", "64", "--room-creates-per-addr", "64")
		err := srv.tryStart()
		var o outcome
		o.started = err == nil
		if o.started {
			for _, id := range ids {
				if resp := get(t, srv, "/api/rooms/"+id, nil); resp.StatusCode == http.StatusOK {
					o.restored++
				}
			}
		}
		srv.kill() // and wait: its stderr is all read (it may lag the stdout that said it serves)
		log := srv.stderr.String()
		o.panicked = strings.Contains(log, "panic:")
		o.said = strings.Contains(log, "kept=")
		o.log = log
		return o
	}

	started, panicked, worst := 0, 0, nRooms
	for i := 0; i < trials; i++ {
		o := run(func(span storeSpan) {
			for j := 0; j < flips; j++ {
				span.flip(t, rng.Int64N(span.total))
			}
		})
		started += int(b2f(o.started))
		panicked += int(b2f(o.panicked))
		if o.started {
			worst = min(worst, o.restored)
		} else {
			worst = 0
		}
		assert.True(t, o.started, "trial %d: the server starts", i)
		assert.False(t, o.panicked, "trial %d: no panic", i)
		assert.GreaterOrEqual(t, o.restored, nRooms-flips, "trial %d: a flipped byte takes one room at most", i)
		if o.restored < nRooms {
			assert.True(t, o.said, "trial %d: what was set aside is said, and where it is kept: %s", i, o.log)
		}
	}
	figure(t, "stores with flipped bytes the server started on", float64(started), fmt.Sprintf("of %d", trials),
		fmt.Sprintf("%d bytes flipped each; %d panicked; at worst %d of %d rooms restored", flips, panicked, worst, nRooms))

	for _, cut := range []struct {
		name string
		frac float64
	}{{"a third", 1.0 / 3}, {"0 bytes", 0}} {
		o := run(func(span storeSpan) { span.keep(t, int64(float64(span.total)*cut.frac)) })
		figure(t, "store cut to "+cut.name, float64(o.restored), fmt.Sprintf("of %d rooms restored", nRooms),
			fmt.Sprintf("started %v, panicked %v, said what it set aside %v", o.started, o.panicked, o.said))
		assert.True(t, o.started, "cut to %s: the server starts", cut.name)
		assert.False(t, o.panicked, "cut to %s: no panic", cut.name)
		assert.True(t, o.said, "cut to %s: the damage is said, with the file kept, not taken for an empty store", cut.name)
	}
}
