// Package embedtemporal runs a Temporal server inside the axlrd process: the
// four services on 127.0.0.1, one history shard, SQLite persistence in a file
// of the state directory, and optionally the Temporal Web UI.
//
// It owns only the server's lifecycle. Namespaces beyond the ones named in
// Options, search attributes and workers are the caller's business.
package embedtemporal

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

const (
	host        = "127.0.0.1"
	clusterName = "active"
	// clusterID is fixed so the database keeps one identity across starts.
	clusterID = "6f1c0b2a-7e10-4c1e-9d61-a2f1a5e3c0de"
)

// Options configure the embedded server. Zero values take the defaults named
// on each field.
type Options struct {
	// DatabaseFile is the SQLite file. Empty keeps the database in memory
	// (tests only: nothing survives a restart).
	DatabaseFile string
	// FrontendPort is the gRPC frontend port on 127.0.0.1. 0 picks a free one.
	FrontendPort int
	// UIPort is the Web UI port on 127.0.0.1. 0 runs no UI.
	UIPort int
	// Namespaces are created at every start (idempotent). Default: "default".
	Namespaces []string
	// Logger receives the server's logs.
	Logger zerolog.Logger
	// DynamicConfig overrides the dynamic configuration; it is applied on
	// top of Tuning.
	DynamicConfig map[string]any
	// Synchronous is SQLite's synchronous pragma with WAL: "FULL" (default)
	// survives power loss, "NORMAL" only a process crash.
	Synchronous string
	// SearchAttributes are registered with namespaces created on a new
	// database.
	SearchAttributes map[string]enumspb.IndexedValueType
}

// Tuning is the dynamic configuration the embedded server runs with unless
// Options.DynamicConfig overrides it. The defaults of a Temporal cluster are
// sized for many shards and hosts; one process with one shard is limited by
// rate limiters, not by I/O:
//
//   - history.transferProcessorMaxPollRPS (default 20/s, burst 20) is taken
//     once per transfer-queue load, and every sequential activity needs one:
//     it sets a ~45 ms floor per regular activity. 1000 removes it; 0 would
//     block the queue.
//   - the timer queue has the same limiter (workflow timers, activity
//     timeouts).
//   - matching forwards between task-queue partitions at 10/s by default;
//     with one partition there is nothing to forward.
//
// Its caches are sized for one machine: session workflows stay open for
// as long as their sessions live, and the defaults (128,000 mutable states,
// 256 MiB of events on the host) let an axlrd grow by ~140 KB a session
// without end. A workflow out of the cache is read back from SQLite when
// it is next touched.
var Tuning = map[string]any{
	"history.transferProcessorMaxPollRPS":      1000,
	"history.timerProcessorMaxPollRPS":         1000,
	"history.visibilityProcessorMaxPollRPS":    1000,
	"matching.numTaskqueueReadPartitions":      1,
	"matching.numTaskqueueWritePartitions":     1,
	"matching.forwarderMaxRatePerSecond":       1000,
	"history.hostLevelCacheMaxSize":            1024,
	"history.eventsHostLevelCacheMaxSizeBytes": 32 << 20,
	"frontend.namespaceRPS.visibility":         100,
	"limit.blobSize.warn":                      512 * 1024,
	"system.enableEagerWorkflowStart":          true,
}

// Server is a running embedded Temporal server.
type Server struct {
	srv          temporal.Server
	ui           *uiserver.Server
	frontendAddr string
	uiAddr       string
	quiet        *atomic.Bool
}

// Start builds and starts the server. It returns once the frontend accepts
// connections.
func Start(opts Options) (*Server, error) {
	if len(opts.Namespaces) == 0 {
		opts.Namespaces = []string{"default"}
	}
	if opts.Synchronous == "" {
		opts.Synchronous = "FULL"
	}
	var err error
	for attempt := 1; ; attempt++ {
		var ports []int
		if ports, err = choosePorts(4); err != nil {
			return nil, err
		}
		s, err := start(opts, ports)
		if err == nil || attempt == listenAttempts || !strings.Contains(err.Error(), "address already in use") {
			return s, err
		}
		opts.Logger.Warn().Err(err).Int("attempt", attempt).Msg("a port chosen free was taken before the server listened on it; choosing again")
	}
}

// choosePorts is freePorts; a test makes the first choice collide.
var choosePorts = freePorts

// listenAttempts bounds how often Start chooses its ports again when one
// was taken between its choice and the server's listen. That failure comes
// while the server is built, before any service starts; the listeners
// already made stay open (a server not built cannot be stopped), so the
// next choice cannot take their ports.
const listenAttempts = 3

// start starts the server on ports: the frontend's unless opts names one,
// then history's, matching's and the worker service's.
func start(opts Options, ports []int) (*Server, error) {
	if opts.FrontendPort == 0 {
		opts.FrontendPort = ports[0]
	} else if err := checkPortFree(opts.FrontendPort); err != nil {
		return nil, fmt.Errorf("frontend port %d: %w", opts.FrontendPort, err)
	}
	if opts.UIPort != 0 {
		if err := checkPortFree(opts.UIPort); err != nil {
			return nil, fmt.Errorf("ui port %d: %w", opts.UIPort, err)
		}
	}
	reserve(append([]int{opts.FrontendPort, opts.UIPort}, ports...)...)
	frontendAddr := net.JoinHostPort(host, strconv.Itoa(opts.FrontendPort))

	sqlConf, err := sqlConfig(opts)
	if err != nil {
		return nil, err
	}
	conf := serverConfig(opts, sqlConf, frontendAddr, ports[1:])

	dyn := dynamicconfig.StaticClient{}
	for k, v := range Tuning {
		dyn[dynamicconfig.MakeKey(k)] = v
	}
	for k, v := range opts.DynamicConfig {
		dyn[dynamicconfig.MakeKey(k)] = v
	}
	quiet := &atomic.Bool{}
	logger := newTemporalLogger(opts.Logger, quiet)
	authorizer, err := authorization.GetAuthorizerFromConfig(&conf.Global.Authorization)
	if err != nil {
		return nil, fmt.Errorf("create authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&conf.Global.Authorization, logger)
	if err != nil {
		return nil, fmt.Errorf("create claim mapper: %w", err)
	}
	staticHost := func(svc primitives.ServiceName) static.Hosts {
		return static.SingleLocalHost(net.JoinHostPort(host, strconv.Itoa(conf.Services[string(svc)].RPC.GRPCPort)))
	}
	srv, err := startServer(
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(map[primitives.ServiceName]static.Hosts{
			primitives.FrontendService: staticHost(primitives.FrontendService),
			primitives.HistoryService:  staticHost(primitives.HistoryService),
			primitives.MatchingService: staticHost(primitives.MatchingService),
			primitives.WorkerService:   staticHost(primitives.WorkerService),
		}),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dyn),
	)
	if err != nil {
		return nil, err
	}
	s := &Server{srv: srv, frontendAddr: frontendAddr, quiet: quiet}
	if opts.UIPort != 0 {
		s.uiAddr = net.JoinHostPort(host, strconv.Itoa(opts.UIPort))
		s.ui = uiserver.NewServer(uiserveroptions.WithConfigProvider(&uiconfig.Config{
			Host:                host,
			Port:                opts.UIPort,
			TemporalGRPCAddress: frontendAddr,
			EnableUI:            true,
			CORS:                uiconfig.CORS{CookieInsecure: true},
			HideLogs:            true,
			DisableNewsFetch:    true,
		}))
		uiErr := make(chan error, 1)
		go func() { uiErr <- s.ui.Start() }()
		if err := waitListening(s.uiAddr, uiErr, 10*time.Second); err != nil {
			srv.Stop()
			return nil, fmt.Errorf("start web ui on %s: %w", s.uiAddr, err)
		}
	}
	return s, nil
}

// startServer builds and starts the server. The server's Fatal panics with a
// *FatalError (see zlog); one raised while building or starting becomes the
// error returned here.
func startServer(opts ...temporal.ServerOption) (srv temporal.Server, err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		fatal, ok := r.(*FatalError)
		if !ok {
			panic(r)
		}
		srv, err = nil, fatal
	}()
	srv, err = temporal.NewServer(opts...)
	if err != nil {
		return nil, fmt.Errorf("build temporal server: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("start temporal server: %w", err)
	}
	return srv, nil
}

// FrontendAddress is host:port of the gRPC frontend.
func (s *Server) FrontendAddress() string { return s.frontendAddr }

// UIURL is the Web UI's URL, or "" when it does not run.
func (s *Server) UIURL() string {
	if s.uiAddr == "" {
		return ""
	}
	return "http://" + s.uiAddr
}

// Stop stops the UI and the server. Warnings of services that lose each
// other while stopping are not logged.
func (s *Server) Stop() {
	s.quiet.Store(true)
	if s.ui != nil {
		s.ui.Stop()
	}
	s.srv.Stop()
}

func sqlConfig(opts Options) (*config.SQL, error) {
	conf := &config.SQL{PluginName: sqliteplugin.PluginName}
	if opts.DatabaseFile == "" {
		conf.ConnectAttributes = map[string]string{"mode": "memory", "cache": "shared"}
		conf.DatabaseName = fmt.Sprintf("axlr-%d-%d", os.Getpid(), time.Now().UnixNano())
	} else {
		conf.ConnectAttributes = map[string]string{
			"mode":         "rwc",
			"journal_mode": "wal",
			"synchronous":  opts.Synchronous,
			"busy_timeout": "10000",
		}
		conf.DatabaseName = opts.DatabaseFile
		conf.MaxConns = 1
		_, err := os.Stat(opts.DatabaseFile)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if err := os.MkdirAll(filepath.Dir(opts.DatabaseFile), 0o700); err != nil {
				return nil, fmt.Errorf("create database dir: %w", err)
			}
			if err := sqliteschema.SetupSchema(conf); err != nil {
				return nil, fmt.Errorf("set up schema in %s: %w", opts.DatabaseFile, err)
			}
		case err != nil:
			return nil, fmt.Errorf("stat database %s: %w", opts.DatabaseFile, err)
		}
	}
	namespaces := make([]*sqliteschema.NamespaceConfig, 0, len(opts.Namespaces))
	for _, ns := range opts.Namespaces {
		nc, err := sqliteschema.NewNamespaceConfig(clusterName, ns, false, opts.SearchAttributes)
		if err != nil {
			return nil, fmt.Errorf("namespace %s: %w", ns, err)
		}
		namespaces = append(namespaces, nc)
	}
	if err := sqliteschema.CreateNamespaces(conf, namespaces...); err != nil {
		return nil, fmt.Errorf("create namespaces: %w", err)
	}
	return conf, nil
}

func serverConfig(opts Options, sqlConf *config.SQL, frontendAddr string, ports []int) *config.Config {
	conf := &config.Config{}
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = host
	conf.Persistence.DefaultStore = "sqlite"
	conf.Persistence.VisibilityStore = "sqlite"
	conf.Persistence.NumHistoryShards = 1
	conf.Persistence.DataStores = map[string]config.DataStore{"sqlite": {SQL: sqlConf}}
	conf.ClusterMetadata = &cluster.Config{
		EnableGlobalNamespace:    false,
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             frontendAddr,
				ClusterID:              clusterID,
			},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	service := func(port int) config.Service {
		var s config.Service
		s.RPC.GRPCPort = port
		s.RPC.BindOnIP = host
		return s
	}
	frontend := service(opts.FrontendPort)
	conf.Services = map[string]config.Service{
		"frontend": frontend,
		"history":  service(ports[0]),
		"matching": service(ports[1]),
		"worker":   service(ports[2]),
	}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	conf.PublicClient.HostPort = frontendAddr
	return conf
}

func waitListening(addr string, failed <-chan error, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case err := <-failed:
			if err == nil {
				err = errors.New("stopped")
			}
			return err
		default:
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not listening after %s", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
