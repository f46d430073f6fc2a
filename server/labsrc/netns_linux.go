//go:build linux

package labsrc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Network namespaces are entered only by throwaway threads: inNS runs a
// function on a goroutine that locks its OS thread, joins the namespace and
// never unlocks, so the Go runtime ends the thread when the goroutine
// returns instead of handing a thread in a lab namespace to other code.
// Sockets, netlink handles and XDP links made there keep their namespace
// after the thread is gone.

// inNS runs f on a fresh thread that has joined the network namespace ns.
func inNS(ns netns.NsHandle, f func() error) error {
	return onThread(func() error {
		if err := unix.Setns(int(ns), unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("setns: %w", err)
		}
		return f()
	})
}

// inNSWithSysfs is inNS with a private mount namespace in which /sys is a
// sysfs mounted from inside ns, so that /sys/class/net lists ns's
// interfaces (a sysfs mount shows the network namespace it was mounted
// from). Mounts are made slaves first, so nothing propagates back to the
// machine's mount namespace; the mount namespace goes with the thread and
// files opened under /sys stay valid.
func inNSWithSysfs(ns netns.NsHandle, f func() error) error {
	return inNS(ns, func() error {
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return fmt.Errorf("unshare mount namespace: %w", err)
		}
		if err := unix.Mount("", "/", "", unix.MS_SLAVE|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("make mounts slaves: %w", err)
		}
		if err := unix.Mount("sysfs", "/sys", "sysfs", unix.MS_NOSUID|unix.MS_NOEXEC|unix.MS_NODEV|unix.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("mount sysfs: %w", err)
		}
		return f()
	})
}

// onThread runs f on a goroutine locked to its own OS thread, which the
// runtime discards afterwards.
func onThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		errc <- f()
	}()
	return <-errc
}

// nsPath is where the namespace name is bind-mounted.
func nsPath(name string) string { return filepath.Join(netnsDir, name) }

// createNS makes a new network namespace, bind-mounts it at nsPath(name)
// (as `ip netns add` does), turns IPv6 off in it for every interface made
// later (net.ipv6.conf.{all,default}.disable_ipv6=1, so no neighbour
// discovery or MLD frames appear) and returns a handle to it. The name must
// not exist yet. On failure nothing is left behind.
func createNS(name string) (netns.NsHandle, error) {
	h := netns.None()
	err := onThread(func() error {
		if err := os.MkdirAll(netnsDir, 0o755); err != nil {
			return err
		}
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unshare network namespace: %w", err)
		}
		p := nsPath(name)
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
		if err != nil {
			return err
		}
		f.Close()
		if err := unix.Mount("/proc/thread-self/ns/net", p, "none", unix.MS_BIND, ""); err != nil {
			os.Remove(p)
			return fmt.Errorf("bind-mount %s: %w", p, err)
		}
		if err := disableIPv6("all", "default"); err != nil {
			deleteNS(name)
			return err
		}
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			deleteNS(name)
			return err
		}
		h = netns.NsHandle(fd)
		return nil
	})
	if err != nil {
		return netns.None(), fmt.Errorf("lab: create namespace %s: %w", name, err)
	}
	return h, nil
}

// disableIPv6 writes 1 to net.ipv6.conf.IF.disable_ipv6 for each IF in the
// calling thread's network namespace. A kernel without IPv6 has nothing to
// turn off.
func disableIPv6(ifs ...string) error {
	for _, i := range ifs {
		p := "/proc/sys/net/ipv6/conf/" + i + "/disable_ipv6"
		err := os.WriteFile(p, []byte("1\n"), 0o644)
		if errors.Is(err, fs.ErrNotExist) && !ipv6Present() {
			return nil
		}
		if err != nil {
			return fmt.Errorf("disable IPv6 on %s: %w", i, err)
		}
	}
	return nil
}

func ipv6Present() bool {
	_, err := os.Stat("/proc/sys/net/ipv6")
	return err == nil
}

// nsID identifies a namespace: the device and inode of its nsfs file.
type nsID struct{ dev, ino uint64 }

func handleID(h netns.NsHandle) (nsID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(h), &st); err != nil {
		return nsID{}, err
	}
	return nsID{uint64(st.Dev), st.Ino}, nil
}

// pathID returns what nsPath(name) refers to now.
func pathID(name string) (nsID, error) {
	var st unix.Stat_t
	if err := unix.Stat(nsPath(name), &st); err != nil {
		return nsID{}, err
	}
	return nsID{uint64(st.Dev), st.Ino}, nil
}

// deleteNS removes the bind mount and file of a namespace, as `ip netns
// delete` does; the namespace itself goes away once nothing holds it. A
// name that is already gone, or a file that is no longer mounted, is not
// an error.
func deleteNS(name string) error {
	p := nsPath(name)
	err := unix.Unmount(p, unix.MNT_DETACH)
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("lab: unmount %s: %w", p, err)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("lab: remove %s: %w", p, err)
	}
	return nil
}

// Namespaces lists the lab namespaces that exist now (of any process), by
// name, sorted. Names with the prefix that do not parse are listed too:
// they are not removed by CleanLeftovers, but a person should see them.
func Namespaces() ([]string, error) {
	entries, err := os.ReadDir(netnsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lab: list %s: %w", netnsDir, err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), NamePrefix) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// CleanLeftovers removes the lab namespaces whose creating process has
// exited (a lab that crashed or was killed), and with them their veth
// pairs, and returns the names it removed. Namespaces of live processes,
// this one included, and names it cannot parse are left alone. It needs
// root.
func CleanLeftovers() ([]string, error) {
	if err := checkRoot(geteuid); err != nil {
		return nil, err
	}
	names, err := Namespaces()
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, name := range names {
		n, ok := parseNSName(name)
		if !ok || !n.dead() {
			continue
		}
		if err := deleteNS(name); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}
