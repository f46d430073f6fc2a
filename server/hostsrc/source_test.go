package hostsrc

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateName(t *testing.T) {
	tests := []struct {
		name    string
		ifname  string
		wantErr string // "" for a valid name
	}{
		{"lo", "lo", ""},
		{"fifteen bytes is the limit", "abcdefghijklmno", ""},
		{"vlan style", "eth0.100", ""},
		{"empty", "", "empty"},
		{"path", "../etc", "'/'"},
		{"slash", "eth/0", "'/'"},
		{"dot", ".", "directory name"},
		{"dotdot", "..", "directory name"},
		{"twenty bytes", "abcdefghijklmnopqrst", "20 bytes, at most 15 (IFNAMSIZ-1)"},
		{"sixteen bytes", "abcdefghijklmnop", "16 bytes"},
		{"colon (alias)", "eth0:1", "':'"},
		{"space", "eth 0", "white space"},
		{"newline", "eth0\n", "white space"},
		{"NUL", "eth0\x00", "NUL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateName(tc.ifname)
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrBadName)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

// Lines as kernels of each era print them (softnet_seq_show).
const (
	softnet15 = "0000000f 00000001 00000002 00000000 00000000 00000000 00000000 00000000 00000000 00000003 00000004 00000005 00000000 00000002 00000003\n" +
		"00000c9f 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000001 00000000 00000000\n"
	softnet13 = "0019e4b5 00000000 0000001a 00000000 00000000 00000000 00000000 00000000 00000000 00000007 00000000 00000001 00000000\n" +
		"ffffffff 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000003\n"
	softnet11 = "6dcad223 00000000 00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000009\n" +
		"6f0e1565 0000000a 00000002 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n"
)

func TestParseSoftnet(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []SoftnetCPU
		wantErr string
	}{
		{
			name: "15 columns (6.x): queue lengths split",
			in:   softnet15,
			want: []SoftnetCPU{
				{CPU: 0, Processed: 0xf, Dropped: 1, TimeSqueeze: 2, ReceivedRPS: 3, FlowLimitCount: 4, BacklogLen: 5, InputQlen: 2, ProcessQlen: 3, Columns: 15},
				{CPU: 1, Processed: 0xc9f, Columns: 15},
			},
		},
		{
			name: "13 columns (5.10): CPU id printed, CPU 1 offline",
			in:   softnet13,
			want: []SoftnetCPU{
				{CPU: 0, Processed: 0x19e4b5, TimeSqueeze: 0x1a, ReceivedRPS: 7, BacklogLen: 1, Columns: 13},
				{CPU: 3, Processed: 0xffffffff, Columns: 13},
			},
		},
		{
			name: "11 columns (before 5.10): CPU is the line position",
			in:   softnet11,
			want: []SoftnetCPU{
				{CPU: 0, Processed: 0x6dcad223, TimeSqueeze: 1, FlowLimitCount: 9, Columns: 11},
				{CPU: 1, Processed: 0x6f0e1565, Dropped: 0xa, TimeSqueeze: 2, Columns: 11},
			},
		},
		{
			name: "no trailing newline, upper case hex",
			in:   "0000000A 00000000 0000000B",
			want: []SoftnetCPU{{CPU: 0, Processed: 10, TimeSqueeze: 11, Columns: 3}},
		},
		{name: "empty", in: "", want: []SoftnetCPU{}},
		{
			name:    "not hex",
			in:      "0000000f 00000000 00000000\n0000000f zz000000 00000000\n",
			wantErr: `line 2 "0000000f zz000000 00000000": column 2: column is not a hex number`,
		},
		{
			name:    "too few columns",
			in:      softnet11 + "00000001 00000002\n",
			wantErr: `line 3 "00000001 00000002": 2 columns, want at least 3`,
		},
		{
			name:    "blank line in the middle",
			in:      "00000001 00000002 00000003\n\n00000001 00000002 00000003\n",
			wantErr: "line 2",
		},
		{
			name:    "wider than 32 bits",
			in:      "100000000 00000000 00000000\n",
			wantErr: "line 1 \"100000000 00000000 00000000\": column 1: column wider than 32 bits",
		},
		{
			name:    "too many columns",
			in:      strings.Repeat("0 ", 40) + "\n",
			wantErr: "line 1",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSoftnet([]byte(tc.in), nil)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				assert.Contains(t, err.Error(), softnetPath)
				return
			}
			require.NoError(t, err)
			if len(tc.want) == 0 {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseSoftnetReusesDst(t *testing.T) {
	dst := make([]SoftnetCPU, 0, 8)
	in := []byte(softnet15)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		dst, err = ParseSoftnet(in, dst)
		if err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs, "parsing into a large enough dst must not allocate")
	assert.Len(t, dst, 2)
}

func TestParseDec(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0\n", 0, true},
		{"49397996\n", 49397996, true},
		{"18446744073709551615\n", 1<<64 - 1, true},
		{"18446744073709551616\n", 0, false},
		{"", 0, false},
		{"\n", 0, false},
		{"12a\n", 0, false},
		{"-1\n", 0, false},
	}
	for _, tc := range tests {
		got, ok := parseDec([]byte(tc.in))
		assert.Equal(t, tc.ok, ok, "%q", tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
	}
}

func TestNotesReportedOnce(t *testing.T) {
	var n notes
	var a, b []string
	n.add(&a, "x")
	n.add(&a, "y")
	n.add(&a, "x")
	n.add(&b, "x")
	n.add(&b, "z")
	assert.Equal(t, []string{"x", "y"}, a)
	assert.Equal(t, []string{"z"}, b)
	assert.Equal(t, []string{"x", "y", "z"}, n.all)
}

// FuzzParseSoftnet checks that any text either parses into sane entries or
// gives an error naming a line, and never panics.
func FuzzParseSoftnet(f *testing.F) {
	for _, s := range []string{softnet15, softnet13, softnet11, "", "\n", "1 2", "zz"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseSoftnet(data, nil)
		if err != nil {
			if !strings.Contains(err.Error(), "line ") {
				t.Fatalf("error does not name the line: %v", err)
			}
			return
		}
		for _, c := range got {
			if c.Columns < softnetMinColumns || c.Columns > softnetMaxColumns {
				t.Fatalf("entry with %d columns: %+v", c.Columns, c)
			}
		}
		if cpus := (&Sample{Softnet: got}).CPUCounters(); len(cpus) > maxCPU {
			t.Fatalf("%d CPUs, at most %d", len(cpus), maxCPU)
		}
	})
}
