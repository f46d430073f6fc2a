//go:build linux

package labsrc

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// snmpFile is side b's /proc/net/snmp, opened from a thread in side b so
// that every read shows that namespace's counters (a procfs net file keeps
// the namespace of the task it was opened through). The lab reports its
// Udp line, named as nstat names them (UdpInDatagrams, UdpRcvbufErrors,
// ...): what the receiving socket's stack saw, including datagrams lost to
// a full socket buffer.
type snmpFile struct {
	f   *os.File
	buf []byte
}

// snmpMax bounds what is read of /proc/net/snmp (about 1.5 KB today).
const snmpMax = 16 << 10

// openSNMP opens the calling thread's network namespace's snmp file.
func openSNMP() (*snmpFile, error) {
	f, err := os.Open("/proc/thread-self/net/snmp")
	if err != nil {
		return nil, err
	}
	return &snmpFile{f: f, buf: make([]byte, snmpMax)}, nil
}

// readUDP adds the Udp counters to dst as UdpNAME.
func (s *snmpFile) readUDP(dst map[string]uint64) error {
	n, err := s.f.ReadAt(s.buf, 0)
	if err != nil && err != io.EOF {
		return fmt.Errorf("read %s: %w", s.f.Name(), err)
	}
	return parseSNMP(string(s.buf[:n]), "Udp", dst)
}

func (s *snmpFile) close() error { return s.f.Close() }

// parseSNMP finds the two lines of a protocol ("Udp: names" then "Udp:
// values") and adds PROTO+name = value to dst.
func parseSNMP(text, proto string, dst map[string]uint64) error {
	var names []string
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, proto+": ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if names == nil {
			names = f
			continue
		}
		if len(f) != len(names) {
			return fmt.Errorf("snmp: %s has %d names and %d values", proto, len(names), len(f))
		}
		for i, v := range f {
			x, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return fmt.Errorf("snmp: %s%s = %q: %w", proto, names[i], v, err)
			}
			dst[proto+names[i]] = x
		}
		return nil
	}
	return fmt.Errorf("snmp: no %s lines", proto)
}
