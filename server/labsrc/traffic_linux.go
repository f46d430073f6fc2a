//go:build linux

package labsrc

import (
	"errors"
	"net/netip"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Traffic limits.
const (
	// burstWindow is how much sending time the sender's token bucket may
	// hold: after a late wake-up (a loaded machine) it catches up by at
	// most this much, and never sends more than rate*burstWindow packets
	// back to back. Each write runs the receiving veth's NAPI poll on the
	// way out (normally: softirq at local_bh_enable), so a burst does not pile up in
	// veth's 256-entry XDP ring.
	burstWindow = 10 * time.Millisecond
	// recvPoll bounds how long the receiver blocks before it looks at its
	// stop signal.
	recvPoll = 50 * time.Millisecond
	// rcvBuf is the receiving socket's buffer, so that a burst is not lost
	// to a receiver that was briefly descheduled.
	rcvBuf = 8 << 20
	// ringFullBackoff is how long the sender waits before it retries a
	// write the kernel refused because veth's XDP ring was full.
	ringFullBackoff = 50 * time.Microsecond
)

// sender writes the lab's UDP flow from side a at a rate, bounded in count
// and time. Its counters are read while it runs.
type sender struct {
	fd       int // connected UDP socket made in side a
	payload  []byte
	rate     float64
	count    uint64 // 0: until duration
	duration time.Duration
	frame    uint64 // bytes per frame on the wire (Config.Size)

	sent    atomic.Uint64 // writes that succeeded
	errs    atomic.Uint64 // writes that failed; the packet is not sent again
	blocked atomic.Uint64 // writes refused with ENOBUFS (ring full), each retried
	start   atomic.Int64  // unix ns of the first send
	finish  atomic.Int64  // unix ns when it stopped; 0 while running
	done    chan struct{}
}

// udpSocket opens a UDP socket bound to local; with remote valid it is also
// connected. It runs in the calling thread's network namespace.
func udpSocket(local netip.AddrPort, remote netip.AddrPort) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return -1, err
	}
	sa := func(ap netip.AddrPort) *unix.SockaddrInet4 {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	}
	if err := unix.Bind(fd, sa(local)); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if remote.IsValid() {
		if err := unix.Connect(fd, sa(remote)); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// run sends until the count is reached, the duration is over or stop is
// closed. Pacing is a token bucket holding at most burstWindow of tokens.
func (s *sender) run(stop <-chan struct{}) {
	defer close(s.done)
	start := time.Now()
	s.start.Store(start.UnixNano())
	defer func() { s.finish.Store(time.Now().UnixNano()) }()
	burst := max(1, s.rate*burstWindow.Seconds())
	tokens, last := 1.0, start
	wait := time.NewTimer(time.Hour)
	defer wait.Stop()
	for {
		select {
		case <-stop:
			return
		default:
		}
		now := time.Now()
		if now.Sub(start) >= s.duration {
			return
		}
		tokens = min(burst, tokens+now.Sub(last).Seconds()*s.rate)
		last = now
		n := uint64(tokens)
		if s.count > 0 {
			n = min(n, s.count-s.sent.Load())
		}
		for done := uint64(0); done < n; {
			_, err := unix.Write(s.fd, s.payload)
			switch {
			case err == nil:
				s.sent.Add(1)
				done++
			case errors.Is(err, unix.ENOBUFS), errors.Is(err, unix.EAGAIN):
				// veth's XDP ring is full (the receiving NAPI poll is
				// behind, deferred to ksoftirqd on a busy machine): wait
				// for it rather than lose the packet.
				s.blocked.Add(1)
				wait.Reset(ringFullBackoff)
				select {
				case <-stop:
					return
				case <-wait.C:
				}
				if time.Since(start) >= s.duration {
					return
				}
			default:
				s.errs.Add(1)
				done++
			}
		}
		tokens -= float64(n)
		if s.count > 0 && s.sent.Load() >= s.count {
			return
		}
		if tokens < 1 {
			wait.Reset(time.Duration((1 - tokens) / s.rate * float64(time.Second)))
			select {
			case <-stop:
				return
			case <-wait.C:
			}
		}
	}
}

// achieved returns the packets per second reached so far (while running, up
// to now).
func (s *sender) achieved() float64 {
	st := s.start.Load()
	if st == 0 {
		return 0
	}
	end := s.finish.Load()
	if end == 0 {
		end = time.Now().UnixNano()
	}
	if end <= st {
		return 0
	}
	return float64(s.sent.Load()) / (float64(end-st) / 1e9)
}

// receiver drains the lab's flow on side b, as an application would.
type receiver struct {
	fd    int // UDP socket bound to the flow's address in side b
	got   atomic.Uint64
	bytes atomic.Uint64 // UDP payload bytes
	done  chan struct{}
}

func (r *receiver) run(stop <-chan struct{}) {
	defer close(r.done)
	buf := make([]byte, 2048)
	for {
		select {
		case <-stop:
			return
		default:
		}
		n, _, err := unix.Recvfrom(r.fd, buf, 0)
		switch {
		case err == nil:
			r.got.Add(1)
			r.bytes.Add(uint64(n))
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
		default:
			return // the socket is broken; Close will say nothing more
		}
	}
}
