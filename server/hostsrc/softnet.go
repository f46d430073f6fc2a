package hostsrc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// softnetPath is printed by softnet_seq_show in net/core/net-procfs.c.
const softnetPath = "/proc/net/softnet_stat"

// SoftnetCPU is one line of /proc/net/softnet_stat: the struct softnet_data
// of one online CPU. The kernel prints 32-bit counters that wrap; subtract
// them as uint32 to get a delta.
//
// Columns, in hex: processed, dropped, time_squeeze, six zeros (once
// fastroute and cpu_collision), received_rps, flow_limit_count (11 columns
// until 5.9); backlog_len and the CPU id (13 columns, 5.10); input_qlen and
// process_qlen (15 columns, 6.x). Fields past Columns are 0.
type SoftnetCPU struct {
	// CPU is the CPU id from column 13; on kernels that do not print it,
	// it is the line's position, which is wrong when a CPU is offline.
	CPU            int
	Processed      uint32 // packets taken off the backlog or a NAPI poll
	Dropped        uint32 // packets dropped because the backlog was full
	TimeSqueeze    uint32 // net_rx_action stopped with work left (budget or time)
	ReceivedRPS    uint32 // RPS IPIs this CPU received
	FlowLimitCount uint32 // packets dropped by the flow limit
	BacklogLen     uint32 // input_qlen + process_qlen at the time of reading
	InputQlen      uint32 // length of input_pkt_queue
	ProcessQlen    uint32 // length of process_queue
	Columns        int    // how many columns the kernel printed
}

// Column positions in a softnet_stat line.
const (
	colProcessed      = 0
	colDropped        = 1
	colTimeSqueeze    = 2
	colReceivedRPS    = 9
	colFlowLimitCount = 10
	colBacklogLen     = 11
	colCPU            = 12
	colInputQlen      = 13
	colProcessQlen    = 14

	softnetMinColumns = 3 // processed, dropped, time_squeeze
	softnetMaxColumns = 32
)

// ParseSoftnet parses the text of /proc/net/softnet_stat into dst[:0] and
// returns it. Newer kernels' extra columns are ignored; a line with fewer
// than three columns, or a column that is not a 32-bit hex number, is an
// error naming the line.
func ParseSoftnet(data []byte, dst []SoftnetCPU) ([]SoftnetCPU, error) {
	dst = dst[:0]
	var cols [softnetMaxColumns]uint32
	for lineNo := 1; len(data) > 0; lineNo++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		n, err := parseHexFields(line, cols[:])
		if err != nil {
			return dst, fmt.Errorf("%s line %d %q: %w", softnetPath, lineNo, line, err)
		}
		if n == 0 && len(data) == 0 {
			break // trailing blank line
		}
		if n < softnetMinColumns {
			return dst, fmt.Errorf("%s line %d %q: %d columns, want at least %d",
				softnetPath, lineNo, line, n, softnetMinColumns)
		}
		c := SoftnetCPU{
			CPU:         lineNo - 1,
			Processed:   cols[colProcessed],
			Dropped:     cols[colDropped],
			TimeSqueeze: cols[colTimeSqueeze],
			Columns:     n,
		}
		col := func(i int) uint32 {
			if i < n {
				return cols[i]
			}
			return 0
		}
		c.ReceivedRPS = col(colReceivedRPS)
		c.FlowLimitCount = col(colFlowLimitCount)
		c.BacklogLen = col(colBacklogLen)
		if n > colCPU {
			c.CPU = int(cols[colCPU])
		}
		c.InputQlen = col(colInputQlen)
		c.ProcessQlen = col(colProcessQlen)
		dst = append(dst, c)
	}
	return dst, nil
}

var (
	errNotHex    = errors.New("column is not a hex number")
	errTooWide   = errors.New("column wider than 32 bits")
	errTooMany   = errors.New("too many columns")
	errEmptyFile = errors.New("no CPU lines")
)

// parseHexFields splits line at spaces and parses each field as hex into
// out, returning how many there were. It never allocates.
func parseHexFields(line []byte, out []uint32) (int, error) {
	n := 0
	for i := 0; i < len(line); {
		if line[i] == ' ' || line[i] == '\t' || line[i] == '\r' {
			i++
			continue
		}
		if n == len(out) {
			return n, errTooMany
		}
		var v uint32
		for ; i < len(line) && line[i] != ' ' && line[i] != '\t' && line[i] != '\r'; i++ {
			d, ok := hexDigit(line[i])
			if !ok {
				return n, fmt.Errorf("column %d: %w", n+1, errNotHex)
			}
			if v>>28 != 0 {
				return n, fmt.Errorf("column %d: %w", n+1, errTooWide)
			}
			v = v<<4 | uint32(d)
		}
		out[n] = v
		n++
	}
	return n, nil
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// softnetFile keeps /proc/net/softnet_stat open; each read is a pread from
// offset 0, which makes the seq_file print the table afresh.
type softnetFile struct {
	f   *os.File
	buf []byte
}

func openSoftnet() (*softnetFile, error) {
	f, err := os.Open(softnetPath)
	if err != nil {
		return nil, err
	}
	return &softnetFile{f: f, buf: make([]byte, 4096)}, nil
}

// read parses the current table into dst[:0]. It allocates only when the
// table outgrows the buffer (many CPUs), and then keeps the larger buffer.
func (s *softnetFile) read(dst []SoftnetCPU) ([]SoftnetCPU, error) {
	off := 0
	for {
		n, err := s.f.ReadAt(s.buf[off:], int64(off))
		off += n
		if err == io.EOF {
			break
		}
		if err != nil {
			return dst[:0], fmt.Errorf("read %s: %w", softnetPath, err)
		}
		if off == len(s.buf) {
			s.buf = append(s.buf, make([]byte, len(s.buf))...)
		}
	}
	dst, err := ParseSoftnet(s.buf[:off], dst)
	if err == nil && len(dst) == 0 {
		err = fmt.Errorf("%s: %w", softnetPath, errEmptyFile)
	}
	return dst, err
}

func (s *softnetFile) close() error { return s.f.Close() }
