package labsrc

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSpec(t *testing.T) {
	def := DefaultConfig()
	with := func(f func(*Config)) Config {
		c := DefaultConfig()
		f(&c)
		return c
	}
	cases := []struct {
		arg  string
		want Config
	}{
		{"", def},
		{"xdp_count_proto", def},
		{"xdp_drop", with(func(c *Config) { c.Program = "xdp_drop" })},
		{"xdp_drop,rate=50000,size=128", with(func(c *Config) { c.Program, c.Rate, c.Size = "xdp_drop", 50000, 128 })},
		{"rate=1000", with(func(c *Config) { c.Rate = 1000 })},
		{"xdp_pass,count=5000,duration=30s", with(func(c *Config) { c.Program, c.Count, c.Duration = "xdp_pass", 5000, 30*time.Second })},
		{"xdp_drop_udp_port", with(func(c *Config) { c.Program, c.Port = "xdp_drop_udp_port", FlowPort })},
		{"xdp_drop_udp_port,port=53", with(func(c *Config) { c.Program, c.Port = "xdp_drop_udp_port", 53 })},
		{"xdp_pass,size=60", with(func(c *Config) { c.Program, c.Size = "xdp_pass", 60 })},
		{"xdp_pass,size=1514,rate=1000000", with(func(c *Config) { c.Program, c.Size, c.Rate = "xdp_pass", 1514, MaxRate })},
	}
	for _, tc := range cases {
		t.Run(tc.arg, func(t *testing.T) {
			got, err := ParseSpec(tc.arg)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			again, err := ParseSpec(got.String())
			require.NoError(t, err, "String %q parses", got.String())
			assert.Equal(t, got, again, "String round-trips")
		})
	}
}

func TestParseSpecErrors(t *testing.T) {
	cases := []struct {
		arg, says string
	}{
		{"xdp_nothing", `program "xdp_nothing" is not one the lab runs; programs: xdp_count_proto, xdp_pass`},
		{"xdp_redirect_dev", "redirects to an interface by ifindex"},
		{"XDP_DROP", "is not one the lab runs"},
		{"xdp_drop,rate=0", "rate=0: want 1..1000000"},
		{"xdp_drop,rate=2000000", "rate=2000000: want 1..1000000"},
		{"xdp_drop,rate=fast", "rate=fast: not a whole number"},
		{"xdp_drop,rate=1e3", "not a whole number"},
		{"xdp_drop,size=59", "size=59: want 60..1514"},
		{"xdp_drop,size=1515", "size=1515: want 60..1514"},
		{"xdp_drop,count=0", "count=0: want 1..1000000000"},
		{"xdp_drop,duration=forever", "duration=forever: want a Go duration"},
		{"xdp_drop,duration=2h", "duration=2h: want 1ms..1h0m0s"},
		{"xdp_drop,rate=1,rate=2", "rate given twice"},
		{"xdp_drop,speed=1", `unknown option "speed"; options: rate, size, count, duration, port`},
		{"xdp_drop,", `"": want KEY=VALUE`},
		{"xdp_drop,,rate=1", `"": want KEY=VALUE`},
		{"xdp_drop,rate", `"rate": want KEY=VALUE`},
		{"xdp_drop,rate=", `"rate=": want KEY=VALUE`},
		{"rate=1,xdp_drop", `"xdp_drop": want KEY=VALUE`},
		{"xdp_drop,port=53", "port= only configures xdp_drop_udp_port, not xdp_drop"},
		{"xdp_drop_udp_port,port=0", "port=0: want 1..65535"},
		{",", `program "" is not one the lab runs`},
	}
	for _, tc := range cases {
		t.Run(tc.arg, func(t *testing.T) {
			_, err := ParseSpec(tc.arg)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrBadSpec)
			assert.Contains(t, err.Error(), tc.says)
		})
	}
}

func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"", "xdp_drop,rate=50000,size=128", "xdp_drop_udp_port,port=53,count=9", "rate=1,duration=1s", ",=,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		c, err := ParseSpec(arg)
		if err != nil {
			return
		}
		again, err := ParseSpec(c.String())
		if err != nil {
			t.Fatalf("%q parsed to %+v whose String %q does not parse: %v", arg, c, c.String(), err)
		}
		if again != c {
			t.Fatalf("%q: %+v round-trips to %+v", arg, c, again)
		}
	})
}

func TestRootCheck(t *testing.T) {
	assert.NoError(t, checkRoot(func() int { return 0 }))
	err := checkRoot(func() int { return 1000 })
	require.ErrorIs(t, err, ErrNotRoot)
	assert.Contains(t, err.Error(), "uid 1000")
	assert.Contains(t, err.Error(), "run ringlab as root")
}

func TestOpenRefusesWithoutRootAndTouchesNothing(t *testing.T) {
	defer func(f func() int) { geteuid = f }(geteuid)
	geteuid = func() int { return 1000 }
	before, err := Namespaces()
	require.NoError(t, err)
	_, err = Open("xdp_drop")
	require.ErrorIs(t, err, ErrNotRoot)
	after, err := Namespaces()
	require.NoError(t, err)
	assert.Equal(t, before, after)

	_, err = Open("xdp_nothing")
	assert.ErrorIs(t, err, ErrBadSpec, "a bad spec is reported before the root check")
}

func TestNSNames(t *testing.T) {
	n := nsName{owner: owner{pid: 1234, start: 98765}, seq: 3, side: sideB}
	assert.Equal(t, "ringlab-lab-1234-98765-3-b", n.String())
	got, ok := parseNSName(n.String())
	require.True(t, ok)
	assert.Equal(t, n, got)
	for _, bad := range []string{
		"ringlab-lab-", "ringlab-lab-1234-98765-3", "ringlab-lab-1234-98765-3-c", "ringlab-lab-x-98765-3-a",
		"ringlab-lab-01234-98765-3-a", "ringlab-lab-+1234-98765-3-a", "ringlab-lab-0-1-1-a", "other-1234-98765-3-a",
		"ringlab-lab-1234-98765-3-a-b", "ringlab-lab-1234--3-a",
	} {
		_, ok := parseNSName(bad)
		assert.False(t, ok, bad)
	}
}

func TestParseStatStart(t *testing.T) {
	// Field 22 after a command name with spaces and parentheses.
	line := "4242 (a (weird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 777123 1000 10"
	v, err := parseStatStart(line)
	require.NoError(t, err)
	assert.Equal(t, uint64(777123), v)
	_, err = parseStatStart("4242 (short) S 1 2")
	assert.Error(t, err)
	_, err = parseStatStart("no parentheses")
	assert.Error(t, err)
}

func TestOwnerDead(t *testing.T) {
	dir := t.TempDir()
	defer func(p string) { procRoot = p }(procRoot)
	procRoot = dir
	stat := func(pid int, start uint64) {
		p := filepath.Join(dir, strconv.Itoa(pid))
		require.NoError(t, os.MkdirAll(p, 0o755))
		line := strconv.Itoa(pid) + " (ringlab) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 " + strconv.FormatUint(start, 10) + " 0 0\n"
		require.NoError(t, os.WriteFile(filepath.Join(p, "stat"), []byte(line), 0o644))
	}
	stat(100, 5000)
	assert.False(t, owner{pid: 100, start: 5000}.dead(), "alive")
	assert.True(t, owner{pid: 100, start: 4000}.dead(), "pid reused by a later process")
	assert.True(t, owner{pid: 200, start: 5000}.dead(), "no such process")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "300", "stat"), 0o755)) // unreadable as a file
	assert.False(t, owner{pid: 300, start: 1}.dead(), "when /proc cannot say, alive")
}
