package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"ringlab/server/rooms"
)

// stateOwnerFile, in a state directory, names the serve that holds its
// store: "pid N addr HOST:PORT". It is written once the store is held
// and read only by a serve the store refused, to say who holds it.
const stateOwnerFile = "owner"

// portsToTry is how many ports after a taken one listenError tries, to
// suggest one that is free.
const portsToTry = 20

// stateDirName is the state directory of the address a server listens on
// (net.Addr's form: "127.0.0.1:8080", "[::]:8080"), with ':' written '_'
// so that the name is one a file system takes: "127.0.0.1_8080".
func stateDirName(addr string) string { return strings.ReplaceAll(addr, ":", "_") }

// openState opens the rooms store serve keeps: cfg.stateDir's, else one
// in cfg.stateBase for the address it listens on (ln), else none (rooms
// in memory, as on a random port, which no restart finds again). A store
// another serve holds is an error naming that serve and the flag that
// gives this one its own.
func openState(cfg serveConfig, ln net.Addr, log *slog.Logger) (*rooms.Store, error) {
	dir := cfg.stateDir
	if dir == "" && cfg.stateBase != "" {
		if _, port, err := net.SplitHostPort(cfg.addr); err == nil && port == "0" {
			log.Info("workshop rooms are kept in memory: a random port (--addr " + cfg.addr + ") is not found again after a restart; --state-dir keeps them")
			return nil, nil
		}
		dir = filepath.Join(cfg.stateBase, stateDirName(ln.String()))
	}
	if dir == "" {
		return nil, nil
	}
	store, err := rooms.OpenStore(filepath.Join(dir, rooms.StoreDir))
	if errors.Is(err, rooms.ErrStoreInUse) {
		holder := "another ringlab serve"
		if b, rerr := os.ReadFile(filepath.Join(dir, stateOwnerFile)); rerr == nil {
			holder = "ringlab serve (" + strings.TrimSpace(string(b)) + ")"
		}
		return nil, fmt.Errorf("--state-dir %s is in use by %s: give this server a directory of its own with --state-dir DIR, or --state-dir= to keep its rooms in memory (without --state-dir each --addr has its own)", dir, holder)
	}
	if err != nil {
		return nil, err
	}
	owner := fmt.Sprintf("pid %d addr %s\n", os.Getpid(), ln)
	if err := os.WriteFile(filepath.Join(dir, stateOwnerFile), []byte(owner), 0o600); err != nil {
		log.Warn("writing the state directory's owner", "err", err)
	}
	if legacy := filepath.Join(dir, rooms.LegacyStoreFile); fileExists(legacy) {
		log.Warn("the rooms of an older ringlab are not restored: its store is not read any more; delete it when it is no longer wanted", "file", legacy)
	}
	log.Info("workshop rooms are kept", "store", store.Path())
	return store, nil
}

// listenError says why serve could not listen on addr; for an address in
// use, which one and how to choose another, with a port that was free a
// moment ago.
func listenError(addr string, err error) error {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	other := "HOST:PORT"
	if host, port, perr := net.SplitHostPort(addr); perr == nil {
		if p, aerr := strconv.Atoi(port); aerr == nil {
			other = net.JoinHostPort(host, strconv.Itoa(p+1))
			for q := p + 1; q <= p+portsToTry && q < 1<<16; q++ {
				try := net.JoinHostPort(host, strconv.Itoa(q))
				if ln, lerr := net.Listen("tcp", try); lerr == nil {
					ln.Close()
					other = try
					break
				}
			}
		}
	}
	// The bare errno: net's "listen tcp ADDR: bind:" would name the address twice.
	return fmt.Errorf("listening on %s: %w: another server (another ringlab serve?) has it; choose another address with --addr %s (make run ADDR=%s)", addr, syscall.EADDRINUSE, other, other)
}
