package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"ringlab/internal/cli"
	"ringlab/server/assets"
	"ringlab/server/connlimit"
	"ringlab/server/hostsrc"
	"ringlab/server/httpsec"
	"ringlab/server/hub"
	"ringlab/server/labsrc"
	"ringlab/server/metrics"
	"ringlab/server/promexp"
	"ringlab/server/rooms"
	"ringlab/server/simsrc"
	"ringlab/server/twinsrc"
	"ringlab/server/wspeer"
	"ringlab/web"
)

// HTTP server limits.
const (
	// serveDefaultAddr is loopback only: exposing the server to a LAN (for a
	// workshop) is a deliberate --addr.
	serveDefaultAddr = "127.0.0.1:8080"
	// serveReadHeaderTimeout bounds a request's headers (slowloris): a
	// LAN's browser sends them in milliseconds.
	serveReadHeaderTimeout = 5 * time.Second
	// serveReadTimeout bounds reading a whole request; bodies are small.
	serveReadTimeout = 30 * time.Second
	// serveWriteTimeout bounds writing a response: main.wasm.gz is about
	// 3 MB, a minute is 400 kbit/s. WebSockets clear it when they upgrade.
	serveWriteTimeout = time.Minute
	// serveIdleTimeout closes idle keep-alive connections (a browser
	// opens a new one when it needs it); an idle connection is also the
	// first closed to make room for a newcomer (package connlimit).
	serveIdleTimeout = 30 * time.Second
	// serveMaxHeaderBytes bounds request headers.
	serveMaxHeaderBytes = 64 << 10
	// serveShutdownTimeout bounds a clean shutdown: close frames, the
	// peers' answers (wspeer.CloseGrace) and running requests.
	serveShutdownTimeout = 5 * time.Second
)

// serveConfig is what serve runs with.
type serveConfig struct {
	addr         string
	source       string           // the default source's spec
	sources      []string         // other specs clients may subscribe to
	allowOrigins []string         // origins allowed besides the same host
	publicHosts  []string         // names the server answers besides loopback and addresses
	registry     metrics.Registry // the source kinds
	files        fs.FS            // the page
	stateDir     string           // where rooms are kept; "" keeps them in memory, unless stateBase
	// stateBase, when stateDir is "", is where each address gets a state
	// directory of its own (stateDirName), so that servers on two
	// addresses run side by side; "" keeps rooms in memory.
	stateBase string
	rooms     rooms.Limits
	// metricClients and metricClientsPerAddr bound /ws/metrics (0:
	// hub's defaults).
	metricClients, metricClientsPerAddr int
	replicaMiB                          int              // rooms.Limits.MaxReplicaBytes in MiB
	conns                               connlimit.Limits // 0 fields: connlimit's defaults, within the file descriptor limit
	logger                              *slog.Logger
}

// listFlag is a flag that may be repeated or given a comma-separated list.
type listFlag = cli.ListFlag

// defaultStateBase is where serve keeps its rooms without --state-dir,
// in a directory per address (stateDirName): $XDG_STATE_HOME/ringlab,
// else ~/.local/state/ringlab (the XDG base directory for state that
// outlives a run but is not configuration), else ringlab-state in the
// working directory.
func defaultStateBase() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "ringlab")
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		return filepath.Join(home, ".local", "state", "ringlab")
	}
	return "ringlab-state"
}

// serverOwned reports the source specs a client may not open itself: a
// lab builds network namespaces as root, so serve builds each one it
// allows once, at its start (a twin of a lab too).
func serverOwned(spec string) bool {
	kind, arg, _ := strings.Cut(spec, ":")
	if kind == twinsrc.Kind {
		kind, _, _ = strings.Cut(arg, ":")
	}
	return kind == "lab"
}

func serveCommand() *cobra.Command {
	reg := sourceKinds()
	cfg := serveConfig{registry: reg, files: web.Files}
	var webDir string
	c := &cobra.Command{
		Use:   "serve [flags]",
		Short: "serve the playground, live metrics, workshop rooms and /metrics",
		Long: `Serves the playground page, live metrics over WebSocket (/ws/metrics),
workshop rooms (POST /api/rooms, /ws/room/{id}) and Prometheus /metrics,
until SIGINT or SIGTERM. docs/protocol.md describes the protocol.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if !c.Flags().Changed("allow-source") {
				cfg.sources = defaultAllowed
			}
			if !c.Flags().Changed("state-dir") {
				cfg.stateBase = defaultStateBase()
			}
			return status(runServe(cfg, webDir, c.OutOrStdout(), c.ErrOrStderr()))
		},
	}
	fs := c.Flags()
	fs.StringVar(&cfg.addr, "addr", serveDefaultAddr, "listen address; use a LAN address (or :8080) for a workshop")
	fs.StringVar(&cfg.source, "source", simKind, fmt.Sprintf("metric source: KIND or KIND:ARG, kinds: %s", strings.Join(reg.Kinds(), ", ")))
	fs.Var((*cli.RepeatFlag)(&cfg.sources), "allow-source", "another source `SPEC` clients may subscribe to, options included (lab:xdp_drop,rate=1000); repeatable; host:* is every interface, lab:* every lab program, twin:host:* and twin:lab:* their twins; a lab is built once, when serve starts; an empty value offers none (default "+strings.Join(defaultAllowed, " ")+")")
	fs.Var((*listFlag)(&cfg.allowOrigins), "allow-origin", "a browser `ORIGIN` allowed besides the server's own, as http://host:port (repeatable or comma-separated)")
	fs.Var((*cli.RepeatFlag)(&cfg.publicHosts), "public-host", "a host `NAME` the server answers to besides localhost and IP addresses (the name a class opens; repeatable). Other names get 421: DNS rebinding protection")
	fs.StringVar(&cfg.stateDir, "state-dir", "", "`DIR` where workshop rooms and their logs are kept (in "+rooms.StoreDir+"/, a file per room), so a restart loses none; one server at a time; empty keeps them in memory only (default $XDG_STATE_HOME/ringlab/ADDR, else ~/.local/state/ringlab/ADDR: one per --addr, ':' written '_'; in memory on port 0)")
	fs.StringVar(&webDir, "web", "", "serve the page from `DIR` instead of the files built into the binary (a web/ with main.wasm.gz)")
	fs.IntVar(&cfg.conns.Total, "conns", 0, fmt.Sprintf("TCP connections at once, of every kind; the longest idle is closed to make room for a new one (default %d, or less as the file descriptor limit allows)", connlimit.DefaultTotal))
	fs.IntVar(&cfg.conns.PerAddr, "conns-per-addr", connlimit.DefaultPerAddr, "TCP connections at once from one address (a class behind one NAT is one address)")
	fs.IntVar(&cfg.rooms.MaxRooms, "max-rooms", rooms.MaxRooms, "workshop rooms at once")
	fs.IntVar(&cfg.rooms.MaxRoomsPerAddr, "rooms-per-addr", rooms.MaxRoomsPerAddr, "rooms one address may have created")
	fs.IntVar(&cfg.rooms.MaxStudents, "room-students", rooms.MaxStudentsPerRoom, "the largest class size an instructor may set (students per room)")
	fs.IntVar(&cfg.rooms.ClassSize, "room-class-size", rooms.ClassSize, "a room's class size unless its instructor sets one (at most --room-students); a room in use reserves its class's seats of --room-conns")
	fs.IntVar(&cfg.rooms.CreatesPerMinute, "room-creates", rooms.CreatesPerMinute, "rooms created a minute at most, in all (as many at once); at --max-rooms a room not in use gives its place")
	fs.IntVar(&cfg.rooms.CreatesPerMinutePerAddr, "room-creates-per-addr", rooms.CreatesPerMinutePerAddr, "rooms one address may create a minute (as many at once)")
	fs.IntVar(&cfg.rooms.MaxConns, "room-conns", rooms.MaxConns, "room connections at once, joined or not; each room in use reserves its class size of them (7/8 at most together) for its invited students, the rest shared fairly by address")
	fs.IntVar(&cfg.rooms.MaxConnsPerAddr, "room-conns-per-addr", rooms.MaxConnsPerAddr, "room connections from one address (a class behind one NAT is one address)")
	fs.DurationVar(&cfg.rooms.IdleExpiry, "room-idle", rooms.IdleExpiry, "a room expires after this long with no instructor connected and no command")
	fs.DurationVar(&cfg.rooms.WriteWait, "write-wait", wspeer.WriteWait, fmt.Sprintf("a WebSocket client (a room's or /ws/metrics') that takes no frame within this long is disconnected, whatever it sends; a long message gets %d KiB/s on top", wspeer.MinWriteRate>>10))
	fs.IntVar(&cfg.replicaMiB, "room-replica-mib", rooms.MaxReplicaBytes>>20, "MiB the server's replicas of the rooms' worlds may hold together (each counted with its marks), least recently used dropped first")
	fs.IntVar(&cfg.metricClients, "metric-clients", hub.DefaultMaxClients, "/ws/metrics clients at once; half of them reserved for the students and instructors in rooms in use (one each, by address); past it an address below its share takes the place of the newest client of the address holding most")
	fs.IntVar(&cfg.metricClientsPerAddr, "metric-clients-per-addr", hub.DefaultMaxClientsPerAddr, "/ws/metrics clients from one address")
	c.RegisterFlagCompletionFunc("source", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return reg.Kinds(), cobra.ShellCompDirectiveNoFileComp
	})
	c.MarkFlagDirname("state-dir")
	c.MarkFlagDirname("web")
	return c
}

func runServe(cfg serveConfig, webDir string, stdout, stderr io.Writer) int {
	reg := cfg.registry
	var err error
	if cfg.sources, err = expandSources(cfg.sources); err != nil {
		fmt.Fprintf(stderr, "ringlab serve: --allow-source: %v\n", err)
		return exitUsage
	}
	for _, spec := range append([]string{cfg.source}, cfg.sources...) {
		if !reg.Has(spec) {
			fmt.Fprintf(stderr, "ringlab serve: unknown source kind in %q; registered kinds: %s\n", spec, strings.Join(reg.Kinds(), ", "))
			return exitUsage
		}
	}
	if _, err := wspeer.NewOriginPolicy(cfg.allowOrigins); err != nil {
		fmt.Fprintf(stderr, "ringlab serve: --allow-origin: %v\n", err)
		return exitUsage
	}
	if cfg.rooms.WriteWait <= 0 {
		fmt.Fprintf(stderr, "ringlab serve: --write-wait %v: want a positive duration\n", cfg.rooms.WriteWait)
		return exitUsage
	}
	if _, err := httpsec.NewHostPolicy(cfg.publicHosts); err != nil {
		fmt.Fprintf(stderr, "ringlab serve: --public-host: %v\n", err)
		return exitUsage
	}
	if webDir != "" {
		if st, err := os.Stat(webDir); err != nil || !st.IsDir() {
			fmt.Fprintf(stderr, "ringlab serve: --web %s: not a directory\n", webDir)
			return exitUsage
		}
		cfg.files = os.DirFS(webDir)
	}
	cfg.logger = slog.New(slog.NewTextHandler(stderr, nil))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = serve(ctx, cfg, func(addr net.Addr) {
		urls := listenURLs(addr, net.InterfaceAddrs)
		fmt.Fprintf(stdout, "ringlab: serving %s with source %s (Ctrl-C stops)\n", urls[0], cfg.source)
		if len(urls) > 1 {
			fmt.Fprintf(stdout, "ringlab: also at %s\n", strings.Join(urls[1:], " "))
		}
	})
	if err != nil {
		fmt.Fprintf(stderr, "ringlab serve: %v\n", err)
		return exitFail
	}
	return exitOK
}

// defaultAllowed are the sources serve offers besides --source when
// --allow-source is not given: the engine on the default preset, every
// interface's read-only counters and their twins. A lab (root,
// namespaces, a program in the kernel) is offered only when asked for.
var defaultAllowed = []string{"sim:" + simsrc.DefaultPreset, "host:*", "twin:host:*"}

// expandSources replaces the patterns of --allow-source by the specs they
// stand for, in order, without duplicates: host:* by host:IF for every
// interface (hostsrc.Interfaces, at start), lab:* by lab:PROGRAM for
// every program a lab runs (labsrc.Programs), and twin:host:* and
// twin:lab:* by their twins.
func expandSources(specs []string) ([]string, error) {
	var out []string
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, spec := range specs {
		prefix, star := strings.CutSuffix(spec, "*")
		if !star {
			add(spec)
			continue
		}
		var args []string
		switch strings.TrimPrefix(prefix, twinsrc.Kind+":") {
		case "host:":
			ifaces, err := hostsrc.Interfaces()
			if err != nil {
				continue // not Linux: no interfaces to offer
			}
			args = ifaces
		case "lab:":
			args = labsrc.Programs
		default:
			return nil, fmt.Errorf("%q: a * stands for every interface (host:*, twin:host:*) or every lab program (lab:*, twin:lab:*)", spec)
		}
		for _, a := range args {
			add(prefix + a)
		}
	}
	return out, nil
}

// serve runs the server until ctx is done, then shuts it down cleanly:
// WebSocket clients get a 1001 close frame, running requests finish, the
// source is closed. ready is called with the bound address once the
// server accepts connections.
func serve(ctx context.Context, cfg serveConfig, ready func(net.Addr)) error {
	log := cfg.logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	static, err := assets.New(cfg.files)
	if err != nil {
		return err
	}
	if !static.WasmBuilt() {
		log.Warn("the browser engine is not embedded: run `make wasm` and rebuild (`make run` does both); the page says so too")
	}
	origins, err := wspeer.NewOriginPolicy(cfg.allowOrigins)
	if err != nil {
		return fmt.Errorf("--allow-origin: %w", err)
	}
	hosts, err := httpsec.NewHostPolicy(cfg.publicHosts)
	if err != nil {
		return fmt.Errorf("--public-host: %w", err)
	}
	// Listen first: the address names the default state directory, and a
	// taken one is the likelier mistake. The server closes ln when it
	// shuts down; the deferred Close is for the returns before it serves.
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return listenError(cfg.addr, err)
	}
	defer ln.Close()
	store, err := openState(cfg, ln.Addr(), log)
	if err != nil {
		return err
	}
	if store != nil {
		defer store.Close()
	}
	src, err := cfg.registry.Open(cfg.source)
	if err != nil {
		return err
	}
	src = metrics.Serialized(src) // shared by the hub and /metrics
	defer func() {
		if err := src.Close(); err != nil {
			log.Warn("closing the source", "source", cfg.source, "err", err)
		}
	}()

	// The other sources: one per spec shared by its clients, a lab built
	// here, now, and never by a client.
	pool := metrics.NewPool(cfg.registry.Open, metrics.DefaultLinger, serverOwned)
	defer func() {
		if err := pool.Close(); err != nil {
			log.Warn("closing the sources", "err", err)
		}
	}()
	for _, spec := range cfg.sources {
		if serverOwned(spec) && spec != cfg.source {
			if err := pool.Pin(spec); err != nil {
				return fmt.Errorf("--allow-source %s: %w", spec, err)
			}
		}
	}
	var roomReg *rooms.Registry // set below, before anything is served
	metricsHub, err := hub.New(hub.Options{Default: src, Open: pool.Open, Sources: cfg.sources, Origins: origins, Logger: log,
		MaxClients: cfg.metricClients, MaxClientsPerAddr: cfg.metricClientsPerAddr, WriteWait: cfg.rooms.WriteWait,
		Classes: func(addr string) int { return roomReg.ClassMembers(addr) }})
	if err != nil {
		return err
	}
	roomLim := cfg.rooms
	if cfg.replicaMiB > 0 {
		roomLim.MaxReplicaBytes = int64(cfg.replicaMiB) << 20
	}
	roomReg, err = rooms.New(rooms.Options{Origins: origins, Logger: log, Store: store, Limits: roomLim})
	if err != nil {
		metricsHub.Close(context.Background())
		return err
	}
	prom := prometheus.NewRegistry()
	prom.MustRegister(promexp.New(src), collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(liveHeap)), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	mux := http.NewServeMux()
	mux.Handle("GET /ws/metrics", metricsHub)
	roomReg.Register(mux)
	mux.Handle("GET /metrics", promhttp.HandlerFor(prom, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	mux.Handle("/", static)

	srv := &http.Server{
		Handler:           httpsec.Handler(mux, hosts),
		ReadHeaderTimeout: serveReadHeaderTimeout,
		ReadTimeout:       serveReadTimeout,
		WriteTimeout:      serveWriteTimeout,
		IdleTimeout:       serveIdleTimeout,
		MaxHeaderBytes:    serveMaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	lim := cfg.conns
	if lim.Total <= 0 {
		lim.Total = connlimit.DefaultTotal
	}
	lim.Total = min(lim.Total, connlimit.FDBudget(connlimit.FDLimit())) // a connection is a file descriptor
	admitted, err := connlimit.Wrap(ln, lim, log)
	if err != nil {
		roomReg.Close(context.Background()) // no connection yet: returns at once
		metricsHub.Close(context.Background())
		return err
	}
	srv.ConnState = admitted.ConnState
	if bases := listenURLs(ln.Addr(), net.InterfaceAddrs); isUnspecified(ln.Addr()) {
		roomReg.SetJoinBases(bases) // students join at a LAN address
	} else if tcp, ok := ln.Addr().(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		log.Warn("listening on loopback: a workshop room's join link reaches this machine only; for students on other machines serve on the network (--addr :8080, make run ADDR=:8080)", "addr", ln.Addr().String())
	}
	log.Info("serving", "addr", ln.Addr().String(), "source", cfg.source, "wasm", static.WasmBuilt(),
		"conns", lim.Total, "conns_per_addr", admitted.Limits().PerAddr)
	if ready != nil {
		ready(ln.Addr())
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(admitted) }()

	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case serveErr = <-served:
	}
	return errors.Join(serveErr, shutdown(srv, metricsHub, roomReg, served, serveErr == nil))
}

// shutdown stops the listener, sends the WebSocket clients their close
// frames (http.Server.Shutdown does not see hijacked connections), lets
// running requests finish, all within serveShutdownTimeout.
func shutdown(srv *http.Server, h *hub.Hub, r *rooms.Registry, served <-chan error, running bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), serveShutdownTimeout)
	defer cancel()
	var wg sync.WaitGroup
	var srvErr, hubErr, roomsErr error
	wg.Go(func() { srvErr = srv.Shutdown(ctx) })
	wg.Go(func() { hubErr = h.Close(ctx) })
	wg.Go(func() { roomsErr = r.Close(ctx) })
	wg.Wait()
	if running {
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			srvErr = errors.Join(srvErr, err)
		}
	}
	return errors.Join(srvErr, hubErr, roomsErr)
}

// liveHeap adds go_gc_heap_live_bytes to the Go collector's metrics: the
// heap the last collection found live, what the rooms' replica budget
// is held against.
var liveHeap = collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/live:bytes$`)}

// listenURLs are the base URLs the server is reached at: its address, or,
// when it listens on every interface (":8080", "0.0.0.0:8080"), each
// address of the machine's interfaces, LAN IPv4 addresses first, then
// other global ones, then loopback (never "http://[::]:8080/", which no
// browser can open).
func listenURLs(addr net.Addr, ifaddrs func() ([]net.Addr, error)) []string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return []string{"http://" + addr.String() + "/"}
	}
	url := func(ip net.IP) string {
		return "http://" + net.JoinHostPort(ip.String(), strconv.Itoa(tcp.Port)) + "/"
	}
	if !tcp.IP.IsUnspecified() && tcp.IP != nil {
		return []string{url(tcp.IP)}
	}
	v4only := tcp.IP.To4() != nil && tcp.IP != nil
	var lan, global, loop []string
	if as, err := ifaddrs(); err == nil {
		for _, a := range as {
			n, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip := n.IP
			switch {
			case v4only && ip.To4() == nil:
			case ip.IsLoopback():
				loop = append(loop, url(ip))
			case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || !ip.IsGlobalUnicast():
			case ip.To4() != nil:
				lan = append(lan, url(ip))
			default:
				global = append(global, url(ip))
			}
		}
	}
	out := append(append(lan, global...), loop...)
	if len(out) == 0 {
		out = []string{url(net.IPv4(127, 0, 0, 1))}
	}
	return out
}

// isUnspecified reports whether addr is every interface's.
func isUnspecified(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && (tcp.IP == nil || tcp.IP.IsUnspecified())
}
